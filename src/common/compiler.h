/*
 * compiler.h: branch hints, inlining and visibility macros shared by every
 * part of heapprof. Depends on nothing.
 */
#ifndef HEAPPROF_COMPILER_H
#define HEAPPROF_COMPILER_H

#define HP_LIKELY(x) __builtin_expect(!!(x), 1)
#define HP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HP_INLINE static inline __attribute__((always_inline))
#define HP_NOINLINE __attribute__((noinline))
#define HP_HIDDEN __attribute__((visibility("hidden")))
#define HP_EXPORT __attribute__((visibility("default")))
#define HP_UNUSED __attribute__((unused))
#define HP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* A large zero-initialised array that a process which samples nothing
 * never touches: libheapprof.so is linked with --sort-section=name, so
 * these come after every other .bss variable and the small state that
 * start-up and exit do touch shares a few pages (each page is a fault,
 * ~12 us on the VMs measured: BENCHMARKS.md). */
#define HP_BIG_BSS __attribute__((section(".bss.hp_big")))
/* State that the fork handlers write in the parent and the child (locks
 * released, fence counters): all in one page, which each process of a
 * fork then copies once (a page fault each, and a page copy), not once
 * per file. Sorted after HP_BIG_BSS (same link option). */
#define HP_FORK_BSS __attribute__((section(".bss.hp_fork")))
/* A function that runs at start-up or exit in every process, or rarely:
 * cold, so the compiler puts them all together at the start of .text and a
 * process that does nothing else touches one or two code pages, not one
 * per file (each is a page fault). */
#define HP_RARE __attribute__((cold))

/* Propagate a negative error code: TRY(f(x)); */
#define HP_TRY(expr)                                                           \
	do {                                                                   \
		int hp_try_rc_ = (expr);                                       \
		if (HP_UNLIKELY(hp_try_rc_ < 0))                               \
			return hp_try_rc_;                                     \
	} while (0)

#endif
