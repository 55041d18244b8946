/*
 * rprog_ending: programs that end without exit(3) (rel_ending.sh).
 * Each keeps 4 MiB allocated by ending_keep() (in the profile's in-use
 * space) and prints "ready" once it may be signalled.
 *
 *   rprog_ending wait       sleeps until killed (timeout -s TERM, kill -INT)
 *   rprog_ending churn      allocates and frees 64 KiB every millisecond
 *                           until killed (periodic dumps come with samples)
 *   rprog_ending threads    4 threads sleep, main waits until killed
 *   rprog_ending query      prints what sigaction() and signal() report
 *                           for SIGTERM and SIGINT ("dfl" each), then waits
 *   rprog_ending own        a SIGTERM handler of its own that _exits 7
 *   rprog_ending reraise    a SIGTERM handler that restores SIG_DFL and
 *                           raises again (the cleanup idiom)
 *   rprog_ending ignore     SIGTERM ignored: survives it, exits 0 on SIGUSR1
 *   rprog_ending fork       a child allocates and leaves through _exit(0),
 *                           another through _Exit(0); the parent exits 0
 *   rprog_ending vfork      vfork + _exit in the child: no profile there
 *   rprog_ending closeerr F closes stderr, opens F (it gets fd 2), writes
 *                           "mine" to it and exits 0
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[64];
static void *
sleeper(void *arg)
{
	(void)arg;
	for (;;)
		usleep(100000);
	return NULL;
}

static __attribute__((noinline)) void
ending_keep(void)
{
	for (int i = 0; i < 64; i++) {
		kept[i] = malloc(65536);
		memset(kept[i], 1, 65536);
	}
}

static void
ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

static void
wait_forever(void)
{
	for (int i = 0; i < 6000; i++) /* 10 minutes at most */
		usleep(100000);
}

static void
own(int sig)
{
	(void)sig;
	_exit(7);
}

static void
reraise(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static volatile sig_atomic_t usr1;

static void
on_usr1(int sig)
{
	(void)sig;
	usr1 = 1;
}

static const char *
name(void (*h)(int))
{
	return h == SIG_DFL ? "dfl" : h == SIG_IGN ? "ign" : "handler";
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "wait";
	ending_keep();
	if (!strcmp(m, "query")) {
		struct sigaction a;
		sigaction(SIGTERM, NULL, &a);
		printf("sigaction TERM %s\n", (a.sa_flags & SA_SIGINFO) ? "handler"
		                                                         : name(a.sa_handler));
		void (*h)(int) = signal(SIGINT, SIG_DFL);
		printf("signal INT %s\n", name(h));
		h = signal(SIGINT, own);
		printf("signal INT again %s\n", name(h));
		signal(SIGINT, SIG_DFL);
	} else if (!strcmp(m, "own")) {
		signal(SIGTERM, own);
	} else if (!strcmp(m, "reraise")) {
		signal(SIGTERM, reraise);
	} else if (!strcmp(m, "ignore")) {
		signal(SIGTERM, SIG_IGN);
		signal(SIGUSR1, on_usr1);
		ready();
		for (int i = 0; i < 6000 && !usr1; i++)
			usleep(100000);
		return 0;
	} else if (!strcmp(m, "threads")) {
		pthread_t th;
		for (int i = 0; i < 4; i++)
			pthread_create(&th, NULL, sleeper, NULL);
	} else if (!strcmp(m, "closeerr") && argc > 2) {
		close(2);
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd != 2 || write(fd, "mine\n", 5) != 5)
			return 1;
		return 0;
	} else if (!strcmp(m, "fork") || !strcmp(m, "vfork")) {
		for (int k = 0; k < 2; k++) {
			pid_t p = !strcmp(m, "fork") ? fork() : vfork();
			if (p == 0) {
				if (m[0] == 'f') {
					ending_keep();
					if (k)
						_Exit(0);
				}
				_exit(0);
			}
			int st;
			waitpid(p, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				return 1;
		}
		printf("done\n");
		return 0;
	}
	ready();
	if (!strcmp(m, "churn")) {
		for (int i = 0; i < 600000; i++) { /* 10 minutes at most */
			void *volatile p = malloc(65536);
			free(p);
			usleep(1000);
		}
		return 3;
	}
	wait_forever();
	return 3;
}
