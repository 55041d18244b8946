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
 * the header. Addresses are return addresses (pprof subtracts 1 from each,
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

static int
cmp_inuse(const void *a, const void *b)
{
	const heapprof_record *x = *(const heapprof_record *const *)a;
	const heapprof_record *y = *(const heapprof_record *const *)b;
	int64_t ix = x->alloc_bytes - x->free_bytes;
	int64_t iy = y->alloc_bytes - y->free_bytes;
	return ix > iy ? -1 : ix < iy;
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
	const heapprof_record **order = NULL;
	if (p->nrecords) {
		order = malloc(p->nrecords * sizeof(*order));
		if (!order)
			return -ENOMEM;
	}
	int64_t ao = 0, ab = 0, fo = 0, fb = 0;
	for (size_t i = 0; i < p->nrecords; i++) {
		order[i] = &p->records[i];
		ao += p->records[i].alloc_objects;
		ab += p->records[i].alloc_bytes;
		fo += p->records[i].free_objects;
		fb += p->records[i].free_bytes;
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
	          ao - fo, ab - fb, ao, ab, p->rate);
	for (size_t i = 0; i < p->nrecords && !t->err; i++) {
		const heapprof_record *r = order[i];
		tw_printf(t, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @",
		          r->alloc_objects - r->free_objects,
		          r->alloc_bytes - r->free_bytes, r->alloc_objects,
		          r->alloc_bytes);
		for (size_t d = alloc_frames(p, r); d < r->depth; d++)
			tw_printf(t, " 0x%" PRIx64, r->stack[d] + 1);
		tw_printf(t, "\n");
	}
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
