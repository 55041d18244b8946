/*
 * rprog_forkrange.c: fork while other threads take and give back large
 * sampled blocks at the range's frontier. Three threads loop malloc(~520 KiB)
 * / free (each free hands the run back to PROT_NONE and lowers the commit
 * mark); main forks for SECS seconds (argv[1]); each child allocates three
 * large blocks, fills and checks them, and _exits 0 (1: a block did not
 * hold its pattern, 2: malloc failed). A child that inherited the range's
 * marks half updated wrote to PROT_NONE memory: SIGSEGV.
 * Prints "forks N bad M"; exits 0 when M is 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop; /* a plain flag: the churn loop stays tight */

static void *
churn(void *a)
{
	unsigned s = (unsigned)(uintptr_t)a;
	while (!stop) {
		char *p = malloc((size_t)(520 + rand_r(&s) % 64) << 10);
		if (p)
			p[0] = 1;
		free(p);
	}
	return NULL;
}

static int
child(void)
{
	enum { N = 3 };
	unsigned char *b[N];
	size_t sz[N];
	for (int i = 0; i < N; i++) {
		sz[i] = (size_t)(520 + i * 97) << 10;
		b[i] = malloc(sz[i]);
		if (!b[i])
			return 2;
		memset(b[i], i + 1, sz[i]);
	}
	for (int i = 0; i < N; i++)
		for (size_t k = 0; k < sz[i]; k += 4096)
			if (b[i][k] != i + 1 || b[i][sz[i] - 1] != i + 1)
				return 1;
	for (int i = 0; i < N; i++)
		free(b[i]);
	return 0;
}

int
main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10;
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	time_t end = time(NULL) + secs;
	int forks = 0, bad = 0;
	while (time(NULL) < end) {
		pid_t p = fork();
		if (p == 0)
			_exit(child());
		int st;
		if (p < 0 || waitpid(p, &st, 0) != p)
			continue;
		forks++;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bad++;
			fprintf(stderr, "child: %s %d\n",
			        WIFEXITED(st) ? "exit" : "signal",
			        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		}
	}
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("forks %d bad %d\n", forks, bad);
	return bad != 0;
}
