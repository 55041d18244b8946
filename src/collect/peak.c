/*
 * peak.c: the peak of the sampled in-use estimate, what each bucket had in
 * use at that moment, and the dumps this total triggers (--dump-growth,
 * --dump-limit).
 *
 * The in-use estimate is the sum over live sampled objects of their
 * unsampled weight (what inuse_space of a profile written now would total:
 * each object of a bucket stands for 1/(1-exp(-size/rate)) objects). Only
 * sampled events touch it, so the fast path pays nothing.
 *
 * The peak snapshot is kept with epochs, lazily: `epoch` is bumped each
 * time the total reaches a new high. A bucket records (peak_objects,
 * peak_epoch): before its in-use count changes, if peak_epoch is not the
 * current epoch, the count it had until now -- which it had at the last
 * peak, since it has not changed since -- is copied to peak_objects and
 * peak_epoch set. A reader takes peak_objects if peak_epoch is the
 * current epoch (the bucket changed since the peak), else the bucket's
 * current count (it did not). Each event is O(1), memory is three words
 * per bucket, and the result is exact for the sampled set: every update
 * and the reads run under one spinlock, so the total, the epoch and the
 * buckets' counts change together.
 *
 * The spinlock (`lock`) protects total, high, epoch, growth_next,
 * limit_done and every bucket's live / peak_objects / peak_epoch /
 * weight1. It is
 * held for a few dozen instructions, never across a call that could
 * allocate or block. A sampled allocation holds it while its thread is
 * busy, so a signal handler on that thread allocates privately and never
 * comes here; a handler that frees a sampled object while its thread holds
 * the lock (self_held) cannot wait for itself: that free is left out of
 * the peak bookkeeping, with one warning (free() is not async-signal-safe
 * anyway). A fork child whose parent had another thread
 * inside gets the lock free again (that thread does not exist there).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"

static _Atomic int lock;
static __thread int self_held __attribute__((tls_model("initial-exec")));
static int64_t total;       /* in-use estimate, bytes (lock) */
static int64_t high;        /* its highest value since the last reset (lock) */
static uint64_t epoch = 1;  /* bumped at each new high and reset (lock) */
static int64_t growth_next = INT64_MAX; /* next growth dump at (lock) */
static int limit_done;      /* the limit dump was requested (lock) */
static int64_t growth;      /* --dump-growth bytes, 0 none (init) */
static int64_t limit_at = INT64_MAX; /* --dump-limit threshold (init) */
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
		if (spins > 64)
			sched_yield(); /* the holder may have been preempted */
	}
}

static void
give(void)
{
	atomic_store_explicit(&lock, 0, memory_order_release);
	atomic_signal_fence(memory_order_seq_cst);
	self_held = 0;
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

/* Before b's count changes: keep what it had at the last peak. */
static void
sync_bucket(hp_bucket *b)
{
	if (b->peak_epoch != epoch) {
		b->peak_objects = b->live;
		b->peak_epoch = epoch;
	}
}

void
heapprof__peak_alloc(hp_bucket *b)
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
	sync_bucket(b);
	b->live++;
	total += w;
	if (total > high) {
		high = total;
		epoch++;
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
heapprof__peak_free(hp_bucket *b)
{
	if (self_held) {
		heapprof__warn("free() of a sampled object in a signal handler "
		               "that interrupted the profiler: left out of the "
		               "peak (peak_* may be off by that object)");
		return;
	}
	take();
	int64_t w = weight(b);
	sync_bucket(b);
	if (b->live > 0) {
		b->live--;
		total -= w;
	}
	give();
}

void
heapprof__peak_read(int64_t *objs, uint32_t n, int reset)
{
	if (self_held)
		return; /* a dump from a handler inside take(): zeros */
	take();
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next)
		if (b->id < n)
			objs[b->id] = b->peak_epoch == epoch ? b->peak_objects
			                                     : b->live;
	if (reset) {
		high = total;
		epoch++;
	}
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
	high = total;
	epoch++;
	give();
	hp_leave(t);
}

HP_RARE void
heapprof__peak_init(void)
{
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
