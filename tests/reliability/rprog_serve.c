/*
 * rprog_serve.c: program patterns that the profiler's delivery half (dump
 * files, the HTTP endpoint, push) and its life cycle must survive
 * unchanged (issue 13, defects 3-7 and 12). One mode per run:
 *
 *   sigexit exit|_exit SEED  a timer raises SIGINT 20-120 ms in, while the
 *                            program allocates; the handler calls exit(3)
 *                            or _exit(3). Exit status 3.
 *   sigfork N alloc|calc [GO] SIGALRM every 2 ms; its handler forks (the
 *                            child calls exit(0) one time in 8, else
 *                            _exit(0)) until N children, while the program
 *                            allocates (alloc) or computes (calc). Prints
 *                            "forked N". With GO, starts once the file GO
 *                            exists (at most 60 s later).
 *   unshare                  unshare(CLONE_NEWUSER) of a single-threaded
 *                            program. Prints "unshare ok" or the error.
 *   closefrom                closes fds 3.. (a daemon's closefrom), sleeps
 *                            2 s (prints the CPU time it took), then
 *                            listens on 8 sockets (they get the low fd
 *                            numbers back), connects to each and accepts:
 *                            prints "accepted K/8".
 *   daemon                   forks; the parent exits at once, the child
 *                            sleeps 30 s. Prints the child's pid.
 *   exitlock                 a thread holds the profiler's dump (a
 *                            heapprof_dump callback that never returns);
 *                            the main thread calls exit(0).
 *   forkstall                a thread holds a dump for 4 s; the main thread
 *                            forks meanwhile and prints how long fork took.
 *   short MS                 allocates and exits after MS milliseconds.
 *   idle MS                  allocates once, then sleeps MS milliseconds
 *                            without allocating.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

__attribute__((noinline)) static void
churn_once(uint64_t *s, void **slot)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	int k = (int)(*s >> 59);
	free(slot[k]);
	/* sizes past the tcache: glibc's arena lock is often held */
	slot[k] = malloc((*s >> 33) % 40000);
}

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- sigexit */

static volatile sig_atomic_t use_underscore_exit;

static void
on_int(int sig)
{
	(void)sig;
	if (use_underscore_exit)
		_exit(3);
	exit(3);
}

static int
mode_sigexit(const char *how, unsigned seed)
{
	use_underscore_exit = !strcmp(how, "_exit");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, NULL);
	struct itimerval it = {{0, 0}, {0, (long)(20 + seed % 100) * 1000}};
	/* SIGALRM's disposition is the default (terminate): route it. */
	struct sigaction alrm;
	memset(&alrm, 0, sizeof(alrm));
	alrm.sa_handler = on_int;
	sigaction(SIGALRM, &alrm, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	uint64_t s = seed;
	void *slot[32] = {0};
	for (;;)
		churn_once(&s, slot);
	return 0;
}

/* ---------------------------------------------------------------- sigfork */

static volatile sig_atomic_t forked, fork_failed;
static int max_forks;

static void
on_alrm_fork(int sig)
{
	(void)sig;
	int saved = errno;
	if (forked >= max_forks) {
		errno = saved;
		return;
	}
	pid_t p = fork();
	if (p == 0) {
		if (forked % 8 == 0)
			exit(0); /* runs the atexit handlers: the exit dump */
		_exit(0);
	}
	if (p > 0)
		forked++;
	else
		fork_failed++;
	errno = saved;
}

static int
mode_sigfork(int n, const char *what, const char *go)
{
	max_forks = n;
	for (int i = 0; go && i < 6000 && access(go, F_OK) != 0; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alrm_fork;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_REAL, &it, NULL);
	uint64_t s = 1;
	void *slot[32] = {0};
	volatile double x = 1;
	int alloc = !strcmp(what, "alloc");
	while (forked < max_forks && fork_failed < 1000) {
		if (alloc)
			churn_once(&s, slot);
		else
			for (int i = 0; i < 1000; i++)
				x = x * 1.0000001 + 1e-9;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	printf("forked %d\n", (int)forked);
	return 0;
}

/* ---------------------------------------------------------------- unshare */

static int
mode_unshare(void)
{
	sink = malloc(100);
	if (unshare(CLONE_NEWUSER) == 0) {
		puts("unshare ok");
		return 0;
	}
	printf("unshare: %s\n", strerror(errno));
	return 1;
}

/* -------------------------------------------------------------- closefrom */

static double
cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
	       ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

static int
mode_closefrom(void)
{
	for (int i = 0; i < 100; i++)
		sink = malloc(1000);
	fflush(stdout);
	syscall(SYS_close_range, 3U, ~0U, 0U);
	double c0 = cpu_ms();
	struct timespec two = {2, 0};
	nanosleep(&two, NULL);
	printf("cpu_ms %.0f\n", cpu_ms() - c0);
	enum { N = 8 };
	int ls[N], cs[N], ok = 0;
	for (int i = 0; i < N; i++) {
		ls[i] = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a;
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t al = sizeof(a);
		if (ls[i] < 0 || bind(ls[i], (struct sockaddr *)&a, sizeof(a)) ||
		    listen(ls[i], 8) || getsockname(ls[i], (struct sockaddr *)&a, &al)) {
			printf("listen: %s\n", strerror(errno));
			return 1;
		}
		cs[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cs[i] < 0 || connect(cs[i], (struct sockaddr *)&a, sizeof(a))) {
			printf("connect: %s\n", strerror(errno));
			return 1;
		}
	}
	/* Time for a profiler thread that polls our numbers to take the
	 * connections (it must not). */
	struct timespec one = {1, 0};
	nanosleep(&one, NULL);
	for (int i = 0; i < N; i++) {
		struct pollfd p = {ls[i], POLLIN, 0};
		if (poll(&p, 1, 5000) == 1) {
			int c = accept(ls[i], NULL, NULL);
			if (c >= 0) {
				ok++;
				close(c);
			}
		}
	}
	printf("accepted %d/%d (fds %d..%d)\n", ok, N, ls[0], ls[N - 1]);
	return 0;
}

/* ----------------------------------------------------------------- daemon */

static int
mode_daemon(void)
{
	sink = malloc(100);
	fflush(stdout);
	/* The parent prints the child's pid once the child is past fork (its
	 * fork handlers have run): on a loaded machine the test looked at the
	 * child's descriptors before the child had run at all. */
	int ready[2];
	if (pipe(ready) != 0)
		return 1;
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p > 0) {
		char c;
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			return 1;
		printf("%d\n", (int)p);
		return 0;
	}
	close(ready[0]);
	if (write(ready[1], "r", 1) != 1)
		_exit(1);
	close(ready[1]);
	setsid();
	int null = open("/dev/null", O_RDWR);
	dup2(null, 0), dup2(null, 1), dup2(null, 2);
	struct timespec thirty = {30, 0};
	nanosleep(&thirty, NULL);
	_exit(0);
}

/* ---------------------------------------------------- exitlock, forkstall */

typedef int dump_fn(int (*)(void *, const void *, size_t), void *, int);
static _Atomic int in_callback;
static int hold_ms;

static int
slow_write(void *arg, const void *p, size_t n)
{
	(void)arg, (void)p, (void)n;
	if (!atomic_exchange(&in_callback, 1)) {
		struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	return 0;
}

static void *
holder(void *arg)
{
	dump_fn *d = (dump_fn *)arg;
	d(slow_write, NULL, 1);
	return NULL;
}

static int
start_holder(int ms)
{
	dump_fn *d;
	void *sym = dlsym(RTLD_DEFAULT, "heapprof_dump");
	if (!sym) {
		puts("no heapprof_dump (not profiled)");
		return 1;
	}
	memcpy(&d, &sym, sizeof(d));
	hold_ms = ms;
	pthread_t th;
	pthread_create(&th, NULL, holder, (void *)d);
	pthread_detach(th);
	while (!atomic_load(&in_callback))
		sched_yield();
	return 0;
}

static int
mode_exitlock(void)
{
	sink = malloc(1000);
	if (start_holder(1000000))
		return 1;
	puts("exiting");
	fflush(stdout);
	exit(0);
}

static int
mode_forkstall(void)
{
	sink = malloc(1000);
	if (start_holder(4000))
		return 1;
	double t0 = now_ms();
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	double t1 = now_ms();
	waitpid(p, NULL, 0);
	printf("fork_ms %.0f\n", t1 - t0);
	return 0;
}

/* ------------------------------------------------------------------ short */

static int
mode_short(int ms)
{
	uint64_t s = 5;
	void *slot[32] = {0};
	double end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 100; i++)
			churn_once(&s, slot);
	puts("done");
	return 0;
}

static int
mode_idle(int ms)
{
	sink = malloc(1000);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	puts("done");
	return 0;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "sigexit") && argc > 3)
		return mode_sigexit(argv[2], (unsigned)atoi(argv[3]));
	if (!strcmp(m, "sigfork") && argc > 3)
		return mode_sigfork(atoi(argv[2]), argv[3], argc > 4 ? argv[4] : NULL);
	if (!strcmp(m, "unshare"))
		return mode_unshare();
	if (!strcmp(m, "closefrom"))
		return mode_closefrom();
	if (!strcmp(m, "daemon"))
		return mode_daemon();
	if (!strcmp(m, "exitlock"))
		return mode_exitlock();
	if (!strcmp(m, "forkstall"))
		return mode_forkstall();
	if (!strcmp(m, "idle") && argc > 2)
		return mode_idle(atoi(argv[2]));
	if (!strcmp(m, "short") && argc > 2)
		return mode_short(atoi(argv[2]));
	fprintf(stderr, "usage: rprog_serve MODE ...\n");
	return 2;
}
