/*
 * rprog_signals.c: what SIGTERM and SIGINT do to a program, for
 * rel_signals.sh (issue 29, items 3-5: the profiler's handlers must not
 * change it).
 *
 *   rprog_signals wait nanosleep|poll|epoll TERM|INT
 *       Run as PID 1 of a PID namespace (unshare -pf). A forked child
 *       waits until its parent sleeps (state S in /proc), sends it the
 *       signal, and exits; the parent sleeps 300 ms in one call of the
 *       named kind. The kernel drops a signal left at SIG_DFL for a
 *       namespace's init, so the call must not fail: "done" and status 0;
 *       "EINTR" and status 3 if it did.
 *   rprog_signals altstack before|after [SIG]
 *       A 2 KiB alternate signal stack (the old MINSIGSTKSZ), then SIGTERM
 *       raised (or SIG: USR2, the profiler's dump signal then; status 0).
 *       after: sigaltstack once the library's constructor has run;
 *       before: sigaltstack, then signal(SIGTERM, SIG_DFL), which puts the
 *       library's ending handler in place again after the stack exists.
 *       Without the profiler: killed by SIGTERM (143).
 *   rprog_signals churn
 *       Allocates and frees for ever ("ready" on stdout first), keeping a
 *       block from keep_me live; for `timeout`.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/wait.h>

static int
sleeping(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static int
wait_mode(const char *how, int sig)
{
	pid_t parent = getpid();
	pid_t c = fork();
	if (c < 0)
		return 2;
	if (c == 0) {
		struct timespec ts = {0, 1000000};
		for (int i = 0; i < 5000 && !sleeping(parent); i++)
			nanosleep(&ts, NULL);
		kill(parent, sig);
		_exit(0);
	}
	int rc;
	errno = 0;
	if (!strcmp(how, "nanosleep")) {
		struct timespec ts = {0, 300 * 1000000};
		rc = nanosleep(&ts, NULL);
	} else if (!strcmp(how, "poll")) {
		rc = poll(NULL, 0, 300);
	} else {
		int ep = epoll_create1(0);
		struct epoll_event ev;
		rc = epoll_wait(ep, &ev, 1, 300);
	}
	int e = errno;
	waitpid(c, NULL, 0);
	if (rc < 0 && e == EINTR) {
		printf("EINTR\n");
		return 3;
	}
	printf("done\n");
	return 0;
}

static int
altstack_mode(const char *order, int sig)
{
	static char small[2048] __attribute__((aligned(16)));
	stack_t ss;
	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = small;
	ss.ss_size = sizeof(small);
	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		return 2;
	}
	if (!strcmp(order, "before"))
		signal(SIGTERM, SIG_DFL);
	printf("raising\n");
	fflush(stdout);
	raise(sig);
	printf("alive\n");
	return 0;
}

static __attribute__((noinline)) void *
keep_me(void)
{
	return malloc(1 << 20);
}

static _Noreturn void
churn_mode(void)
{
	static void *slots[1024];
	volatile void *keep = keep_me();
	(void)keep;
	printf("ready\n");
	fflush(stdout);
	for (unsigned i = 0;; i++) {
		unsigned k = (i * 2654435761u) % 1024;
		free(slots[k]);
		slots[k] = malloc(16 + (i % 61) * 24);
	}
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "wait"))
		return wait_mode(argv[2], !strcmp(argv[3], "INT") ? SIGINT : SIGTERM);
	if (argc >= 3 && !strcmp(argv[1], "altstack"))
		return altstack_mode(argv[2], argc >= 4 && !strcmp(argv[3], "USR2")
		                                  ? SIGUSR2 : SIGTERM);
	if (argc >= 2 && !strcmp(argv[1], "churn"))
		churn_mode();
	fprintf(stderr, "usage: rprog_signals wait|altstack|churn ...\n");
	return 2;
}
