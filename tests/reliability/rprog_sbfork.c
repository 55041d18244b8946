/*
 * rprog_sbfork: a worker that forks after its seccomp filter is in
 * (rel_seccomp.sh, rel.seccomp.fork_after). The filter allows what fork,
 * malloc, waitpid and exit need (glibc's fork makes clone and
 * set_robust_list, nothing else) and kills the rest, getpid included.
 * Each child allocates and _exits with a status the parent adds up; a
 * child killed counts -1000 x its signal. Prints "sum 60" when all live.
 * Before, every child died of SIGSYS in the profiler's fork handler
 * (ending.c called getpid): "sum -155000".
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static const int ok[] = {SYS_brk, SYS_mmap, SYS_munmap, SYS_mremap, SYS_mprotect,
	SYS_madvise, SYS_futex, SYS_getrandom, SYS_exit_group, SYS_exit, SYS_write,
	SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_clone, SYS_clone3,
	SYS_set_robust_list, SYS_rseq, SYS_wait4, SYS_fstat, SYS_newfstatat};
int
main(void)
{
	struct sock_filter f[64];
	int n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ok[i], 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog prog = {(unsigned short)n, f};
	printf("start\n");
	fflush(stdout);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		return 9;
	long sum = 0;
	for (int r = 0; r < 5; r++) {
		pid_t c = fork();
		if (c == 0) {
			char *p = malloc(100000);
			memset(p, r, 100000);
			_exit(p[5] + 10);
		}
		int st = 0;
		waitpid(c, &st, 0);
		sum += WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st) * 1000;
	}
	printf("sum %ld\n", sum);
	return 0;
}
