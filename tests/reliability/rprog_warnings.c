/*
 * rprog_warnings: a program that writes its own lines on stderr while the
 * profiler has something to warn about in the middle of them
 * (rel_warnings.sh, issue 29: no line of the profiler in the middle of
 * the program's output).
 *
 *   rprog_warnings TRIGGER ENDING
 * TRIGGER, between the program's first and last lines:
 *   dfree   a block freed twice (sampled at HEAPPROF_RATE=1: a free of an
 *           invalid pointer in the profiler's range)
 *   dump    raise(HEAPPROF_SIGNAL=USR2) with HEAPPROF_OUT in a directory
 *           that does not exist (a dump that cannot be written)
 *   none    nothing
 * ENDING, after the last line:
 *   exit    exit(0)
 *   _exit   _exit(0)
 *   term    raise(SIGTERM)
 *   fork    fork: the child writes its own lines around a dump of its
 *           own (it cannot be written either) and exits; the parent waits
 *           for it, writes its last line and exits
 *   reopen  close(2), then a file (argv[3]) opened gets fd 2 (what
 *           coreutils' close_stdout and a daemon's freopen do), "data"
 *           written to it, exit(0)
 * Every line of the program is "prog[PID]: ...", written with write(2);
 * the last one of each process is "prog[PID]: last".
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void
line(const char *what)
{
	char b[128];
	int n = snprintf(b, sizeof(b), "prog[%ld]: %s\n", (long)getpid(), what);
	if (write(2, b, (size_t)n) != n)
		_exit(3);
}

static void
trigger(const char *t)
{
	if (!strcmp(t, "dfree")) {
		char *volatile p = malloc(100);
		p[0] = 1;
		free(p);
		free(p); /* the profiler's range: warned, ignored */
	} else if (!strcmp(t, "dump")) {
		raise(SIGUSR2);
	}
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	line("first");
	line("before");
	trigger(argv[1]);
	line("after");
	if (!strcmp(argv[2], "fork")) {
		pid_t c = fork();
		if (c == 0) {
			line("child first");
			trigger("dump");
			line("last");
			exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		line("last");
		exit(0);
	}
	line("last");
	if (!strcmp(argv[2], "_exit"))
		_exit(0);
	if (!strcmp(argv[2], "term")) {
		raise(SIGTERM);
		return 4; /* not reached */
	}
	if (!strcmp(argv[2], "reopen") && argc > 3) {
		close(2);
		int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd != 2)
			return 5;
		if (write(fd, "data\n", 5) != 5)
			return 6;
	}
	exit(0);
}
