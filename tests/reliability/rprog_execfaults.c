/*
 * rprog_execfaults N CMD [ARG...]: runs CMD N times (fork, exec, wait) and
 * prints the mean page faults of one run (the children's getrusage
 * counts, from the fork to the exit). What a short process pays for the
 * profiler's start-up and exit, where each page fault is ~12 us on the VMs
 * measured (BENCHMARKS.md): rel_cost.sh compares it with no profiler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = atoi(argv[1]);
	if (n <= 0)
		return 2;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0) {
			execv(argv[2], argv + 2);
			_exit(127);
		}
		int st;
		struct rusage ru;
		if (wait4(c, &st, 0, &ru) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 3;
		sum += ru.ru_minflt;
	}
	printf("%ld\n", sum / n);
	return 0;
}
