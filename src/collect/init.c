/*
 * init.c: the profiler's life cycle in a process: the constructor (resolve
 * the next allocator, read the environment, warm the unwinder up, then
 * enable sampling), fork handlers, the exit dump (and the flush of the
 * warnings held while the program ran: warn.c).
 *
 * The environment is read by config.c.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "customlabels.h"
#include "labels.h"
#include "parse.h"
#include "unloaded.h"

int heapprof__serve_armed; /* written once at start (collect.h) */
/* A strong reference to the delivery half (serve/hooks.c), so that
 * libheapprof.a linked into a program brings it along: collect.h's
 * reference to heapprof__delivery is weak and would not. */
extern HP_HIDDEN const int heapprof__delivery_linked;
__attribute__((used)) static const int *const delivery_anchor =
	&heapprof__delivery_linked;

hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH, .at_exit = 1,
                           .symbolize = 1};
_Atomic int heapprof__ready;
long heapprof__init_pid;
int64_t heapprof__init_nanos; /* CLOCK_REALTIME at start: the first delta file's base */
char heapprof__cmdline[512];

/* Where warnings go (warn.c): the stderr of start-up. */
HP_RARE static void
note_stderr(void)
{
	heapprof__warn_note_stderr();
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
 * The dump lock is only tried (serve/dump.c): fork never waits for a
 * dump, and a forking thread inside the profiler (a signal handler that
 * forks, as in glibc's tst-mallocfork2) leaves it alone. The child gets a
 * fresh one either way. Holding it across fork counts as being inside the
 * profiler, since a signal can arrive in the middle of fork() and its
 * handler fork again. Nesting is per thread (a handler runs on the thread
 * it interrupted), so the stack is thread-local and a small one suffices;
 * the child, a copy of the forking thread, inherits that thread's. Forks
 * of other threads may run their handlers at the same time (glibc 2.36
 * releases its atfork lock around each handler call): a shared counter
 * was a data race (TSan, tests/sanitize/driver.c).
 */
#define FORK_NEST 16
static __thread int fork_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned char fork_state[FORK_NEST]
	__attribute__((tls_model("initial-exec"))); /* 0 skipped, 1 tried, 2 locked */

HP_RARE static void
atfork_prepare(void)
{
	hp_tls *t = &heapprof__tls;
	int d = fork_depth++;
	if (d >= FORK_NEST)
		return;
	fork_state[d] = 0;
	if (t->busy == 0) {
		hp_enter(t);
		fork_state[d] = heapprof__hooks() &&
		                heapprof__delivery.atfork_prepare() ? 2 : 1;
		heapprof__bucket_atfork_prepare(); /* no insert in flight */
		heapprof__range_atfork_prepare(); /* nor a range section */
	}
}

/* The matching prepare's state. */
static int
fork_pop(void)
{
	int d = --fork_depth;
	return d < FORK_NEST ? fork_state[d] : 0;
}

HP_RARE static void
atfork_parent(void)
{
	int st = fork_pop();
	if (st) {
		heapprof__bucket_atfork_release();
		heapprof__range_atfork_release();
		if (heapprof__hooks())
			heapprof__delivery.atfork_parent(st == 2);
		hp_leave(&heapprof__tls);
	}
}

_Atomic int heapprof__fork_clean;

HP_RARE static void
atfork_child(void)
{
	atomic_store_explicit(&heapprof__fork_clean, 1, memory_order_relaxed);
	/* A new seed and a new distance: otherwise the parent and each of
	 * its children (prefork workers) would sample at the same offsets. */
	heapprof__sampler_reset(&heapprof__tls);
	heapprof__range_atfork_child();
	heapprof__arena_atfork_child();
	heapprof__bucket_atfork_child();
	if (heapprof__ending_atfork_child)
		heapprof__ending_atfork_child();
	heapprof__peak_atfork_child();
	heapprof__unloaded_atfork_child();
	heapprof__warn_atfork_child(); /* the parent's held lines are its own */
	int st = fork_pop();
	heapprof__customlabels_atfork_child(st != 0);
	if (heapprof__hooks())
		heapprof__delivery.atfork_child(st == 2);
	if (st)
		hp_leave(&heapprof__tls);
}

/* ------------------------------------------------------------- lifecycle */

/* The exit dump runs on the exiting thread, whose signals are the
 * program's: under a file-size limit (ulimit -f) the profile's write
 * raised SIGXFSZ and killed the program at exit (status 153 instead of
 * its own). dump.c blocks SIGXFSZ around every dump, so the write fails
 * with EFBIG (one warning, no file left) and the signal is consumed.
 *
 * exit() may be called from a signal handler that interrupted the
 * profiler itself, which may hold its locks: then there is no exit dump
 * (one line on stderr says so). Other dumps in progress are waited for a
 * few seconds at most (dump.c). */
HP_RARE static void
exit_dump(void)
{
	hp_tls *t = &heapprof__tls;
	if (t->busy) {
		heapprof__warn("exit() called inside the profiler (from a signal "
		               "handler?): no exit profile");
		heapprof__warn_flush(1);
		return;
	}
	hp_enter(t);
	int saved = errno;
	if (heapprof__hooks() && (heapprof__cfg.at_exit || heapprof__cfg.push[0])) {
		/* exit() from a handler of the program's (common, though not
		 * async-signal-safe) that may have interrupted the allocator
		 * holding its lock: the dump is a handler's, without the
		 * allocator's statistics (mallinfo2 waited for that lock for
		 * ever: rel.exitsig) nor the loader's lock. Only where there
		 * may be a profile: the walk costs page faults. */
		int sig = !atomic_load(&heapprof__sandbox) && /* no call */
		          heapprof__cfg.at_exit &&
		          (heapprof__bucket_count() || heapprof__cfg.write_empty) &&
		          heapprof__unwind_in_signal(t->stack_lo, t->stack_hi);
		heapprof__in_handler += sig;
		heapprof__delivery.exit(heapprof__cfg.at_exit); /* SIGXFSZ handling: see dump.c */
		heapprof__in_handler -= sig;
		/* A SIGTERM on another thread may be writing the profile: the
		 * process must not end under it (ending.c). */
		heapprof__delivery.exit_wait(30000);
	}
	/* The warnings held while the program ran (warn.c), once. */
	heapprof__warn_flush(1);
	errno = saved;
	hp_leave(t);
}

/* The library's DT_FINI (-Wl,-fini in the Makefile), in place of crti's
 * empty _fini: that one lies after all the other code, one more code page
 * faulted in at the exit of a program that never called malloc. Nothing
 * to do: the exit dump is an atexit handler. */
HP_RARE HP_HIDDEN void heapprof__fini(void);
HP_RARE HP_HIDDEN void
heapprof__fini(void)
{
}

/* exit_dump as __cxa_atexit calls it. */
HP_RARE static void
exit_dump_arg(void *unused)
{
	(void)unused;
	exit_dump();
}

/* glibc's malloc (bootstrap.c forwards to it by this name). */
extern void *__libc_malloc(size_t);
/* glibc's, behind pthread_atfork (GLIBC_2.3.2). */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void),
                             void (*child)(void), void *dso);
extern void *__dso_handle;
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern int __cxa_at_quick_exit(void (*fn)(void *), void *dso);

/* Priority 101: before the constructors of the program and of libraries
 * loaded after us, so their allocations are seen and our atexit handler
 * runs after the handlers (and C++ static destructors) they register. */
__attribute__((constructor(101))) HP_RARE static void
heapprof_init(int argc, char **argv, char **envp)
{
	(void)envp; /* glibc passes constructors main's three arguments */
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	/* Before anything: under a seccomp filter inherited from the parent
	 * the profiler makes no call the program would not (sandbox.c). */
	heapprof__sandbox_init();
	if (!heapprof__sandbox)
		note_stderr();
	heapprof__interpose_resolve();
	/* glibc's malloc initialised here, on the thread that runs the
	 * constructors, before the program's threads exist. glibc does it at
	 * its first call (ptmalloc_init), not thread-safely: the thread that
	 * runs it is attached to the main arena uncounted, so two threads
	 * whose first calls meet are both attached and the second to exit
	 * aborts ("malloc assertion failure in __malloc_arena_thread_freeres:
	 * a->attached_threads > 0"). glibc counts on a first call before a
	 * second thread (pthread_create allocates); at rate 1 every
	 * allocation of start-up is ours, and the first calls came from
	 * worker threads at once when a fork fence made the range refuse
	 * (rel.forkrange.children, once in CI; rel_mallocinit.sh). mallopt
	 * with parameter 0, which no glibc defines (it returns 1, changing
	 * nothing), initialises without allocating: malloc(1) and free took 2
	 * page faults more at rate 1 (the brk heap's first page, the tcache;
	 * rel.cost.sample_faults). */
	if (heapprof__next.malloc == __libc_malloc) {
		int saved = errno;
		(void)mallopt(0, 0);
		errno = saved;
	}
	if (heapprof__sandbox) {
		/* Off: nothing sampled, no thread, no handler, no exit dump;
		 * the API's dumps say HEAPPROF_ESANDBOX. */
		heapprof__cfg.rate = 0;
		heapprof__cfg.at_exit = 0;
		atomic_store_explicit(&heapprof__ready, 1, memory_order_release);
		hp_leave(t);
		return;
	}
	if (!heapprof__range_span) {
		heapprof__warn("cannot reserve address space for sampled "
		               "objects: profiling disabled");
		hp_leave(t);
		return;
	}
	heapprof__init_pid = (long)getpid();
	heapprof__init_nanos = heapprof__now_nanos();
	heapprof__read_env(&heapprof__cfg);
	heapprof__read_cmdline(heapprof__cmdline, sizeof(heapprof__cmdline), argc, argv);
	if (heapprof__unreached && heapprof__attach_loading(&heapprof__cfg)) {
		/* heapprof attach's remote dlopen (attach.c): nothing starts
		 * until it calls heapprof_attach_start */
	} else if (!heapprof__wanted(heapprof__cmdline)) {
		/* Not this process: nothing sampled, nothing written. */
		heapprof__cfg.rate = 0;
		heapprof__cfg.at_exit = 0;
		heapprof__cfg.interval = 0;
		heapprof__cfg.signal = 0;
		heapprof__cfg.http[0] = 0;
		heapprof__cfg.push[0] = 0;
		heapprof__cfg.dump_growth = 0;
		heapprof__cfg.dump_limit = 0;
		heapprof__cfg.dump_usage = 0;
		heapprof__cfg.dump_pressure_ms = 0;
		heapprof__cfg.peak_file[0] = 0;
	} else if (heapprof__unreached && heapprof__unreached_kind > 1) {
		/* Another allocator's malloc is the program's (bootstrap.c):
		 * said once, as heapprof run says it of a static binary. */
		static char msg[320];
		if (heapprof__unreached_kind == 2)
			snprintf(msg, sizeof(msg), "the program's malloc is linked into "
			         "the executable, where the profiler cannot reach it: "
			         "nothing is sampled");
		else
			snprintf(msg, sizeof(msg), "the program's malloc is %s's, loaded "
			         "ahead of the profiler: nothing is sampled (preload or link "
			         "libheapprof.so before it)", heapprof__unreached_name);
		heapprof__warn_dup(msg);
	}

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
		heapprof__cfg.dump_growth = 0;
		heapprof__cfg.dump_limit = 0;
		heapprof__cfg.dump_usage = 0;
		heapprof__cfg.dump_pressure_ms = 0;
		heapprof__cfg.peak_file[0] = 0;
	}
	/* The OpenTelemetry thread context's variable and custom labels',
	 * looked up here and never inside malloc (otel.c says why). */
	if (!heapprof__unreached &&
	    atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed) > 0) {
		heapprof__otel_resolve(1);
		heapprof__customlabels_resolve(1);
	}
	heapprof__peak_init();
	/* The bucket table is mapped by the first sample (bucket.c). */
	/* What the unwinder cannot do later (stack.c): /proc/self/maps read
	 * by pthread_getattr_np, libunwind's loading. Nothing otherwise. */
	if (heapprof__stack_init(t) != 0)
		heapprof__warn("HEAPPROF_UNWIND=libunwind: libunwind.so.8 not "
		               "found; using the default (dwarf) unwinder");
	/* What pthread_atfork does (libc_nonshared.a links a stub for it into
	 * this library, after the sampling code: one more code page at every
	 * start-up of a program that never calls malloc), called directly. */
	__register_atfork(atfork_prepare, atfork_parent, atfork_child,
	                  &__dso_handle);
	if (heapprof__cfg.at_exit || heapprof__cfg.push[0] ||
	    !heapprof__cfg.quiet) {
		/* the exit dump, push's last interval, and the warnings held
		 * while the program ran; quick_exit(3) runs no atexit handler. What atexit and at_quick_exit do, called
		 * directly (their stubs: see __register_atfork above). */
		__cxa_atexit(exit_dump_arg, NULL, &__dso_handle);
		__cxa_at_quick_exit(exit_dump_arg, &__dso_handle);
	}
	if (heapprof__hooks())
		heapprof__delivery.start();
	/* SIGTERM, SIGINT and _exit (libheapprof.so only). */
	if (heapprof__ending_init)
		heapprof__ending_init();
	/* No distance yet: the first allocation after this draws one and
	 * is charged against it (sampler.c), as in every new thread. */
	heapprof__sampler_reset(t);
	atomic_store_explicit(&heapprof__ready, 1, memory_order_release);
	hp_leave(t);
}
