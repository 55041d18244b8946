/*
 * dwarf_scopes.c: the per-CU function-scope index of dwarf_scopes.h.
 *
 * The ranges of the function DIEs of one CU form a laminar family (two
 * ranges are nested or disjoint). So the innermost range containing `a` is
 * an ancestor-or-self of X, the last range (by start, deeper last among
 * equal starts) starting at or before `a`: it contains X's start, hence X.
 * Lookup: binary search for X, then follow parent links until a range
 * contains `a`.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_scopes.h"

typedef struct builder {
	const heapprof_libdw *dw;
	dw_cu_scopes *c;
	size_t cap;
	int err;
} builder;

static void
push(builder *b, const dw_scope *s)
{
	if (b->c->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 256;
		dw_scope *nv = realloc(b->c->v, nc * sizeof(*nv));
		if (!nv) {
			b->err = -ENOMEM;
			return;
		}
		b->c->v = nv;
		b->cap = nc;
	}
	b->c->v[b->c->n++] = *s;
}

/* The range among v[first .. first+count) that contains a, or -1. */
static int32_t
piece_of(const dw_cu_scopes *c, int32_t first, int32_t count, Dwarf_Addr a)
{
	for (int32_t i = first; i >= 0 && i < first + count; i++)
		if (c->v[i].lo <= a && a < c->v[i].hi)
			return i;
	return first; /* malformed nesting: attach to the first piece */
}

/* Records the function scopes below `die`; (pfirst, pcount) are the
 * ranges of the nearest enclosing function DIE. */
static void
visit(builder *b, Dwarf_Die *die, int32_t pfirst, int32_t pcount,
      unsigned depth)
{
	const heapprof_libdw *dw = b->dw;
	Dwarf_Die child;
	if (depth > 200 || dw->dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dw->dwarf_tag(&child);
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			int32_t first = (int32_t)b->c->n;
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;
			while ((it = dw->dwarf_ranges(&child, it, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				dw_scope s = {lo, hi, dw->dwarf_dieoffset(&child),
				              pcount ? piece_of(b->c, pfirst, pcount, lo)
				                     : -1,
				              (uint16_t)depth,
				              tag == DW_TAG_inlined_subroutine};
				push(b, &s);
				if (b->err)
					return;
			}
			int32_t count = (int32_t)b->c->n - first;
			if (count > 0)
				visit(b, &child, first, count, depth + 1);
		} else if (tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
		           tag == DW_TAG_module) {
			visit(b, &child, pfirst, pcount, depth + 1);
		}
		if (b->err)
			return;
	} while (dw->dwarf_siblingof(&child, &child) == 0);
}

typedef struct sort_key {
	Dwarf_Addr lo;
	uint32_t depth, idx;
} sort_key;

static int
key_cmp(const void *x, const void *y)
{
	const sort_key *a = x, *b = y;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return (a->depth > b->depth) - (a->depth < b->depth);
}

static int
build(const heapprof_libdw *dw, dw_cu_scopes *c, Dwarf_Die *cudie)
{
	builder b = {dw, c, 0, 0};
	visit(&b, cudie, -1, 0, 0);
	if (b.err)
		return b.err;
	c->order = malloc((c->n + 1) * sizeof(*c->order));
	if (!c->order)
		return -ENOMEM;
	sort_key *k = malloc((c->n + 1) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		k[i] = (sort_key){c->v[i].lo, c->v[i].depth, (uint32_t)i};
	qsort(k, c->n, sizeof(*k), key_cmp);
	for (size_t i = 0; i < c->n; i++)
		c->order[i] = k[i].idx;
	free(k);
	return 0;
}

const dw_cu_scopes *
heapprof__dwscope_cu(const heapprof_libdw *dw, dw_scope_index *ix,
                     Dwarf_Die *cudie)
{
	Dwarf_Off off = dw->dwarf_dieoffset(cudie);
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix->cus[mid].cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && ix->cus[lo].cu == off)
		return &ix->cus[lo];
	if (ix->n == ix->cap) {
		size_t nc = ix->cap ? ix->cap * 2 : 64;
		dw_cu_scopes *nv = realloc(ix->cus, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		ix->cus = nv;
		ix->cap = nc;
	}
	dw_cu_scopes c = {off, NULL, NULL, 0};
	if (build(dw, &c, cudie) < 0) {
		free(c.v);
		free(c.order);
		return NULL;
	}
	memmove(&ix->cus[lo + 1], &ix->cus[lo], (ix->n - lo) * sizeof(*ix->cus));
	ix->cus[lo] = c;
	ix->n++;
	return &ix->cus[lo];
}

long
heapprof__dwscope_find(const dw_cu_scopes *c, Dwarf_Addr a)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[c->order[mid]].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	for (int32_t i = (int32_t)c->order[lo - 1]; i >= 0; i = c->v[i].parent)
		if (c->v[i].lo <= a && a < c->v[i].hi)
			return i;
	return -1;
}

void
heapprof__dwscope_free(dw_scope_index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		free(ix->cus[i].v);
		free(ix->cus[i].order);
	}
	free(ix->cus);
	memset(ix, 0, sizeof(*ix));
}
