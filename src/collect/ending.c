/*
 * ending.c: the exit profile of processes that do not leave through
 * exit(3): killed by SIGTERM or SIGINT (timeout, docker stop, systemd,
 * Ctrl-C), or leaving through _exit(2) (Python's multiprocessing workers,
 * forked children). Linked into libheapprof.so only (LD_PRELOAD): the
 * static library leaves the program's signals and _exit alone.
 *
 * SIGTERM and SIGINT: at start, when the program inherited the default
 * action, a handler of ours takes its place. It writes the exit profile
 * (the exit dump's rules: serve/dump.c waits a bounded time for a dump in
 * progress, on a stack of its own), puts the default action back and
 * raises the signal again, so the process still dies of it (status 143,
 * 130, or timeout's 124). A signal that lands while the thread is inside
 * the profiler (a sampled malloc, a dump) is held: the handler notes it in
 * the thread's held_sig and returns; hp_leave, when the thread leaves the
 * profiler, raises it again, and the profile is written then. Nothing is
 * printed: the program's stderr is the program's.
 *
 * Where a handler would change what the program sees, there is none:
 *   - PID 1 of a PID namespace (a container's init): the kernel drops a
 *     SIGTERM or SIGINT left at SIG_DFL there without waking anything; a
 *     handler makes it deliverable, and nanosleep, poll or epoll_wait then
 *     fail with EINTR. No handler there, unless HEAPPROF_SIGNAL names the
 *     signal (the user asked for a profile at it).
 *   - SIG_IGN, or a handler of the program's: left alone.
 *   - No SA_ONSTACK: the program's alternate signal stack may be too small
 *     for the signal frame (2 KiB, the old MINSIGSTKSZ, against AVX-512's
 *     3.5 KiB frame): on it the kernel forced SIGSEGV where SIG_DFL ended
 *     the process with SIGTERM. Our handlers run their dumps on a stack of
 *     their own (serve/dump_stack.c) and need only the frame.
 *
 * To the program our handler IS the default action: sigaction(2),
 * signal(3) and their aliases are interposed, so a query reports SIG_DFL
 * (Python installs its KeyboardInterrupt handler only over SIG_DFL), and
 * setting SIG_DFL (the "clean up, restore, raise" idiom) sets ours. Any
 * other handler or SIG_IGN the program sets replaces ours, as it should.
 * glibc's own internal calls (system(3), siginterrupt(3)) bypass this and
 * save and restore our handler as they find it.
 *
 * _exit and _Exit: the exit profile first, in the process the profiler
 * knows (not in a vfork child, which shares its parent's memory, nor in a
 * raw clone without fork handlers), then the real _exit. Both endings
 * print the warnings held while the program ran (warn.c) last. A raw exit_group
 * system call is not seen.
 *
 * HEAPPROF_EXIT=0 turns all of this off, except for a dump signal
 * (HEAPPROF_SIGNAL) of TERM or INT, which then means: a profile when the
 * signal arrives, and the program ends as the signal asks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "collect.h"

/* glibc's own entry points, bound at link time, for calls before init. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);

/* How long an ending waits for another thread's exit profile. */
#define EXIT_WAIT_OTHER_MS 30000

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*exit_fn)(int);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

/* Written once in heapprof__ending_init (before the program's code runs,
 * the constructor has priority 101), read-only afterwards. */
static sigaction_fn real_sigaction;
static exit_fn real_exit;
static signal_fn real_signal, real_sysv_signal;
static int ending_on[2];     /* [0] SIGTERM, [1] SIGINT: ours when SIG_DFL */
static int exit_on;          /* _exit dumps (and pushes the last interval) */
/* The process whose memory this is (every fork child writes its pid; 0:
 * the process init ran in, heapprof__init_pid, left unwritten at start-up:
 * this is the fork handlers' page, one more page fault): a vfork child has
 * another pid and must not dump. */
static _Atomic long self_pid HP_FORK_BSS;

/* This process's pid, as the last fork handler saw it. */
static long
this_pid(void)
{
	long self = atomic_load(&self_pid);
	return self ? self : heapprof__init_pid;
}

/* The warnings held while the program ran (warn.c), before the process
 * ends; not in a vfork child, whose memory (and held lines) are its
 * parent's. No system call when nothing is held (a fork child's _exit). */
static void
flush_held(void)
{
	if (heapprof__warn_held() && (long)getpid() == this_pid())
		heapprof__warn_flush(1);
}

static int
slot(int sig)
{
	return sig == SIGTERM ? 0 : sig == SIGINT ? 1 : -1;
}

HP_RARE static int
call_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return real_sigaction ? real_sigaction(sig, act, old)
	                      : __sigaction(sig, act, old);
}

/* The exit profile, if this process may write one here and now. */
HP_RARE static void
ending_dump(int dump, const char *busy_msg)
{
	hp_tls *t = &heapprof__tls;
	if (atomic_load(&heapprof__sandbox))
		return; /* no profile, no system call (sandbox.c) */
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire) ||
	    (long)getpid() != this_pid())
		return;
	if (t->busy) {
		if (busy_msg)
			heapprof__warn(busy_msg);
		return;
	}
	int saved = errno;
	hp_enter(t);
	if (!heapprof__hooks()) {
		hp_leave(t);
		errno = saved;
		return;
	}
	/* A signal handler's code, or _exit (the exit of signal handlers and
	 * of fork children): no loader lock for build ids (snapshot.c). */
	heapprof__in_handler++;
	heapprof__delivery.exit(dump);
	heapprof__in_handler--;
	/* Another thread's ending (exit, _exit, the other signal, or the same
	 * one sent twice: timeout signals the child and then its group) may
	 * have begun the profile: let it finish before this thread kills the
	 * process or exits. */
	heapprof__delivery.exit_wait(EXIT_WAIT_OTHER_MS);
	hp_leave(t);
	errno = saved;
}

/* When this thread's held signal was first held (CLOCK_MONOTONIC_COARSE
 * ms): a thread that stays busy for good (a siglongjmp out of a handler
 * that interrupted the profiler, RELIABILITY.md) would hold it for ever;
 * the same signal once more, this long after, ends the process without a
 * profile. Only the owning thread, in its handler. */
#define HOLD_MAX_MS 10000
static __thread int64_t held_since __attribute__((tls_model("initial-exec")));

static int64_t
coarse_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGTERM or SIGINT, with our handler in place of the default action.
 *
 * The first process of a PID namespace gets this handler only when
 * HEAPPROF_SIGNAL names the signal: the user asked for a profile at it.
 * Without a handler the kernel would have ignored the signal there, so the
 * process runs on: the profile is written without marking the process as
 * exiting (later dumps and the real exit's profile still come) and the
 * handler stays in place (rel.pid1.last). */
static void
on_ending(int sig, siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	hp_tls *t = &heapprof__tls;
	if (t->busy) {
		/* Inside the profiler: held until hp_leave (the top). */
		int64_t now = coarse_ms();
		if (!t->held_sig) {
			held_since = now;
			t->held_sig = sig;
			return;
		}
		if (now - held_since < HOLD_MAX_MS)
			return;
		/* Stuck inside: the default action without a profile. */
	}
	int survives = getpid() == 1;
	ending_dump(survives ? 2 : 1, NULL);
	if (survives)
		return;
	flush_held();
	/* The default action, now: the process dies of the signal. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	call_sigaction(sig, &dfl, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

/* hp_leave, leaving the profiler with a signal held: that signal again,
 * now. Our handler (or whatever the program has set since) takes it as it
 * would have at the moment it arrived, had the thread been outside. */
HP_RARE void
heapprof__ending_held(hp_tls *t)
{
	int sig = t->held_sig;
	t->held_sig = 0;
	int saved = errno;
	raise(sig);
	errno = saved;
}

static int
is_ours(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_ending;
}

static void
our_action(struct sigaction *a)
{
	memset(a, 0, sizeof(*a));
	a->sa_sigaction = on_ending;
	a->sa_flags = SA_SIGINFO | SA_RESTART; /* no SA_ONSTACK: the top */
	sigfillset(&a->sa_mask);
}

/* Whether our handler may stand in for SIG_DFL of signal slot k in
 * process `pid`: not in a namespace's init, where SIG_DFL means ignored,
 * unless the user named the signal in HEAPPROF_SIGNAL. */
HP_RARE static int
may_handle(int k, long pid)
{
	const int sigs[2] = {SIGTERM, SIGINT};
	return ending_on[k] && (pid != 1 || heapprof__cfg.signal == sigs[k]);
}

/* Our handler where the action is SIG_DFL and may_handle says so; SIG_DFL
 * back where ours is and may_handle says no (a fork child that became
 * the init of a new namespace, unshare(CLONE_NEWPID)). */
HP_RARE static void
set_ours(long pid)
{
	const int sigs[2] = {SIGTERM, SIGINT};
	for (int i = 0; i < 2; i++) {
		struct sigaction cur, mine;
		if (!ending_on[i] || call_sigaction(sigs[i], NULL, &cur) != 0)
			continue;
		if (is_ours(&cur)) {
			if (!may_handle(i, pid)) {
				memset(&mine, 0, sizeof(mine));
				mine.sa_handler = SIG_DFL;
				call_sigaction(sigs[i], &mine, NULL);
			}
		} else if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL &&
		           may_handle(i, pid)) {
			/* else ignored, or a handler: the program's */
			our_action(&mine);
			call_sigaction(sigs[i], &mine, NULL);
		}
	}
}

HP_RARE void
heapprof__ending_init(void)
{
	/* The names in .data, not string literals: .data's pages are faulted
	 * in by the loader anyway, the constants' page is not (one fault in
	 * every process; dlsym reads the name). */
	static char n_sigaction[] = "sigaction", n_exit[] = "_exit",
	            n_signal[] = "signal", n_sysv_signal[] = "sysv_signal";
	real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, n_sigaction);
	real_exit = (exit_fn)dlsym(RTLD_NEXT, n_exit);
	real_signal = (signal_fn)dlsym(RTLD_NEXT, n_signal);
	real_sysv_signal = (signal_fn)dlsym(RTLD_NEXT, n_sysv_signal);
	exit_on = heapprof__cfg.at_exit || heapprof__cfg.push[0];
	const int sigs[2] = {SIGTERM, SIGINT};
	for (int i = 0; i < 2; i++)
		ending_on[i] = heapprof__cfg.at_exit ||
		               heapprof__cfg.signal == sigs[i];
	set_ours(heapprof__init_pid);
}

HP_RARE void
heapprof__ending_atfork_child(void)
{
	/* The parent's held signal was the parent's. */
	heapprof__tls.held_sig = 0;
	/* Under a seccomp filter the ending is off (heapprof__ending_sandbox)
	 * and getpid may be what the filter kills: a fork child after the
	 * filter died of SIGSYS in this handler (rel.seccomp.fork_after). */
	if (atomic_load(&heapprof__sandbox))
		return;
	long pid = (long)getpid(), parent = this_pid();
	atomic_store(&self_pid, pid);
	/* The init of a namespace and its children differ (may_handle): only
	 * there a system call to look. */
	if ((pid == 1) != (parent == 1))
		set_ours(pid);
}

/* ---------------------------------------------------- the interposers */

HP_EXPORT int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int k = slot(sig);
	if (k < 0 || !ending_on[k])
		return call_sigaction(sig, act, old);
	struct sigaction mine;
	if (act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL &&
	    may_handle(k, this_pid())) {
		our_action(&mine);
		act = &mine;
	}
	int rc = call_sigaction(sig, act, old);
	if (rc == 0 && old && is_ours(old)) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = SIG_DFL;
	}
	return rc;
}

/* signal(3): glibc's for every other signal; for ours, the same semantics
 * through sigaction above: BSD (SA_RESTART, the signal blocked in its
 * handler), or System V (SA_RESETHAND | SA_NODEFER). */
static sighandler_t
set_handler(int sig, sighandler_t h, int flags)
{
	int k = slot(sig);
	signal_fn real = flags & SA_NODEFER ? real_sysv_signal : real_signal;
	if ((k < 0 || !ending_on[k]) && real)
		return real(sig, h);
	struct sigaction a, old;
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	if (!(flags & SA_NODEFER) && sig > 0 && sig < NSIG)
		sigaddset(&a.sa_mask, sig);
	if (h == SIG_ERR || sigaction(sig, &a, &old) != 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	return old.sa_handler;
}

HP_EXPORT sighandler_t
signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

HP_EXPORT sighandler_t
bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

HP_EXPORT sighandler_t
ssignal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

HP_EXPORT sighandler_t
sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

HP_EXPORT sighandler_t
__sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* _exit and _Exit: usually a signal handler's way out. The dump loads no
 * library (libz is linked in, hpmath.h), so one inside an interrupted
 * dlopen or dlclose writes its profile too (rel.termdl._exit_status_3:
 * status 127 in 6 runs of 24 while it loaded libz and libm). */
HP_RARE static _Noreturn void
leave(int status)
{
	if (exit_on)
		ending_dump(heapprof__cfg.at_exit, "_exit() called inside the profiler (from a signal "
		            "handler?): no exit profile");
	flush_held();
	if (real_exit)
		real_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

HP_RARE HP_EXPORT void
_exit(int status)
{
	leave(status);
}

HP_RARE HP_EXPORT void
_Exit(int status)
{
	leave(status);
}

/* A seccomp filter is going in (sandbox.c): no ending profile from now
 * on, and the handlers of ours give SIG_DFL back now, while sigaction is
 * still allowed, so that SIGTERM and SIGINT kill as they would without
 * the profiler (our handler's own calls could be what the filter kills,
 * with SIGSYS). ending_on and exit_on are written once more, here. */
HP_RARE void
heapprof__ending_sandbox(void)
{
	const int sigs[2] = {SIGTERM, SIGINT};
	exit_on = 0;
	for (int i = 0; i < 2; i++) {
		struct sigaction cur, dfl;
		if (!ending_on[i])
			continue;
		ending_on[i] = 0;
		if (call_sigaction(sigs[i], NULL, &cur) != 0 || !is_ours(&cur))
			continue;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		call_sigaction(sigs[i], &dfl, NULL);
	}
}
