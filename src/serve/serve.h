/*
 * serve.h: delivery of profiles from inside the process (dump.c): files at
 * exit, every N seconds, on a signal, and through the C API.
 */
#ifndef HEAPPROF_SERVE_H
#define HEAPPROF_SERVE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "../collect/collect.h"

/* Starts the background thread if periodic or signal dumps are on. */
void heapprof__serve_start(void);
/* The at-exit dump. */
void heapprof__serve_exit(void);
void heapprof__serve_atfork_prepare(void);
void heapprof__serve_atfork_release(int child);
/* Expands the output template (%p pid, %n seq, %% %; gperftools' %P pid
 * in five digits, %N seq + 1 in four) into buf. 0 or -ENAMETOOLONG. */
int heapprof__serve_path(const char *tmpl, long pid, long mainpid,
                         uint64_t seq, char *buf, size_t cap);

/* A snapshot written through `write` under the dump lock (the symbol
 * cache has one user at a time). */
int heapprof__serve_snapshot(heapprof_write_fn *write, void *arg,
                             const hp_snap_opts *o);

/* http.c: the /debug/pprof endpoint, driven by the background thread. */
int heapprof__http_init(const char *spec, int allow_remote);
int heapprof__http_port(void);
/* Adds the endpoint's descriptors to p (at most max) and lowers
 * *timeout_ms (-1: none) to its next deadline. Returns the count. */
int heapprof__http_fds(struct pollfd *p, int max, int64_t now_ms,
                       int *timeout_ms);
void heapprof__http_process(const struct pollfd *p, int n, int64_t now_ms);

/* push.c: periodic delta profiles sent to a Pyroscope-compatible /ingest. */
int heapprof__push_start(void);

#endif
