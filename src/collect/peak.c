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
 * the peak bookkeeping (counted in `missed`; free() is not
 * async-signal-safe anyway). A fork child whose parent had another thread
 * inside gets the lock free again (that thread does not exist there).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collect.h"
#include "../serve/serve.h"

static _Atomic int lock;
static __thread int self_held __attribute__((tls_model("initial-exec")));
static int64_t total;       /* in-use estimate, bytes (lock) */
static int64_t high;        /* its highest value since the last reset (lock) */
static uint64_t epoch = 1;  /* bumped at each new high and reset (lock) */
static int64_t growth_next = INT64_MAX; /* next growth dump at (lock) */
static int limit_done;      /* the limit dump was requested (lock) */
static int64_t growth;      /* --dump-growth bytes, 0 none (init) */
static int64_t limit_at = INT64_MAX; /* --dump-limit threshold (init) */
static _Atomic uint64_t missed; /* frees left out (see the top) */

static void
take(void)
{
	for (int spins = 0;; spins++) {
		if (!atomic_load_explicit(&lock, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&lock, 1, memory_order_acquire))
			break;
		if (spins > 64)
			sched_yield(); /* the holder may have been preempted */
	}
	self_held = 1;
}

static void
give(void)
{
	self_held = 0;
	atomic_store_explicit(&lock, 0, memory_order_release);
}

/* The unsampled bytes one live object of b stands for, computed once
 * (under the lock). */
static int64_t
weight(hp_bucket *b)
{
	if (HP_UNLIKELY(!b->weight1)) {
		int64_t c, s;
		heapprof_scale_heap_sample(1, (int64_t)b->size, b->rate, &c, &s);
		b->weight1 = s + 1;
	}
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
	give();
	if (request)
		heapprof__serve_request(); /* taken after this allocation */
}

void
heapprof__peak_free(hp_bucket *b)
{
	if (self_held) {
		atomic_fetch_add_explicit(&missed, 1, memory_order_relaxed);
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

void
heapprof__peak_totals(int64_t *inuse, int64_t *peak, uint64_t *lost)
{
	take();
	*inuse = total;
	*peak = high;
	give();
	*lost = atomic_load_explicit(&missed, memory_order_relaxed);
}

void
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

/* ---------------------------------------------------------- the limit */

/* The smallest memory.max of this process's cgroup v2 and its ancestors,
 * or INT64_MAX. */
static int64_t
cgroup_limit(void)
{
	char buf[4096], path[4200];
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return INT64_MAX;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return INT64_MAX;
	buf[n] = 0;
	char *line = strstr(buf, "0::");
	if (!line)
		return INT64_MAX;
	char *cg = line + 3;
	cg[strcspn(cg, "\n")] = 0;
	int64_t best = INT64_MAX;
	for (;;) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max",
		         strcmp(cg, "/") ? cg : "");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			char v[64];
			ssize_t k = read(fd, v, sizeof(v) - 1);
			close(fd);
			if (k > 0 && v[0] >= '0' && v[0] <= '9') {
				v[k] = 0;
				long long x = strtoll(v, NULL, 10);
				if (x > 0 && x < best)
					best = x;
			}
		}
		char *slash = strrchr(cg, '/');
		if (!slash || slash == cg)
			break;
		*slash = 0;
	}
	return best;
}

int64_t
heapprof__peak_mem_limit(void)
{
	int64_t best = cgroup_limit();
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (int64_t)rl.rlim_cur > 0 && (int64_t)rl.rlim_cur < best)
		best = (int64_t)rl.rlim_cur;
	return best;
}

void
heapprof__peak_init(void)
{
	growth = heapprof__cfg.dump_growth;
	if (growth > 0)
		growth_next = growth;
	if (heapprof__cfg.dump_limit > 0) {
		int64_t lim = heapprof__peak_mem_limit();
		if (lim == INT64_MAX) {
			heapprof__warn("HEAPPROF_DUMP_LIMIT: no memory limit found "
			               "(cgroup v2 memory.max, RLIMIT_AS): no limit "
			               "dump");
			heapprof__cfg.dump_limit = 0;
		} else {
			limit_at = (int64_t)((double)lim * heapprof__cfg.dump_limit);
		}
	}
}
