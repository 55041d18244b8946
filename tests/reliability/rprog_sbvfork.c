/*
 * rprog_sbvfork: a launcher that vforks and installs a seccomp filter in
 * the child before it execs (rel_seccomp.sh, rel.seccomp.vfork). The child
 * shares the parent's memory until the exec, and the filter binds the
 * child alone: the parent must go on as without the profiler (SIGTERM's
 * action still reported as the default) and be profiled (its exit profile
 * written). Before, the child's prctl marked the parent's memory "in a
 * sandbox": the parent wrote no profile and saw our SIGTERM handler.
 *
 *   rprog_sbvfork PROG   the child execs PROG (with no arguments)
 * Prints the child's status and SIGTERM's action, allocates, and ends by
 * raise(SIGTERM) (status 143), as a killed worker would.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static char *
sbvfork_keep(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {1, f};
	pid_t pid = vfork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(126);
		execl(argv[1], argv[1], (char *)NULL);
		_exit(127);
	}
	int st = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 3;
	struct sigaction old;
	sigaction(SIGTERM, NULL, &old);
	printf("child status %d; SIGTERM action %s\n", st,
	       !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL
	               ? "default" : "a handler");
	char *k = sbvfork_keep(8 << 20);
	printf("allocated %d\n", k != NULL);
	fflush(stdout);
	raise(SIGTERM);
	return 0;
}
