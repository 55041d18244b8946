/*
 * age.c: when each live sampled object was allocated, for the age_s labels
 * of in-use samples (format/heap_age.c).
 *
 * A table of 64-bit words, one per live sample: the bucket id + 1 (bits
 * 32..62) and the birth time (bits 0..31, in 1/16 s of CLOCK_MONOTONIC_
 * COARSE, compared modulo 2^32: ages up to 8 years). The object's header
 * keeps its slot (hp_obj.age_slot). A snapshot reads only the table, never
 * the objects, whose pages a concurrent free may unmap. Free slots form a
 * lock-free stack threaded through their words (bit 63 set, the next slot
 * + 1 in bits 0..31) with a tagged head (a pop or push changes the tag, so
 * a stale pop fails its compare-and-swap); new slots come from a bump
 * index. So tracking takes no lock, is safe in a signal handler and across
 * fork (a child at worst loses a slot in flight), and costs the sampled
 * path one coarse clock read and one or two atomic operations; the
 * unsampled fast path does nothing for it.
 *
 * The table grows in chunks of 64 Ki words (512 KiB of address space,
 * touched as used), mapped on first use; a thread that loses the race to
 * publish a chunk unmaps its own. At most 2^28 live samples are tracked;
 * beyond, samples are left without an age (their in-use values are then
 * written unlabelled).
 *
 * Shared state: `chunks` (published with release CAS, never changed
 * after), `used` and `head` (atomics), each word (atomic, written by the
 * thread that owns the slot, read by snapshots). What a snapshot makes of
 * the table is age_split.c's.
 */
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "collect.h"

#define CHUNK_SHIFT 16
#define CHUNK ((uint32_t)1 << CHUNK_SHIFT)
#define NCHUNK 4096
#define FREE_BIT ((uint64_t)1 << 63)
#define TICKS_PER_S 16

static _Atomic(_Atomic uint64_t *) chunks[NCHUNK] HP_BIG_BSS;
static _Atomic uint32_t used;   /* slots handed out from the bump index */
static _Atomic uint64_t head;   /* tag << 32 | (free slot + 1) */

static uint32_t
now_ticks(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * TICKS_PER_S +
	                  (uint64_t)ts.tv_nsec / (1000000000 / TICKS_PER_S));
}

static _Atomic uint64_t *
word(uint32_t slot)
{
	_Atomic uint64_t *c = atomic_load_explicit(&chunks[slot >> CHUNK_SHIFT],
	                                           memory_order_acquire);
	return c ? &c[slot & (CHUNK - 1)] : NULL;
}

/* A fresh slot from the bump index (its chunk mapped), or UINT32_MAX.
 * The pages about to be written are made present first, in one system
 * call rather than a page-fault trap each (15-40 us on this VM): the chunk
 * table's first page at the first slot (read, then written: the zero
 * page's trap, then its copy's), and each 4 KiB of a chunk's words as
 * the bump index enters it. */
static uint32_t
fresh(void)
{
	uint32_t s = atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
	if (s >= (uint32_t)NCHUNK * CHUNK) {
		atomic_store_explicit(&used, (uint32_t)NCHUNK * CHUNK,
		                      memory_order_relaxed);
		return UINT32_MAX;
	}
	if (s == 0)
		heapprof__range_populate(&chunks[0], sizeof(chunks[0]));
	_Atomic(_Atomic uint64_t *) *cp = &chunks[s >> CHUNK_SHIFT];
	if (!atomic_load_explicit(cp, memory_order_acquire)) {
		void *m = mmap(NULL, CHUNK * sizeof(uint64_t),
		               PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return UINT32_MAX; /* the slot is lost; readers skip it */
		_Atomic uint64_t *none = NULL;
		if (!atomic_compare_exchange_strong_explicit(
			    cp, &none, m, memory_order_acq_rel,
			    memory_order_acquire))
			munmap(m, CHUNK * sizeof(uint64_t));
	}
	if ((s & (4096 / sizeof(uint64_t) - 1)) == 0)
		heapprof__range_populate(word(s), sizeof(uint64_t));
	return s;
}

static uint32_t
pop(void)
{
	uint64_t h = atomic_load_explicit(&head, memory_order_acquire);
	for (;;) {
		uint32_t top = (uint32_t)h;
		if (!top)
			return fresh();
		_Atomic uint64_t *w = word(top - 1);
		uint64_t link = atomic_load_explicit(w, memory_order_relaxed);
		/* If another thread took `top` meanwhile, the tag changed
		 * and the exchange fails, whatever `link` read. */
		uint64_t nh = (((h >> 32) + 1) << 32) | (uint32_t)link;
		if (atomic_compare_exchange_weak_explicit(&head, &h, nh,
		                                          memory_order_acq_rel,
		                                          memory_order_acquire))
			return top - 1;
	}
}

static void
push(uint32_t slot)
{
	_Atomic uint64_t *w = word(slot);
	uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
	for (;;) {
		atomic_store_explicit(w, FREE_BIT | (uint32_t)h,
		                      memory_order_relaxed);
		uint64_t nh = (((h >> 32) + 1) << 32) | (slot + 1);
		if (atomic_compare_exchange_weak_explicit(&head, &h, nh,
		                                          memory_order_release,
		                                          memory_order_relaxed))
			return;
	}
}

uint32_t
heapprof__age_track(const hp_bucket *b)
{
	if (b->id >= 0x7ffffffeu)
		return 0;
	uint32_t s = pop();
	if (s == UINT32_MAX)
		return 0;
	uint64_t v = ((uint64_t)(b->id + 1) << 32) | now_ticks();
	atomic_store_explicit(word(s), v, memory_order_relaxed);
	return s + 1;
}

void
heapprof__age_untrack(uint32_t slot)
{
	if (slot)
		push(slot - 1);
}

/* Each live tracked sample: fn(arg, bucket id, age in ms); a nonzero
 * return stops the scan and is returned. Lock-free: a sample tracked or
 * freed meanwhile may be seen or not. */
int
heapprof__age_each(int (*fn)(void *arg, uint32_t id, int64_t ms), void *arg)
{
	uint32_t now = now_ticks();
	uint32_t nused = atomic_load_explicit(&used, memory_order_relaxed);
	for (uint32_t c = 0; c * CHUNK < nused && c < NCHUNK; c++) {
		_Atomic uint64_t *w =
			atomic_load_explicit(&chunks[c], memory_order_acquire);
		if (!w)
			continue;
		uint32_t end = nused - c * CHUNK < CHUNK ? nused - c * CHUNK : CHUNK;
		for (uint32_t j = 0; j < end; j++) {
			uint64_t v = atomic_load_explicit(&w[j], memory_order_relaxed);
			if (!v || (v & FREE_BIT))
				continue;
			int64_t ms = (int64_t)(uint32_t)(now - (uint32_t)v) *
			             (1000 / TICKS_PER_S);
			int rc = fn(arg, (uint32_t)(v >> 32) - 1, ms);
			if (rc)
				return rc;
		}
	}
	return 0;
}
