/*
 * rprog_seccomp: a worker in a seccomp sandbox (rel_seccomp.sh). After
 * start-up it installs a filter that allows what glibc's malloc and the
 * program itself need and acts on everything else, then allocates
 * (small, large and huge blocks; realloc growing and shrinking them;
 * calloc, posix_memalign; a thread of its own), prints a checksum and
 * exits. Without the profiler it runs to the end; with it, it must too.
 *
 *   rprog_seccomp MODE [tsync] [term]
 *                                   MODE: none (no filter), kill
 *                                   (SECCOMP_RET_KILL_PROCESS), trap
 *                                   (SECCOMP_RET_TRAP: SIGSYS), errno
 *                                   (SECCOMP_RET_ERRNO(EPERM)), prctl (kill,
 *                                   installed with prctl(PR_SET_SECCOMP)),
 *                                   madvise (only madvise fails, EPERM; a
 *                                   raw syscall the profiler does not see);
 *                                   tsync: SECCOMP_FILTER_FLAG_TSYNC (every
 *                                   thread); term: ends by raise(SIGTERM)
 *   rprog_seccomp launch MODE PROG ARGS...
 *                                   installs the filter (allowing also what
 *                                   exec and the dynamic loader need) and
 *                                   execs PROG: the filter is inherited.
 *
 * The filter is raw BPF (<linux/filter.h>), installed with the seccomp
 * system call through syscall(3) as libseccomp does (glibc has no seccomp
 * wrapper), or through prctl. errno is checked around every allocation:
 * whatever the profiler's own calls meet (EPERM from the filter) must not
 * leak into the program's errno. The exit status and stdout are the
 * test's evidence; "errno changed" on stdout is a failure. Under the
 * profiler, heapprof_dump_file()'s return value goes to stderr ("api N").
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What glibc's malloc, free and realloc make, and what this program's
 * own calls (printf, pthread_create/join, exit) make. */
static const int allowed[] = {
	SYS_brk, SYS_mmap, SYS_munmap, SYS_mremap, SYS_mprotect, SYS_madvise,
	SYS_futex, SYS_getrandom, SYS_exit_group, SYS_exit, SYS_write,
	SYS_read, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_clock_gettime,
	SYS_clone, SYS_clone3, SYS_set_robust_list, SYS_rseq,
	SYS_fstat, SYS_newfstatat, SYS_rt_sigaction, SYS_ioctl,
};
/* And raise(3), only with "term": getpid is what the profiler's dump
 * paths call most, so the other runs keep it forbidden. */
static const int allowed_term[] = {SYS_getpid, SYS_gettid, SYS_tgkill};
/* And what execve and the dynamic loader make, for the launcher. */
static const int allowed_exec[] = {
	SYS_execve, SYS_openat, SYS_open, SYS_close, SYS_pread64,
	SYS_arch_prctl, SYS_set_tid_address, SYS_prlimit64, SYS_access,
	SYS_readlink, SYS_uname,
	SYS_fcntl, SYS_dup, SYS_lseek, SYS_getcwd,
};

/* "madvise": every call allowed but madvise, which fails with EPERM;
 * installed with a raw system call instruction, which the profiler does
 * not see, so it samples on and its madvise(MADV_POPULATE_*) calls fail:
 * errno must stay the program's, and the profile be written. */
static int
install_raw_madvise(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "0"((long)SYS_seccomp), "D"((long)SECCOMP_SET_MODE_FILTER),
	                   "S"(0L), "d"(&prog)
	                 : "rcx", "r11", "memory");
	return ret == 0 ? 0 : -1;
}

static int
install(const char *mode, int for_exec, int tsync, int term)
{
	if (strcmp(mode, "madvise") == 0)
		return install_raw_madvise();
	uint32_t act;
	if (strcmp(mode, "kill") == 0 || strcmp(mode, "prctl") == 0)
		act = SECCOMP_RET_KILL_PROCESS;
	else if (strcmp(mode, "trap") == 0)
		act = SECCOMP_RET_TRAP;
	else if (strcmp(mode, "errno") == 0)
		act = SECCOMP_RET_ERRNO | EPERM;
	else
		return 0; /* none */
	size_t na = sizeof(allowed) / sizeof(allowed[0]);
	size_t ne = for_exec ? sizeof(allowed_exec) / sizeof(allowed_exec[0]) : 0;
	size_t nt = term ? sizeof(allowed_term) / sizeof(allowed_term[0]) : 0;
	struct sock_filter f[4 + 2 * (sizeof(allowed) / sizeof(allowed[0]) +
	                              sizeof(allowed_exec) / sizeof(allowed_exec[0]) +
	                              sizeof(allowed_term) / sizeof(allowed_term[0])) + 2];
	size_t n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	                                      AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < na + ne + nt; i++) {
		int nr = i < na ? allowed[i] : i < na + ne ? allowed_exec[i - na]
		                                             : allowed_term[i - na - ne];
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                      (uint32_t)nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, act);
	struct sock_fprog prog = {(unsigned short)n, f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("PR_SET_NO_NEW_PRIVS");
		return -1;
	}
	int rc;
	if (strcmp(mode, "prctl") == 0)
		rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	else
		rc = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		                  tsync ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
	if (rc != 0) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

static uint64_t sum;
static int errno_bad;

static void
check_errno(const char *what)
{
	if (errno != 4242 && !errno_bad) {
		printf("errno changed by %s: %d\n", what, errno);
		errno_bad = 1;
	}
	errno = 4242;
}

static __attribute__((noinline)) void
churn(int rounds)
{
	static void *keep[64];
	errno = 4242;
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 64; i++) {
			size_t sz = (size_t)(16 + (i * 37 + r * 11) % 4000);
			void *p = malloc(sz);
			check_errno("malloc");
			if (!p)
				continue;
			memset(p, i, sz);
			sum += ((unsigned char *)p)[sz - 1];
			free(keep[i]);
			check_errno("free");
			keep[i] = p;
			if (i % 7 == 0) {
				void *q = realloc(keep[i], sz * 3);
				check_errno("realloc");
				if (q)
					keep[i] = q;
			}
		}
	}
	/* Large and huge blocks: the range grows (and gives back). */
	size_t big[] = {600 << 10, 3 << 20, 16 << 20, 64 << 20};
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		char *p = malloc(big[i]);
		check_errno("malloc big");
		if (!p)
			continue;
		memset(p, 3, 65536);
		char *q = realloc(p, big[i] * 2);
		check_errno("realloc big");
		if (q)
			p = q;
		q = realloc(p, big[i] / 2);
		check_errno("realloc shrink");
		if (q)
			p = q;
		sum += (unsigned char)p[100];
		free(p);
		check_errno("free big");
	}
	void *c = calloc(1000, 1000);
	check_errno("calloc");
	sum += c ? ((unsigned char *)c)[999] : 7;
	free(c);
	void *a = NULL;
	if (posix_memalign(&a, 4096, 100000) == 0)
		free(a);
	check_errno("posix_memalign");
	for (int i = 0; i < 64; i++) {
		free(keep[i]);
		keep[i] = NULL;
	}
	check_errno("free all");
}

static void *
worker(void *arg)
{
	(void)arg;
	churn(20);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "launch") == 0) {
		if (install(argv[2], 1, 0, 0) != 0)
			return 3;
		execv(argv[3], argv + 3);
		return 4;
	}
	const char *mode = argc > 1 ? argv[1] : "none";
	int tsync = 0, term = 0;
	for (int i = 2; i < argc; i++) {
		tsync |= strcmp(argv[i], "tsync") == 0;
		term |= strcmp(argv[i], "term") == 0;
	}
	void *before = malloc(5 << 20); /* before the filter */
	if (install(mode, 0, tsync, term) != 0)
		return 3;
	churn(50);
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) == 0)
		pthread_join(th, NULL);
	free(before);
	/* The API, if the profiler is there: it must answer without a system
	 * call the filter forbids (stderr: stdout is compared with the run
	 * without the profiler). */
	int (*dump_file)(const char *) =
		(int (*)(const char *))dlsym(RTLD_DEFAULT, "heapprof_dump_file");
	if (dump_file && strcmp(mode, "none") != 0)
		fprintf(stderr, "api %d\n", dump_file("/nonexistent/api.pb.gz"));
	printf("sum %llu errno %s\n", (unsigned long long)sum,
	       errno_bad ? "changed" : "kept");
	fflush(stdout);
	if (term)
		raise(SIGTERM);
	return 0;
}
