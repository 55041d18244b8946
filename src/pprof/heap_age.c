/*
 * heap_age.c: the age classes of in-use samples and their values.
 *
 * An in-use sample of a heap profile may be split by how long its objects
 * have been live: one sample per age class, labelled with the numeric
 * label age_s (num_unit "seconds") that holds the class's lower bound, so
 * `go tool pprof -tagfocus age_s=600:` or `heapprof top --min-age 10m`
 * keeps what has been in use for at least ten minutes. Classes, not exact
 * ages, keep a stack's samples few (at most one per class) and stable from
 * one profile to the next, which merge and delta need (they key samples
 * on their labels). The bounds are round human durations, roughly doubling,
 * so the usual thresholds (1m, 10m, 1h, 1d) are exact.
 *
 * Owns: the class table, and how a record's unsampled in-use values are
 * shared among its age parts (heapprof__age_part_values).
 */
#include "heap_encode.h"

/* Lower bounds in seconds: 0 1s 2s 5s 10s 30s 1m 2m 5m 10m 30m 1h 2h 6h
 * 12h 1d 2d 7d 30d. */
static const int64_t floors[HEAPPROF_AGE_NCLASS] = {
	0,    1,    2,     5,     10,    30,     60,     120,    300,    600,
	1800, 3600, 7200, 21600, 43200, 86400, 172800, 604800, 2592000,
};

int64_t
heapprof__age_class_floor(unsigned c)
{
	return c < HEAPPROF_AGE_NCLASS ? floors[c] : floors[HEAPPROF_AGE_NCLASS - 1];
}

unsigned
heapprof__age_class_of_ms(int64_t ms)
{
	unsigned c = 0;
	while (c + 1 < HEAPPROF_AGE_NCLASS && ms >= floors[c + 1] * 1000)
		c++;
	return c;
}

/* The sampled bytes of k of the record's c in-use objects (b bytes). */
static int64_t
bytes_of(const heapprof_record *r, int64_t k, int64_t c, int64_t b)
{
	if (k == c)
		return b;
	if (r->object_size > 0)
		return k * r->object_size;
	return (int64_t)((__int128)b * k / c);
}

void
heapprof__age_part_values(const heapprof_record *r, int64_t rate,
                          const heapprof__age_part *parts, size_t n,
                          int64_t *out, int64_t *rest_objects,
                          int64_t *rest_bytes)
{
	int64_t c = r->alloc_objects - r->free_objects;
	int64_t b = r->alloc_bytes - r->free_bytes;
	int64_t vo, vb;
	heapprof_scale_heap_sample(c, b, rate, &vo, &vb);
	/* More parts than objects in use (the table was read after the
	 * counters): the youngest go, they are the ones the counters may
	 * not have seen. */
	int64_t total = 0;
	for (size_t j = 0; j < n; j++)
		total += parts[j].objects;
	int64_t excess = c > 0 ? (total > c ? total - c : 0) : total;
	int64_t cum = 0, po = 0, pb = 0;
	for (size_t j = 0; j < n; j++) {
		int64_t k = parts[j].objects;
		int64_t cut = excess < k ? excess : k;
		excess -= cut;
		k -= cut;
		cum += k;
		int64_t so, sb;
		heapprof_scale_heap_sample(cum, cum ? bytes_of(r, cum, c, b) : 0,
		                           rate, &so, &sb);
		out[2 * j] = so - po;
		out[2 * j + 1] = sb - pb;
		po = so;
		pb = sb;
	}
	*rest_objects = vo - po;
	*rest_bytes = vb - pb;
}
