/*
 * heap_text.c: heap records -> the legacy text heap profile that pprof and
 * google-pprof read (seed 003's format, as Go's debug=1 writes it):
 *
 *   heap profile: INUSE_OBJS: INUSE_BYTES [ALLOC_OBJS: ALLOC_BYTES] @ heap_v2/RATE
 *   INUSE_OBJS: INUSE_BYTES [ALLOC_OBJS: ALLOC_BYTES] @ 0xret 0xret ...
 *   ...
 *   MAPPED_LIBRARIES:
 *   start-limit r-xp offset 00:00 0 /path
 *
 * Counts are the raw sampled ones: readers unsample them with the rate in
 * the header. The header has one rate, records may have been sampled at
 * several (the program changed the rate at run time): when every record
 * has the same rate, that rate is the header's (whatever the current
 * rate is: after heapprof_set_sample_rate(0) the records keep theirs) and
 * the counts are raw; otherwise each record's counts are unsampled here
 * with its own rate, the header says heap_v2/1 (readers scale nothing)
 * and a comment says so. Zero-byte objects do not survive readers either
 * way (pprof's legacy reader drops a row of 0 bytes). Addresses are return addresses (pprof subtracts 1 from each,
 * so the stack's call-site addresses get 1 added back). Records are sorted
 * by in-use bytes, largest first, as Go sorts them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "demangle.h"
#include "compiler.h"

typedef struct tw {
	heapprof_write_fn *write;
	void *arg;
	int err;
	size_t len;
	char buf[8192];
} tw;

static void
tw_flush(tw *t)
{
	if (t->len && !t->err)
		t->err = t->write(t->arg, t->buf, t->len);
	t->len = 0;
}

static void tw_printf(tw *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
tw_printf(tw *t, const char *fmt, ...)
{
	if (sizeof(t->buf) - t->len < 512)
		tw_flush(t);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n < sizeof(t->buf) - t->len
		              ? (size_t)n : sizeof(t->buf) - t->len - 1;
}

/* One record's values as written: in-use and alloc pairs. */
typedef struct row {
	const heapprof_record *r;
	int64_t io, ib, ao, ab;
} row;

static int
cmp_inuse(const void *a, const void *b)
{
	const row *x = a, *y = b;
	return x->ib > y->ib ? -1 : x->ib < y->ib;
}

/* Leaf frames that are C++ allocator entry points (operator new, new[]):
 * left out as heap_encode.c leaves them out of the pprof form. */
static size_t
alloc_frames(const heapprof_heap_profile *p, const heapprof_record *r)
{
	size_t k = 0;
	while (p->symbolize && k + 1 < r->depth) {
		const heapprof_mapping *m = NULL;
		for (size_t i = 0; i < p->nmappings && !m; i++)
			if (r->stack[k] >= p->mappings[i].start &&
			    r->stack[k] < p->mappings[i].limit)
				m = &p->mappings[i];
		const char *name = p->symbolize(p->symbolize_arg, r->stack[k], m);
		if (!name || !heapprof__is_alloc_entry(
			             name, heapprof__sym_unversioned_len(name)))
			break;
		k++;
	}
	return k;
}

HP_EXPORT int
heapprof_encode_heap_text(const heapprof_heap_profile *p,
                          heapprof_write_fn *write, void *arg)
{
	if (!p || !write || (p->nrecords && !p->records) ||
	    (p->nmappings && !p->mappings) || p->rate < 0)
		return -EINVAL;
	/* The header's rate: the records' own if they share one. */
	int64_t rate = p->rate;
	int mixed = 0;
	for (size_t i = 0; i < p->nrecords; i++) {
		int64_t r = p->records[i].rate ? p->records[i].rate : p->rate;
		if (i == 0)
			rate = r;
		else if (r != rate)
			mixed = 1;
	}
	if (mixed)
		rate = 1;
	row *order = NULL;
	if (p->nrecords) {
		order = malloc(p->nrecords * sizeof(*order));
		if (!order)
			return -ENOMEM;
	}
	int64_t ao = 0, ab = 0, io = 0, ib = 0;
	for (size_t i = 0; i < p->nrecords; i++) {
		const heapprof_record *r = &p->records[i];
		row *w = &order[i];
		w->r = r;
		w->ao = r->alloc_objects;
		w->ab = r->alloc_bytes;
		w->io = r->alloc_objects - r->free_objects;
		w->ib = r->alloc_bytes - r->free_bytes;
		if (mixed) {
			int64_t rr = r->rate ? r->rate : p->rate;
			heapprof_scale_heap_sample(w->ao, w->ab, rr, &w->ao, &w->ab);
			heapprof_scale_heap_sample(w->io, w->ib, rr, &w->io, &w->ib);
		}
		ao += w->ao;
		ab += w->ab;
		io += w->io;
		ib += w->ib;
	}
	if (p->nrecords)
		qsort(order, p->nrecords, sizeof(*order), cmp_inuse);

	tw *t = malloc(sizeof(*t));
	if (!t) {
		free(order);
		return -ENOMEM;
	}
	t->write = write;
	t->arg = arg;
	t->err = 0;
	t->len = 0;
	tw_printf(t, "heap profile: %" PRId64 ": %" PRId64 " [%" PRId64
	             ": %" PRId64 "] @ heap_v2/%" PRId64 "\n",
	          io, ib, ao, ab, rate);
	for (size_t i = 0; i < p->nrecords && !t->err; i++) {
		const row *w = &order[i];
		tw_printf(t, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @",
		          w->io, w->ib, w->ao, w->ab);
		for (size_t d = alloc_frames(p, w->r); d < w->r->depth; d++)
			tw_printf(t, " 0x%" PRIx64, w->r->stack[d] + 1);
		tw_printf(t, "\n");
	}
	if (mixed)
		tw_printf(t, "# heapprof: records sampled at several rates: counts "
		             "are unsampled, hence heap_v2/1\n");
	for (size_t i = 0; i < p->ncomments; i++)
		tw_printf(t, "# %s\n", p->comments[i]);
	tw_printf(t, "\nMAPPED_LIBRARIES:\n");
	for (size_t i = 0; i < p->nmappings; i++) {
		const heapprof_mapping *m = &p->mappings[i];
		tw_printf(t, "%08" PRIx64 "-%08" PRIx64 " r-xp %08" PRIx64
		             " 00:00 0 %s\n",
		          m->start, m->limit, m->offset, m->file ? m->file : "");
	}
	tw_flush(t);
	int rc = t->err;
	free(t);
	free(order);
	return rc;
}
