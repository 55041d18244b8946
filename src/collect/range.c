/*
 * range.c: where sampled objects live. At start-up the profiler reserves
 * one large range of address space (PROT_NONE, no memory behind it); every
 * sampled allocation is served from it and nothing else is. So free() can
 * tell a sampled pointer from any other with two compares on values that
 * never change (heapprof__range_owns), without touching shared memory: the
 * free of an unsampled pointer, the hottest path in a process, pays nothing
 * for the live set. This is the idea of tcmalloc's and jemalloc's sampled
 * objects and of GWP-ASan's guarded pool, for an interposer.
 *
 * A sampled object of up to 1984 bytes gets a slot of 128..2048 bytes cut
 * from a 64 KiB slab; a larger or over-aligned one its own run of 2^k
 * pages. Either way the 64-byte header (hp_obj: bucket, size, run) sits
 * just below the user pointer. Slots keep rate 1 (every allocation a
 * sample) affordable: a live 64-byte object costs 128 bytes, not a page.
 *
 * Freed runs go on a free list per size class; runs of 64 KiB or more give
 * their memory back with MADV_DONTNEED first. When the range is exhausted,
 * allocation returns NULL and the caller forwards the request unsampled.
 *
 * Shared state: base and span are written once before sampling starts;
 * the page runs' free lists, the bump frontier and live_runs are protected
 * by `lock`; each slot shard's lists and count by its own lock; all of
 * them taken only for sampled allocations and sampled frees.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect.h"

#define NCLASS 40
#define MADVISE_CLASS 8 /* runs of >= 1 MiB give memory back on free */
#define COMMIT_STEP ((size_t)1 << 20)

uintptr_t heapprof__range_base;
uintptr_t heapprof__range_span; /* 0 until initialised: owns() is false */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t page;
static uintptr_t bump;      /* next unused byte (lock) */
static uintptr_t committed; /* [base, committed) is read-write (lock) */
static uintptr_t free_list[NCLASS]; /* run starts, linked via word 0 (lock) */
static uint64_t live_runs; /* page runs in use (lock) */
static _Atomic uint64_t exhausted; /* allocations the range could not serve */

int
heapprof__range_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	page = ps > 0 ? (size_t)ps : 4096;
	/* 64 GiB of address space if we can have it, less under ulimit -v. */
	for (size_t span = (size_t)64 << 30; span >= ((size_t)256 << 20);
	     span /= 2) {
		void *p = mmap(NULL, span, PROT_NONE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		heapprof__range_base = (uintptr_t)p;
		bump = committed = (uintptr_t)p;
		heapprof__range_span = span;
		return 0;
	}
	return -ENOMEM;
}

static uint32_t
class_of(size_t pages)
{
	uint32_t c = 0;
	while (((size_t)1 << c) < pages)
		c++;
	return c;
}

/* A run of 2^c pages, or 0. Called with lock held. */
static uintptr_t
run_get(uint32_t c, bool *dirty)
{
	if (free_list[c]) {
		uintptr_t r = free_list[c];
		free_list[c] = *(uintptr_t *)r;
		*(uintptr_t *)r = 0;
		/* Runs that were madvised come back zeroed, small ones not. */
		*dirty = c < MADVISE_CLASS;
		return r;
	}
	size_t bytes = page << c;
	uintptr_t end = heapprof__range_base + heapprof__range_span;
	if (bytes > end - bump)
		return 0;
	uintptr_t r = bump;
	if (r + bytes > committed) {
		size_t need = r + bytes - committed;
		need = (need + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
		if (need > end - committed)
			need = end - committed;
		if (mprotect((void *)committed, need, PROT_READ | PROT_WRITE) != 0)
			return 0;
		committed += need;
	}
	bump += bytes;
	*dirty = false;
	return r;
}

/* Small objects: slots of 2^k bytes (128 .. 2048, header included) cut
 * from 64 KiB slabs, so that at small rates (rate 1 samples everything) a
 * live 64-byte sample costs a 128-byte slot, not a page. Slots never
 * return to the kernel; freed ones go on their class's list. A slot's
 * header says which class it is: run_class = SLOT_CLASS + k. */
#define SLOT_MIN_SHIFT 7
#define SLOT_MAX_SHIFT 11
#define SLOT_CLASS 64 /* above every page-run class */
#define SLAB_BYTES ((size_t)64 << 10)
#define NSLOTK (SLOT_MAX_SHIFT - SLOT_MIN_SHIFT + 1)

/* Slots are sharded: each thread takes its slots from one of NSHARD
 * shards (chosen round robin at its first sample), with its own lock and
 * free lists, so threads sampling at once (at rate 1: every allocation)
 * neither wait for each other nor write to each other's cache lines. A
 * slot goes back to the shard it came from, whichever thread frees it. */
#define NSHARD 8
typedef struct shard {
	pthread_mutex_t lock;
	uintptr_t free[NSLOTK]; /* (lock) */
	uint64_t live;          /* (lock) */
} __attribute__((aligned(64))) shard;
static shard shards[NSHARD];
static _Atomic unsigned next_shard;
static pthread_once_t shards_once = PTHREAD_ONCE_INIT;

static void
shards_init(void)
{
	for (int i = 0; i < NSHARD; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}

/* A free slot of 2^shift bytes from shard h, or 0. Called with h's lock
 * held; takes the range lock to carve a new slab. */
static uintptr_t
slot_get(shard *h, unsigned shift)
{
	unsigned k = shift - SLOT_MIN_SHIFT;
	if (!h->free[k]) {
		bool dirty;
		pthread_mutex_lock(&lock);
		uintptr_t slab = run_get(class_of(SLAB_BYTES / page), &dirty);
		pthread_mutex_unlock(&lock);
		if (!slab)
			return 0;
		/* Thread the slab's slots onto the free list, first slot on
		 * top; the link lives where the header will go. */
		size_t sz = (size_t)1 << shift;
		for (uintptr_t s = slab + SLAB_BYTES - sz;; s -= sz) {
			*(uintptr_t *)s = h->free[k];
			h->free[k] = s;
			if (s == slab)
				break;
		}
	}
	uintptr_t s = h->free[k];
	h->free[k] = *(uintptr_t *)s;
	return s;
}

static void *
slot_alloc(size_t size, bool zero)
{
	unsigned shift = SLOT_MIN_SHIFT;
	while (((size_t)1 << shift) < size + sizeof(hp_obj))
		shift++;
	hp_tls *t = &heapprof__tls;
	if (!t->shard) {
		pthread_once(&shards_once, shards_init);
		t->shard = atomic_fetch_add(&next_shard, 1) % NSHARD + 1;
	}
	shard *h = &shards[t->shard - 1];
	pthread_mutex_lock(&h->lock);
	uintptr_t s = slot_get(h, shift);
	if (s)
		h->live++;
	pthread_mutex_unlock(&h->lock);
	if (!s) {
		atomic_fetch_add_explicit(&exhausted, 1, memory_order_relaxed);
		return NULL;
	}
	hp_obj *o = (hp_obj *)s;
	o->magic = HP_OBJ_MAGIC;
	o->bucket = NULL;
	o->size = size;
	o->run = s;
	o->run_class = SLOT_CLASS + shift;
	o->shard = t->shard - 1;
	if (zero)
		memset(o + 1, 0, size); /* slots are reused without zeroing */
	return o + 1;
}

void *
heapprof__range_alloc(size_t size, size_t align, bool zero)
{
	if (!heapprof__range_span || size > heapprof__range_span / 4 ||
	    align > heapprof__range_span / 4)
		return NULL;
	if (align <= sizeof(hp_obj) &&
	    size + sizeof(hp_obj) <= ((size_t)1 << SLOT_MAX_SHIFT))
		return slot_alloc(size, zero);
	size_t need = size + sizeof(hp_obj) + (align > sizeof(hp_obj) ? align : 0);
	size_t pages = (need + page - 1) / page;
	uint32_t c = class_of(pages);
	if (c >= NCLASS)
		return NULL;
	bool dirty;
	pthread_mutex_lock(&lock);
	uintptr_t run = run_get(c, &dirty);
	if (run)
		live_runs++;
	else
		atomic_fetch_add_explicit(&exhausted, 1, memory_order_relaxed);
	pthread_mutex_unlock(&lock);
	if (!run)
		return NULL;
	uintptr_t user = run + sizeof(hp_obj);
	if (align > sizeof(hp_obj))
		user = (run + sizeof(hp_obj) + align - 1) & ~(uintptr_t)(align - 1);
	hp_obj *o = (hp_obj *)user - 1;
	o->magic = HP_OBJ_MAGIC;
	o->bucket = NULL;
	o->size = size;
	o->run = run;
	o->run_class = c;
	if (zero && dirty)
		memset((void *)user, 0, size);
	return (void *)user;
}

void
heapprof__range_free(hp_obj *o)
{
	uintptr_t run = o->run;
	uint32_t c = o->run_class;
	o->magic = 0; /* a second free of this pointer is caught below */
	if (c >= SLOT_CLASS) {
		unsigned k = c - SLOT_CLASS - SLOT_MIN_SHIFT;
		shard *h = &shards[o->shard % NSHARD];
		pthread_mutex_lock(&h->lock);
		*(uintptr_t *)run = h->free[k];
		atomic_thread_fence(memory_order_release);
		h->free[k] = run;
		h->live--;
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if (c >= MADVISE_CLASS)
		madvise((void *)run, page << c, MADV_DONTNEED);
	pthread_mutex_lock(&lock);
	*(uintptr_t *)run = free_list[c];
	/* The link before the head: a child forked at any instant of this
	 * section (init.c does not hold this lock across fork) sees a
	 * consistent list, at worst without this run. */
	atomic_thread_fence(memory_order_release);
	free_list[c] = run;
	live_runs--;
	pthread_mutex_unlock(&lock);
}

void
heapprof__range_stats(uint64_t *live, uint64_t *mapped, uint64_t *exh)
{
	pthread_mutex_lock(&lock);
	*live = live_runs;
	*mapped = committed - heapprof__range_base;
	pthread_mutex_unlock(&lock);
	*exh = atomic_load_explicit(&exhausted, memory_order_relaxed);
	pthread_once(&shards_once, shards_init);
	for (int i = 0; i < NSHARD; i++) {
		pthread_mutex_lock(&shards[i].lock);
		*live += shards[i].live;
		pthread_mutex_unlock(&shards[i].lock);
	}
}

void
heapprof__range_atfork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

void
heapprof__range_atfork_release(void)
{
	pthread_mutex_unlock(&lock);
}

void
heapprof__range_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	for (int i = 0; i < NSHARD; i++)
		pthread_mutex_init(&shards[i].lock, NULL);
}
