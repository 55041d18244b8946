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
 * thread that owns the slot, read by snapshots).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "collect.h"
#include "heap_encode.h"

#define CHUNK_SHIFT 16
#define CHUNK ((uint32_t)1 << CHUNK_SHIFT)
#define NCHUNK 4096
#define FREE_BIT ((uint64_t)1 << 63)
#define TICKS_PER_S 16

static _Atomic(_Atomic uint64_t *) chunks[NCHUNK];
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

/* A fresh slot from the bump index (its chunk mapped), or UINT32_MAX. */
static uint32_t
fresh(void)
{
	uint32_t s = atomic_fetch_add_explicit(&used, 1, memory_order_relaxed);
	if (s >= (uint32_t)NCHUNK * CHUNK) {
		atomic_store_explicit(&used, (uint32_t)NCHUNK * CHUNK,
		                      memory_order_relaxed);
		return UINT32_MAX;
	}
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

/* One live sample, for sorting: bucket id << 8 | class. */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* (stack pointer, bucket id) of every bucket, sorted by pointer: a
 * record's bucket is the one whose stack array it points to (snapshot.c
 * hands out b->stack). A record whose stack is not a bucket's gets no
 * age parts. */
typedef struct sid {
	uintptr_t stack;
	uint32_t id;
} sid;

static int
cmp_sid(const void *a, const void *b)
{
	uintptr_t x = ((const sid *)a)->stack, y = ((const sid *)b)->stack;
	return x < y ? -1 : x > y;
}

static int
bucket_index(sid **out, size_t *n)
{
	size_t cap = (size_t)heapprof__bucket_count() + 16, k = 0;
	sid *v = malloc(cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next) {
		if (k == cap) { /* buckets made since the count */
			sid *nv = realloc(v, 2 * cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[k++] = (sid){(uintptr_t)b->stack, b->id};
	}
	qsort(v, k, sizeof(*v), cmp_sid);
	*out = v;
	*n = k;
	return 0;
}

/* The id of the bucket whose stack is r's, or UINT32_MAX. */
static uint32_t
record_bucket(const sid *v, size_t n, const heapprof_record *r)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].stack < (uintptr_t)r->stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].stack == (uintptr_t)r->stack ? v[lo].id
	                                                     : UINT32_MAX;
}

int
heapprof__age_split_records(const heapprof_record *recs, size_t n,
                            heapprof__age_split *out)
{
	memset(out, 0, sizeof(*out));
	uint32_t now = now_ticks();
	uint32_t nused = atomic_load_explicit(&used, memory_order_relaxed);
	/* Bucket id -> record index + 1, for the records' buckets. */
	sid *bx = NULL;
	size_t nbx = 0, cap = 0, k = 0;
	uint64_t *live = NULL;
	uint32_t *rix = NULL, maxid = 0;
	out->first = calloc(n + 1, sizeof(*out->first));
	if (!out->first || bucket_index(&bx, &nbx) != 0)
		goto nomem;
	for (size_t i = 0; i < nbx; i++)
		if (bx[i].id + 1 > maxid)
			maxid = bx[i].id + 1;
	if (!(rix = calloc(maxid + 1, sizeof(*rix))))
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		uint32_t id = record_bucket(bx, nbx, &recs[i]);
		if (id != UINT32_MAX)
			rix[id] = (uint32_t)i + 1;
	}
	for (uint32_t c = 0; c * CHUNK < nused && c < NCHUNK; c++) {
		_Atomic uint64_t *w =
			atomic_load_explicit(&chunks[c], memory_order_acquire);
		if (!w)
			continue;
		uint32_t end = nused - c * CHUNK < CHUNK ? nused - c * CHUNK : CHUNK;
		for (uint32_t j = 0; j < end; j++) {
			uint64_t v = atomic_load_explicit(&w[j], memory_order_relaxed);
			uint32_t id1 = (uint32_t)(v >> 32);
			if (!v || (v & FREE_BIT) || id1 > maxid || !rix[id1 - 1])
				continue;
			int64_t ms = (int64_t)(uint32_t)(now - (uint32_t)v) *
			             (1000 / TICKS_PER_S);
			if (k == cap) {
				size_t nc = cap ? cap * 2 : 1024;
				uint64_t *nl = realloc(live, nc * sizeof(*nl));
				if (!nl)
					goto nomem;
				live = nl;
				cap = nc;
			}
			live[k++] = ((uint64_t)(rix[id1 - 1] - 1) << 8) |
			            heapprof__age_class_of_ms(ms);
		}
	}
	if (k) /* qsort(NULL, 0) is undefined (its pointer is nonnull) */
		qsort(live, k, sizeof(*live), cmp_u64);
	/* Runs of equal (record, class): one part each, records in order,
	 * classes youngest first. */
	out->parts = calloc(k ? k : 1, sizeof(*out->parts));
	if (!out->parts)
		goto nomem;
	size_t np = 0, ri = 0;
	for (size_t j = 0; j < k;) {
		size_t e = j;
		while (e < k && live[e] == live[j])
			e++;
		size_t rec = (size_t)(live[j] >> 8);
		while (ri <= rec)
			out->first[ri++] = np;
		out->parts[np].objects = (int64_t)(e - j);
		out->parts[np].cls = (unsigned)(live[j] & 0xff);
		np++;
		j = e;
	}
	while (ri <= n)
		out->first[ri++] = np;
	out->nparts = np;
	free(live);
	free(rix);
	free(bx);
	return 0;
nomem:
	free(live);
	free(rix);
	free(bx);
	heapprof__age_split_free(out);
	return -ENOMEM;
}

void
heapprof__age_split_free(heapprof__age_split *s)
{
	free(s->first);
	free(s->parts);
	memset(s, 0, sizeof(*s));
}
