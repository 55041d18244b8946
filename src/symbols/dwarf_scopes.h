/*
 * dwarf_scopes.h: a per-CU index of function scopes (DW_TAG_subprogram and
 * DW_TAG_inlined_subroutine address ranges with their nesting), built with
 * one walk over a CU's DIEs the first time an address in it is looked up.
 * libdw's dwarf_getscopes walks the whole CU on every call, which costs
 * milliseconds per address in a C++ unit full of inlined library code;
 * with the index a lookup is a binary search plus a walk up the nesting.
 */
#ifndef HEAPPROF_DWARF_SCOPES_H
#define HEAPPROF_DWARF_SCOPES_H

#include <stddef.h>
#include <stdint.h>

#include "dwarf_dl.h"

typedef struct dw_scope {
	Dwarf_Addr lo, hi; /* one address range of the DIE, [lo, hi) */
	Dwarf_Off die;     /* the subprogram / inlined_subroutine DIE */
	int32_t parent;    /* index of the enclosing scope's range, -1: none */
	uint16_t depth;    /* nesting depth of the DIE */
	uint8_t inlined;   /* DW_TAG_inlined_subroutine */
} dw_scope;

typedef struct dw_cu_scopes {
	Dwarf_Off cu;     /* offset of the CU DIE */
	dw_scope *v;      /* in DIE order (parents before children) */
	uint32_t *order;  /* indexes into v by (lo, depth) */
	size_t n;
} dw_cu_scopes;

typedef struct dw_scope_index {
	dw_cu_scopes *cus; /* sorted by cu */
	size_t n, cap;
} dw_scope_index;

/*! heapprof__dwscope_cu() :
 *  The scopes of the CU `cudie` (built on first use).
 *  @return : the CU's table, or NULL (no memory). */
const dw_cu_scopes *heapprof__dwscope_cu(const heapprof_libdw *dw,
                                         dw_scope_index *ix, Dwarf_Die *cudie);

/*! heapprof__dwscope_find() :
 *  @return : the index in c->v of the innermost scope containing DWARF
 *  address `a`, or -1. Walk outwards with dw_scope.parent. */
long heapprof__dwscope_find(const dw_cu_scopes *c, Dwarf_Addr a);

void heapprof__dwscope_free(dw_scope_index *ix);

#endif
