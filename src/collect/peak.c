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
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* Reads a whole (small) file into buf, NUL-terminated; its length or -1. */
static ssize_t
slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, cap - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == cap - 1)
			break;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The smallest limit in `file` (memory.max, memory.limit_in_bytes) of the
 * group mnt + rel and its ancestors up to the mount, or INT64_MAX. v1's
 * "no limit" is a huge number: anything from 2^62 up is none. */
static int64_t
walk_limit(const char *mnt, const char *rel, const char *file)
{
	char dir[4096], path[4200], v[64];
	snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	size_t base = strlen(mnt);
	int64_t best = INT64_MAX;
	for (;;) {
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (slurp(path, v, sizeof(v)) > 0 && v[0] >= '0' && v[0] <= '9') {
			long long x = strtoll(v, NULL, 10);
			if (x > 0 && x < ((long long)1 << 62) && x < best)
				best = x;
		}
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < base)
			break;
		*slash = 0;
	}
	return best;
}

/* The process's group path of one hierarchy from /proc/self/cgroup: v2
 * ("0::/path") if v1ctl is NULL, else the v1 line listing that controller. */
static int
cgroup_path(const char *cg, const char *v1ctl, char *out, size_t cap)
{
	for (const char *l = cg; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *c1 = memchr(l, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
		if (c2) {
			size_t cl = (size_t)(c2 - c1 - 1), pl = len - (size_t)(c2 + 1 - l);
			int match = 0;
			if (!v1ctl) {
				match = cl == 0 && c1 - l == 1 && l[0] == '0';
			} else {
				for (const char *t = c1 + 1; t < c2;) {
					const char *te = memchr(t, ',', (size_t)(c2 - t));
					size_t tl = te ? (size_t)(te - t) : (size_t)(c2 - t);
					if (tl == strlen(v1ctl) && !memcmp(t, v1ctl, tl))
						match = 1;
					t += tl + 1;
				}
			}
			if (match && pl < cap) {
				memcpy(out, c2 + 1, pl);
				out[pl] = 0;
				return 0;
			}
		}
		l += len + (e ? 1 : 0);
	}
	return -1;
}

/* The smallest memory limit of this process's cgroups (v2 memory.max, v1
 * memory.limit_in_bytes), its group and ancestors, found through
 * /proc/self/mountinfo (a mount may show a subtree: its root is cut from
 * the group's path); INT64_MAX if none. Constructor time only. */
static int64_t
cgroup_limit(void)
{
	static char cg[8192], mi[65536];
	char v2[1024], v1[1024];
	if (slurp("/proc/self/cgroup", cg, sizeof(cg)) <= 0 ||
	    slurp("/proc/self/mountinfo", mi, sizeof(mi)) <= 0)
		return INT64_MAX;
	int has2 = cgroup_path(cg, NULL, v2, sizeof(v2)) == 0;
	int has1 = cgroup_path(cg, "memory", v1, sizeof(v1)) == 0;
	int64_t best = INT64_MAX;
	for (char *l = mi, *e; *l; l = e ? e + 1 : l + strlen(l)) {
		e = strchr(l, '\n');
		if (e)
			*e = 0;
		char *f[6] = {0};
		char *sv = NULL, *tok = strtok_r(l, " ", &sv);
		for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &sv))
			f[i] = tok;
		if (!f[4])
			continue;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &sv); /* optional fields */
		char *fstype = tok ? strtok_r(NULL, " ", &sv) : NULL;
		if (fstype)
			strtok_r(NULL, " ", &sv); /* source */
		char *opts = fstype ? strtok_r(NULL, " ", &sv) : NULL;
		if (!fstype || !opts)
			continue;
		const char *root = f[3], *mnt = f[4], *path = NULL, *file = NULL;
		if (!strcmp(fstype, "cgroup2") && has2) {
			path = v2;
			file = "memory.max";
		} else if (!strcmp(fstype, "cgroup") && has1 &&
		           (strstr(opts, ",memory") || !strncmp(opts, "memory", 6))) {
			path = v1;
			file = "memory.limit_in_bytes";
		}
		if (!path)
			continue;
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		if (rl && (strncmp(path, root, rl) || (path[rl] && path[rl] != '/')))
			continue; /* the group is outside this mount */
		int64_t x = walk_limit(mnt, path[rl] ? path + rl : "/", file);
		if (x < best)
			best = x;
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
			               "(cgroup memory.max or memory.limit_in_bytes, "
			               "RLIMIT_AS): no limit "
			               "dump");
			heapprof__cfg.dump_limit = 0;
		} else {
			limit_at = (int64_t)((double)lim * heapprof__cfg.dump_limit);
		}
	}
}
