/*
 * prog_fork.c: fork while another thread allocates (the child must not
 * inherit a held profiler lock), then allocate in the child and in the
 * parent. Each process prints its truth as EXPECT lines to its own file:
 * OUT.parent and OUT.child. usage: prog_fork OUT
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Atomic int stop;
static void *volatile sink; /* keeps the leaked blocks from being optimised out */

static void *
spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		char *volatile p = malloc(64 + (size_t)(rand() % 4096));
		p[0] = 1;
		free(p);
	}
	return NULL;
}

__attribute__((noinline)) static void
site_child(void)
{
	for (int i = 0; i < 300; i++)
		sink = malloc(1000);
}

__attribute__((noinline)) static void
site_parent(void)
{
	for (int i = 0; i < 200; i++)
		sink = malloc(2000);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pthread_t th;
	pthread_create(&th, NULL, spinner, NULL);
	char path[4096];
	for (int round = 0; round < 20; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			if (round == 19) {
				site_child();
				snprintf(path, sizeof(path), "%s.child", argv[1]);
				FILE *f = fopen(path, "w");
				fprintf(f, "EXPECT site_child 300 300000 300 300000\n");
				fclose(f);
			}
			exit(0); /* exit: the child's profile is written */
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			return 1;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	site_parent();
	snprintf(path, sizeof(path), "%s.parent", argv[1]);
	FILE *f = fopen(path, "w");
	fprintf(f, "EXPECT site_parent 200 400000 200 400000\n");
	fclose(f);
	return 0;
}
