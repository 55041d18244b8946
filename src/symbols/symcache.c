/*
 * symcache.c: the symbol cache. Maps a mapping's file path to its parsed
 * ELF file (opened once, kept mapped, failures remembered) and answers
 * "function at runtime address" queries as a heapprof_symbolize_fn. Files
 * without .symtab get their symbols from /usr/lib/debug/.build-id/xx/y.debug
 * when that exists. No stdio, no globals; not thread-safe per cache.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "elffile.h"
#include "pathtab.h"

typedef struct entry {
	char *path;
	int ok;           /* elf parsed */
	heapprof_elf elf; /* the file itself: segments, build id, symbols */
	heapprof_elf dbg; /* its separate debug file, if found (symbols) */
	int has_dbg;
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
	if (heapprof__elf_open(&e->dbg, p, HEAPPROF_ELF_SYMBOLS) == 0) {
		if (e->dbg.nsyms && strcmp(e->dbg.build_id, id) == 0)
			e->has_dbg = 1;
		else
			heapprof__elf_close(&e->dbg);
	}
	free(p);
}

static entry *
get_entry(heapprof_symcache *c, const char *path)
{
	entry *found = heapprof__pathtab_find(&c->files, path);
	if (found)
		return found;
	entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->path = dup_str(path);
	if (!e->path) {
		free(e);
		return NULL;
	}
	e->ok = heapprof__elf_open(&e->elf, path, HEAPPROF_ELF_SYMBOLS) == 0;
	if (e->ok && e->elf.sym_source != 1 && e->elf.build_id[0] &&
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

const char *
heapprof__symcache_lookup(heapprof_symcache *c, const heapprof_mapping *m,
                          uint64_t addr)
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
	uint64_t vaddr;
	if (heapprof__elf_runtime_to_vaddr(&e->elf, m->start, m->offset, addr,
	                                   &vaddr) != 0)
		return NULL;
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
