/*
 * rprog_forkfaults: forks 5 children, each of which reports the page
 * faults it took between fork() and the point where a spawning program
 * would exec (getrusage in the child: its counts start at the fork), and
 * prints the smallest. A shell or build tool that forks for every command
 * pays this per command: the profiler's fork handlers must not touch much
 * memory in the child (they once read 270 KB of endpoint state, 66 zero
 * pages, with no endpoint configured).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(void)
{
	int fds[2];
	if (pipe(fds) != 0)
		return 2;
	long best = -1;
	for (int i = 0; i < 5; i++) {
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0) {
			struct rusage ru;
			getrusage(RUSAGE_SELF, &ru);
			long n = ru.ru_minflt;
			if (write(fds[1], &n, sizeof(n)) != (ssize_t)sizeof(n))
				_exit(3);
			_exit(0);
		}
		int st;
		long n;
		if (waitpid(c, &st, 0) != c || read(fds[0], &n, sizeof(n)) != (ssize_t)sizeof(n))
			return 2;
		if (best < 0 || n < best)
			best = n;
	}
	printf("%ld\n", best);
	return 0;
}
