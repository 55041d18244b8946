/*
 * serve.h: delivery of profiles from inside the process (dump.c): files at
 * exit, every N seconds, on a signal, and through the C API.
 */
#ifndef HEAPPROF_SERVE_H
#define HEAPPROF_SERVE_H

#include <stddef.h>
#include <stdint.h>

/* Starts the background thread if periodic or signal dumps are on. */
void heapprof__serve_start(void);
/* The at-exit dump. */
void heapprof__serve_exit(void);
void heapprof__serve_atfork_prepare(void);
void heapprof__serve_atfork_release(int child);
/* Expands the output template (%p pid, %n seq, %% %) into buf. 0 or
 * -ENAMETOOLONG. */
int heapprof__serve_path(const char *tmpl, long pid, long mainpid,
                         uint64_t seq, char *buf, size_t cap);

#endif
