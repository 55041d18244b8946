/*
 * rprog_forkstorm.c: fork children that exit at once, many times (issue 29
 * item 7), and children that write their profiles to a stream (item 6).
 * The parent first keeps blocks from 64 call sites (parent_site), so a
 * profile of its records takes real work to write.
 *
 *   loop N       N rounds of fork; the child exit(0)s (atexit handlers
 *                run), the parent waits for it.
 *   timer N      a 2 ms interval timer; its SIGALRM handler forks, the
 *                child exit(0)s; the main loop reaps until N children
 *                were reaped (a program doing its work between signals).
 *   alloc N      N rounds; each child allocates 8 MiB in child_site
 *                (sampled at any rate) before exit(0).
 *   wide N       no fork: N allocations of N distinct sizes, each freed at
 *                once (at rate 1, N records: a profile of N samples).
 *   burst K      K children at once, each making 5000 records of distinct
 *                sizes (a large profile each) and exiting together.
 *   busy S K     K children that allocate (child_site) and exit, then S
 *                seconds of allocation in the parent (periodic dumps are
 *                taken by sampled allocations).
 * Prints "ok MODE N" on stdout (unless QUIET=1 is set: for a profile on
 * stdout) and, on stderr, "children_cpu_us U": the reaped children's user
 * plus system time, and their minor page faults. Exit status 0, or 1 with "BAD ..." on stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SITES 64

static void *kept[SITES * 64];
static volatile sig_atomic_t forked;
static volatile sig_atomic_t fork_failed;

/* Distinct stacks: depth d below parent_site. */
static __attribute__((noinline)) void *
parent_site(int d, size_t n)
{
	if (d > 0) {
		void *p = parent_site(d - 1, n);
		__asm__ volatile("" ::: "memory");
		return p;
	}
	return malloc(n);
}

static __attribute__((noinline)) void *
child_site(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

static void
keep_records(void)
{
	for (int i = 0; i < SITES * 64; i++)
		kept[i] = parent_site(i % SITES, 4096 + (size_t)(i % 7) * 512);
}

static __attribute__((noreturn)) void
child_exit(int alloc)
{
	if (alloc) {
		void *volatile p = child_site(8u << 20);
		(void)p;
	}
	exit(0);
}

static int
reap(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "BAD child status 0x%x\n", st);
		return 1;
	}
	return 0;
}

static void
on_alarm(int sig)
{
	(void)sig;
	pid_t p = fork();
	if (p == 0)
		child_exit(0);
	if (p < 0)
		fork_failed = 1;
	else
		forked++;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s loop|timer|alloc N | busy S K\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	long n = strtol(argv[2], NULL, 10);
	int bad = 0;
	keep_records();
	if (!strcmp(mode, "loop") || !strcmp(mode, "alloc")) {
		int alloc = !strcmp(mode, "alloc");
		for (long i = 0; i < n && !bad; i++) {
			fflush(NULL);
			pid_t p = fork();
			if (p == 0)
				child_exit(alloc);
			if (p < 0) {
				perror("fork");
				return 1;
			}
			bad |= reap(p);
		}
	} else if (!strcmp(mode, "timer")) {
		fflush(NULL);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = {{0, 2000}, {0, 2000}};
		setitimer(ITIMER_REAL, &it, NULL);
		long reaped = 0;
		while (reaped < n && !fork_failed && !bad) {
			int st;
			pid_t p = waitpid(-1, &st, 0);
			if (p < 0)
				continue; /* EINTR, or no child yet (ECHILD) */
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "BAD child status 0x%x\n", st);
				bad = 1;
			}
			reaped++;
		}
		struct itimerval off;
		memset(&off, 0, sizeof(off));
		setitimer(ITIMER_REAL, &off, NULL);
		while (wait(NULL) > 0 || errno == EINTR)
			;
	} else if (!strcmp(mode, "burst")) {
		pid_t kids[256];
		long k = n < 256 ? n : 256;
		int go[2];
		if (pipe(go) != 0)
			return 1;
		fflush(NULL);
		for (long i = 0; i < k; i++) {
			kids[i] = fork();
			if (kids[i] == 0) {
				char c;
				close(go[1]);
				for (long j = 0; j < 5000; j++)
					free(child_site(16 + (size_t)j * 8));
				/* all exit (and write) together */
				while (read(go[0], &c, 1) < 0 && errno == EINTR)
					;
				exit(0);
			}
			if (kids[i] < 0)
				return 1;
		}
		close(go[0]);
		close(go[1]); /* end-of-file: every child goes on */
		for (long i = 0; i < k; i++)
			bad |= reap(kids[i]);
	} else if (!strcmp(mode, "wide")) {
		for (long i = 0; i < n; i++)
			free(parent_site((int)(i % SITES), 16 + (size_t)i * 8));
	} else if (!strcmp(mode, "busy") && argc > 3) {
		long k = strtol(argv[3], NULL, 10);
		for (long i = 0; i < k && !bad; i++) {
			fflush(NULL);
			pid_t p = fork();
			if (p == 0)
				child_exit(1);
			if (p < 0)
				return 1;
			bad |= reap(p);
		}
		double end = now() + (double)n;
		while (now() < end) {
			for (int i = 0; i < 256; i++) {
				free(kept[i]);
				kept[i] = parent_site(i % SITES, 4096);
			}
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	} else {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	fprintf(stderr, "children_cpu_us %lld minflt %ld\n",
	        (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	                ru.ru_utime.tv_usec + ru.ru_stime.tv_usec,
	        ru.ru_minflt);
	const char *q = getenv("QUIET");
	if (!bad && !(q && !strcmp(q, "1")))
		printf("ok %s %ld\n", mode, n);
	return bad;
}
