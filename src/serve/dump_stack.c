/*
 * dump_stack.c: the stack that dumps taken on the program's threads run on
 * (dump.c). A dump needs tens of KiB of stack; the thread that takes it may
 * be a coroutine with 16 KiB, or a signal handler on a small alternate
 * stack, so the dump switches (swapcontext) to a stack of its own, reserved
 * at first use. Everything here is used under dump.c's dump_lock: one user
 * at a time.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "serve.h"

#define DUMP_STACK_SIZE (4u << 20) /* reserved, touched as used */
#define DUMP_STACK_MIN (256u << 10) /* 48 KiB measured with DWARF names */

/* A dump needs tens of KiB of stack (28 KiB measured with symtab names,
 * 48 KiB with DWARF, for a small program); the thread that takes it may be
 * a coroutine with 16 KiB, or a signal handler on a small alternate stack.
 * Dumps therefore switch to this stack, reserved on first use and touched
 * only as deep as they go (dump_lock). */
#define DUMP_STACK_WARM ((size_t)32 << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif
static char *dump_stack;
static size_t dump_stack_size; /* 4 MiB, or less under RLIMIT_AS */
static ucontext_t dump_uc HP_BIG_BSS, back_uc HP_BIG_BSS;
static int (*stack_fn)(void *);
static void *stack_arg;
static int stack_rc;

static void
stack_trampoline(void)
{
	stack_rc = stack_fn(stack_arg);
}

/* Sanitizers track stacks of their own and do not follow swapcontext:
 * their builds dump on the current stack. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HP_NO_DUMP_STACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HP_NO_DUMP_STACK 1
#endif
#endif

int
heapprof__on_dump_stack(int (*fn)(void *), void *arg)
{
#ifdef HP_NO_DUMP_STACK
	return fn(arg);
#endif
	size_t guard = (size_t)getpagesize();
	if (!dump_stack) {
		/* Under an address-space limit (RLIMIT_AS) 4 MiB may not
		 * fit: then a smaller one, which a dump still fits in. */
		size_t size = DUMP_STACK_SIZE;
		void *p = MAP_FAILED;
		for (; size >= DUMP_STACK_MIN; size /= 4) {
			p = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
			         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			                 MAP_STACK,
			         -1, 0);
			if (p != MAP_FAILED)
				break;
		}
		if (p == MAP_FAILED) {
			/* No memory for it: the current stack, if this is
			 * the thread's own stack with room for a dump. Not a
			 * signal stack or a coroutine's (a dump there
			 * overflowed it: SIGSEGV instead of the program's
			 * exit status). */
			hp_tls *t = &heapprof__tls;
			uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
			if (sp > t->stack_lo && sp <= t->stack_hi &&
			    sp - t->stack_lo >= DUMP_STACK_MIN)
				return fn(arg);
			heapprof__warn("no memory for a dump's stack, and too "
			               "little stack here: no profile");
			return -ENOMEM;
		}
		mprotect(p, guard, PROT_NONE);
		dump_stack = p;
		dump_stack_size = size;
		/* The top DUMP_STACK_WARM bytes, which every dump uses, made
		 * present in one system call instead of a page fault a page
		 * (15-40 us each on this VM: 4-8 an exit dump). */
		int saved = errno;
		size_t warm = size < DUMP_STACK_WARM ? size : DUMP_STACK_WARM;
		(void)madvise(dump_stack + guard + size - warm, warm,
		              MADV_POPULATE_WRITE);
		errno = saved;
	}
	/* On a signal stack (a handler that called malloc or exit), a
	 * signal taken while we are off it would be delivered at its top,
	 * over the frames of the handler we came from: none are taken until
	 * we are back. */
	stack_t ss;
	sigset_t all, old;
	int onalt = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
	if (onalt) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
	}
	int rc;
	if (getcontext(&dump_uc) != 0) {
		rc = fn(arg);
	} else {
		dump_uc.uc_stack.ss_sp = dump_stack + guard;
		dump_uc.uc_stack.ss_size = dump_stack_size;
		dump_uc.uc_link = &back_uc;
		stack_fn = fn;
		stack_arg = arg;
		makecontext(&dump_uc, stack_trampoline, 0);
		rc = swapcontext(&back_uc, &dump_uc) == 0 ? stack_rc : fn(arg);
	}
	if (onalt)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}
