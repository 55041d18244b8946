/*
 * init.c: the profiler's life cycle in a process: the constructor (resolve
 * the next allocator, read the environment, warm the unwinder up, then
 * enable sampling), fork handlers, the exit dump, and one-time warnings.
 *
 * Environment (bad values warn once and fall back to the default):
 *   HEAPPROF_RATE      mean bytes between samples (524288; 1 = all; 0 = off)
 *   HEAPPROF_OUT       output template, %p pid, %n sequence number
 *   HEAPPROF_FORMAT    pprof (default) or text
 *   HEAPPROF_INTERVAL  seconds between periodic dumps (0 = none)
 *   HEAPPROF_SIGNAL    signal that triggers a dump (name or number)
 *   HEAPPROF_UNWIND    libunwind (default) or fp
 *   HEAPPROF_DEPTH     frames per stack, 1..64 (64)
 *   HEAPPROF_EXIT      1 (default): dump at exit; 0: don't
 *   HEAPPROF_SYMBOLIZE symtab (default): function names from ELF symbol
 *                      tables; dwarf: file:line and inlined frames (libdw,
 *                      loaded on first use); none: addresses only
 * All are read with secure_getenv: a setuid or setgid program ignores them
 * and writes no profile unless it calls heapprof_dump_file() itself.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "../serve/serve.h"
#include "parse.h"

hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH, .at_exit = 1,
                           .symbolize = 1};
_Atomic int heapprof__ready;
long heapprof__init_pid;

/* ---------------------------------------------------------------- warnings */

#define NWARN 32
static const char *_Atomic warned[NWARN]; /* messages already printed */

/* "heapprof[PID]: msg" on stderr with one write(2). errno is preserved:
 * the warning paths sit between a failing call and the code that reads
 * its errno, or inside free(), which must not change errno; a write to a
 * closed or full stderr (EBADF, ENOSPC, EPIPE) would otherwise leak out. */
static void
say(const char *msg)
{
	int saved = errno;
	char buf[700];
	int n = snprintf(buf, sizeof(buf), "heapprof[%ld]: %s\n", (long)getpid(),
	                 msg);
	if (n > 0) {
		ssize_t w = write(2, buf, (size_t)n < sizeof(buf) ? (size_t)n
		                                                  : sizeof(buf) - 1);
		(void)w;
	}
	errno = saved;
}

void
heapprof__warn(const char *msg)
{
	for (int i = 0; i < NWARN; i++) {
		const char *cur = atomic_load(&warned[i]);
		if (cur == msg)
			return;
		if (cur == NULL) {
			const char *expect = NULL;
			if (atomic_compare_exchange_strong(&warned[i], &expect, msg))
				break;
			if (expect == msg)
				return;
		}
	}
	say(msg);
}

/* A warning whose text is built at run time: printed as is (callers make
 * sure it happens once). */
void
heapprof__warn_dup(const char *msg)
{
	say(msg);
}

/* Warnings about the environment name the variable, so they are built
 * here and printed once per process (the constructor runs once). */
static void
warn_env(const char *var, const char *val, const char *why, const char *dflt)
{
	char buf[400];
	snprintf(buf, sizeof(buf), "%s='%.100s' %s; using %s", var, val, why, dflt);
	say(buf);
}

/* ------------------------------------------------------------------ options */

static void
read_env(hp_config *c)
{
	const char *v;
	int64_t n;
	if ((v = secure_getenv("HEAPPROF_RATE")) && *v) {
		if (heapprof__parse_size(v, &n) == 0)
			c->rate = n;
		else
			warn_env("HEAPPROF_RATE", v, "is not a byte count", "524288");
	}
	if ((v = secure_getenv("HEAPPROF_DEPTH")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n >= 1 && n <= HP_MAX_DEPTH)
			c->depth = (int)n;
		else
			warn_env("HEAPPROF_DEPTH", v, "is not in 1..64", "64");
	}
	if ((v = secure_getenv("HEAPPROF_UNWIND")) && *v) {
		if (!strcmp(v, "fp"))
			c->unwind_fp = 1;
		else if (strcmp(v, "libunwind") && strcmp(v, "dwarf"))
			warn_env("HEAPPROF_UNWIND", v, "is not libunwind or fp",
			         "libunwind");
	}
	if ((v = secure_getenv("HEAPPROF_FORMAT")) && *v) {
		if (!strcmp(v, "text"))
			c->text = 1;
		else if (strcmp(v, "pprof") && strcmp(v, "proto"))
			warn_env("HEAPPROF_FORMAT", v, "is not pprof or text", "pprof");
	}
	if ((v = secure_getenv("HEAPPROF_INTERVAL")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n <= 86400 * 365)
			c->interval = (int)n;
		else
			warn_env("HEAPPROF_INTERVAL", v, "is not a number of seconds",
			         "0 (no periodic dumps)");
	}
	if ((v = secure_getenv("HEAPPROF_SIGNAL")) && *v) {
		int sig;
		if (heapprof__parse_signal(v, &sig) == 0)
			c->signal = sig;
		else
			warn_env("HEAPPROF_SIGNAL", v, "is not a usable signal",
			         "none");
	}
	if ((v = secure_getenv("HEAPPROF_EXIT")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->at_exit = v[0] == '1';
		else
			warn_env("HEAPPROF_EXIT", v, "is not 0 or 1", "1");
	}
	if ((v = secure_getenv("HEAPPROF_SYMBOLIZE")) && *v) {
		if (!strcmp(v, "none"))
			c->symbolize = 0;
		else if (!strcmp(v, "dwarf"))
			c->symbolize = 2;
		else if (strcmp(v, "symtab"))
			warn_env("HEAPPROF_SYMBOLIZE", v, "is not none, symtab or dwarf",
			         "symtab");
	}
	if ((v = secure_getenv("HEAPPROF_MODE")) && *v) {
		if (!strcmp(v, "delta"))
			c->mode_delta = 1;
		else if (strcmp(v, "cumulative"))
			warn_env("HEAPPROF_MODE", v, "is not cumulative or delta",
			         "cumulative");
	}
	if ((v = secure_getenv("HEAPPROF_HTTP")) && *v) {
		if (strlen(v) < sizeof(c->http) && strchr(v, ':'))
			strcpy(c->http, v);
		else
			warn_env("HEAPPROF_HTTP", v, "is not HOST:PORT",
			         "no endpoint");
	}
	if ((v = secure_getenv("HEAPPROF_HTTP_ALLOW_REMOTE")) && !strcmp(v, "1"))
		c->http_allow_remote = 1;
	if ((v = secure_getenv("HEAPPROF_PUSH")) && *v) {
		if (strlen(v) < sizeof(c->push) && !strncmp(v, "http://", 7))
			strcpy(c->push, v);
		else
			warn_env("HEAPPROF_PUSH", v, "is not an http:// URL",
			         "no push");
	}
	if ((v = secure_getenv("HEAPPROF_APP")) && *v && strlen(v) < sizeof(c->app))
		strcpy(c->app, v);
	const char *dflt = c->text ? "heapprof.%p.%n.heap" : "heapprof.%p.%n.pb.gz";
	v = secure_getenv("HEAPPROF_OUT");
	if (v && *v && strlen(v) < sizeof(c->out))
		strcpy(c->out, v);
	else {
		if (v && *v)
			warn_env("HEAPPROF_OUT", v, "is too long", dflt);
		strcpy(c->out, dflt);
	}
}

/* ---------------------------------------------------------------- fork */

/*
 * The locks taken inside malloc (range, bucket, arena) are NOT held across
 * fork. pthread_atfork prepare handlers run before glibc takes its stdio
 * list lock and its own malloc locks; holding a malloc-path lock there
 * inverts the order against a thread that holds a FILE lock and mallocs
 * (getline) while a third thread's fflush(NULL) holds the list lock:
 * glibc's tst-malloc-fork-deadlock pattern hung at rate 1. The child
 * re-initialises the locks. The bucket table is fenced instead: the
 * prepare handler waits until no bucket insert is in flight and makes new
 * ones give up until the fork is done (bucket.c), because the kernel
 * copies memory while the other threads run and a child could inherit a
 * table half updated in any order. The range's critical sections are short
 * and publish with single ordered stores, so the child uses them as the
 * fork found them (at worst a run in flight is lost to the child).
 *
 * The dump lock (a lock nothing inside malloc takes) is held across fork,
 * so the child never inherits a dump in progress, unless the forking
 * thread is inside the profiler itself (a signal handler that forks, as
 * in glibc's tst-mallocfork2): it may hold that lock, so it is left alone.
 * Holding it across fork counts as being inside the profiler, since a
 * signal can arrive in the middle of fork() and its handler fork again.
 * Such nested forks happen only in single-threaded processes (glibc's
 * fork serialises its handlers otherwise), so a small stack suffices.
 */
#define FORK_NEST 16
static int fork_depth;
static unsigned char fork_skip[FORK_NEST];

static void
atfork_prepare(void)
{
	hp_tls *t = &heapprof__tls;
	int d = fork_depth++;
	int skip = t->busy != 0 || d >= FORK_NEST;
	if (d < FORK_NEST)
		fork_skip[d] = (unsigned char)skip;
	if (!skip) {
		t->busy++;
		heapprof__serve_atfork_prepare();
		heapprof__bucket_atfork_prepare(); /* no insert in flight */
	}
}

/* 1 if the matching prepare took the dump lock. */
static int
fork_pop(void)
{
	int d = --fork_depth;
	return d < FORK_NEST && !fork_skip[d];
}

static void
atfork_parent(void)
{
	if (fork_pop()) {
		heapprof__bucket_atfork_release();
		heapprof__serve_atfork_release(0);
		heapprof__tls.busy--;
	}
}

static void
atfork_child(void)
{
	/* A new seed and a new distance: otherwise the parent and each of
	 * its children (prefork workers) would sample at the same offsets. */
	heapprof__sampler_reset(&heapprof__tls);
	heapprof__range_atfork_child();
	heapprof__arena_atfork_child();
	heapprof__bucket_atfork_child();
	if (fork_pop()) {
		heapprof__serve_atfork_release(1);
		heapprof__tls.busy--;
	}
}

/* ------------------------------------------------------------- lifecycle */

/* The exit dump runs on the exiting thread, whose signals are the
 * program's: under a file-size limit (ulimit -f) the profile's write
 * raised SIGXFSZ and killed the program at exit (status 153 instead of
 * its own). dump.c blocks SIGXFSZ around every dump, so the write fails
 * with EFBIG (one warning, no file left) and the signal is consumed. */
static void
exit_dump(void)
{
	hp_tls *t = &heapprof__tls;
	t->busy++;
	int saved = errno;
	heapprof__serve_exit(); /* SIGXFSZ handling: see dump.c */
	errno = saved;
	t->busy--;
}

/* Priority 101: before the constructors of the program and of libraries
 * loaded after us, so their allocations are seen and our atexit handler
 * runs after the handlers (and C++ static destructors) they register. */
__attribute__((constructor(101))) static void
heapprof_init(void)
{
	hp_tls *t = &heapprof__tls;
	t->busy++;
	heapprof__interpose_resolve();
	if (!heapprof__range_span) {
		heapprof__warn("cannot reserve address space for sampled "
		               "objects: profiling disabled");
		t->busy--;
		return;
	}
	heapprof__init_pid = (long)getpid();
	read_env(&heapprof__cfg);

	/* Setuid or setgid (AT_SECURE): the environment is the invoking
	 * user's, so read_env saw none of it (secure_getenv), and nothing is
	 * written unless the program itself asks (heapprof_dump_file): no
	 * exit dump into the working directory, no endpoint. */
	if (getauxval(AT_SECURE)) {
		heapprof__cfg.at_exit = 0;
		heapprof__cfg.interval = 0;
		heapprof__cfg.signal = 0;
		heapprof__cfg.http[0] = 0;
		heapprof__cfg.push[0] = 0;
	}
	if (heapprof__bucket_init() != 0) {
		heapprof__warn("out of memory: profiling disabled");
		t->busy--;
		return;
	}
	if (heapprof__stack_init() != 0)
		heapprof__warn("libunwind.so.8 not found: using the frame-pointer "
		               "unwinder (install libunwind8 for full stacks)");
	/* Warm the unwinder up: its first use allocates and loads. */
	uint64_t warm[4];
	heapprof__stack_capture(t, 0, warm, 4);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (heapprof__cfg.at_exit)
		atexit(exit_dump);
	heapprof__serve_start();
	/* No distance yet: the first allocation after this draws one and
	 * is charged against it (sampler.c), as in every new thread. */
	heapprof__sampler_reset(t);
	atomic_store_explicit(&heapprof__ready, 1, memory_order_release);
	t->busy--;
}
