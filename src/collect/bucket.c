/*
 * bucket.c: the per-(stack, size, rate, label set) records of sampled
 * allocations (a label set is an interned pointer, labels.c),
 * Go's memRecord model: alloc and free counts of sampled objects and bytes.
 * Every object in a bucket has the same size and was sampled at the same
 * rate, so unsampling with 1/(1-exp(-S/R)) is exact per bucket (and stays
 * so when the program changes the rate), and the legacy text (raw counts)
 * agrees with pprof.
 *
 * An open-addressing hash table of bucket pointers (linear probing),
 * mapped by the first sample with 256 slots (one page) and replaced by
 * one four times larger when half full: a process with a few dozen stacks
 * (most of a build's) touches one page of it, one with a thousand five,
 * not a page per stack (each is a page fault, ~12 us on the VMs measured;
 * a fixed 2^18-head table cost cc1 ~100 faults, a first table of 4,096
 * slots, 9 pages, ~8 in a process with 20 stacks).
 * Lookups are lock-free: a slot is written once, with a release store,
 * and read with an acquire load; buckets are never freed (stacks of a
 * running process are few and long-lived; Go keeps its buckets forever
 * too), nor are replaced tables (a reader may still be probing one: it
 * misses only buckets made after the copy, and finds them under the
 * lock). Creating a bucket takes `lock`, probes the current table again,
 * grows it if needed, and publishes. Counters are relaxed atomics, so
 * snapshots read them without stopping any allocation.
 *
 * Fork: the kernel copies the address space while the other threads run,
 * page by page, so a child could inherit an insert half made, and not even
 * in program order: a bucket chained but not listed or counted, an id
 * given twice, or a finished insert missing while later writes are there
 * (test_collect_fork saw 32 broken tables in 591 forks). The lock cannot
 * be held across fork (init.c explains why), so inserts are fenced off
 * instead: the fork handler raises `forking` and waits until no insert is
 * in flight; an insert that starts while it is up gives up (the sample is
 * dropped and counted), so nothing in the table changes during the fork
 * but the counters. The wait is short and needs nothing the forking
 * thread holds (an insert takes only `lock` and the arena's).
 */
#include <sched.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "collect.h"

#define SLOTS_FIRST ((size_t)1 << 8) /* 2 KiB and the header: one page */

typedef struct table {
	size_t mask;                 /* slots - 1 (a power of two, minus 1) */
	_Atomic(hp_bucket *) slot[]; /* written once each, under `lock` */
} table;

/* The current table (NULL until the first sample: a process that samples
 * nothing never maps it, issue 15); replaced under `lock`. */
static _Atomic(table *) tab;
static _Atomic(hp_bucket *) all;    /* newest bucket; list via all_next */
static _Atomic uint64_t count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* serialises inserts */
/* Forks in progress (raised by the fork handler), and inserts in flight:
 * a Dekker pair, both seq_cst, so that either the insert sees the fork
 * and gives up, or the fork handler sees the insert and waits for it. */
static _Atomic int forking HP_FORK_BSS, inflight HP_FORK_BSS;
/* 1 while this thread is inside an insert (a fork from a signal handler
 * that interrupted it skips the fence: the child's count keeps it). */
static __thread int self_inflight __attribute__((tls_model("initial-exec")));

static table *
table_new(size_t slots)
{
	size_t len = sizeof(table) + slots * sizeof(_Atomic(hp_bucket *));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Filled to half before it is replaced, at places the hash spreads
	 * over all of it: made present now, one system call, not a page
	 * fault per page as buckets land in it. */
	heapprof__range_populate(p, len);
	table *t = p;
	t->mask = slots - 1;
	return t;
}

/* Puts b in t's first free slot from its hash on. Under `lock`; t has a
 * free slot (it is never more than half full, or 7/8 when it could not
 * grow). */
static void
table_put(table *t, hp_bucket *b)
{
	size_t i = b->hash & t->mask;
	while (atomic_load_explicit(&t->slot[i], memory_order_relaxed))
		i = (i + 1) & t->mask;
	atomic_store_explicit(&t->slot[i], b, memory_order_release);
}

/* The table to insert one more bucket into, under `lock`: the current
 * one, mapped or replaced by a four times larger copy when that would
 * make it more than half full. NULL if there is none and none can be
 * mapped, or it is 7/8 full and cannot grow (the sample is dropped). */
static table *
table_for_insert(void)
{
	table *t = atomic_load_explicit(&tab, memory_order_relaxed);
	uint64_t n = atomic_load_explicit(&count, memory_order_relaxed) + 1;
	if (t && n <= (t->mask + 1) / 2)
		return t;
	table *g = table_new(t ? (t->mask + 1) * 4 : SLOTS_FIRST);
	if (!g)
		return t && n <= (t->mask + 1) / 8 * 7 ? t : NULL;
	for (hp_bucket *b = atomic_load_explicit(&all, memory_order_relaxed); b;
	     b = b->all_next)
		table_put(g, b);
	atomic_store_explicit(&tab, g, memory_order_release);
	return g; /* the old one stays mapped: readers may be in it */
}

int
heapprof__bucket_init(void)
{
	pthread_mutex_lock(&lock);
	table *t = table_for_insert();
	pthread_mutex_unlock(&lock);
	return t ? 0 : -ENOMEM;
}

static uint64_t
stack_hash(const uint64_t *stack, int depth, size_t size, int64_t rate,
           const heapprof_labels *ls)
{
	uint64_t h = (0x9e3779b97f4a7c15ULL ^ size) + (uint64_t)rate *
	             0x94d049bb133111ebULL;
	for (int i = 0; i < depth; i++) {
		h ^= stack[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	h ^= (uint64_t)depth ^ (uint64_t)(uintptr_t)ls;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 29);
}

static bool
same(const hp_bucket *b, uint64_t h, const uint64_t *stack, int depth,
     size_t size, int64_t rate, const heapprof_labels *ls)
{
	return b->hash == h && b->size == size && b->rate == rate &&
	       b->labels == ls &&
	       b->depth == (uint32_t)depth &&
	       memcmp(b->stack, stack, (size_t)depth * sizeof(*stack)) == 0;
}

/* The bucket in t, or NULL. Lock-free. */
static hp_bucket *
table_find(table *t, uint64_t h, const uint64_t *stack, int depth,
           size_t size, int64_t rate, const heapprof_labels *ls)
{
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		hp_bucket *b = atomic_load_explicit(&t->slot[i], memory_order_acquire);
		if (!b || same(b, h, stack, depth, size, rate, ls))
			return b;
	}
}

hp_bucket *
heapprof__bucket_get(const uint64_t *stack, int depth, size_t size,
                     int64_t rate, const heapprof_labels *ls)
{
	uint64_t h = stack_hash(stack, depth, size, rate, ls);
	table *t = atomic_load_explicit(&tab, memory_order_acquire);
	hp_bucket *b = t ? table_find(t, h, stack, depth, size, rate, ls) : NULL;
	if (b)
		return b;

	pthread_mutex_lock(&lock);
	t = atomic_load_explicit(&tab, memory_order_relaxed);
	b = t ? table_find(t, h, stack, depth, size, rate, ls) : NULL;
	if (b) {
		pthread_mutex_unlock(&lock);
		return b;
	}
	self_inflight = 1;
	atomic_fetch_add(&inflight, 1);
	if (atomic_load(&forking)) {
		/* A fork is being prepared: no new bucket now (see top). */
		atomic_fetch_sub(&inflight, 1);
		self_inflight = 0;
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	t = table_for_insert();
	b = t ? heapprof__arena_alloc(sizeof(*b) + (size_t)depth * sizeof(uint64_t))
	      : NULL;
	if (b) {
		memset(b, 0, sizeof(*b));
		b->hash = h;
		b->size = size;
		b->rate = rate;
		b->labels = ls;
		b->depth = (uint32_t)depth;
		b->id = (uint32_t)atomic_load_explicit(&count, memory_order_relaxed);
		memcpy(b->stack, stack, (size_t)depth * sizeof(*stack));
		b->all_next = atomic_load_explicit(&all, memory_order_relaxed);
		table_put(t, b);
		atomic_store_explicit(&all, b, memory_order_release);
		atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
	}
	atomic_fetch_sub(&inflight, 1);
	self_inflight = 0;
	pthread_mutex_unlock(&lock);
	return b;
}

hp_bucket *
heapprof__bucket_list(void)
{
	return atomic_load_explicit(&all, memory_order_acquire);
}

/* Cold: read at every exit (serve's nothing_sampled), in the start-up and
 * exit code's pages, not one more page of the sampling code. */
HP_RARE uint64_t
heapprof__bucket_count(void)
{
	return atomic_load_explicit(&count, memory_order_relaxed);
}

/* Before fork (init.c, unless the forking thread is inside the profiler):
 * no insert in flight, and none started until the release. The wait is
 * bounded (2 s): a thread that left an insert by longjmp from a signal
 * handler never finishes it, and fork must not hang on it; the child may
 * then see that one bucket half inserted, as before the fence. */
HP_RARE void
heapprof__bucket_atfork_prepare(void)
{
	atomic_fetch_add(&forking, 1);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	time_t until = now.tv_sec + 2;
	while (atomic_load(&inflight)) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > until)
			break;
	}
}

/* In the parent, after a fork whose prepare ran. Never below zero: a
 * child has reset the count (below) under an outer fork's raise. */
HP_RARE void
heapprof__bucket_atfork_release(void)
{
	int f = atomic_load(&forking);
	while (f > 0 && !atomic_compare_exchange_weak(&forking, &f, f - 1))
		;
}

/* In the child, the only thread: the table is whole (see the prepare).
 * No other thread is left to be inside an insert; this one may be, if it
 * forked from a signal handler that interrupted one, and then finishes
 * it after the handler returns. */
HP_RARE void
heapprof__bucket_atfork_child(void)
{
	hp_mutex_reset(&lock);
	atomic_store(&inflight, self_inflight);
	atomic_store(&forking, 0);
}
