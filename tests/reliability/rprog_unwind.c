/*
 * rprog_unwind.c: program patterns for the unwinder (rel_unwind.sh, issue
 * 13 defects 1 and 13). Built -O2 WITHOUT frame pointers (Makefile), so
 * only call-frame information can walk its stacks.
 *
 *   rprog_unwind chain N        N allocations through unw_chain_a -> b ->
 *                               c -> d -> malloc, kept live; prints a sum;
 *                               then N through unw_nocfi, assembly with a
 *                               frame pointer and no CFI (as JIT code),
 *                               -> unw_nocfi_callee -> malloc
 *   rprog_unwind fds IN OUT     puts IN on fd 3 and OUT (created) on fd 4
 *                               with dup2, copies lines 3 -> 4 with read and
 *                               write, allocating between lines
 *   rprog_unwind coro KIB N     a makecontext coroutine on a KIB KiB mmap'd
 *                               stack (guard page below) allocates N times
 *                               through unw_coro_fn -> unw_coro_work
 *   rprog_unwind signal N       N SIGUSR1 raised from unw_sig_sender, whose
 *                               handler (on the thread's stack, then on an
 *                               8 KiB sigaltstack) allocates; an interval
 *                               timer interrupts allocation loops as well
 * Prints "ok" and a checksum that does not depend on the profiler.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile uintptr_t sink;

/* Each level keeps a local array alive across its call and does work
 * after it, so frames have different sizes and no call is a tail call. */
#define LEVEL(name, next)                                                      \
	__attribute__((noinline)) static void *name(size_t n)                  \
	{                                                                      \
		volatile char pad[24 + sizeof(#name) * 8];                     \
		pad[0] = (char)n;                                              \
		void *p = next(n + 1);                                         \
		sink += (uintptr_t)pad[0];                                     \
		return p;                                                      \
	}

__attribute__((noinline)) static void *
unw_chain_leaf(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	sink += (uintptr_t)p & 1;
	return p;
}
LEVEL(unw_chain_d, unw_chain_leaf)
LEVEL(unw_chain_c, unw_chain_d)
LEVEL(unw_chain_b, unw_chain_c)
LEVEL(unw_chain_a, unw_chain_b)

/* unw_nocfi: assembly without CFI directives, hence no FDE (as JIT
 * code): the unwinder steps over it with its frame pointer. */
__attribute__((noinline, used, visibility("hidden"))) void *
unw_nocfi_callee(size_t n)
{
	return unw_chain_leaf(n);
}
void *unw_nocfi(size_t n);
__asm__(".text\n"
        ".globl unw_nocfi\n"
        ".hidden unw_nocfi\n"
        ".type unw_nocfi, @function\n"
        "unw_nocfi:\n"
        "\tpush %rbp\n"
        "\tmov %rsp, %rbp\n"
        "\tsub $16, %rsp\n"
        "\tcall unw_nocfi_callee\n"
        "\tnop\n"
        "\tleave\n"
        "\tret\n"
        ".size unw_nocfi, .-unw_nocfi\n");

static int
chain(long n)
{
	void **keep = calloc((size_t)n, sizeof(void *));
	if (!keep)
		return 1;
	unsigned long sum = 0;
	for (long i = 0; i < n; i++) {
		keep[i] = unw_chain_a(100 + (size_t)(i % 50));
		sum += keep[i] != NULL;
	}
	for (long i = 0; i < n; i++)
		sum += unw_nocfi(40) != NULL; /* kept live too (leaked) */
	printf("ok %lu\n", sum);
	return 0; /* the blocks stay live for the exit dump */
}

/* ---------------------------------------------------------------- fds */

static int
fds(const char *in, const char *out)
{
	int a = open(in, O_RDONLY);
	int b = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (a < 0 || b < 0 || dup2(a, 3) != 3 || dup2(b, 4) != 4)
		return 2;
	if (a != 3) close(a);
	if (b != 4) close(b);
	char line[4096];
	size_t len = 0;
	unsigned long sum = 0;
	for (;;) {
		char c;
		ssize_t r = read(3, &c, 1);
		if (r < 0)
			return 3;
		if (r == 1 && len < sizeof(line))
			line[len++] = c;
		if (r == 0 || c == '\n') {
			/* allocation between lines: samples, hence unwinds */
			for (int k = 0; k < 8; k++) {
				char *p = unw_chain_a(64 + len * 16 + (size_t)k * 512);
				sum += p != NULL;
				free(p);
			}
			if (len && write(4, line, len) != (ssize_t)len)
				return 4;
			len = 0;
			if (r == 0)
				break;
		}
	}
	close(3);
	close(4);
	printf("ok %lu\n", sum);
	return 0;
}

/* ------------------------------------------------------------ coroutine */

static ucontext_t main_ctx, coro_ctx;
static long coro_n;
static unsigned long coro_sum;

__attribute__((noinline)) static void
unw_coro_work(long i)
{
	volatile char pad[64];
	pad[0] = (char)i;
	void *p = malloc(32 + (size_t)(i % 200));
	coro_sum += p != NULL;
	free(p);
	sink += (uintptr_t)pad[0];
}

static void
unw_coro_fn(void)
{
	for (long i = 0; i < coro_n; i++) {
		unw_coro_work(i);
		if (i % 64 == 0)
			swapcontext(&coro_ctx, &main_ctx);
	}
}

static int
coro(long kib, long n)
{
	size_t sz = (size_t)kib * 1024;
	char *m = mmap(NULL, sz + 4096, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE))
		return 2;
	memset(m + 4096, 0xa5, sz); /* for the high-water mark below */
	coro_n = n;
	getcontext(&coro_ctx);
	coro_ctx.uc_stack.ss_sp = m + 4096;
	coro_ctx.uc_stack.ss_size = sz;
	coro_ctx.uc_link = &main_ctx;
	makecontext(&coro_ctx, unw_coro_fn, 0);
	/* resumed until the coroutine returns through uc_link */
	static volatile int done;
	done = 0;
	swapcontext(&main_ctx, &coro_ctx);
	while (!done) {
		/* The coroutine yields every 64 iterations; when it returns,
		 * uc_link brings us here too: count its iterations instead. */
		if (coro_sum >= (unsigned long)n)
			done = 1;
		else
			swapcontext(&main_ctx, &coro_ctx);
	}
	size_t untouched = 0;
	while (untouched < sz && (unsigned char)m[4096 + untouched] == 0xa5)
		untouched++;
	fprintf(stderr, "coroutine stack used: %zu of %zu bytes\n",
	        sz - untouched, sz);
	printf("ok %lu\n", coro_sum);
	return 0;
}

/* ------------------------------------------------------------- signals */

static volatile unsigned long sig_allocs;

static void
unw_sig_handler(int sig)
{
	(void)sig;
	void *p = malloc(48);
	sig_allocs += p != NULL;
	free(p);
}

__attribute__((noinline)) static void
unw_spin(void)
{
	for (int k = 0; k < 10000; k++)
		sink += (uintptr_t)k;
}

__attribute__((noinline)) static void
unw_sig_sender(void)
{
	raise(SIGUSR1);
	sink++;
}

static int
sigs(long n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = unw_sig_handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	for (long i = 0; i < n; i++)
		unw_sig_sender();
	/* Again on a small alternate stack. */
	static char alt[8192];
	stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
	if (sigaltstack(&ss, NULL))
		return 2;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	for (long i = 0; i < n; i++)
		unw_sig_sender();
	/* Asynchronous: a 200 us timer while the program allocates. */
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);
	while (sig_allocs < (unsigned long)(3 * n))
		unw_spin(); /* no malloc here: glibc's is not reentrant */
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("ok %ld\n", 2 * n);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "chain"))
		return chain(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "fds"))
		return fds(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "coro"))
		return coro(atol(argv[2]), atol(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "signal"))
		return sigs(atol(argv[2]));
	fprintf(stderr, "usage: rprog_unwind chain N | fds IN OUT | "
	                "coro KIB N | signal N\n");
	return 64;
}
