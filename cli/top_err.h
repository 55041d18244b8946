/*
 * top_err.h: `heapprof top --error`: the 95% intervals of a heap
 * profile's sampled values, and the line reconciling its in-use estimate
 * with the RSS and the allocator's figures the profile's comments carry.
 */
#ifndef HEAPPROF_CLI_TOP_ERR_H
#define HEAPPROF_CLI_TOP_ERR_H

#include <stddef.h>
#include <stdint.h>

#include "pprof_dec.h"

enum { TOP_ERR_NONE, TOP_ERR_EXACT, TOP_ERR_SAMPLED };

typedef struct top_err {
	int kind;      /* TOP_ERR_* */
	char why[200]; /* TOP_ERR_NONE: why there is no interval */
	int64_t rate;  /* the profile's period */
	size_t vi;     /* the type shown */
	size_t count_vi; /* the objects type of the same kind (alloc_, inuse_) */
	long space_vi;   /* the space type of the same kind, or -1 */
	int bytes;       /* the type shown counts bytes */
} top_err;

/* What the profile allows for type vi (reads every sample once, for its
 * bytes labels). */
void cli_top_err_init(top_err *e, pprof_dec *d, size_t vi);

/* The sampled objects behind an unsampled count v of objects of size
 * bytes each at rate R (the inverse of the encoder's truncated scaling). */
double cli_top_err_sampled(int64_t v, double size, int64_t rate);

/* The estimator's variance for sample s's value of the type shown
 * (e->kind TOP_ERR_SAMPLED); *n: its sampled objects, *size: its object
 * size. */
double cli_top_err_var(const top_err *e, const pprof_dec *d,
                       const pprof_sample *s, double *n, double *size);

/* The half-width of the 95% interval: 1.96 sqrt(var). */
double cli_top_err_half(double var);

/* The whole profile's inuse_space: its sum *heap, the 95% half-width
 * *half (-1: none), *exact at rate 1, and *sampled, the bytes of the
 * sampled objects in use. */
void cli_top_err_inuse(pprof_dec *d, double *heap, double *half, int *exact,
                       double *sampled);

/* The "heapprof: memory:" and "profiler memory:" comments. */
typedef struct top_mem {
	int have;          /* a memory comment was found */
	int64_t rss;       /* -1: unknown */
	int have_alloc;    /* the allocator's figures are there */
	char allocator[32];
	char skipped[200]; /* why they are not, if not */
	int64_t held, in_use, free_b;
	int64_t records, pages; /* the profiler's own (-1: absent) */
} top_mem;
void cli_top_mem_parse(const pprof_dec *d, top_mem *m);

/* The reconciliation line (no newline): heap = the in-use estimate, half
 * its 95% half-width (< 0: no interval; 0 with exact: exact), sampled =
 * the in-use bytes of the sampled objects (kept by the profiler). */
void cli_top_mem_line(const top_mem *m, double heap, double half, int exact,
                      double sampled, char *out, size_t cap);

#endif
