/*
 * symcache.c: the symbol cache. Maps a mapping's file path to its parsed
 * ELF file (opened once, kept mapped, failures remembered) and answers
 * "function at runtime address" queries as a heapprof_symbolize_fn. Files
 * without .symtab get their symbols from /usr/lib/debug/.build-id/xx/y.debug
 * when that exists. No stdio, no globals; not thread-safe per cache.
 *
 * Addresses announced with heapprof__symcache_want (a dump's PCs) are
 * looked up together in one pass over each file's symbols, with no sort
 * of the table; the first address that was not announced reads the whole
 * table into a sorted array, as before (issue 15: the exit dump of cc1
 * spent 43 M instructions sorting its symbols).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "elffile.h"
#include "pathtab.h"
#include "sort_u64.h"

/* A name found for a virtual address asked for in advance. */
typedef struct symhit {
	uint64_t vaddr;
	const char *name; /* NULL: none */
} symhit;

typedef struct entry {
	char *path;
	int ok;           /* elf parsed */
	heapprof_elf elf; /* the file itself: segments, build id, symbols */
	heapprof_elf dbg; /* its separate debug file, if symhit (symbols) */
	int has_dbg;
	int full;         /* symbols read into sorted tables (elf, dbg) */
	/* Addresses announced by heapprof__symcache_want, not yet looked
	 * up, and those looked up in one pass (sorted by vaddr). */
	uint64_t *want;
	size_t nwant, capwant;
	symhit *res;
	size_t nres;
} entry;

struct heapprof_symcache {
	pathtab files; /* entry by path */
	char *debug_dir;
};

static char *
dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

heapprof_symcache *
heapprof__symcache_new(void)
{
	heapprof_symcache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->debug_dir = dup_str("/usr/lib/debug");
	if (!c->debug_dir) {
		free(c);
		return NULL;
	}
	return c;
}

void
heapprof__symcache_free(heapprof_symcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->files.n; i++) {
		entry *e = c->files.v[i];
		heapprof__elf_close(&e->elf);
		if (e->has_dbg)
			heapprof__elf_close(&e->dbg);
		free(e->want);
		free(e->res);
		free(e->path);
		free(e);
	}
	heapprof__pathtab_free(&c->files);
	free(c->debug_dir);
	free(c);
}

void
heapprof__symcache_set_debug_dir(heapprof_symcache *c, const char *dir)
{
	free(c->debug_dir);
	c->debug_dir = dir && *dir ? dup_str(dir) : NULL;
}

/* DIR/.build-id/ab/cdef....debug for the build id `id`. */
static void
load_debug_file(const heapprof_symcache *c, entry *e)
{
	const char *id = e->elf.build_id;
	size_t dl = strlen(c->debug_dir), il = strlen(id);
	if (il < 3)
		return;
	char *p = malloc(dl + il + 32);
	if (!p)
		return;
	char *w = p;
	memcpy(w, c->debug_dir, dl);
	w += dl;
	memcpy(w, "/.build-id/", 11);
	w += 11;
	*w++ = id[0];
	*w++ = id[1];
	*w++ = '/';
	memcpy(w, id + 2, il - 2);
	w += il - 2;
	memcpy(w, ".debug", 7);
	if (heapprof__elf_open(&e->dbg, p, 0) == 0) {
		if (e->dbg.has_symbols && strcmp(e->dbg.build_id, id) == 0)
			e->has_dbg = 1;
		else
			heapprof__elf_close(&e->dbg);
	}
	free(p);
}

static entry *
get_entry(heapprof_symcache *c, const char *path)
{
	entry *known = heapprof__pathtab_find(&c->files, path);
	if (known)
		return known;
	entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->path = dup_str(path);
	if (!e->path) {
		free(e);
		return NULL;
	}
	/* Symbols are read later: only for the addresses announced (one
	 * pass), or all of them on the first address that was not. */
	e->ok = heapprof__elf_open(&e->elf, path, 0) == 0;
	if (e->ok && !(e->elf.has_symbols & 1) && e->elf.build_id[0] &&
	    c->debug_dir)
		load_debug_file(c, e);
	if (heapprof__pathtab_add(&c->files, e->path, e) != 0) {
		heapprof__elf_close(&e->elf);
		if (e->has_dbg)
			heapprof__elf_close(&e->dbg);
		free(e->path);
		free(e);
		return NULL;
	}
	return e;
}

/* The entry and ELF virtual address of runtime address `addr` in `m`,
 * or NULL. */
static entry *
locate(heapprof_symcache *c, const heapprof_mapping *m, uint64_t addr,
       uint64_t *vaddr)
{
	if (!c || !m || !m->file || m->file[0] != '/')
		return NULL;
	if (addr < m->start || (m->limit > m->start && addr >= m->limit))
		return NULL;
	entry *e = get_entry(c, m->file);
	if (!e || !e->ok)
		return NULL;
	/* A different binary now lives at that path: do not guess. */
	if (m->build_id && m->build_id[0] && e->elf.build_id[0] &&
	    strcasecmp(m->build_id, e->elf.build_id) != 0)
		return NULL;
	if (heapprof__elf_runtime_to_vaddr(&e->elf, m->start, m->offset, addr,
	                                   vaddr) != 0)
		return NULL;
	return e;
}

static const symhit *
find_res(const entry *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e->nres;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->res[mid].vaddr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < e->nres && e->res[lo].vaddr == vaddr ? &e->res[lo] : NULL;
}

static int
cmp_found(const void *a, const void *b)
{
	uint64_t x = ((const symhit *)a)->vaddr, y = ((const symhit *)b)->vaddr;
	return x < y ? -1 : x > y;
}

/* Looks the announced addresses up, one pass over each symbol table
 * (the debug file's first), and merges them into res. */
static void
resolve_wanted(entry *e)
{
	size_t n = e->nwant, k = 0;
	e->nwant = 0;
	hp_sort_u64(e->want, n); /* one pass: a dump announces them sorted */
	for (size_t i = 0; i < n; i++)
		if ((i == 0 || e->want[i] != e->want[i - 1]) &&
		    !find_res(e, e->want[i]))
			e->want[k++] = e->want[i];
	if (!k)
		return;
	symhit *r = realloc(e->res, (e->nres + k) * sizeof(*r));
	const char **a = malloc(k * sizeof(*a)), **b = malloc(k * sizeof(*b));
	uint64_t *rest = malloc(k * sizeof(*rest));
	if (r)
		e->res = r;
	/* The file's own table only for what its debug file did not name
	 * (it used to be read for all of them, then overridden). */
	size_t m = 0;
	if (!r || !a || !b || !rest ||
	    (e->has_dbg && heapprof__elf_lookup_many(&e->dbg, e->want, k, a)))
		goto out; /* out of memory: the full tables will serve */
	for (size_t i = 0; i < k; i++)
		if (!e->has_dbg || !a[i])
			rest[m++] = e->want[i];
	if (m && heapprof__elf_lookup_many(&e->elf, rest, m, b))
		goto out;
	for (size_t i = 0, j = 0; i < k; i++)
		r[e->nres + i] = (symhit){e->want[i], e->has_dbg && a[i] ? a[i]
		                                                          : b[j++]};
	/* Sorted already when these are the first, or all above the old. */
	if (e->nres && r[e->nres - 1].vaddr > r[e->nres].vaddr)
		qsort(r, e->nres + k, sizeof(*r), cmp_found);
	e->nres += k;
out:
	free(a);
	free(b);
	free(rest);
}

/* Reads the whole symbol tables (the first address not announced). */
static void
load_full(entry *e)
{
	e->full = 1;
	heapprof_elf t;
	if (heapprof__elf_parse(&t, e->elf.data, e->elf.size,
	                        HEAPPROF_ELF_SYMBOLS) == 0) {
		e->elf.syms = t.syms, e->elf.nsyms = t.nsyms;
		e->elf.sym_source = t.sym_source;
		t.syms = NULL;
		heapprof__elf_close(&t);
	}
	if (e->has_dbg && heapprof__elf_parse(&t, e->dbg.data, e->dbg.size,
	                                      HEAPPROF_ELF_SYMBOLS) == 0) {
		e->dbg.syms = t.syms, e->dbg.nsyms = t.nsyms;
		e->dbg.sym_source = t.sym_source;
		t.syms = NULL;
		heapprof__elf_close(&t);
	}
}

void
heapprof__symcache_want(heapprof_symcache *c, const heapprof_mapping *m,
                        uint64_t addr)
{
	uint64_t vaddr;
	entry *e = locate(c, m, addr, &vaddr);
	if (!e || e->full || find_res(e, vaddr))
		return;
	if (e->nwant == e->capwant) {
		size_t nc = e->capwant ? 2 * e->capwant : 64;
		uint64_t *w = realloc(e->want, nc * sizeof(*w));
		if (!w)
			return;
		e->want = w;
		e->capwant = nc;
	}
	e->want[e->nwant++] = vaddr;
}

const char *
heapprof__symcache_lookup(heapprof_symcache *c, const heapprof_mapping *m,
                          uint64_t addr)
{
	uint64_t vaddr;
	entry *e = locate(c, m, addr, &vaddr);
	if (!e)
		return NULL;
	if (!e->full) {
		if (e->nwant)
			resolve_wanted(e);
		const symhit *f = find_res(e, vaddr);
		if (f)
			return f->name;
		load_full(e);
	}
	const char *name = NULL;
	if (e->has_dbg)
		name = heapprof__elf_lookup(&e->dbg, vaddr, NULL);
	if (!name)
		name = heapprof__elf_lookup(&e->elf, vaddr, NULL);
	return name;
}

const char *
heapprof__symcache_symbolize(void *arg, uint64_t addr,
                             const heapprof_mapping *m)
{
	return heapprof__symcache_lookup(arg, m, addr);
}
