/*
 * age_split.c: a snapshot's in-use samples split by age (heap_age.c's
 * age_s labels): for each record, how many of its bucket's live samples
 * fall in each age class, from age.c's table. Runs in dumps only, so its
 * calls into libc are bound lazily (Makefile).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "heap_encode.h"

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

/* The live samples of the records' buckets, as (record, class) keys. */
struct gather {
	const uint32_t *rix; /* bucket id -> record index + 1 */
	uint32_t maxid;
	uint64_t *live;
	size_t k, cap;
};

static int
gather_one(void *arg, uint32_t id, int64_t ms)
{
	struct gather *g = arg;
	if (id >= g->maxid || !g->rix[id])
		return 0;
	if (g->k == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 1024;
		uint64_t *nl = realloc(g->live, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		g->live = nl;
		g->cap = nc;
	}
	g->live[g->k++] = ((uint64_t)(g->rix[id] - 1) << 8) |
	                  heapprof__age_class_of_ms(ms);
	return 0;
}

int
heapprof__age_split_records(const heapprof_record *recs, size_t n,
                            heapprof__age_split *out)
{
	memset(out, 0, sizeof(*out));
	/* Bucket id -> record index + 1, for the records' buckets. */
	sid *bx = NULL;
	size_t nbx = 0, k = 0;
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
	struct gather g = {rix, maxid, NULL, 0, 0};
	int rc = heapprof__age_each(gather_one, &g);
	live = g.live;
	k = g.k;
	if (rc)
		goto nomem;
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
