/*
 * serve.h: delivery of profiles from inside the process: files at exit,
 * every N seconds, on a signal and through the C API (dump.c), the
 * /debug/pprof endpoint (http.c), push to Pyroscope (push.c), and the
 * descriptors they keep (fdkeep.c).
 *
 * Threads: none unless --http or --push asks for one (http.c's and
 * push.c's, every signal blocked). Periodic and signal dumps run on the
 * program's own threads, when that is safe (dump.c).
 */
#ifndef HEAPPROF_SERVE_H
#define HEAPPROF_SERVE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "../collect/collect.h"

/* Milliseconds of CLOCK_MONOTONIC (deadlines of the endpoint and push). */
HP_INLINE int64_t
heapprof__mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Constructor time: the dump signal's handler, the endpoint's and the
 * push's threads. */
void heapprof__serve_start(void);
/* The at-exit dump (if `dump`) and the last push; never blocks for long.
 * Called with the thread's busy flag set (and never when it was set
 * before). Once only: later calls do nothing. */
void heapprof__serve_exit(int dump);
/* If another thread of this process is in heapprof__serve_exit, waits
 * until it is done, `ms` milliseconds at most (a second SIGTERM must not
 * kill the process in the middle of the first one's profile). */
void heapprof__serve_exit_wait(int ms);
/* A sampled allocation while dumps are armed (collect.h's due hook):
 * takes the dump that is due if the thread is not busy. */
void heapprof__serve_due(void);
/* Fork handlers (init.c, through hooks.c). prepare returns 1 if it took the dump lock;
 * parent and child get that value back. */
int heapprof__serve_atfork_prepare(void);
void heapprof__serve_atfork_parent(int locked);
void heapprof__serve_atfork_child(int locked);
/* Expands the output template (%p pid, %n seq, %% %; gperftools' %P pid
 * in five digits, %N seq + 1 in four) into buf. 0 or -ENAMETOOLONG. */
/* outfile.c: where a profile goes: normally an unnamed file in PATH's directory
 * (O_TMPFILE), which gets the name PATH.tmp.PID only once complete and on
 * disk, and is then renamed over PATH: readers never see a torn profile,
 * and a process killed mid-dump leaves nothing behind. Without O_TMPFILE
 * (some filesystems) PATH.tmp.PID is created exclusively (a file planted
 * there is removed, never reused). An existing PATH that is not a regular
 * file (a device such as /dev/null, a FIFO) is written in place, never
 * replaced, and /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N
 * are the program's descriptor (common/outpath.c); a profile written to a
 * stream is held whole against other processes' (an OFD lock). Nothing
 * else follows a symbolic link. */
typedef struct hp_out_file {
	int fd;
	int lock_fd;  /* a stream's lock, when it is not fd's; else -1 */
	int unnamed;  /* O_TMPFILE */
	int in_place; /* PATH itself */
	char tmp[4200];
} hp_out_file;
int heapprof__out_open(hp_out_file *f, const char *path);
/* Makes the written file PATH (rc: the writing's result; pid: the process
 * the dump began in). 0 or a negative errno. */
int heapprof__out_commit(hp_out_file *f, const char *path, int rc, pid_t pid);
/* A heapprof_write_fn writing to fd, refusing in another process than pid
 * (a child forked in the middle of its parent's dump). */
typedef struct hp_fd_out {
	int fd;
	pid_t pid; /* the process the dump began in */
} hp_fd_out;
int heapprof__fd_write(void *arg, const void *p, size_t n);
int heapprof__serve_path(const char *tmpl, long pid, long mainpid,
                         uint64_t seq, char *buf, size_t cap);

/* A snapshot written through `write` under the dump lock (the symbol
 * cache has one user at a time), for the endpoint's and the push's
 * threads: waits for the lock a bounded time (-EBUSY after it). */
/* Runs fn(arg) on the dump stack (dump_stack.c), or on the current stack
 * where that is safe and no dump stack can be had; caller holds dump.c's
 * dump_lock. Returns fn's value, or -ENOMEM. */
int heapprof__on_dump_stack(int (*fn)(void *), void *arg);
int heapprof__serve_snapshot(heapprof_write_fn *write, void *arg,
                             const hp_snap_opts *o);
int heapprof__serve_snapshot_wait(heapprof_write_fn *write, void *arg,
                                  const hp_snap_opts *o, int wait_ms);
/* For a background thread (busy set for good): runs the periodic or
 * signal dumps that are due; returns the milliseconds until the next one
 * may be (-1: none). */
int heapprof__serve_thread_due(void);
/* Asks for one template dump at the next safe point, as the dump signal
 * does (peak.c's growth and limit triggers). Async-signal-safe. */
void heapprof__serve_request(void);
/* A seccomp filter is going in (hp_delivery.sandbox): stops the threads,
 * waits for a dump in progress. */
void heapprof__serve_sandbox(void);

/* rolling.c: --peak-file. start: constructor time; due: the write is
 * wanted and the gap after the last has passed; run: with dump_lock
 * held, the write through write_path if due. */
void heapprof__rolling_start(void);
int heapprof__rolling_due(void);
void heapprof__rolling_run(int (*write_path)(const char *path), long mainpid);
/* watch.c: the watcher's thread (--dump-usage, --dump-pressure),
 * started only if one of them is on. */
void heapprof__watch_start(void);

/* http.c: the /debug/pprof endpoint and its thread. */
int heapprof__http_init(const char *spec, int allow_remote);
int heapprof__http_port(void);
int heapprof__http_start(void);
void heapprof__http_atfork_child(void);
/* Ends the endpoint's thread and waits until it is gone (sandbox, the
 * attach's detach), and closes its descriptors. */
void heapprof__http_stop(void);
/* 1 if this process's endpoint thread was started and not stopped. */
int heapprof__http_running(void);
/* The poll timeout for a deadline `left` ms away: 0..1000000 (-1: none). */
int heapprof__poll_timeout(int64_t left_ms);

/* push.c: periodic delta profiles sent to a Pyroscope-compatible /ingest. */
int heapprof__push_start(void);
/* The last interval's profile, at exit, within a few seconds. */
void heapprof__push_exit(void);
void heapprof__push_atfork_child(void);
/* Ends push's thread and waits until it is gone (sandbox). */
void heapprof__push_stop(void);

/* fdkeep.c: a descriptor the profiler keeps, and its identity. */
typedef struct hp_kept_fd {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
} hp_kept_fd;
/* Moves fd high and close-on-exec, and records it: 0 or -errno (fd is
 * closed then). */
int heapprof__fd_keep(int fd, hp_kept_fd *k);
/* 1 if k->fd is still the descriptor we kept. */
int heapprof__fd_ours(const hp_kept_fd *k);
/* Closes k->fd if it is still ours (never the program's), and forgets it. */
void heapprof__fd_release(hp_kept_fd *k);

#endif
