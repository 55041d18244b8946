/*
 * rprog_sigstorm.c: a flood of dump signals must not starve the program.
 * Keeps N live blocks of distinct sizes (at rate 1, N buckets: each dump
 * takes milliseconds), forks a child that sends SIGUSR2 every 200 us, and
 * sleeps SECONDS with the classic nanosleep(&left, &left) loop, which only
 * makes progress when a signal handler returns before the next signal
 * arrives. Prints "ok slept" and exits 0.
 * usage: rprog_sigstorm N SECONDS
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rprog_sigstorm N SECONDS\n");
		return 2;
	}
	int n = atoi(argv[1]);
	double secs = atof(argv[2]);
	void **keep = calloc((size_t)n, sizeof(*keep));
	if (!keep)
		return 1;
	for (int i = 0; i < n; i++)
		keep[i] = malloc(16 + (size_t)i);
	pid_t parent = getpid();
	pid_t storm = fork();
	if (storm == 0) {
		struct timespec gap = {0, 200000};
		while (kill(parent, SIGUSR2) == 0 && getppid() == parent)
			nanosleep(&gap, NULL);
		_exit(0);
	}
	struct timespec left = {(time_t)secs,
	                        (long)((secs - (time_t)secs) * 1e9)};
	while (nanosleep(&left, &left) != 0)
		; /* interrupted by the storm: sleep what is left */
	kill(storm, SIGKILL);
	waitpid(storm, NULL, 0);
	for (int i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	printf("ok slept\n");
	return 0;
}
