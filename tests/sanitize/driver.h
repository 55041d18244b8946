/*
 * driver.h: what driver.c and driver_net.c (the sanitizer build's driver,
 * tests/sanitize/) share.
 */
#ifndef HP_SAN_DRIVER_H
#define HP_SAN_DRIVER_H

#include <stdatomic.h>
#include <sys/types.h>

extern _Atomic long errors;   /* failed checks */
extern _Atomic int stop;      /* phase 1 is over */
extern _Atomic int stop_push; /* the push server may stop */
extern _Atomic int pushes;    /* profiles the push server received */

/* Prints a failed check and counts it. */
void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* driver_net.c */
void *http_client(void *port);          /* GETs until stop */
void *push_server(void *listen_fd);     /* answers pushes until stop_push */
void reexec_for_push(char **argv);      /* never returns */

/* driver_child.c */
void child_stderr(const char *path);                 /* in the child */
void child_wait(pid_t c, int k, const char *errpath); /* bounded; counts */
int child_classify_selftest(void);                   /* `driver classify` */

#endif
