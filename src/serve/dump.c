/*
 * dump.c: profile files from inside the process (outfile.c writes them):
 * at exit, every HEAPPROF_INTERVAL seconds, when HEAPPROF_SIGNAL arrives, and through
 * heapprof_dump_file() and the other dump functions of the API. A file is
 * written to an unnamed file (or PATH.tmp.PID) and renamed over PATH, so
 * readers never see a torn profile; a failed write warns once on stderr and
 * the program runs on.
 *
 * No thread of our own: periodic and signal dumps run on the program's
 * threads, where it is safe (heapprof__serve_due):
 *   - the signal handler notes the request and dumps at once unless the
 *     thread it interrupted is inside the profiler (busy), another dump
 *     holds dump_lock, or a busy thread's allocations may still reach
 *     glibc's malloc (handler_may_dump);
 *   - otherwise (and for periodic dumps) the next sampled allocation, the
 *     next API call, or the endpoint's thread if there is one, takes it.
 * Nothing here takes a lock that interrupted code may hold:
 * dump_lock is only ever tried, or waited for a bounded time. Dumps on the
 * program's threads run on a stack of our own (dump_stack.c), so a
 * small coroutine stack or a signal stack is never overrun.
 *
 * dump_lock serialises dumps (the symbol caches, seq, period_base and the
 * dump stack have one user at a time). Fork: the prepare handler only
 * tries it, so fork() never waits for a dump; a child that could not have
 * it starts with a fresh lock and fresh caches (the dumping thread does
 * not exist there), and a dump interrupted by a fork in a signal handler
 * is abandoned in the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../collect/collect.h"
#include "dwarf_dl.h"
#include "serve.h"

#define EXIT_WAIT_MS 5000   /* the exit dump waits this long for dump_lock */
#define THREAD_WAIT_MS 30000 /* the endpoint's and push's threads, this long: a
                             * dump at rate 1 under a sanitizer took > 10 s */
#define QUIET_SLACK_MS 12  /* > a tick of CLOCK_MONOTONIC_COARSE */

static pthread_mutex_t dump_lock HP_FORK_BSS = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;            /* next %n (dump_lock) */
static _Atomic int exiting;     /* the exit dump has begun: no more dumps */
static _Atomic int exit_done;   /* ... and has ended (heapprof__serve_exit_wait) */
static _Atomic long exit_pid;   /* in this process (not a fork child's copy) */
static _Atomic int write_warned;
static struct sigaction prev_action; /* written once at start */
/* A periodic or signal dump is owed: set by the signal handler, cleared
 * by whoever takes the dump (under dump_lock). */
static _Atomic int pending;
/* When the next periodic dump is due (CLOCK_MONOTONIC_COARSE ms;
 * INT64_MAX: never); advanced under dump_lock. */
static _Atomic int64_t next_due = INT64_MAX;
/* No signal-requested dump starts before this (CLOCK_MONOTONIC ms): after
 * a dump that took D ms, the next one waits 9 D, so that a flood of dump
 * signals keeps the program dumping at most a tenth of the time instead of
 * starving it (a handler that dumps for longer than the gap between two
 * signals would otherwise never return to the program). Requests that
 * arrive meanwhile stay pending and are coalesced into one dump. Written
 * under dump_lock. */
static _Atomic int64_t quiet_until;
/* Re-sends the dump signal when the quiet time of a deferred request ends,
 * so that an idle program (no sampled allocation to take it) still gets
 * its dump. Created at start with the signal's handler; not inherited by
 * fork children (there is then no re-send: the next sampled allocation,
 * API call or signal takes the request). */
static timer_t quiet_timer;
static _Atomic int have_quiet_timer;
static int64_t period_ms;       /* written once at start */

/* The process whose files carry no ".PID" when the template has no %p:
 * the one `heapprof run` started, else the one the library was loaded in
 * (its forked children then get their own names). */
static long
main_pid(void)
{
	const char *v = getenv("HEAPPROF_MAINPID");
	long p = v ? strtol(v, NULL, 10) : 0;
	return p > 0 ? p : heapprof__init_pid;
}

/* In HEAPPROF_MODE=delta, where the last periodic file ended (dump_lock). */
static hp_baseline period_base;

static int
write_file(const char *path, int periodic)
{
	hp_out_file f;
	int rc = heapprof__out_open(&f, path);
	if (rc != 0)
		return rc;
	hp_fd_out o = {f.fd, getpid()};
	hp_snap_opts so;
	memset(&so, 0, sizeof(so));
	so.text = heapprof__cfg.text;
	so.peak = 1;
	so.age = heapprof__cfg.age >= 0;
	if (periodic && heapprof__cfg.mode_delta && !so.text) {
		/* Each file: the allocations since the previous one, and
		 * the in-use state now; its peak is the interval's. */
		so.kind = HP_SNAP_DELTA_ALLOC;
		so.base = &period_base;
		so.next_base = &period_base;
		so.peak_reset = 1;
	}
	rc = heapprof__snapshot_write_ex(heapprof__fd_write, &o, &so);
	return heapprof__out_commit(&f, path, rc, o.pid);
}

/* Writes one file: `path`, or the template's next name if NULL. Called
 * with dump_lock held and the thread's busy flag set. */
static int
dump_locked(const char *path_or_null)
{
	char path[4200];
	int rc = 0;
	if (path_or_null) {
		if (strlen(path_or_null) >= sizeof(path))
			rc = -ENAMETOOLONG;
		else
			strcpy(path, path_or_null);
	} else {
		rc = heapprof__serve_path(heapprof__cfg.out, (long)getpid(),
		                          main_pid(), seq, path, sizeof(path));
		if (rc == 0)
			seq++;
	}
	if (rc == 0)
		rc = write_file(path, path_or_null == NULL);
	hp_fork_dirty(); /* a fork child that dumps writes its exit profile too */
	if (rc != 0 && rc != -ECANCELED && !atomic_exchange(&write_warned, 1)) {
		char msg[4400];
		snprintf(msg, sizeof(msg),
		         "cannot write profile %s: %s (further failures are silent)",
		         path_or_null ? path_or_null : heapprof__cfg.out,
		         heapprof_strerror(rc));
		heapprof__warn_dup(msg);
	}
	return rc;
}

/* ----------------------------------------------------------- the lock */

static int64_t
mono_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Tries dump_lock for up to `ms` milliseconds: 1 if taken. Never blocks
 * without a bound: a holder may be a thread that will never release it
 * (stopped in a debugger, a callback that does not return). */
static int
lock_bounded(int ms)
{
	int64_t end = mono_ms(CLOCK_MONOTONIC) + ms;
	for (;;) {
		if (pthread_mutex_trylock(&dump_lock) == 0)
			return 1;
		if (mono_ms(CLOCK_MONOTONIC) >= end)
			return 0;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* A dump is no cancellation point of the program's: the thread may be
 * inside malloc (a periodic or signal dump taken by a sampled allocation),
 * and a deferred cancel acting on the dump's open, write or nanosleep would
 * unwind it out of malloc (which POSIX says is no cancellation point) with
 * dump_lock held, so every later dump, the exit one included, would wait
 * for it. Cancellation is off while the thread is in a dump; a request
 * stays pending for the program's next cancellation point. */
static int
cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static void
cancel_restore(int old)
{
	int ignored;
	pthread_setcancelstate(old, &ignored);
}

/* Releases dump_lock taken in process `pid`: a child forked in the middle
 * of a dump got a fresh lock (heapprof__serve_atfork_child), which the
 * dump it inherited must leave alone. */
static void
unlock_from(pid_t pid)
{
	if (getpid() == pid)
		pthread_mutex_unlock(&dump_lock);
}

static int
dump_fn(void *path)
{
	return dump_locked(path);
}

/* One file, with dump_lock held. SIGXFSZ and SIGPIPE are blocked
 * meanwhile, so a file-size limit fails the write with EFBIG, and a stream
 * whose reader has gone (HEAPPROF_OUT=/dev/stdout into `| head`, a FIFO)
 * with EPIPE (one warning), instead of killing the program; such a signal
 * our write raised is discarded, one that was already pending for the
 * program is left alone. */
static int
dump_file(const char *path, int own_stack)
{
	if (atomic_load(&heapprof__sandbox))
		return HEAPPROF_ESANDBOX; /* sandbox.c; heapprof__serve_sandbox */
	static const int sigs[] = {SIGXFSZ, SIGPIPE};
	sigset_t block, old, pend;
	sigemptyset(&block);
	for (int i = 0; i < 2; i++)
		sigaddset(&block, sigs[i]);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int have_pend = sigpending(&pend) == 0;
	int rc = own_stack ? heapprof__on_dump_stack(dump_fn, (void *)path)
	                   : dump_locked(path);
	for (int i = 0; i < 2; i++) {
		if (have_pend && sigismember(&pend, sigs[i]))
			continue;
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sigs[i]);
		struct timespec zero = {0, 0};
		while (sigtimedwait(&one, NULL, &zero) == sigs[i])
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* ------------------------------------------ periodic and signal dumps */

static int
is_due(int64_t now)
{
	return (atomic_load_explicit(&pending, memory_order_relaxed) &&
	        now >= atomic_load_explicit(&quiet_until, memory_order_relaxed)) ||
	       now >= atomic_load_explicit(&next_due, memory_order_relaxed) ||
	       (atomic_load_explicit(&heapprof__rolling_want, memory_order_relaxed) &&
	        heapprof__rolling_due()); /* --peak-file (rolling.c) */
}

/* rolling.c's writer: one file at `path`, on the dump stack. */
static int
write_peak_file(const char *path)
{
	return dump_file(path, 1);
}

/* With dump_lock held: the template dumps that are due, at most two in a
 * row (a signal storm must not keep a thread here), each signal-requested
 * one only once the quiet time after the last has passed. */
static void
run_due_locked(void)
{
	if (!atomic_load(&exiting))
		heapprof__rolling_run(write_peak_file, main_pid());
	for (int i = 0; i < 2 && !atomic_load(&exiting); i++) {
		int64_t now = mono_ms(CLOCK_MONOTONIC);
		int due = now >= atomic_load(&quiet_until) &&
		          atomic_exchange(&pending, 0);
		int64_t next = atomic_load(&next_due);
		if (now >= next) {
			due = 1;
			next += period_ms;
			if (next <= now)
				next = now + period_ms; /* fell behind: skip */
			atomic_store(&next_due, next);
		}
		if (!due)
			break;
		dump_file(NULL, 1);
		int64_t end = mono_ms(CLOCK_MONOTONIC);
		atomic_store(&quiet_until, end + 9 * (end - now));
	}
}

void
heapprof__serve_request(void)
{
	/* Not held back by the quiet time after a signal dump: growth and
	 * limit dumps are few, and the limit's must come before the kill. */
	atomic_store(&quiet_until, 0);
	atomic_store(&pending, 1);
}

void
heapprof__serve_due(void)
{
	hp_tls *t = &heapprof__tls;
	if (t->busy || atomic_load_explicit(&exiting, memory_order_relaxed) ||
	    atomic_load_explicit(&heapprof__sandbox, memory_order_relaxed) ||
	    !is_due(mono_ms(CLOCK_MONOTONIC_COARSE)) ||
	    !atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return;
	int saved = errno;
	hp_enter(t);
	int cs = cancel_off();
	if (pthread_mutex_trylock(&dump_lock) == 0) {
		pid_t me = getpid();
		run_due_locked();
		unlock_from(me);
	}
	cancel_restore(cs);
	hp_leave(t);
	errno = saved;
}

int
heapprof__serve_thread_due(void)
{
	if (!heapprof__serve_armed)
		return -1;
	if (!atomic_load(&exiting) && is_due(mono_ms(CLOCK_MONOTONIC_COARSE)) &&
	    pthread_mutex_trylock(&dump_lock) == 0) {
		pid_t me = getpid();
		run_due_locked();
		unlock_from(me);
	}
	int64_t now = mono_ms(CLOCK_MONOTONIC_COARSE);
	int64_t left = atomic_load(&next_due) - now;
	if (atomic_load(&pending) && atomic_load(&quiet_until) - now < left)
		left = atomic_load(&quiet_until) - now; /* a coalesced request */
	/* A signal that found the lock taken: look again within a second. */
	if (heapprof__cfg.signal > 0 && heapprof__cfg.signal != SIGTERM &&
	    heapprof__cfg.signal != SIGINT && left > 1000)
		left = 1000;
	return heapprof__poll_timeout(left);
}

int
heapprof__poll_timeout(int64_t left_ms)
{
	if (left_ms < 0)
		return 0;
	return left_ms > 1000000 ? 1000000 : (int)left_ms;
}

/* Defined (to 1) by the capture half once what a busy thread allocates
 * never reaches the next allocator (glibc's malloc, which a signal handler
 * may have interrupted in the middle of an update, and whose single-thread
 * path takes no lock): only then may a dump run inside a handler. Without
 * it, signal dumps wait for the next sampled allocation, API call, or the
 * endpoint's thread. */
extern const int heapprof__busy_alloc_private
	__attribute__((weak, visibility("hidden")));

static int
handler_may_dump(void)
{
	return &heapprof__busy_alloc_private != NULL && heapprof__busy_alloc_private;
}

/* The dump signal: a dump now if that is safe here (see the top), else as
 * soon as it is. */
static void
on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	if (atomic_load(&heapprof__sandbox))
		return; /* no dump, and no system call: sandbox.c */
	atomic_store(&pending, 1);
	if (handler_may_dump()) {
		heapprof__in_handler++; /* no loader lock (snapshot.c) */
		heapprof__serve_due();
		heapprof__in_handler--;
	}
	int64_t wait = atomic_load(&quiet_until) - mono_ms(CLOCK_MONOTONIC);
	if (atomic_load(&pending) && wait > -QUIET_SLACK_MS &&
	    atomic_load(&have_quiet_timer)) {
		/* Deferred by the quiet time: the signal again once it has
		 * ended, by the coarse clock too (timer_settime is
		 * async-signal-safe). */
		wait = (wait > 0 ? wait : 0) + QUIET_SLACK_MS;
		struct itimerspec its;
		memset(&its, 0, sizeof(its));
		its.it_value.tv_sec = wait / 1000;
		its.it_value.tv_nsec = (wait % 1000) * 1000000;
		timer_settime(quiet_timer, 0, &its, NULL);
	}
	errno = saved;
	(void)sig, (void)si, (void)uc;
}

struct snap_args {
	heapprof_write_fn *write;
	void *arg;
	const hp_snap_opts *o;
};

static int
snap_fn(void *arg)
{
	struct snap_args *a = arg;
	return heapprof__snapshot_write_ex(a->write, a->arg, a->o);
}

int
heapprof__serve_snapshot_wait(heapprof_write_fn *write_fn, void *arg,
                              const hp_snap_opts *o, int wait_ms)
{
	int cs = cancel_off();
	if (!lock_bounded(wait_ms)) {
		cancel_restore(cs);
		return -EBUSY;
	}
	pid_t me = getpid();
	struct snap_args a = {write_fn, arg, o};
	int rc = atomic_load(&heapprof__sandbox)
	                 ? HEAPPROF_ESANDBOX
	                 : heapprof__on_dump_stack(snap_fn, &a);
	run_due_locked();
	unlock_from(me);
	cancel_restore(cs);
	return rc;
}

int
heapprof__serve_snapshot(heapprof_write_fn *write_fn, void *arg,
                         const hp_snap_opts *o)
{
	return heapprof__serve_snapshot_wait(write_fn, arg, o, THREAD_WAIT_MS);
}

/* ------------------------------------------------------------ life cycle */

HP_RARE void
heapprof__serve_start(void)
{
	if (heapprof__cfg.symbolize == 2) {
		/* Load libdw now: dumps may run inside malloc or a signal
		 * handler, where dlopen must not be called. */
		heapprof__libdw(NULL);
		heapprof__demangler();
	}
	if (heapprof__cfg.interval > 0) {
		period_ms = (int64_t)heapprof__cfg.interval * 1000;
		atomic_store(&next_due, mono_ms(CLOCK_MONOTONIC_COARSE) + period_ms);
	}
	/* A dump signal of TERM or INT ends the program after its profile:
	 * collect/ending.c handles those. */
	int sig = heapprof__cfg.signal;
	if (sig == SIGTERM || sig == SIGINT)
		sig = 0;
	heapprof__serve_armed = heapprof__cfg.interval > 0 || sig > 0 ||
	                        heapprof__cfg.dump_growth > 0 ||
	                        heapprof__cfg.dump_limit > 0 ||
	                        heapprof__cfg.peak_file[0] ||
	                        heapprof__cfg.dump_pressure_ms > 0 ||
	                        heapprof__cfg.dump_usage > 0;
	heapprof__rolling_start();
	/* Those dumps may run inside malloc or a signal handler: the
	 * encoder's look for a C++ demangler already in the process
	 * (dlsym, dlopen RTLD_NOLOAD: the loader's lock) happens now, once.
	 * A C++ runtime the program loads later is then not used (its names
	 * stay mangled); without such dumps the first dump looks. */
	if (heapprof__serve_armed)
		heapprof__demangler_loaded();
	if (sig > 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART; /* no SA_ONSTACK: ending.c */
		sigfillset(&sa.sa_mask);
		sigaction(sig, &sa, &prev_action);
		struct sigevent ev;
		memset(&ev, 0, sizeof(ev));
		ev.sigev_notify = SIGEV_SIGNAL;
		ev.sigev_signo = sig;
		if (timer_create(CLOCK_MONOTONIC, &ev, &quiet_timer) == 0)
			atomic_store(&have_quiet_timer, 1);
	}
	/* Threads only for what needs one. */
	if (heapprof__cfg.http[0]) {
		int rc = heapprof__http_init(heapprof__cfg.http,
		                             heapprof__cfg.http_allow_remote);
		if (rc != 0) {
			char msg[512];
			snprintf(msg, sizeof(msg),
			         "HEAPPROF_HTTP=%s: %s; the endpoint is off%s",
			         heapprof__cfg.http,
			         rc == -EPERM ? "not a loopback address" : heapprof_strerror(rc),
			         rc == -EPERM ? " (HEAPPROF_HTTP_ALLOW_REMOTE=1 allows it)" : "");
			heapprof__warn_dup(msg);
		} else {
			heapprof__http_start();
		}
	}
	if (heapprof__cfg.push[0])
		heapprof__push_start();
	heapprof__watch_start(); /* a thread only for --dump-usage, --dump-pressure */
}

/* Nothing sampled in this process, nor inherited from the process it
 * was forked from: no bucket, no dropped sample. Its exit profile would
 * hold no sample, and is not written unless HEAPPROF_WRITE_EMPTY=1 (a
 * build's hundreds of short processes would each leave an empty file,
 * and pay for symbolizing the mappings). */
HP_RARE static int
nothing_sampled(void)
{
	return heapprof__bucket_count() == 0 &&
	       atomic_load_explicit(&heapprof__dropped_samples,
	                            memory_order_relaxed) == 0;
}

/* A fork child that sampled nothing since the fork, dumped nothing and
 * was asked for no dump: its exit profile would be its parent's records
 * (which the parent writes), at the cost of a whole dump in every child
 * of a program that forks and exits in a loop. Counted as a process
 * without samples (`heapprof run`'s summary; --write-empty writes it). */
HP_RARE static int
nothing_since_fork(void)
{
	return atomic_load_explicit(&heapprof__fork_clean, memory_order_relaxed) &&
	       !atomic_load(&pending);
}

/* Tells `heapprof run` that this process wrote no exit profile: one byte
 * appended to HEAPPROF_RUN_STATUS, a file the run created (an absolute
 * path; never created here, no symbolic link followed, never blocks).
 * O_APPEND makes the concurrent writes of many processes add up. */
HP_RARE static void
note_no_profile(void)
{
	const char *p = heapprof__cfg.run_status; /* config.c */
	if (!p || p[0] != '/')
		return;
	int fd = open(p, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t w = write(fd, "e", 1);
	(void)w;
	close(fd);
}

/* The exit profile, unless nothing was sampled (then `heapprof run` is
 * told, if `note`); waits a bounded time for a dump in progress. */
static void
exit_profile(int note)
{
	if (!heapprof__cfg.write_empty &&
	    (nothing_sampled() || nothing_since_fork())) {
		if (note)
			note_no_profile();
	} else if (lock_bounded(EXIT_WAIT_MS)) {
		pid_t me = getpid();
		dump_file(NULL, 1);
		unlock_from(me);
	} else {
		heapprof__warn("a dump in progress did not end within 5 s: "
		               "no exit profile");
	}
}

/* dump: 0 none (the last push only), 1 the exit profile, 2 the exit
 * profile of an ending the process survives: the first process of a PID
 * namespace, where the kernel ignores SIGTERM and SIGINT while their
 * action is the default one. That one is written as the exit profile is,
 * but the process is not exiting: later dumps go on, and its real exit
 * writes the exit profile again, over this one. */
HP_RARE void
heapprof__serve_exit(int dump)
{
	if (atomic_load(&heapprof__sandbox)) {
		/* No profile, no last push, no system call (sandbox.c). */
		atomic_store(&exiting, 1);
		atomic_store(&exit_done, 1);
		return;
	}
	if (dump == 2) {
		if (!atomic_load(&exiting)) {
			int cs = cancel_off();
			exit_profile(0);
			cancel_restore(cs);
		}
		return;
	}
	if (atomic_exchange(&exiting, 1))
		return;
	int cs = cancel_off();
	atomic_store(&exit_pid, (long)getpid());
	if (dump)
		exit_profile(1);
	heapprof__push_exit();
	atomic_store(&exit_done, 1);
	cancel_restore(cs);
}

HP_RARE void
heapprof__serve_exit_wait(int ms)
{
	/* Usually nothing to wait for: then no clock is read (the first
	 * clock_gettime of a process faults in the vDSO's data pages, two
	 * page faults at every exit). */
	if (!atomic_load(&exiting) || atomic_load(&exit_done))
		return;
	int cs = cancel_off();
	int64_t end = mono_ms(CLOCK_MONOTONIC) + ms;
	while (atomic_load(&exiting) && !atomic_load(&exit_done) &&
	       atomic_load(&exit_pid) == (long)getpid() &&
	       mono_ms(CLOCK_MONOTONIC) < end) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	cancel_restore(cs);
}

/* The program is installing a seccomp filter (collect/sandbox.c has set
 * heapprof__sandbox, so no new dump or snapshot starts): the endpoint's
 * and push's threads are stopped and waited for, and so is a dump in
 * progress, before the filter can apply to their system calls. */
HP_RARE void
heapprof__serve_sandbox(void)
{
	heapprof__http_stop();
	heapprof__push_stop();
	if (heapprof__tls.busy)
		return; /* inside a dump (a write callback): that is this one */
	int cs = cancel_off();
	if (lock_bounded(THREAD_WAIT_MS))
		pthread_mutex_unlock(&dump_lock);
	cancel_restore(cs);
}

HP_RARE int
heapprof__serve_atfork_prepare(void)
{
	/* Never wait: fork() must not stall for a dump (a DWARF one can take
	 * seconds), and in a signal handler the holder may be this thread. */
	return pthread_mutex_trylock(&dump_lock) == 0;
}

HP_RARE void
heapprof__serve_atfork_parent(int locked)
{
	if (locked)
		pthread_mutex_unlock(&dump_lock);
}

HP_RARE void
heapprof__serve_atfork_child(int locked)
{
	/* Whoever held the lock does not exist here, nor does the timer. */
	hp_mutex_reset(&dump_lock);
	if (atomic_load(&have_quiet_timer))
		atomic_store(&have_quiet_timer, 0);
	if (!locked) {
		/* A dump was in progress: what it was updating may be half
		 * done. Start afresh (the old state is left allocated). */
		heapprof__snapshot_atfork_reset();
		memset(&period_base, 0, sizeof(period_base));
	}
	/* Written only if set: each page a fork child writes is a copy. */
	if (seq)
		seq = 0;
	if (atomic_load(&write_warned))
		atomic_store(&write_warned, 0);
	heapprof__http_atfork_child();
	heapprof__push_atfork_child();
}

/* ------------------------------------------------------------ public API */

/* The API's dumps wait for the lock (the program asked), but never from
 * inside the profiler: a callback or a signal handler that dumps again
 * would wait for itself. */
HP_EXPORT int
heapprof_dump_file(const char *path)
{
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	if (atomic_load(&heapprof__sandbox))
		return HEAPPROF_ESANDBOX; /* before any system call: sandbox.c */
	hp_tls *t = &heapprof__tls;
	if (t->busy)
		return -EDEADLK;
	hp_enter(t);
	int saved = errno;
	int cs = cancel_off();
	pthread_mutex_lock(&dump_lock);
	pid_t me = getpid();
	int rc = dump_file(path, 0);
	run_due_locked();
	unlock_from(me);
	cancel_restore(cs);
	errno = saved;
	hp_leave(t);
	return rc;
}

static int
api_snapshot(heapprof_write_fn *write_fn, void *arg, const hp_snap_opts *o)
{
	hp_tls *t = &heapprof__tls;
	if (atomic_load(&heapprof__sandbox))
		return HEAPPROF_ESANDBOX; /* before any system call: sandbox.c */
	if (t->busy)
		return -EDEADLK;
	hp_enter(t);
	int saved = errno;
	int cs = cancel_off();
	pthread_mutex_lock(&dump_lock);
	pid_t me = getpid();
	/* Again under the lock: heapprof__serve_sandbox waits for it. */
	int rc = atomic_load(&heapprof__sandbox)
	                 ? HEAPPROF_ESANDBOX
	                 : heapprof__snapshot_write_ex(write_fn, arg, o);
	hp_fork_dirty();
	run_due_locked();
	unlock_from(me);
	cancel_restore(cs);
	errno = saved;
	hp_leave(t);
	return rc;
}

HP_EXPORT int
heapprof_dump(heapprof_write_fn *write_fn, void *arg, int text)
{
	if (!write_fn)
		return -EINVAL;
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.text = text;
	o.peak = 1;
	o.age = heapprof__cfg.age >= 0;
	return api_snapshot(write_fn, arg, &o);
}

HP_EXPORT int
heapprof_dump_profile(heapprof_write_fn *write_fn, void *arg, int kind)
{
	if (!write_fn || (kind != HEAPPROF_PROFILE_HEAP &&
	                  kind != HEAPPROF_PROFILE_INUSE))
		return -EINVAL;
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.kind = kind == HEAPPROF_PROFILE_INUSE ? HP_SNAP_INUSE : HP_SNAP_FULL;
	o.peak = 1;
	o.age = heapprof__cfg.age >= 0;
	return api_snapshot(write_fn, arg, &o);
}

HP_EXPORT int
heapprof_active(void)
{
	return atomic_load_explicit(&heapprof__ready, memory_order_acquire) &&
	       atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed) > 0 &&
	       heapprof__interposing();
}

HP_EXPORT int
heapprof_set_sample_rate(uint64_t bytes)
{
	if (bytes > (uint64_t)INT64_MAX / 2)
		return -EINVAL;
	atomic_store_explicit(&heapprof__cfg.rate, (int64_t)bytes,
	                      memory_order_relaxed);
	return 0;
}

HP_EXPORT uint64_t
heapprof_sample_rate(void)
{
	return (uint64_t)atomic_load_explicit(&heapprof__cfg.rate,
	                                      memory_order_relaxed);
}
