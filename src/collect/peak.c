/*
 * peak.c: the moment of the peak of the heap, what each bucket had in use
 * at that moment, and the dumps the in-use estimate triggers
 * (--dump-growth, --dump-limit).
 *
 * Why not the moment the sampled estimate was highest: that estimate is
 * noisy, and the highest value of a noisy running estimate overstates the
 * peak (on a plateau with churn it is the moment the noise was highest:
 * +19% for 100 MiB of 4 KiB blocks churned 2 GiB, every run above the
 * truth, issue 31). The sampled set at a moment chosen without looking at
 * it is an unbiased estimate of what was in use then. So:
 *
 * By default, each sample is put in one of two halves at random (its
 * thread's generator, independent of the program; hp_obj.half). Half 1's
 * objects are counted at the moment half 0's own total was highest, and
 * half 0's at half 1's; peak_objects is the sum. Each half's count is
 * unbiased for half of what was in use at a moment the other half chose,
 * its variance about that of the whole sampled set at one moment, and
 * nothing is added to the fast path. What it gives up: each half's total
 * is noisier than the whole's, so on a heap whose highest moments differ
 * by less than that noise (about sqrt(2 x rate x in-use) bytes) it may
 * count a moment a little below the peak: the error then is downward and
 * at most about that much (2.5% at 100 MiB and the default rate; on a
 * single spike or a plateau nothing measurable, tests/integration/
 * capture_peak_bias.sh).
 *
 * With HEAPPROF_PEAK_EXACT=1 (glibc only), an exact count of the bytes in
 * use chooses the moment, for both halves: each thread adds the chunk
 * sizes of the blocks it gets from the next allocator and subtracts those
 * it gives back (the word before the block, read by interpose.c's
 * *_counted functions and slowpath.c) in heapprof__tls.exact; when that
 * passes +-step, heapprof__exact_flush adds it to exact_total (an atomic),
 * and a new high of exact_total takes the lock and bumps the epochs. The
 * step is 64 KiB, or 1/512 of the high when that is more (up to 1 MiB):
 * the total lags the truth by less than a step per thread, so the moment
 * chosen has at most 2 x threads x step less in use than the true peak. A
 * thread's count is flushed at its exit (a pthread key, registered at its
 * first slow path); a thread that only frees, and exits before its first
 * flush, leaves less than a step. Cost: ~30 instructions a malloc + free
 * pair (BENCHMARKS.md), hence not the default.
 *
 * At rate 1 every allocation is sampled and the sampled total is exact:
 * its own high chooses the moment, as before.
 *
 * The in-use estimate `total` is the sum over live sampled objects of
 * their unsampled weight (what inuse_space of a profile written now would
 * total: each object of a bucket stands for 1/(1-exp(-size/rate))
 * objects); half_total[h] the same over half h. Only sampled events touch
 * them.
 *
 * The peak snapshot is kept with epochs, lazily, per half: epoch[h] is
 * bumped each time the moment that counts half h moves (a new high of the
 * other half, of the exact count, or at rate 1 of the total). A bucket
 * records (peak_objects[h], peak_epoch[h]): before its in-use count of
 * half h changes, if peak_epoch[h] is not epoch[h], the count it had until
 * now -- which it had at that moment, since it has not changed since -- is
 * copied to peak_objects[h] and peak_epoch[h] set. A reader takes
 * peak_objects[h] if peak_epoch[h] is epoch[h] (the bucket changed since),
 * else live[h] (it did not). Each event is O(1), memory is six words per
 * bucket, and the result is exact for the sampled set: every update and
 * the reads run under one spinlock, so the totals, the epochs and the
 * buckets' counts change together.
 *
 * The spinlock (`lock`) protects total, high, half_total, half_high,
 * epoch, growth_next, limit_done, exact_high's writes, the step's writes
 * and every bucket's live / peak_objects / peak_epoch / weight1. It is
 * held for a few dozen instructions, never across a call that could
 * allocate or block. A sampled allocation holds it while its thread is
 * busy, so a signal handler on that thread allocates privately and never
 * comes here; a handler that frees a sampled object while its thread holds
 * the lock (self_held) cannot wait for itself: that free is left out of
 * the peak bookkeeping, with one warning (free() is not async-signal-safe
 * anyway). A fork child whose parent had another thread
 * inside gets the lock free again (that thread does not exist there).
 */
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"

static _Atomic int lock;
static __thread int self_held __attribute__((tls_model("initial-exec")));
static int64_t total;       /* in-use estimate, bytes (lock) */
static int64_t high;        /* its highest value since the last reset (lock) */
static int64_t half_total[2], half_high[2]; /* the same per half (lock) */
static uint64_t epoch[2] = {1, 1}; /* bumped when half h's moment moves (lock) */
static int64_t growth_next = INT64_MAX; /* next growth dump at (lock) */
static int limit_done;      /* the limit dump was requested (lock) */
static int64_t growth;      /* --dump-growth bytes, 0 none (init) */
static int64_t limit_at = INT64_MAX; /* --dump-limit threshold (init) */
/* The exact count: the threads' flushed bytes (atomic) and its highest
 * value since the last reset (written under the lock; read relaxed
 * outside it, as a hint). */
static _Atomic int64_t exact_total;
static _Atomic int64_t exact_high;
_Atomic int64_t heapprof__exact_step; /* collect.h (init; then lock) */
static pthread_key_t exact_key;       /* flushes a thread's count at exit */
static int exact_key_ok;              /* it was created (init) */

#define EXACT_MIN_STEP ((int64_t)64 << 10)
#define EXACT_MAX_STEP ((int64_t)1 << 20)
static int64_t rolling_next = INT64_MAX; /* --peak-file: next write at (lock;
                                          * rolling.c arms it) */

/* self_held is set before the lock is tried and cleared after it is
 * released, so that a signal handler interrupting this thread anywhere in
 * between sees it and never waits for a lock its own thread holds (a dump
 * in a handler, exit() from one: it hung when the signal came between the
 * exchange and the flag). */
static void
take(void)
{
	self_held = 1;
	atomic_signal_fence(memory_order_seq_cst);
	for (int spins = 0;; spins++) {
		if (!atomic_load_explicit(&lock, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&lock, 1, memory_order_acquire))
			break;
		/* The holder may have been preempted: yield, but not under a
		 * seccomp filter (sandbox.c), where only the calls glibc's
		 * malloc makes are sure to be allowed: spin then (a free of a
		 * block sampled before the filter). */
		if (spins > 64 &&
		    !atomic_load_explicit(&heapprof__sandbox, memory_order_relaxed))
			sched_yield();
	}
}

static void
give(void)
{
	atomic_store_explicit(&lock, 0, memory_order_release);
	atomic_signal_fence(memory_order_seq_cst);
	self_held = 0;
}

/* Which clock chooses the moment of the peak: */
enum { BY_HALVES, BY_EXACT, BY_TOTAL };
static int
timing(void)
{
	if (atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed) == 1)
		return BY_TOTAL; /* every byte sampled: the total is exact */
	return heapprof__exact_on() ? BY_EXACT : BY_HALVES;
}

/* The step for a high of h bytes: 1/512 of it, a power of two, within
 * [EXACT_MIN_STEP, EXACT_MAX_STEP]. */
static int64_t
step_for(int64_t h)
{
	int64_t s = EXACT_MIN_STEP;
	while (s < EXACT_MAX_STEP && s * 2 <= h / 512)
		s *= 2;
	return s;
}

HP_NOINLINE void
heapprof__exact_flush(hp_tls *t, int64_t d)
{
	t->exact = 0;
	int64_t now = atomic_fetch_add_explicit(&exact_total, d,
	                                        memory_order_relaxed) + d;
	if (d <= 0 || now <= atomic_load_explicit(&exact_high, memory_order_relaxed))
		return;
	if (self_held)
		return; /* a handler inside the lock: the next flush will do */
	take();
	if (now > atomic_load_explicit(&exact_high, memory_order_relaxed)) {
		atomic_store_explicit(&exact_high, now, memory_order_relaxed);
		if (timing() == BY_EXACT) { /* the sampled set now is the peak's */
			epoch[0]++;
			epoch[1]++;
		}
		int64_t s = step_for(now);
		if (s > atomic_load_explicit(&heapprof__exact_step, memory_order_relaxed))
			atomic_store_explicit(&heapprof__exact_step, s,
			                      memory_order_relaxed);
	}
	give();
}

/* At a thread's exit: what it counted goes into the total. */
static void
exact_exit(void *v)
{
	(void)v;
	hp_tls *t = &heapprof__tls;
	if (t->exact)
		heapprof__exact_flush(t, t->exact);
}

void
heapprof__exact_thread(hp_tls *t)
{
	t->exact_reg = 1;
	if (!exact_key_ok)
		return;
	hp_enter(t); /* a key past the first 32 makes glibc allocate */
	(void)pthread_setspecific(exact_key, (void *)1);
	hp_leave(t);
}

/* The unsampled bytes one live object of b stands for, computed once
 * (under the lock). */
static int64_t
weight(hp_bucket *b)
{
	if (HP_UNLIKELY(!b->weight1))
		b->weight1 = heapprof__sampler_weight(b->size, b->rate) + 1;
	return b->weight1 - 1;
}

/* Before b's count of half h changes: keep what it had at the moment
 * that counts half h. */
static void
sync_bucket(hp_bucket *b, uint32_t h)
{
	if (b->peak_epoch[h] != epoch[h]) {
		b->peak_objects[h] = b->live[h];
		b->peak_epoch[h] = epoch[h];
	}
}

void
heapprof__peak_alloc(hp_bucket *b, uint32_t h)
{
	int request = 0;
	if (self_held) {
		/* A sampled malloc in a signal handler that interrupted this
		 * thread inside the lock (a sampled free's): waiting would
		 * never end. */
		heapprof__warn("malloc() in a signal handler that interrupted "
		               "the profiler: left out of the peak (peak_* may "
		               "be off by that object)");
		return;
	}
	take();
	int64_t w = weight(b);
	h &= 1;
	sync_bucket(b, h);
	b->live[h]++;
	total += w;
	half_total[h] += w;
	int how = timing();
	if (total > high) {
		high = total;
		if (how == BY_TOTAL) {
			epoch[0]++;
			epoch[1]++;
		}
	}
	if (half_total[h] > half_high[h]) {
		half_high[h] = half_total[h];
		if (how == BY_HALVES)
			epoch[h ^ 1]++; /* the other half is counted now */
	}
	if (total >= growth_next) {
		growth_next = total + growth;
		request = 1;
	}
	if (total >= limit_at && !limit_done) {
		limit_done = 1;
		request = 1;
	}
	if (HP_UNLIKELY(total >= rolling_next)) {
		rolling_next = INT64_MAX; /* until the write re-arms it */
		atomic_store_explicit(&heapprof__rolling_want, 1,
		                      memory_order_relaxed);
	}
	give();
	if (request && heapprof__hooks())
		heapprof__delivery.request(); /* taken after this allocation */
}

void
heapprof__peak_free(hp_bucket *b, uint32_t h)
{
	if (self_held) {
		heapprof__warn("free() of a sampled object in a signal handler "
		               "that interrupted the profiler: left out of the "
		               "peak (peak_* may be off by that object)");
		return;
	}
	take();
	int64_t w = weight(b);
	h &= 1;
	sync_bucket(b, h);
	if (b->live[h] > 0) {
		b->live[h]--;
		total -= w;
		half_total[h] -= w;
	}
	give();
}

/* The peak restarts from now (under the lock). */
static void
restart(void)
{
	high = total;
	half_high[0] = half_total[0];
	half_high[1] = half_total[1];
	atomic_store_explicit(&exact_high,
	                      atomic_load_explicit(&exact_total, memory_order_relaxed),
	                      memory_order_relaxed);
	epoch[0]++;
	epoch[1]++;
}

void
heapprof__peak_read(int64_t *objs, uint32_t n, int reset)
{
	if (self_held)
		return; /* a dump from a handler inside take(): zeros */
	take();
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next) {
		if (b->id >= n)
			continue;
		objs[b->id] = 0;
		for (int h = 0; h < 2; h++)
			objs[b->id] += b->peak_epoch[h] == epoch[h] ? b->peak_objects[h]
			                                            : b->live[h];
	}
	if (reset)
		restart();
	give();
}

/* --peak-file (serve/rolling.c): the in-use estimate now; the next write
 * is wanted when it reaches `next(now)`. */
int64_t
heapprof__peak_rolling_arm(int64_t (*next)(int64_t now))
{
	if (self_held)
		return -1;
	take();
	int64_t now = total;
	rolling_next = next(now);
	give();
	return now;
}

HP_RARE void
heapprof__peak_atfork_child(void)
{
	atomic_store(&lock, self_held);
}

HP_EXPORT void
heapprof_peak_reset(void)
{
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	take();
	restart();
	give();
	hp_leave(t);
}

/* Whether the next allocator is glibc's, whose chunk header the exact
 * count reads: its malloc is __libc_malloc, from the object that defines
 * gnu_get_libc_version (tcmalloc defines a __libc_malloc of its own). */
extern void *__libc_malloc(size_t);
static int
next_is_glibc(void)
{
	if ((void *)heapprof__next.malloc != (void *)__libc_malloc ||
	    heapprof__next_nallocx)
		return 0;
	Dl_info a, b;
	if (!dladdr((void *)__libc_malloc, &a) ||
	    !dladdr((void *)gnu_get_libc_version, &b))
		return 0;
	return a.dli_fbase == b.dli_fbase;
}

HP_RARE void
heapprof__peak_init(void)
{
	/* Not in a process that samples nothing (rate 0 at start: also one
	 * HEAPPROF_ONLY leaves out), which would pay for it for nothing. */
	int exact = heapprof__cfg.peak_exact &&
	            atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed) &&
	            next_is_glibc();
	if (heapprof__cfg.peak_exact && !exact && heapprof__cfg.rate &&
	    !heapprof__unreached)
		heapprof__warn("HEAPPROF_PEAK_EXACT: the allocator is not glibc's: "
		               "the peak is timed by halves of the samples");
	if (exact) {
		exact_key_ok = pthread_key_create(&exact_key, exact_exit) == 0;
		atomic_store_explicit(&heapprof__exact_step, EXACT_MIN_STEP,
		                      memory_order_relaxed);
	}
	heapprof__interpose_count(exact);
	growth = heapprof__cfg.dump_growth;
	if (growth > 0)
		growth_next = growth;
	if (heapprof__cfg.dump_limit > 0) {
		int64_t lim = heapprof__mem_limit();
		if (lim == INT64_MAX) {
			heapprof__warn("HEAPPROF_DUMP_LIMIT: no memory limit found "
			               "(cgroup memory.max or memory.limit_in_bytes, "
			               "RLIMIT_AS): no limit "
			               "dump");
			heapprof__cfg.dump_limit = 0;
		} else {
			limit_at = (int64_t)((double)lim * heapprof__cfg.dump_limit);
		}
	}
}
