/*
 * range.c: where sampled objects, and the profiler's own allocations, live.
 * The profiler keeps one range of address space [base, base + span) and
 * serves every sampled allocation from it and nothing else. So free() can
 * tell a sampled pointer from any other with two compares
 * (heapprof__range_owns), without touching shared memory: the free of an
 * unsampled pointer, the hottest path in a process, pays nothing for the
 * live set. This is the idea of tcmalloc's and jemalloc's sampled objects
 * and of GWP-ASan's guarded pool, for an interposer.
 *
 * Address space on demand. The range starts small (a few MiB, PROT_NONE)
 * at an address in the middle of the gap between the program break and
 * the stack, where the kernel's top-down mmap placement does not reach,
 * and grows upwards in place (MAP_FIXED_NOREPLACE) when an allocation does
 * not fit; its free tail is unmapped again. So the reservation never holds
 * much more than the sampled bytes in use, as glibc's heap would, and
 * counts against RLIMIT_AS (ulimit -v) accordingly. If it cannot grow (the
 * limit, or a mapping in the way), the allocation returns NULL and the
 * caller forwards it unsampled and counts a dropped sample. `span` only
 * changes under `lock`; owns() reads it relaxed: a pointer handed out from
 * newly grown space reaches another thread only through some
 * synchronisation, which orders the growth before it.
 *
 * Placement. A sampled object of up to 1984 bytes gets a slot of
 * 128..2048 bytes cut from a 64 KiB slab; up to 512 KiB a run of 2^k
 * pages; anything larger its own run of exactly as many pages as it needs,
 * charged (mprotect) when taken and returned to PROT_NONE (a fresh mapping
 * over it) when freed, which gives back its memory and its commit charge
 * as glibc's munmap would. Free exact runs are kept in an address-ordered
 * list and coalesce with their neighbours and with the frontier, so live
 * and freed large blocks cannot exhaust the range. The 64-byte header
 * (hp_obj) sits just below the user pointer.
 *
 * Memory is made read-write by mprotect on a private mapping made without
 * MAP_NORESERVE: the kernel charges it as it charges glibc's mmap, so a
 * sampled allocation that the system's overcommit policy refuses fails
 * here too (and is forwarded, and fails there as well).
 *
 * Signal safety. A signal handler may allocate (through the profiler's
 * private memory, slowpath.c) or free while its thread is inside this
 * file holding a lock. `heapprof__range_in_lock` (thread-local) says so; entry points
 * that would need a lock then give up instead of deadlocking: allocation
 * returns NULL, a free leaks the block (its counters are still updated).
 *
 * Exact runs (blocks over 512 KiB: kept warm when freed, grown or moved
 * by realloc) are range_exact.c's; range_int.h is what the two share.
 *
 * Shared state: base is written once before sampling starts; span,
 * bump, committed, the page-run free lists, range_exact.c's lists and
 * live_runs are protected by `rg_lock`; each slot shard's lists and count
 * by its own lock.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "range_int.h"
#include "range_lock.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define NCLASS 8       /* page runs of 2^0 .. 2^7 pages; larger are exact */
/* A fresh page run under a sampled malloc (not calloc, whose zeroed
 * memory programs may use sparsely) has its first POP_SAMPLED bytes made
 * present at once: the program is about to write them, and where glibc
 * would have given it warm heap memory the range gives fresh pages. As
 * page faults they cost ~300 a compile of this project (6,600 against
 * 6,300 without the profiler; a fault 15-40 us here, a populated page
 * ~1 us); populated, the compile's faults are those of no profiler and
 * its resident pages the same. Capped so that a program's sparse use of
 * a large block costs at most 64 KiB of memory more per sample. */
#define POP_SAMPLED ((size_t)64 << 10)
#define COMMIT_STEP ((size_t)1 << 20)
#define INITIAL ((size_t)4 << 20)     /* first reservation */
#define STEP_LIMITED ((size_t)4 << 20) /* growth / trim slack under a limit */
#define STEP_FREE ((size_t)64 << 20)   /* growth step without a limit */
#define SLACK_FREE ((size_t)1 << 30)   /* trim slack without a limit */
#define PINNED ((size_t)64 << 30)      /* reservation where growth cannot be */

uintptr_t heapprof__range_base;
_Atomic uintptr_t heapprof__range_span; /* 0 until initialised */

pthread_mutex_t rg_lock = PTHREAD_MUTEX_INITIALIZER;
size_t rg_page;
uintptr_t rg_bump;      /* next unused byte (lock) */
static bool pinned;         /* a large reservation, never trimmed (init) */
uintptr_t rg_committed; /* [bump, committed) is read-write (lock) */
static uintptr_t free_list[NCLASS]; /* run starts, linked via word 0 (lock) */
static uint64_t live_runs; /* page runs in use (lock) */
static _Atomic uint64_t exhausted; /* allocations the range could not serve */
static _Atomic uint64_t priv_live; /* live private blocks (not samples) */

/* Frees that came while a fork was being prepared (range_lock.c's
 * fence): a lock-free stack linked through the header's bucket field,
 * drained by the next allocation or free after the fork. */
static _Atomic(hp_obj *) deferred;
static void drain_deferred(void);

uintptr_t
rg_span(void)
{
	return atomic_load_explicit(&heapprof__range_span, memory_order_relaxed);
}

/* Is the address space limited (ulimit -v)? A limit of a TiB or more
 * counts as none. Read at start-up and at each dump
 * (heapprof__range_limit_refresh), never on a sampled allocation: glibc's
 * malloc makes no such call, and a seccomp filter may forbid it
 * (sandbox.c). A limit the program sets later through libc (setrlimit,
 * prlimit: sandbox.c interposes them) is noted as it is set; one set
 * otherwise (a raw system call, another process's prlimit) is seen from
 * the next dump on. Relaxed: a stale answer only changes a step size. */
static _Atomic int rg_as_limited; /* 0: not read yet, 1: no, 2: limited */

bool
rg_limited(void)
{
	int v = atomic_load_explicit(&rg_as_limited, memory_order_relaxed);
	return v == 0 ? heapprof__range_limit_refresh() : v == 2;
}

HP_RARE bool
heapprof__range_limit_refresh(void)
{
	struct rlimit rl;
	int saved = errno;
	bool ok = getrlimit(RLIMIT_AS, &rl) == 0;
	errno = saved;
	return heapprof__range_limit_note(ok ? (uint64_t)rl.rlim_cur : RLIM_INFINITY);
}

/* The program set RLIMIT_AS's soft limit to `cur` (sandbox.c sees it). */
HP_RARE bool
heapprof__range_limit_note(uint64_t cur)
{
	bool lim = cur != RLIM_INFINITY && cur < ((uint64_t)1 << 40);
	atomic_store_explicit(&rg_as_limited, lim ? 2 : 1, memory_order_relaxed);
	return lim;
}

HP_RARE int
heapprof__range_init(void)
{
	if (rg_span())
		return 0;
	/* The auxiliary vector, not sysconf(): init already reads it, and
	 * sysconf's code is one more page of libc to fault in. */
	heapprof__range_limit_refresh();
	unsigned long ps = getauxval(AT_PAGESZ);
	rg_page = ps ? (size_t)ps : 4096;
	/* Midway between the program break and the stack: the largest gap
	 * of a usual layout, far from where mmap places things, so the range
	 * can grow upwards. Both ends are randomised (ASLR). */
	int here;
	uintptr_t lo = (uintptr_t)sbrk(0), hi = (uintptr_t)&here, hint = 0;
	if (lo != (uintptr_t)-1 && lo < hi)
		hint = (lo + (hi - lo) / 2) & ~(uintptr_t)(rg_page - 1);
	for (size_t len = INITIAL; len >= ((size_t)64 << 10); len /= 2) {
		void *p = mmap((void *)hint, len, PROT_NONE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		if (hint && (uintptr_t)p != hint && !rg_limited()) {
			/* The hint was not honoured (the gap is taken, or a
			 * sanitizer's shadow memory lies there): placed among
			 * other mappings, the range could not grow in place.
			 * Without a limit, address space costs nothing: take
			 * a large reservation instead, and keep it. */
			void *big = mmap(NULL, PINNED, PROT_NONE,
			                 MAP_PRIVATE | MAP_ANONYMOUS,
			                 -1, 0);
			if (big != MAP_FAILED) {
				munmap(p, len);
				p = big;
				len = PINNED;
				pinned = true;
			}
		}
		heapprof__range_base = (uintptr_t)p;
		rg_bump = rg_committed = (uintptr_t)p;
		atomic_store_explicit(&heapprof__range_span, len,
		                      memory_order_release);
		return 0;
	}
	return -ENOMEM;
}

/* Makes the range at least `need` bytes past bump. Called with lock held. */
static bool
grow(size_t need)
{
	uintptr_t end = heapprof__range_base + rg_span();
	if (need <= end - rg_bump)
		return true;
	size_t more = need - (end - rg_bump);
	size_t step = rg_limited() ? STEP_LIMITED : STEP_FREE;
	for (int i = 0; i < 2; i++) {
		size_t len = i == 0 ? (more + step - 1) / step * step
		                    : (more + rg_page - 1) & ~(rg_page - 1);
		if (len < more || len > PTRDIFF_MAX) /* overflow */
			return false;
		void *p = mmap((void *)end, len, PROT_NONE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		               -1, 0);
		if (p == MAP_FAILED)
			continue; /* ENOMEM (a limit: try the exact size), EEXIST */
		if ((uintptr_t)p != end) { /* a kernel without NOREPLACE */
			munmap(p, len);
			return false;
		}
		atomic_store_explicit(&heapprof__range_span, rg_span() + len,
		                      memory_order_release);
		return true;
	}
	return false;
}

/* Unmaps the range's free tail beyond some slack. Called with lock held. */
void
rg_trim(void)
{
	if (pinned)
		return;
	uintptr_t end = heapprof__range_base + rg_span();
	bool lim = rg_limited();
	size_t slack = lim ? STEP_LIMITED : SLACK_FREE;
	if (end - rg_committed <= 2 * slack)
		return;
	uintptr_t keep = (rg_committed + slack + rg_page - 1) & ~(uintptr_t)(rg_page - 1);
	if (keep < heapprof__range_base + INITIAL)
		keep = heapprof__range_base + INITIAL;
	if (keep >= end)
		return;
	atomic_store_explicit(&heapprof__range_span, keep - heapprof__range_base,
	                      memory_order_release);
	munmap((void *)keep, end - keep);
}

/* Puts [a, a + len) back to PROT_NONE, without memory or commit charge. */
bool
rg_release(uintptr_t a, size_t len)
{
	if (!len)
		return true;
	void *p = mmap((void *)a, len, PROT_NONE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p != MAP_FAILED)
		return true;
	madvise((void *)a, len, MADV_DONTNEED); /* at least the memory */
	return false;
}

/* `bytes` from the frontier, read-write, or 0. Called with lock held. */
uintptr_t
rg_frontier(size_t bytes)
{
	if (!grow(bytes))
		return 0;
	uintptr_t r = rg_bump;
	if (r + bytes > rg_committed) {
		uintptr_t end = heapprof__range_base + rg_span();
		size_t need = r + bytes - rg_committed;
		size_t step = (need + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
		if (step <= end - rg_committed &&
		    mprotect((void *)rg_committed, step, PROT_READ | PROT_WRITE) == 0)
			need = step;
		else if (mprotect((void *)rg_committed, need, PROT_READ | PROT_WRITE))
			return 0; /* commit refused, as glibc's mmap would be */
		rg_committed += need;
	}
	rg_bump += bytes;
	return r;
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
		*dirty = true;
		return r;
	}
	*dirty = false;
	return rg_frontier(rg_page << c);
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
	uintptr_t free[NSLOTK]; /* (lock) freed slots, a list through them */
	/* (lock) the current slab's next never-used slot and its end: slots
	 * are cut as they are needed, so a slab's pages are touched (each a
	 * page fault) only as far as it is used, not all 16 at once. */
	uintptr_t next[NSLOTK], end[NSLOTK];
	uint64_t live;          /* (lock) */
} __attribute__((aligned(64))) shard;
/* Initialised statically: with pthread_once, a signal handler that
 * allocated (or dumped) while its thread was inside the first sample's
 * once routine waited for that routine, on its own thread, for ever
 * (rel.sigalloc.first_sample). */
#define SHARD_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}
static shard shards[NSHARD] = {SHARD_INIT, SHARD_INIT, SHARD_INIT, SHARD_INIT,
                               SHARD_INIT, SHARD_INIT, SHARD_INIT, SHARD_INIT};
_Static_assert(NSHARD == 8, "one SHARD_INIT per shard");
static _Atomic unsigned next_shard;

/* A free slot of 2^shift bytes from shard h, or 0; *carved: whether it
 * was cut from a slab, never used before. Called with h's lock held;
 * takes the range lock to carve a new slab. */
static uintptr_t
slot_get(shard *h, unsigned shift, bool *carved)
{
	unsigned k = shift - SLOT_MIN_SHIFT;
	uintptr_t s = h->free[k];
	*carved = !s;
	if (s) { /* the link lives where the header goes */
		h->free[k] = *(uintptr_t *)s;
		return s;
	}
	if (h->next[k] == h->end[k]) {
		bool dirty;
		if (!heapprof__rlock(&rg_lock))
			return 0;
		uintptr_t slab = run_get(class_of(SLAB_BYTES / rg_page), &dirty);
		heapprof__runlock(&rg_lock);
		if (!slab)
			return 0;
		h->next[k] = slab;
		h->end[k] = slab + SLAB_BYTES;
	}
	s = h->next[k];
	h->next[k] += (size_t)1 << shift;
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
		t->shard = atomic_fetch_add(&next_shard, 1) % NSHARD + 1;
	}
	shard *h = &shards[t->shard - 1];
	if (!heapprof__rlock(&h->lock))
		return NULL;
	bool carved;
	uintptr_t s = slot_get(h, shift, &carved);
	if (s)
		h->live++;
	heapprof__runlock(&h->lock);
	if (!s)
		return NULL;
	/* The first slot cut from a page of a slab: the page is made present
	 * in one system call, not a page fault at the header's write (~8 a
	 * compile of this project; slots never span pages). */
	if (carved && !(s & (rg_page - 1)))
		heapprof__range_populate((void *)s, 1);
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

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif

/* The profiler's own blocks (the dumps' tables, buffers and zlib's
 * state, the capture's growing tables) are used whole, and soon: their
 * pages are made present with one system call instead of a page fault
 * each. On this project's test VM a fault costs 12-45 us and a page made
 * present this way ~1 us (issue 15: a cc1 exit dump took ~80 faults in
 * such blocks). Page runs only (slots share slabs with sampled objects);
 * a private block that grows in place (slowpath.c) has its new part made
 * present then. Where the call is unknown (EINVAL), pages fault in as
 * before. Sampled objects: the first POP_SAMPLED bytes of a fresh page
 * run under a malloc (range_alloc), and each page of a slot slab as the
 * first slot is cut from it. Outside the range, the capture's own tables
 * as they are first written: the bucket table, the arena's pages, the
 * age table's (bucket.c, arena.c, age.c). */
void
heapprof__range_populate(void *p, size_t size)
{
	size_t pg = rg_page ? rg_page : 4096; /* the range may not be set up */
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1);
	uintptr_t e = ((uintptr_t)p + size + pg - 1) & ~(uintptr_t)(pg - 1);
	static _Atomic int unknown; /* EINVAL once: a kernel before 5.14 */
	if (atomic_load_explicit(&unknown, memory_order_relaxed))
		return;
	int saved = errno;
	if (madvise((void *)a, e - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
		atomic_store_explicit(&unknown, 1, memory_order_relaxed);
	errno = saved;
}

static void *
range_alloc(size_t size, size_t align, bool zero, bool priv)
{
	drain_deferred();
	size_t need;
	if (!rg_span() || heapprof__range_in_lock || size > PTRDIFF_MAX || align > PTRDIFF_MAX ||
	    __builtin_add_overflow(size, sizeof(hp_obj) + align, &need) ||
	    need > PTRDIFF_MAX)
		return NULL;
	if (align <= sizeof(hp_obj) &&
	    size + sizeof(hp_obj) <= ((size_t)1 << SLOT_MAX_SHIFT))
		return slot_alloc(size, zero);
	size_t pages = (need + rg_page - 1) / rg_page;
	uint32_t c = pages <= ((size_t)1 << (NCLASS - 1)) ? class_of(pages)
	                                                  : BIG_CLASS;
	bool dirty = false;
	if (!heapprof__rlock(&rg_lock))
		return NULL;
	uintptr_t run = c == BIG_CLASS ? rg_exact_get(pages * rg_page, &dirty)
	                               : run_get(c, &dirty);
	if (run)
		live_runs++;
	heapprof__runlock(&rg_lock);
	if (!run)
		return NULL;
	if (priv)
		heapprof__range_populate((void *)run, need);
	else if (!dirty && !zero && c != BIG_CLASS)
		heapprof__range_populate((void *)run,
		                         need < POP_SAMPLED ? need : POP_SAMPLED);
	uintptr_t user = run + sizeof(hp_obj);
	if (align > sizeof(hp_obj))
		user = (run + sizeof(hp_obj) + align - 1) & ~(uintptr_t)(align - 1);
	hp_obj *o = (hp_obj *)user - 1;
	o->magic = HP_OBJ_MAGIC;
	o->bucket = NULL;
	o->size = size;
	o->run = run;
	o->run_class = c;
	o->shard = c == BIG_CLASS ? (uint32_t)pages : 0;
	o->moved = 0;
	if (zero && dirty)
		memset((void *)user, 0, size);
	return (void *)user;
}

void *
heapprof__range_alloc(size_t size, size_t align, bool zero)
{
	void *p = range_alloc(size, align, zero, false);
	if (!p)
		atomic_fetch_add_explicit(&exhausted, 1, memory_order_relaxed);
	return p;
}

void *
heapprof__range_private(size_t size, size_t align, bool zero)
{
	void *p = range_alloc(size, align, zero, true);
	if (p) {
		heapprof__range_obj(p)->magic = HP_PRIV_MAGIC;
		atomic_fetch_add_explicit(&priv_live, 1, memory_order_relaxed);
	}
	return p;
}

size_t
heapprof__range_usable(const hp_obj *o)
{
	uintptr_t user = (uintptr_t)(o + 1), end;
	if (o->run_class >= SLOT_CLASS)
		end = o->run + ((size_t)1 << (o->run_class - SLOT_CLASS));
	else if (o->run_class == BIG_CLASS)
		end = o->run + (size_t)o->shard * rg_page;
	else
		end = o->run + (rg_page << o->run_class);
	return end - user;
}

/* A free run or slot back to its list, or deferred (a fork is being
 * prepared), or lost (its lock was abandoned). */
static void
give_back(hp_obj *o)
{
	uintptr_t run = o->run;
	uint32_t c = o->run_class;
	if (c >= SLOT_CLASS) {
		unsigned k = c - SLOT_CLASS - SLOT_MIN_SHIFT;
		shard *h = &shards[o->shard % NSHARD];
		if (!heapprof__rlock(&h->lock))
			goto not_now;
		*(uintptr_t *)run = h->free[k];
		atomic_thread_fence(memory_order_release);
		h->free[k] = run;
		h->live--;
		heapprof__runlock(&h->lock);
		return;
	}
	size_t pages = o->shard;
	if (!heapprof__rlock(&rg_lock))
		goto not_now;
	if (c == BIG_CLASS) {
		rg_exact_put(run, pages * rg_page);
	} else {
		*(uintptr_t *)run = free_list[c];
		/* The link before the head: a child forked at any instant of
		 * this section (init.c does not hold this lock across fork)
		 * sees a consistent list, at worst without this run. */
		atomic_thread_fence(memory_order_release);
		free_list[c] = run;
	}
	live_runs--;
	heapprof__runlock(&rg_lock);
	return;
not_now:
	if (!heapprof__rlock_forking())
		return; /* abandoned: the slot or run is lost */
	hp_obj *head = atomic_load(&deferred);
	do
		o->bucket = (struct hp_bucket *)head;
	while (!atomic_compare_exchange_weak(&deferred, &head, o));
}

/* The frees deferred by a fork, once it is over. */
static void
drain_deferred(void)
{
	if (HP_LIKELY(!atomic_load_explicit(&deferred, memory_order_relaxed)) ||
	    heapprof__rlock_forking() || heapprof__range_in_lock)
		return;
	hp_obj *o = atomic_exchange(&deferred, NULL);
	while (o) {
		hp_obj *next = (hp_obj *)o->bucket;
		give_back(o);
		o = next;
	}
}

void
heapprof__range_free(hp_obj *o)
{
	if (o->magic == HP_PRIV_MAGIC)
		atomic_fetch_sub_explicit(&priv_live, 1, memory_order_relaxed);
	o->magic = 0; /* a second free of this pointer is caught by the caller */
	if (heapprof__range_in_lock)
		return; /* a handler that interrupted this file: leak it */
	give_back(o);
	drain_deferred();
}

void
heapprof__range_stats(uint64_t *live, uint64_t *mapped, uint64_t *exh)
{
	/* Never blocks: a dump may run in a handler that interrupted this
	 * thread inside this file, or one that holds a lock for ever (a
	 * longjmp out of such a handler). Counts are then approximate. */
	*live = 0;
	*mapped = 0;
	if (!heapprof__range_in_lock && pthread_mutex_trylock(&rg_lock) == 0) {
		*live = live_runs;
		*mapped = rg_committed - heapprof__range_base -
		          rg_exact_released(); /* PROT_NONE again */
		pthread_mutex_unlock(&rg_lock);
	}
	*exh = atomic_load_explicit(&exhausted, memory_order_relaxed);
	for (int i = 0; i < NSHARD && !heapprof__range_in_lock; i++) {
		if (pthread_mutex_trylock(&shards[i].lock) == 0) {
			*live += shards[i].live;
			pthread_mutex_unlock(&shards[i].lock);
		}
	}
	uint64_t priv = atomic_load_explicit(&priv_live, memory_order_relaxed);
	*live = *live > priv ? *live - priv : 0;
}

/* Fork: range_lock.c's fence. */
HP_RARE void
heapprof__range_atfork_prepare(void)
{
	heapprof__rlock_fork_prepare();
}

HP_RARE void
heapprof__range_atfork_release(void)
{
	heapprof__rlock_fork_release();
}

HP_RARE void
heapprof__range_atfork_child(void)
{
	heapprof__rlock_fork_child();
	/* A lock another thread held at the fork is reset; one that is free
	 * is left unwritten (a page a fork child need not copy). */
	hp_mutex_reset(&rg_lock);
	for (int i = 0; i < NSHARD; i++)
		hp_mutex_reset(&shards[i].lock);
}
