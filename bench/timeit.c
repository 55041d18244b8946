/*
 * timeit.c: runs a command and reports its wall time, CPU time and peak RSS,
 * for bench/run_capture.sh (like /usr/bin/time, with ns wall resolution).
 *
 *   timeit OUTFILE CMD [ARGS...]
 *
 * Writes one line "wall_s user_s sys_s maxrss_kb status" to OUTFILE, where
 * the CPU times and peak RSS come from wait4() (the command and every
 * descendant it waited for; the RSS is the largest single process). The
 * command's stdout and stderr pass through. Exits with the command's status
 * (128+signal if it was killed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: timeit OUTFILE CMD [ARGS...]\n");
		return 2;
	}
	FILE *out = fopen(argv[1], "w");
	if (!out) {
		fprintf(stderr, "timeit: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	fflush(NULL);
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		perror("timeit: fork");
		return 2;
	}
	if (pid == 0) {
		fclose(out);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "timeit: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("timeit: wait4");
			return 2;
		}
	}
	double wall = now_s() - t0;
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* wait4's rusage covers the child only; RUSAGE_CHILDREN adds the
	 * grandchildren the child waited for (heaptrack's helper, gcc's cc1). */
	struct rusage all;
	getrusage(RUSAGE_CHILDREN, &all);
	fprintf(out, "%.6f %.6f %.6f %ld %d\n", wall, tv_s(all.ru_utime),
	        tv_s(all.ru_stime), all.ru_maxrss > ru.ru_maxrss ? all.ru_maxrss : ru.ru_maxrss,
	        rc);
	fclose(out);
	return rc;
}
