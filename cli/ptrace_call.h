/*
 * ptrace_call.h: remote function calls in another process (heapprof
 * attach): one thread seized with ptrace and interrupted at a point where
 * it holds none of the loader's or the allocator's locks, its registers
 * (general and extended) saved, calls made on its stack, everything put
 * back, the thread let go. The process's other threads keep running.
 * x86_64 Linux only.
 */
#ifndef HEAPPROF_PTRACE_CALL_H
#define HEAPPROF_PTRACE_CALL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Address ranges of the target where a stopped thread may hold the
 * allocator's or the loader's locks (libc, ld.so, the allocator). */
typedef struct pt_unsafe {
	uint64_t lo[64], hi[64];
	int n;
	/* threads never chosen: the profiler's own (attach --http's
	 * endpoint thread may hold its locks); the caller fills them */
	pid_t skip[16];
	int nskip;
} pt_unsafe;

typedef struct pt_thread {
	pid_t pid, tid;
	struct user_regs_struct regs; /* as interrupted */
	uint8_t xstate[16384];        /* NT_X86_XSTATE as interrupted */
	size_t xlen;
	uint64_t scratch;             /* next free byte below the red zone */
	int64_t t_stop_ns;            /* CLOCK_MONOTONIC at the stop */
	uint64_t stack, stack_len;    /* the calls' own stack in the target
	                               * (mmap'd at the stop), or 0 */
	uint64_t f_munmap;            /* libc's munmap, to give it back */
	uint64_t sigmask;             /* its blocked signals as interrupted */
	int have_mask;                /* sigmask read (PTRACE_GETSIGMASK) */
} pt_thread;

/* Seizes and stops a thread of pid at a safe point (tries each thread,
 * then again after a pause, up to timeout_ms), and gives the calls a stack
 * of their own (the thread may be on a small signal stack). 0, or -errno from
 * PTRACE_SEIZE (EPERM: not permitted), -EAGAIN (no safe point found). */
int pt_stop_safe(pt_thread *t, pid_t pid, const pt_unsafe *u, int timeout_ms);
/* Copies len bytes onto the stopped thread's stack below its red zone:
 * their address in the target, or 0 (write failed). */
uint64_t pt_push(pt_thread *t, const void *data, size_t len);
/* Calls fn(a0, a1, a2) in the target; *ret gets rax. 0, or -errno, or
 * -EFAULT if the call ended in another way than its return. */
int pt_call(pt_thread *t, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
            uint64_t *ret);
/* Puts the registers back and lets the thread go. Returns how long the
 * thread was stopped, in ns. */
int64_t pt_release(pt_thread *t);

/* The runtime address of the dynamic symbol `name` of the object mapped
 * from file `path` in pid (path as /proc/pid/maps names it), or 0. */
uint64_t pt_symbol(pid_t pid, const char *path, const char *name);
/* The first mapped file of pid whose name contains `needle` (its path
 * copied to out), 0; or -ENOENT. */
int pt_find_map(pid_t pid, const char *needle, char *out, size_t cap);
/* Fills u with the executable ranges of libc, ld.so and any object that
 * is an allocator (its name says malloc, or it defines malloc), of pid. */
void pt_unsafe_ranges(pid_t pid, pt_unsafe *u);

#endif
