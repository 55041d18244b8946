/*
 * sandbox.c: seccomp sandboxes, and the limits a program sets (setrlimit
 * and prlimit interposed: the malloc path reads none, see the end). A process under a seccomp filter may be
 * killed (SECCOMP_RET_KILL_*, RET_TRAP) or see calls fail (RET_ERRNO) for
 * any system call the filter does not allow, and heapprof cannot know
 * which ones those are. What writing a profile needs (open, rename, the
 * maps, sockets for the endpoint and push) is not what the program needs,
 * so once a filter is in force the profiler writes no profile at all and
 * samples nothing more; the malloc path itself makes no system call that
 * glibc's malloc would not make (mmap, mprotect, munmap, mremap, madvise;
 * limits are read at start-up, at dumps and from the program's own
 * setrlimit and prlimit calls, never on a sampled allocation).
 *
 * Seeing the filter:
 *   - inherited (installed by a parent before exec, as systemd, container
 *     runtimes and sandbox launchers do): "Seccomp:" in /proc/self/status,
 *     read first thing in the constructor with open, read and close, the
 *     calls the dynamic loader made to load this library. The profiler
 *     then stays off in this process (init.c);
 *   - installed by the program: prctl(PR_SET_SECCOMP) and the seccomp
 *     system call (glibc has no wrapper for it: programs and libseccomp
 *     use syscall(3)) are interposed here. Before the filter goes in, the
 *     endpoint's and push's threads are stopped and waited for, and a
 *     dump in progress is waited for (the delivery's sandbox hook), since a
 *     filter installed with SECCOMP_FILTER_FLAG_TSYNC applies to every
 *     thread at its next system call. A filter installed by a raw system
 *     call instruction (not through libc) is not seen.
 * One line on stderr says so: at start-up for an inherited filter, just
 * before the program's filter goes in for one it installs (then stderr
 * is checked as for every warning, init.c; at exit that check, an fstat,
 * may itself be what the filter forbids).
 *
 * heapprof__sandbox: 0 none, 1 inherited, 2 installed by the program.
 * Written once (0 -> nonzero, atomically), read anywhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect.h"
#include "otel_procctx.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

/* heapprof__sandbox itself is defined in unwind.c, which every build of
 * the capture links (the unit tests and bench_unwind link the unwinder
 * without this file). */

#if defined(__x86_64__)
/* The system call itself, as glibc's syscall() makes it (no errno). */
static long
raw6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}

#endif

/* The interposers (x86_64: the system call made here, as glibc makes it).
 * Not in the ASan and TSan builds (tests/sanitize): their runtimes call
 * setrlimit and prctl while they start, before instrumented code may run
 * (TSan crashed in our setrlimit). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HP_SAN_RUNTIME 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HP_SAN_RUNTIME 1
#endif
#endif
#if defined(__x86_64__) && !defined(HP_SAN_RUNTIME)
static long
with_errno(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The program is about to install a filter (strict mode, or a filter
 * program: libseccomp's probe with a NULL program installs nothing). */
static void
entering(void)
{
	if (atomic_load(&heapprof__sandbox))
		return; /* a filter is in force already: all done then */
	int saved = errno;
	/* A vfork child (or any CLONE_VM child) shares its parent's memory:
	 * the flag, the threads and the ending's state below are the
	 * parent's, whom this filter does not bind. It execs or _exits
	 * (neither dumps in a process the profiler does not know): nothing
	 * to do. Before, the parent lost its profile and saw our SIGTERM
	 * handler as the program's (rel.seccomp.vfork). Where kcmp is not
	 * allowed (ENOSYS, EPERM), as before. */
	if (raw6(SYS_kcmp, raw6(SYS_getpid, 0, 0, 0, 0, 0, 0),
	         raw6(SYS_getppid, 0, 0, 0, 0, 0, 0), KCMP_VM, 0, 0, 0) == 0) {
		errno = saved;
		return;
	}
	int expect = 0;
	if (!atomic_compare_exchange_strong(&heapprof__sandbox, &expect, 2)) {
		errno = saved;
		return;
	}
	if (atomic_load_explicit(&heapprof__ready, memory_order_acquire)) {
		heapprof__warn("the program installs a seccomp filter: no profile "
		               "is written from now on (the filter may forbid "
		               "what writing one needs)");
		if (heapprof__hooks() && heapprof__delivery.sandbox)
			heapprof__delivery.sandbox();
		if (heapprof__ending_sandbox)
			heapprof__ending_sandbox();
	}
	/* The line above was held (warn.c): printed now, and no line after,
	 * whose writing the filter may forbid. */
	heapprof__warn_seal();
	errno = saved;
}

/* Six arguments are passed on whatever the call has, as glibc's syscall()
 * does: the sixth is read from the caller's stack, where a call with fewer
 * has something else (ASan reported that read, before the interposers
 * left its build: not instrumented). */
HP_EXPORT __attribute__((no_sanitize_address)) long
syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	if ((n == SYS_seccomp &&
	     (a == SECCOMP_SET_MODE_STRICT || (a == SECCOMP_SET_MODE_FILTER && c))) ||
	    (n == SYS_prctl && a == PR_SET_SECCOMP &&
	     (b == SECCOMP_MODE_STRICT || (b == SECCOMP_MODE_FILTER && c))))
		entering();
	long r = raw6(n, a, b, c, d, e, f);
	if (n == SYS_prctl && a == PR_SET_VMA && b == PR_SET_VMA_ANON_NAME && e)
		heapprof__procctx_prctl((unsigned long)c, (unsigned long)e);
	return with_errno(r);
}

HP_EXPORT int
prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long b = va_arg(ap, unsigned long), c = va_arg(ap, unsigned long);
	unsigned long d = va_arg(ap, unsigned long), e = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP &&
	    (b == SECCOMP_MODE_STRICT || (b == SECCOMP_MODE_FILTER && c)))
		entering();
	long r = raw6(SYS_prctl, option, (long)b, (long)c, (long)d, (long)e, 0);
	/* An OpenTelemetry process context's publication or update
	 * (otel_procctx.c), the kernel able to name mappings or not. */
	if (option == PR_SET_VMA && b == PR_SET_VMA_ANON_NAME && e)
		heapprof__procctx_prctl(c, e);
	return (int)with_errno(r);
}

/* setrlimit and prlimit: RLIMIT_AS is read at start-up, never on a
 * sampled allocation (range.c), so a limit the program sets is noted here
 * from the values it passes, without another system call. glibc's own
 * calls do not come here; a limit set by a raw system call or by another
 * process is seen at the next dump. */
static void
note_limit(int res, const struct rlimit *rl)
{
	if (res == RLIMIT_AS && rl)
		heapprof__range_limit_note((uint64_t)rl->rlim_cur);
}

HP_EXPORT int
prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *new_limit,
        struct rlimit *old)
{
	long r = raw6(SYS_prlimit64, pid, (long)res, (long)new_limit, (long)old, 0, 0);
	if (r == 0 && pid == 0)
		note_limit((int)res, new_limit);
	return (int)with_errno(r);
}

HP_EXPORT int
setrlimit(__rlimit_resource_t res, const struct rlimit *rl)
{
	return prlimit(0, res, rl, NULL);
}

/* The 64-bit names (_FILE_OFFSET_BITS=64 programs): the same structure
 * on x86_64. */
HP_EXPORT int
prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *new_limit,
          struct rlimit64 *old)
{
	return prlimit(pid, res, (const struct rlimit *)new_limit,
	               (struct rlimit *)old);
}

HP_EXPORT int
setrlimit64(__rlimit_resource_t res, const struct rlimit64 *rl)
{
	return prlimit(0, res, (const struct rlimit *)rl, NULL);
}
#endif

/* The decimal number after `key` ("\nName:") in the status text s of n
 * bytes (8 readable zero bytes after it), or -1. By hand, not strstr (a
 * page of libc's text fewer to fault in at every start), and a word at a
 * time: the line starts are all it looks at (~1 k instructions). */
HP_RARE static long
status_field(const char *s, size_t n, const char *key)
{
	const char *p = NULL;
	for (size_t i = 0; i < n && !p;) {
		uint64_t w, x, z;
		memcpy(&w, s + i, sizeof(w));
		x = w ^ 0x0a0a0a0a0a0a0a0aULL;
		z = (x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL;
		if (!z) {
			i += 8;
			continue;
		}
		i += (size_t)__builtin_ctzll(z) / 8; /* the first '\n' */
		size_t k = 1;
		while (key[k] && i + k < n && s[i + k] == key[k])
			k++;
		if (!key[k])
			p = s + i + k;
		i++;
	}
	if (!p)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	long v = 0;
	while (*p >= '0' && *p <= '9' && v < 100000000)
		v = v * 10 + (*p++ - '0');
	return v;
}

/* First thing in the constructor: a filter inherited from the parent?
 * Only open, read, close and (if one is found) one write on fd 2, the
 * stderr the program started with. */
HP_RARE void
heapprof__sandbox_init(void)
{
	/* The names in .data, not string literals: the loader faults .data
	 * in anyway, the constants' page is one more fault in every process. */
	static char path[] = "/proc/self/status", k_seccomp[] = "\nSeccomp:",
	            k_pid[] = "\nPid:";
	char buf[2048 + 8]; /* the file is ~1.4 KB; "Seccomp:" is in its first 1.2 */
	int saved = errno;
	/* The system calls made here (x86_64), not through libc's wrappers:
	 * pages of libc's text a process would not otherwise fault in. */
#if defined(__x86_64__)
#define SB_OPEN(p) ((int)raw6(SYS_openat, AT_FDCWD, (long)(p), O_RDONLY | O_CLOEXEC, 0, 0, 0))
#define SB_READ(fd, b, n) raw6(SYS_read, fd, (long)(b), (long)(n), 0, 0, 0)
#define SB_CLOSE(fd) raw6(SYS_close, fd, 0, 0, 0, 0, 0)
#else
#define SB_OPEN(p) open(p, O_RDONLY | O_CLOEXEC)
#define SB_READ(fd, b, n) read(fd, b, n)
#define SB_CLOSE(fd) close(fd)
#endif
	int fd = SB_OPEN(path);
	if (fd < 0) {
		errno = saved;
		return; /* no /proc: nothing known, nothing done */
	}
	size_t n = 0;
	for (;;) {
		long r = SB_READ(fd, buf + n, sizeof(buf) - 8 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof(buf) - 8)
			break;
	}
	SB_CLOSE(fd);
	memset(buf + n, 0, 8);
	long mode = status_field(buf, n, k_seccomp);
	if (mode > 0) {
		atomic_store(&heapprof__sandbox, 1);
		char msg[200] = "heapprof[";
		long pid = status_field(buf, n, k_pid);
		if (pid < 0)
			pid = 0;
		size_t k = strlen(msg);
		char digits[24];
		int nd = 0;
		do
			digits[nd++] = (char)('0' + pid % 10);
		while ((pid /= 10) > 0 && nd < 20);
		while (nd > 0)
			msg[k++] = digits[--nd];
		static const char text[] =
			"]: a seccomp filter is in force at start-up: this process is "
			"not profiled (the filter may forbid what writing a profile "
			"needs)\n";
		memcpy(msg + k, text, sizeof(text) - 1);
		k += sizeof(text) - 1;
		ssize_t w = write(2, msg, k);
		(void)w;
		heapprof__warn_seal(); /* no line after this one */
	}
	errno = saved;
}
