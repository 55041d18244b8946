/*
 * snapshot.c: the profiler's records as a heapprof_heap_profile for the
 * writers: a copy of every bucket's counters (read with relaxed atomics
 * while the program keeps allocating: seed 003's copy loop, without the
 * retry, since buckets are only ever prepended to a list), the executable
 * mappings of /proc/self/maps with their GNU build ids, and function names
 * from the ELF symbol tables (a cache kept for the life of the process).
 *
 * Runs on the dumping thread with its busy flag set and dump_lock held
 * (serve/dump.c), so the memory it takes from malloc comes from the real
 * allocator, unsampled, and the symbol cache has one user at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "elffile.h"
#include "maps.h"

static heapprof_symcache *symcache; /* dump_lock */

/* Build ids by path, so each file is read once per process (dump_lock). */
static struct bid_cache {
	char *path;
	char *hex; /* NULL: none */
} *bids;
static size_t nbids;

static const char *
build_id(const char *path)
{
	for (size_t i = 0; i < nbids; i++)
		if (!strcmp(bids[i].path, path))
			return bids[i].hex;
	char hex[129];
	int rc = heapprof__elf_build_id(path, hex, sizeof(hex));
	struct bid_cache *nb = realloc(bids, (nbids + 1) * sizeof(*bids));
	if (!nb)
		return NULL;
	bids = nb;
	bids[nbids].path = strdup(path);
	bids[nbids].hex = rc > 0 ? strdup(hex) : NULL;
	if (!bids[nbids].path)
		return NULL;
	return bids[nbids++].hex;
}

/* Executable mappings, the main binary first. */
static int
collect_mappings(heapprof_maps *maps, heapprof_mapping **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (heapprof__maps_read_self(maps) != 0)
		return 0; /* no mappings: pprof shows raw addresses */
	heapprof__maps_keep_exec(maps);
	heapprof_mapping *m = calloc(maps->n + 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = 0;
	size_t k = 0, main_at = (size_t)-1;
	for (size_t i = 0; i < maps->n; i++) {
		const heapprof_maps_entry *e = &maps->v[i];
		m[k].start = e->start;
		m[k].limit = e->limit;
		m[k].offset = e->offset;
		m[k].file = e->path;
		m[k].build_id = e->path[0] == '/' ? build_id(e->path) : NULL;
		if (main_at == (size_t)-1 && exe[0] && !strcmp(e->path, exe))
			main_at = k;
		k++;
	}
	if (main_at != (size_t)-1 && main_at != 0) {
		heapprof_mapping t = m[main_at];
		memmove(m + 1, m, main_at * sizeof(*m));
		m[0] = t;
	}
	*out = m;
	*n = k;
	return 0;
}

int
heapprof__snapshot_write(heapprof_write_fn *write, void *arg, int text)
{
	/* Count, allocate with room to spare, copy; buckets created during
	 * the copy are simply left for the next snapshot. */
	uint64_t cap = heapprof__bucket_count() + 64;
	heapprof_record *recs = calloc(cap, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	size_t n = 0;
	for (hp_bucket *b = heapprof__bucket_list(); b && n < cap;
	     b = b->all_next) {
		/* Frees first: a free counted after we read the allocs could
		 * otherwise exceed them. */
		int64_t fo = atomic_load_explicit(&b->free_objects, memory_order_acquire);
		int64_t fb = atomic_load_explicit(&b->free_bytes, memory_order_acquire);
		int64_t ao = atomic_load_explicit(&b->alloc_objects, memory_order_acquire);
		int64_t ab = atomic_load_explicit(&b->alloc_bytes, memory_order_acquire);
		if (ao == 0)
			continue;
		if (fo > ao)
			fo = ao;
		if (fb > ab)
			fb = ab;
		recs[n].alloc_objects = ao;
		recs[n].alloc_bytes = ab;
		recs[n].free_objects = fo;
		recs[n].free_bytes = fb;
		recs[n].stack = b->stack;
		recs[n].depth = b->depth;
		n++;
	}
	/* Oldest bucket first: stable order across dumps. */
	for (size_t i = 0; i < n / 2; i++) {
		heapprof_record t = recs[i];
		recs[i] = recs[n - 1 - i];
		recs[n - 1 - i] = t;
	}

	heapprof_maps maps;
	memset(&maps, 0, sizeof(maps));
	heapprof_mapping *mappings;
	size_t nmappings;
	int rc = collect_mappings(&maps, &mappings, &nmappings);
	if (rc != 0) {
		free(recs);
		heapprof__maps_free(&maps);
		return rc;
	}
	if (!symcache)
		symcache = heapprof__symcache_new();

	uint64_t live, mapped, exh;
	heapprof__range_stats(&live, &mapped, &exh);
	char c1[256];
	snprintf(c1, sizeof(c1),
	         "heapprof: rate=%lld unwinder=%s buckets=%llu live_samples=%llu "
	         "dropped_samples=%llu",
	         (long long)atomic_load(&heapprof__cfg.rate),
	         heapprof__stack_unwinder(),
	         (unsigned long long)heapprof__bucket_count(),
	         (unsigned long long)live,
	         (unsigned long long)atomic_load(&heapprof__dropped_samples));
	char c2[256];
	snprintf(c2, sizeof(c2),
	         "heapprof: profiler memory: records=%zu bytes, sampled-object "
	         "pages=%llu bytes",
	         heapprof__arena_bytes(), (unsigned long long)mapped);
	const char *comments[2] = {c1, c2};

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	heapprof_heap_profile p;
	memset(&p, 0, sizeof(p));
	p.records = recs;
	p.nrecords = n;
	p.rate = atomic_load(&heapprof__cfg.rate);
	p.time_nanos = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	p.mappings = mappings;
	p.nmappings = nmappings;
	p.symbolize = symcache ? heapprof__symcache_symbolize : NULL;
	p.symbolize_arg = symcache;
	p.comments = comments;
	p.ncomments = 2;
	rc = text ? heapprof_encode_heap_text(&p, write, arg)
	          : heapprof_encode_heap(&p, HEAPPROF_ENCODE_GZIP, write, arg);
	free(mappings);
	heapprof__maps_free(&maps);
	free(recs);
	return rc;
}
