/*
 * ptrace_call.c: remote calls in a running process (ptrace_call.h), for
 * heapprof attach. Owns the choice of the thread and moment (a safe
 * point), saving and restoring its registers, the calls themselves, and
 * the lookups of symbols in the target's mapped files.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ptrace_call.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Blocking system calls the allocator and the loader never make while they
 * hold a lock: a thread stopped in one holds none of theirs. (futex is
 * not one: it may be a wait for the allocator's lock.) */
static int own_stack(pt_thread *t, uint64_t f_mmap, uint64_t f_munmap);

static int
safe_syscall(long nr)
{
	static const long ok[] = {0 /* read */, 1 /* write */, 7 /* poll */,
		17, 18, 19, 20, /* pread pwrite readv writev */
		23 /* select */, 34 /* pause */, 35 /* nanosleep */,
		42, 43, 44, 45, 46, 47, /* connect accept sendto recvfrom sendmsg recvmsg */
		61 /* wait4 */, 128 /* rt_sigtimedwait */, 130 /* rt_sigsuspend */,
		230 /* clock_nanosleep */, 232 /* epoll_wait */, 247 /* waitid */,
		270 /* pselect6 */, 271 /* ppoll */, 281 /* epoll_pwait */,
		288 /* accept4 */, 441 /* epoll_pwait2 */};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (nr == ok[i])
			return 1;
	return 0;
}

static int
is_safe(const struct user_regs_struct *r, const pt_unsafe *u)
{
	if ((long)r->orig_rax >= 0) /* stopped in a system call */
		return safe_syscall((long)r->orig_rax);
	for (int i = 0; i < u->n; i++)
		if (r->rip >= u->lo[i] && r->rip < u->hi[i])
			return 0;
	return 1;
}

/* Waits for tid's next stop (or end): the waitpid status, or -errno. */
static int
wait_tid(pid_t tid)
{
	int st;
	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL);
		if (w == tid)
			return st;
		if (w < 0 && errno != EINTR)
			return -errno;
	}
}

/* Seizes and interrupts one thread: 0 and its registers, or -errno. */
static int
stop_one(pt_thread *t, pid_t pid, pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0) {
		int e = errno;
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -e;
	}
	for (;;) {
		int st = wait_tid(tid);
		if (st < 0 || !WIFSTOPPED(st))
			return st < 0 ? st : -ESRCH;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			break;
		/* a signal arrived first: delivered, then wait again for
		 * the interrupt */
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)WSTOPSIG(st));
	}
	t->t_stop_ns = now_ns();
	t->pid = pid;
	t->tid = tid;
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs) != 0) {
		int e = errno;
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -e;
	}
	t->have_mask = ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(t->sigmask),
	                      &t->sigmask) == 0;
	struct iovec iov = {t->xstate, sizeof(t->xstate)};
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0)
		t->xlen = iov.iov_len;
	else
		t->xlen = 0;
	/* below the red zone, 16-byte aligned, with a margin */
	t->scratch = (t->regs.rsp - 128 - 256) & ~(uint64_t)15;
	return 0;
}

int
pt_stop_safe(pt_thread *t, pid_t pid, const pt_unsafe *u, int timeout_ms)
{
	int64_t end = now_ns() + (int64_t)timeout_ms * 1000000;
	/* looked up before any thread stops (the pause) */
	char libc[4096];
	uint64_t f_mmap = 0, f_munmap = 0;
	if (pt_find_map(pid, "libc.so", libc, sizeof(libc)) == 0) {
		f_mmap = pt_symbol(pid, libc, "mmap");
		f_munmap = pt_symbol(pid, libc, "munmap");
	}
	for (int round = 0;; round++) {
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
		DIR *d = opendir(dir);
		if (!d)
			return -errno;
		struct dirent *e;
		int rc = -EAGAIN;
		/* the main thread first: it exists as long as the process */
		pid_t tids[256];
		int n = 0;
		tids[n++] = pid;
		while ((e = readdir(d)) && n < 256) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid > 0 && tid != pid)
				tids[n++] = tid;
		}
		closedir(d);
		for (int i = 0; i < n; i++) {
			int skip = 0;
			for (int k = 0; k < u->nskip; k++)
				skip |= u->skip[k] == tids[i];
			if (skip)
				continue;
			int r = stop_one(t, pid, tids[i]);
			if (r == -EPERM)
				return r;
			if (r != 0)
				continue; /* the thread ended */
			if (is_safe(&t->regs, u)) {
				int sr = own_stack(t, f_mmap, f_munmap);
				if (sr != 0)
					return sr;
				return 0;
			}
			ptrace(PTRACE_DETACH, tids[i], 0, 0);
		}
		if (now_ns() > end)
			return rc;
		struct timespec ts = {0, 1000000 + (round % 7) * 300000};
		nanosleep(&ts, NULL);
	}
}

static int
write_mem(pid_t pid, uint64_t at, const void *data, size_t len)
{
	struct iovec l = {(void *)data, len}, r = {(void *)at, len};
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) == (ssize_t)len)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = pwrite(fd, data, len, (off_t)at);
	close(fd);
	return w == (ssize_t)len ? 0 : -EFAULT;
}

uint64_t
pt_push(pt_thread *t, const void *data, size_t len)
{
	uint64_t at = (t->scratch - len) & ~(uint64_t)15;
	if (write_mem(t->tid, at, data, len) != 0)
		return 0;
	t->scratch = at;
	return at;
}

static int call6(pt_thread *t, uint64_t fn, const uint64_t a[6], uint64_t *ret);

int
pt_call(pt_thread *t, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
        uint64_t *ret)
{
	const uint64_t a[6] = {a0, a1, a2, 0, 0, 0};
	return call6(t, fn, a, ret);
}

static int
call6(pt_thread *t, uint64_t fn, const uint64_t a[6], uint64_t *ret)
{
	struct user_regs_struct r = t->regs;
	uint64_t zero = 0;
	/* the return address 0: the call's return faults there */
	uint64_t sp = (t->scratch & ~(uint64_t)15) - 8;
	if (write_mem(t->tid, sp, &zero, sizeof(zero)) != 0)
		return -EFAULT;
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.rcx = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	r.rax = 0;
	r.orig_rax = (uint64_t)-1; /* no system call restart */
	r.eflags &= ~(uint64_t)0x400; /* DF clear, as the ABI wants */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) != 0)
		return -errno;
	/* Every signal but SIGSEGV blocked for the call: the program's
	 * handlers do not run inside the loader or the profiler (they run
	 * after the release, pending), and the SIGSEGV that ends the call
	 * is not blocked: the kernel makes a blocked or ignored fault signal
	 * SIG_DFL for the whole process (force_sig_info_to_task), which lost
	 * the program's SIGSEGV handler where the thread blocked it. */
	uint64_t mask = ~(1ull << (SIGSEGV - 1));
	if (t->have_mask)
		ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask);
	int sig = 0;
	for (;;) {
		if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig) != 0)
			return -errno;
		int st = wait_tid(t->tid);
		if (st < 0)
			return st;
		if (!WIFSTOPPED(st))
			return -ESRCH; /* the process ended */
		sig = 0;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			continue; /* a group stop or a stray interrupt */
		int s = WSTOPSIG(st);
		if (s == SIGSEGV) {
			struct user_regs_struct now;
			if (ptrace(PTRACE_GETREGS, t->tid, 0, &now) != 0)
				return -errno;
			if (now.rip == 0) {
				*ret = now.rax;
				return 0;
			}
			if (getenv("HEAPPROF_ATTACH_DEBUG"))
				fprintf(stderr, "heapprof: attach: fault at rip %#llx rsp %#llx\n",
				        (unsigned long long)now.rip, (unsigned long long)now.rsp);
			return -EFAULT; /* a crash in the call: left stopped */
		}
		sig = s; /* the program's signal: delivered as usual */
	}
}

/* The calls' own stack: the thread stopped may be on a signal stack of a
 * few KB (sigaltstack), which the loader and a dump overflow (a dump on a
 * 16 KB one crashed the target). 4 MB mapped with libc's mmap (a call of a
 * few bytes on the thread's stack), given back at the release. Without
 * it (mmap refused), the thread's stack. 0, or -errno of a failed call. */
static int
own_stack(pt_thread *t, uint64_t f_mmap, uint64_t f_munmap)
{
	t->stack = 0;
	if (!f_mmap || !f_munmap)
		return 0;
	const uint64_t len = 4 << 20;
	const uint64_t a[6] = {0, len, PROT_READ | PROT_WRITE,
	                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
	                       (uint64_t)-1, 0};
	uint64_t at = 0;
	int rc = call6(t, f_mmap, a, &at);
	if (rc != 0)
		return rc;
	if (at == (uint64_t)MAP_FAILED || (at & 4095))
		return 0;
	t->stack = at;
	t->stack_len = len;
	t->f_munmap = f_munmap;
	t->scratch = at + len - 64;
	return 0;
}

int64_t
pt_release(pt_thread *t)
{
	if (t->stack) { /* given back from the thread's own stack */
		uint64_t r = 0;
		t->scratch = (t->regs.rsp - 128 - 256) & ~(uint64_t)15;
		if (pt_call(t, t->f_munmap, t->stack, t->stack_len, 0, &r) == 0)
			t->stack = 0;
	}
	if (t->xlen) {
		struct iovec iov = {t->xstate, t->xlen};
		ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov);
	}
	ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs);
	if (t->have_mask)
		ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(t->sigmask), &t->sigmask);
	int64_t paused = now_ns() - t->t_stop_ns;
	ptrace(PTRACE_DETACH, t->tid, 0, 0);
	return paused;
}

/* ---------------------------------------------------------------- files */

/* Each line of /proc/pid/maps with a path: cb(start, end, offset, perms,
 * path, arg); a nonzero return stops. */
static int
each_map(pid_t pid, int (*cb)(uint64_t, uint64_t, uint64_t, const char *,
                              const char *, void *), void *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[4096 + 128];
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int n = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms,
		           &off, &n) < 4 || !n)
			continue;
		char *p = line + n;
		p[strcspn(p, "\n")] = 0;
		if (*p != '/')
			continue;
		if ((rc = cb(lo, hi, off, perms, p, arg)) != 0)
			break;
	}
	fclose(f);
	return rc;
}

struct find_arg {
	const char *needle;
	char *out;
	size_t cap;
	uint64_t base;
};

static int
find_cb(uint64_t lo, uint64_t hi, uint64_t off, const char *perms,
        const char *path, void *arg)
{
	(void)hi;
	struct find_arg *a = arg;
	if (perms[2] != 'x')
		return 0; /* the loader's mappings, not a file a dump reads */
	const char *base = strrchr(path, '/');
	if (!strstr(base ? base : path, a->needle))
		return 0;
	snprintf(a->out, a->cap, "%s", path);
	a->base = lo - off;
	return 1;
}

int
pt_find_map(pid_t pid, const char *needle, char *out, size_t cap)
{
	struct find_arg a = {needle, out, cap, 0};
	return each_map(pid, find_cb, &a) == 1 ? 0 : -ENOENT;
}

static uint64_t elf_dynsym(const char *file, const char *name, uint64_t *x_off,
                           uint64_t *x_vaddr);

struct unsafe_arg {
	pt_unsafe *u;
	pid_t pid;
};

/* Whether the file at path (as pid sees it) defines malloc: an allocator
 * whatever its name (redis-server's jemalloc is in the executable). */
static int
defines_malloc(pid_t pid, const char *path)
{
	char file[4096 + 64];
	uint64_t xo, xv;
	snprintf(file, sizeof(file), "/proc/%d/root%s", (int)pid, path);
	return elf_dynsym(file, "malloc", &xo, &xv) != 0 ||
	       elf_dynsym(path, "malloc", &xo, &xv) != 0;
}

static int
unsafe_cb(uint64_t lo, uint64_t hi, uint64_t off, const char *perms,
          const char *path, void *arg)
{
	(void)off;
	struct unsafe_arg *a = arg;
	pt_unsafe *u = a->u;
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (perms[2] != 'x' || u->n >= 64)
		return 0;
	if (strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0 ||
	    strncmp(b, "ld-linux", 8) == 0 || strstr(b, "malloc") ||
	    strncmp(b, "libheapprof", 11) == 0 || defines_malloc(a->pid, path)) {
		u->lo[u->n] = lo;
		u->hi[u->n++] = hi;
	}
	return 0;
}

void
pt_unsafe_ranges(pid_t pid, pt_unsafe *u)
{
	struct unsafe_arg a = {u, pid};
	u->n = 0;
	u->nskip = 0;
	each_map(pid, unsafe_cb, &a);
}

/* The value of dynamic symbol `name` in the ELF file at `file`, and the
 * vaddr of its first PT_LOAD; 0 if absent. */
static uint64_t
elf_dynsym(const char *file, const char *name, uint64_t *x_off, uint64_t *x_vaddr)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	uint64_t v = 0;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return 0;
	}
	size_t sz = (size_t)st.st_size;
	const uint8_t *m = mmap(NULL, sz, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	const Elf64_Ehdr *eh = (const void *)m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > sz ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > sz)
		goto out;
	const Elf64_Phdr *ph = (const void *)(m + eh->e_phoff);
	*x_off = *x_vaddr = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
			*x_off = ph[i].p_offset;
			*x_vaddr = ph[i].p_vaddr;
			break;
		}
	const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum && !v; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *ss = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > sz || ss->sh_offset + ss->sh_size > sz)
			break;
		const Elf64_Sym *sym = (const void *)(m + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
		const char *str = (const char *)m + ss->sh_offset;
		for (size_t k = 0; k < n; k++) {
			if (sym[k].st_name >= ss->sh_size || sym[k].st_shndx == SHN_UNDEF ||
			    ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
				continue;
			size_t rem = ss->sh_size - sym[k].st_name, ln = strlen(name);
			if (rem > ln && memcmp(str + sym[k].st_name, name, ln + 1) == 0) {
				v = sym[k].st_value;
				break;
			}
		}
	}
out:
	munmap((void *)m, sz);
	return v;
}

struct sym_arg {
	const char *path;
	uint64_t lo, off;
	int found;
};

static int
sym_cb(uint64_t lo, uint64_t hi, uint64_t off, const char *perms,
       const char *path, void *arg)
{
	(void)hi;
	struct sym_arg *a = arg;
	/* the loader's executable mapping: the file may be mapped whole too
	 * (a dump's symbolization reads it), at another address */
	if (strcmp(path, a->path) != 0 || perms[2] != 'x')
		return 0;
	a->lo = lo;
	a->off = off;
	a->found = 1;
	return 1;
}

uint64_t
pt_symbol(pid_t pid, const char *path, const char *name)
{
	struct sym_arg a = {path, 0, 0, 0};
	each_map(pid, sym_cb, &a);
	if (!a.found)
		return 0;
	/* the file as the target sees it (its mount namespace) */
	char file[4096 + 64];
	snprintf(file, sizeof(file), "/proc/%d/root%s", (int)pid, path);
	uint64_t xoff = 0, xvaddr = 0;
	uint64_t v = elf_dynsym(file, name, &xoff, &xvaddr);
	if (!v)
		v = elf_dynsym(path, name, &xoff, &xvaddr);
	/* the mapping starts at file offset a.off, in the executable
	 * segment: vaddr xvaddr + (a.off - xoff) */
	return v ? a.lo + v - (xvaddr + a.off - xoff) : 0;
}
