/*
 * rprog_fork.c: process life under the profiler (plan T13-T16).
 *
 *   deadlock SECS  glibc tst-malloc-fork-deadlock: 4 threads fork in a
 *                  loop (the child mallocs, frees and _exit(17)s; the
 *                  parent checks the status), 8 threads getline() a
 *                  50,000-character line and free it, 1 thread fflush(NULL)s.
 *   sigfork N      glibc tst-mallocfork2: single-threaded; a child process
 *                  floods SIGUSR1, the handler fork()s and waitpid()s, the
 *                  main loop mallocs and frees random sizes over 1009 slots
 *                  until N signals were handled.
 *   spawn SECS     4 threads allocate while 4 threads loop posix_spawn,
 *                  vfork + execve, system() and popen() of /bin/true-like
 *                  commands (every child inherits LD_PRELOAD).
 *   child N        jemalloc test_fork_child_usability: the parent keeps
 *                  blocks (site_parent), forks N children which free the
 *                  parent's blocks, allocate (site_child) and exit(0).
 * Prints "ok MODE" and exits 0, or "BAD ..." and exits 1.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static _Atomic int stop, bad;
static char *longline_file;

static void
note_bad(const char *what, long v)
{
	if (!atomic_exchange(&bad, 1))
		printf("BAD %s (%ld)\n", what, v);
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------- deadlock */

static void *
fork_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pid_t pid = fork();
		if (pid < 0) {
			note_bad("fork failed", errno);
			break;
		}
		if (pid == 0) {
			void *p = malloc(1000);
			memset(p, 1, 1000);
			free(p);
			p = malloc(100000);
			free(p);
			_exit(17);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 17)
			note_bad("child status", st);
	}
	return NULL;
}

static void *
getline_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		FILE *f = fopen(longline_file, "r");
		if (!f) {
			note_bad("fopen", errno);
			break;
		}
		char *line = NULL;
		size_t cap = 0;
		ssize_t n = getline(&line, &cap, f);
		if (n != 50001)
			note_bad("getline length", (long)n);
		free(line);
		fclose(f);
	}
	return NULL;
}

static void *
fflush_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		fflush(NULL);
	return NULL;
}

static int
mode_deadlock(double secs)
{
	char tmpl[] = "/tmp/rprog_fork.XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0)
		return 1;
	longline_file = tmpl;
	FILE *f = fdopen(fd, "w");
	for (int i = 0; i < 50000; i++)
		fputc('x' + i % 3, f);
	fputc('\n', f);
	fclose(f);
	pthread_t th[13];
	int n = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[n++], NULL, fork_thread, NULL);
	for (int i = 0; i < 8; i++)
		pthread_create(&th[n++], NULL, getline_thread, NULL);
	pthread_create(&th[n++], NULL, fflush_thread, NULL);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	unlink(tmpl);
	return 0;
}

/* ---------------------------------------------------------- sigfork */

static volatile sig_atomic_t handled;
static volatile sig_atomic_t sigfork_bad;

static void
sigusr1(int sig)
{
	(void)sig;
	int saved = errno;
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		sigfork_bad = 1;
	handled++;
	errno = saved;
}

static int
mode_sigfork(long target)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sigusr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pid_t parent = getpid();
	pid_t sender = fork();
	if (sender == 0) {
		struct timespec us = {0, 200000};
		for (;;) {
			if (kill(parent, SIGUSR1) != 0)
				_exit(0);
			nanosleep(&us, NULL);
		}
	}
	void *slots[1009] = {0};
	uint64_t s = 88172645463325252ULL;
	double t0 = now();
	while (handled < target && !sigfork_bad) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t k = s % 1009;
		free(slots[k]);
		slots[k] = malloc((s >> 20) % 70000);
		if (now() - t0 > 300) { /* ~200 handled signals a second */
			note_bad("no progress: handled", (long)handled);
			break;
		}
	}
	kill(sender, SIGKILL);
	waitpid(sender, NULL, 0);
	for (int i = 0; i < 1009; i++)
		free(slots[i]);
	if (sigfork_bad)
		note_bad("fork in handler failed", 0);
	return 0;
}

/* ---------------------------------------------------------- spawn */

static void *
alloc_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg + 1;
	void *keep[256] = {0};
	while (!atomic_load(&stop)) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		int k = (int)(s >> 56);
		free(keep[k]);
		keep[k] = malloc((s >> 24) % 20000);
	}
	for (int k = 0; k < 256; k++)
		free(keep[k]);
	return NULL;
}

static void *
spawn_thread(void *arg)
{
	int kind = (int)(uintptr_t)arg;
	char *argv_true[] = {"/bin/true", NULL};
	while (!atomic_load(&stop)) {
		int st = 0;
		pid_t pid;
		switch (kind) {
		case 0:
			if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv_true,
			                environ) != 0) {
				note_bad("posix_spawn", errno);
				return NULL;
			}
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				note_bad("posix_spawn child status", st);
			break;
		case 1:
			pid = vfork();
			if (pid == 0) {
				execve("/bin/true", argv_true, environ);
				_exit(127);
			}
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				note_bad("vfork child status", st);
			break;
		case 2:
			st = system("exit 3");
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 3)
				note_bad("system status", st);
			break;
		default: {
			FILE *p = popen("echo popen-ok", "r");
			char buf[64] = "";
			if (!p || !fgets(buf, sizeof(buf), p) ||
			    strcmp(buf, "popen-ok\n"))
				note_bad("popen output", 0);
			if (p && pclose(p) != 0)
				note_bad("pclose", 0);
			break;
		}
		}
	}
	return NULL;
}

static int
mode_spawn(double secs)
{
	pthread_t th[8];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, alloc_thread, (void *)(uintptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[4 + i], NULL, spawn_thread, (void *)(uintptr_t)i);
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* ---------------------------------------------------------- child */

__attribute__((noinline)) static void *
site_parent(size_t n)
{
	void *p = malloc(n);
	memset(p, 7, n);
	return p;
}

__attribute__((noinline)) static void *
site_child(size_t n)
{
	void *p = malloc(n);
	memset(p, 9, n);
	return p;
}

static int
mode_child(int nchildren)
{
	void *keep[100];
	for (int i = 0; i < 100; i++)
		keep[i] = site_parent(1000 + (size_t)i);
	for (int c = 0; c < nchildren; c++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 100; i++)
				free(keep[i]); /* the parent's sampled blocks */
			for (int i = 0; i < 10; i++)
				site_child(5000);
			exit(0); /* exit dump of the child */
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			note_bad("child status", st);
	}
	printf("EXPECT site_parent 100 %d 100 %d\n", 100 * 1000 + 4950,
	       100 * 1000 + 4950);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: rprog_fork deadlock|sigfork|spawn|child N\n");
		return 2;
	}
	const char *m = argv[1];
	double arg = atof(argv[2]);
	int rc = !strcmp(m, "deadlock") ? mode_deadlock(arg)
	       : !strcmp(m, "sigfork")  ? mode_sigfork((long)arg)
	       : !strcmp(m, "spawn")    ? mode_spawn(arg)
	       : !strcmp(m, "child")    ? mode_child((int)arg)
	                                : 2;
	if (rc == 0 && !atomic_load(&bad))
		printf("ok %s\n", m);
	return rc ? rc : atomic_load(&bad);
}
