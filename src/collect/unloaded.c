/*
 * unloaded.c: sampled frames of objects that dlclose unmapped (issue 29
 * item 8). A sampled stack is raw return addresses, symbolized at dump
 * time against the mappings of that moment: once a plugin is unloaded its
 * frames had no mapping and no name (`go tool pprof -base` showed the
 * same bytes leave the library for <unknown>), and once another library
 * was loaded at the same address, they were named after that one.
 *
 * Design. The loader unmaps an object only inside dlclose, and the
 * program's dlclose is ours (unload_hook.c, libheapprof.so only). So the
 * sampled path pays nothing: no object identity, no load generation per
 * sample. The wrapper, before the real dlclose (the thread busy, so what
 * it allocates is the profiler's private memory):
 *   - finds the closed handle in the loader's list and takes it and every
 *     object after it (objects loaded at start-up come first and are
 *     never unloaded; what dlclose unloads is the handle and what it or
 *     later dlopens brought) as candidates, each with its PT_LOAD spans
 *     and its build id read from its notes in memory (dl_iterate_phdr);
 *   - walks the buckets (lock-free, as a snapshot does) for frames in a
 *     candidate; with none, nothing more is done;
 *   - reads /proc/self/maps for the candidates' executable mappings and
 *     paths, as the snapshot would show them.
 * After the real dlclose it walks the loader's list again: a candidate
 * still there (the handle's reference count was above one, RTLD_NODELETE)
 * is forgotten. For one that is gone, it keeps, from the profiler's own
 * memory (the arena, never the program's malloc): the object (path, build
 * id, its executable mappings: start, limit, file offset), for each
 * bucket a mark (which of its frames lie in the object), and each such
 * frame's function name, found in the file by the snapshot's own symbol
 * reader and checked against the build id read in memory (none when the
 * file was replaced or HEAPPROF_SYMBOLIZE=none). Only buckets that
 * existed before the dlclose are marked, and a frame marked once (by an
 * earlier unload of what was at that address) is never marked again.
 *
 * A snapshot (heapprof__unloaded_view) gives each kept object addresses
 * of its own, above every user address space (UL_BASE + object << 40),
 * moves the marked frames there (their offset in the object kept), adds
 * the object's mappings at those addresses with the file, build id and
 * file offsets of the real ones, and names the frames from what was kept.
 * So pprof and legacy text, files, the endpoint and deltas all show them
 * as before the dlclose: `go tool pprof -base` matches locations by
 * mapping (size, offset, build id) and offset in it, so a profile before
 * and one after the dlclose cancel out; `go tool pprof` can symbolize them
 * from the file. Frames of a library loaded later at the same address are
 * new addresses of new buckets, symbolized against what is mapped.
 *
 * Bounds: 256 objects (an object unloaded again with the same path,
 * build id and mappings is the same object), 8 MiB of marks and names;
 * beyond, frames are not kept and are symbolized as before. Not seen:
 * objects glibc unloads itself (gconv modules), dlmopen namespaces other
 * than the main one, a handle closed through the static library (no
 * wrapper there). A stack sampled later in a different object at the same
 * address, identical to a kept bucket's return address for return
 * address, size and rate, is counted in that bucket (one bucket per stack).
 *
 * Concurrency: writers (dlclose wrappers) hold `lock`; readers (snapshots
 * on any thread) take nothing: objects, marks and names are written once,
 * published with release stores (nobj, list heads) and never freed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elffile.h"
#include "maps.h"
#include "unloaded.h"

#define UL_MAXOBJ 256
#define UL_MAXSEG 4
#define UL_MAXCAND 64
#define UL_MAXLOAD 8
#define UL_HASH 4096 /* heads of each table, a power of two */
#define UL_BUDGET ((size_t)8 << 20)
#define UL_BASE 0x4000000000000000ULL /* above any user address */
#define UL_SHIFT 40                   /* room per object */

typedef struct ul_obj {
	uint32_t nseg;
	heapprof_mapping seg[UL_MAXSEG]; /* as /proc/self/maps showed them */
} ul_obj;

typedef struct ul_mark {
	const hp_bucket *b;
	uint64_t mask; /* bit d: b->stack[d] is in the object */
	uint32_t obj;
	struct ul_mark *next;
} ul_mark;

typedef struct ul_name {
	uint64_t pc;
	uint32_t obj;
	const char *name;
	struct ul_name *next;
} ul_name;

typedef _Atomic(ul_mark *) mark_head;
typedef _Atomic(ul_name *) name_head;

/* Written under `lock`, read lock-free (see top). */
static pthread_mutex_t lock HP_FORK_BSS = PTHREAD_MUTEX_INITIALIZER;
static ul_obj *objs[UL_MAXOBJ]; /* objs[i] written before nobj > i */
static _Atomic uint32_t nobj;
static _Atomic(mark_head *) marks; /* UL_HASH heads, arena */
static _Atomic(name_head *) names;
static size_t spent; /* lock: arena bytes taken */

/* ------------------------------------------------------------ before */

typedef struct cand {
	uint64_t addr;     /* dlpi_addr, dlpi_phdr, dlpi_name: its identity */
	const void *phdr;
	const char *name;
	uint32_t nload;
	uint64_t lo[UL_MAXLOAD], hi[UL_MAXLOAD], off[UL_MAXLOAD];
	int frames;  /* a sampled frame lies in it */
	int present; /* still loaded after the dlclose */
	char hex[2 * HEAPPROF_BUILD_ID_MAX + 1];
	uint32_t nseg;
	heapprof_mapping seg[UL_MAXSEG]; /* file: into maps */
} cand;

struct hp_ul_pending {
	uint64_t nbuckets; /* buckets made before the dlclose */
	size_t n;
	cand c[UL_MAXCAND];
	heapprof_maps maps;
};

struct scan {
	hp_ul_pending *p;
	const void *handle;
	int looked, found;
	uint64_t want_addr;
	const char *want_name;
	uint64_t page;
};

/* The handle in the main namespace's list (read under the loader's lock,
 * which dl_iterate_phdr holds: nothing invalid is dereferenced): its
 * load bias and name, as dl_iterate_phdr reports them. 0: not there, or
 * the program itself (whose dlclose unmaps nothing). */
static int
find_handle(struct scan *s)
{
	for (struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
		if ((const void *)l != s->handle)
			continue;
		if (l == _r_debug.r_map)
			return 0;
		s->want_addr = (uint64_t)l->l_addr;
		s->want_name = l->l_name;
		return 1;
	}
	return 0;
}

/* The object's first build id, from its notes where a readable PT_LOAD
 * maps them from the file. */
static void
note_id(const struct dl_phdr_info *info, char *hex)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *n = &info->dlpi_phdr[i];
		if (n->p_type != PT_NOTE || n->p_filesz == 0)
			continue;
		int in = 0;
		for (size_t j = 0; j < info->dlpi_phnum && !in; j++) {
			const ElfW(Phdr) *l = &info->dlpi_phdr[j];
			in = l->p_type == PT_LOAD && (l->p_flags & PF_R) &&
			     n->p_vaddr >= l->p_vaddr &&
			     n->p_vaddr + n->p_filesz <= l->p_vaddr + l->p_filesz;
		}
		if (!in)
			return;
		if (heapprof__elf_notes_build_id(
			    (const void *)(info->dlpi_addr + n->p_vaddr), n->p_filesz,
			    n->p_align, hex))
			return;
	}
}

static int
on_cand(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	hp_ul_pending *p = s->p;
	(void)size;
	if (!s->looked) {
		s->looked = 1;
		if (!find_handle(s))
			return 1;
	}
	if (!s->found) {
		if ((uint64_t)info->dlpi_addr != s->want_addr ||
		    info->dlpi_name != s->want_name)
			return 0;
		s->found = 1;
	}
	if (p->n == UL_MAXCAND)
		return 1;
	cand *c = &p->c[p->n];
	memset(c, 0, sizeof(*c));
	c->addr = (uint64_t)info->dlpi_addr;
	c->phdr = info->dlpi_phdr;
	c->name = info->dlpi_name;
	for (size_t i = 0; i < info->dlpi_phnum && c->nload < UL_MAXLOAD; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		uint64_t at = c->addr + ph->p_vaddr;
		c->lo[c->nload] = at & ~(s->page - 1);
		c->hi[c->nload] = (at + ph->p_memsz + s->page - 1) & ~(s->page - 1);
		c->off[c->nload] = ph->p_offset & ~(s->page - 1);
		c->nload++;
	}
	if (c->nload) {
		note_id(info, c->hex);
		p->n++;
	}
	return 0;
}

static cand *
cand_of(hp_ul_pending *p, uint64_t pc)
{
	for (size_t i = 0; i < p->n; i++)
		for (uint32_t k = 0; k < p->c[i].nload; k++)
			if (pc >= p->c[i].lo[k] && pc < p->c[i].hi[k])
				return &p->c[i];
	return NULL;
}

static uint64_t marked(mark_head *mh, const hp_bucket *b);

/* Flags the candidates a sampled frame lies in, not counting frames
 * already kept (a plugin reloaded at the same address has its old
 * buckets' frames in its range: nothing new to keep); how many. */
static size_t
find_frames(hp_ul_pending *p)
{
	size_t with = 0;
	mark_head *mh = atomic_load_explicit(&marks, memory_order_acquire);
	for (hp_bucket *b = heapprof__bucket_list(); b && with < p->n;
	     b = b->all_next) {
		if (b->id >= p->nbuckets)
			continue;
		uint64_t kept = mh ? marked(mh, b) : 0;
		for (uint32_t d = 0; d < b->depth; d++) {
			if (kept >> d & 1)
				continue;
			cand *c = cand_of(p, b->stack[d]);
			if (c && !c->frames) {
				c->frames = 1;
				with++;
			}
		}
	}
	return with;
}

/* The candidate's executable file mappings, as the snapshot shows them
 * (its build id from the file, as the snapshot reads it, where the notes
 * are not mapped). */
static void
find_segs(hp_ul_pending *p, cand *c)
{
	for (size_t i = 0; i < p->maps.n && c->nseg < UL_MAXSEG; i++) {
		const heapprof_maps_entry *e = &p->maps.v[i];
		if (!(e->perms & HEAPPROF_MAP_X) || e->path[0] != '/')
			continue;
		for (uint32_t k = 0; k < c->nload; k++) {
			if (e->start < c->lo[k] || e->start >= c->hi[k] ||
			    e->offset != c->off[k] + (e->start - c->lo[k]))
				continue;
			if (!c->nseg && !c->hex[0] &&
			    heapprof__elf_build_id(e->path, c->hex,
			                           sizeof(c->hex)) <= 0)
				c->hex[0] = '\0';
			heapprof_mapping *m = &c->seg[c->nseg++];
			m->start = e->start;
			m->limit = e->limit;
			m->offset = e->offset;
			m->file = e->path;
			m->build_id = c->hex[0] ? c->hex : NULL;
			break;
		}
	}
	if (c->nseg && c->seg[c->nseg - 1].limit - c->seg[0].start >=
	                       (1ULL << UL_SHIFT))
		c->nseg = 0; /* no room at its own addresses: not kept */
}

hp_ul_pending *
heapprof__unloaded_before(void *handle)
{
	hp_ul_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->nbuckets = heapprof__bucket_count();
	struct scan s;
	memset(&s, 0, sizeof(s));
	s.p = p;
	s.handle = handle;
	s.page = (uint64_t)getpagesize();
	dl_iterate_phdr(on_cand, &s);
	if (!p->n || !find_frames(p) ||
	    heapprof__maps_read_self(&p->maps) != 0) {
		free(p);
		return NULL;
	}
	size_t keep = 0;
	for (size_t i = 0; i < p->n; i++)
		if (p->c[i].frames) {
			find_segs(p, &p->c[i]);
			keep += p->c[i].nseg != 0;
		}
	if (!keep) {
		heapprof__maps_free(&p->maps);
		free(p);
		return NULL;
	}
	return p;
}

/* ------------------------------------------------------------- after */

static int
on_present(struct dl_phdr_info *info, size_t size, void *arg)
{
	hp_ul_pending *p = arg;
	(void)size;
	for (size_t i = 0; i < p->n; i++) {
		cand *c = &p->c[i];
		if (c->addr == (uint64_t)info->dlpi_addr &&
		    c->phdr == info->dlpi_phdr && c->name == info->dlpi_name)
			c->present = 1;
	}
	return 0;
}

/* Arena memory within the budget, under `lock`; zeroed (fresh pages). */
static void *
ul_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n > UL_BUDGET - spent)
		return NULL;
	void *q = heapprof__arena_alloc(n);
	if (q)
		spent += n;
	return q;
}

static char *
ul_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ul_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static size_t
hash_of(uint64_t x)
{
	x *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(x >> 32) & (UL_HASH - 1);
}

static int
same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* The kept object for c (the same one if it was unloaded before), or
 * UINT32_MAX. Under `lock`. */
static uint32_t
obj_for(const cand *c)
{
	uint32_t n = atomic_load_explicit(&nobj, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++) {
		const ul_obj *o = objs[i];
		if (o->nseg != c->nseg ||
		    !same_str(o->seg[0].build_id, c->seg[0].build_id))
			continue;
		uint32_t k = 0;
		while (k < c->nseg && o->seg[k].start == c->seg[k].start &&
		       o->seg[k].limit == c->seg[k].limit &&
		       o->seg[k].offset == c->seg[k].offset &&
		       !strcmp(o->seg[k].file, c->seg[k].file))
			k++;
		if (k == c->nseg)
			return i;
	}
	if (n == UL_MAXOBJ)
		return UINT32_MAX;
	ul_obj *o = ul_alloc(sizeof(*o));
	char *path = o ? ul_strdup(c->seg[0].file) : NULL;
	char *bid = path && c->hex[0] ? ul_strdup(c->hex) : NULL;
	if (!path || (c->hex[0] && !bid))
		return UINT32_MAX;
	o->nseg = c->nseg;
	for (uint32_t k = 0; k < c->nseg; k++) {
		o->seg[k] = c->seg[k];
		/* Another path of the same object (a second mapping of the
		 * file) keeps the first's name: one file per object. */
		o->seg[k].file = path;
		o->seg[k].build_id = bid;
	}
	objs[n] = o;
	atomic_store_explicit(&nobj, n + 1, memory_order_release);
	return n;
}

static uint64_t
marked(mark_head *mh, const hp_bucket *b)
{
	uint64_t m = 0;
	for (ul_mark *k = atomic_load_explicit(&mh[hash_of((uintptr_t)b)],
	                                       memory_order_acquire);
	     k; k = k->next)
		if (k->b == b)
			m |= k->mask;
	return m;
}

static const ul_name *
name_find(name_head *nh, uint32_t o, uint64_t pc)
{
	for (ul_name *k = atomic_load_explicit(&nh[hash_of(pc ^ o)],
	                                       memory_order_acquire);
	     k; k = k->next)
		if (k->pc == pc && k->obj == o)
			return k;
	return NULL;
}

/* Keeps the name of frame pc of object o (found in its file). */
static void
keep_name(name_head *nh, uint32_t o, uint64_t pc, heapprof_symcache **sc)
{
	if (name_find(nh, o, pc))
		return;
	const ul_obj *ob = objs[o];
	const heapprof_mapping *m = NULL;
	for (uint32_t k = 0; k < ob->nseg && !m; k++)
		if (pc >= ob->seg[k].start && pc < ob->seg[k].limit)
			m = &ob->seg[k];
	if (!m)
		return;
	if (!*sc)
		*sc = heapprof__symcache_new();
	const char *s = *sc ? heapprof__symcache_symbolize(*sc, pc, m) : NULL;
	ul_name *e = s ? ul_alloc(sizeof(*e)) : NULL;
	const char *copy = e ? ul_strdup(s) : NULL;
	if (!copy)
		return;
	e->pc = pc;
	e->obj = o;
	e->name = copy;
	size_t h = hash_of(pc ^ o);
	e->next = atomic_load_explicit(&nh[h], memory_order_relaxed);
	atomic_store_explicit(&nh[h], e, memory_order_release);
}

/* The tables' heads, made on first use. Under `lock`. */
static int
tables(mark_head **mh, name_head **nh)
{
	*mh = atomic_load_explicit(&marks, memory_order_relaxed);
	*nh = atomic_load_explicit(&names, memory_order_relaxed);
	if (!*mh) {
		*mh = ul_alloc(UL_HASH * sizeof(**mh));
		if (*mh)
			atomic_store_explicit(&marks, *mh, memory_order_release);
	}
	if (!*nh) {
		*nh = ul_alloc(UL_HASH * sizeof(**nh));
		if (*nh)
			atomic_store_explicit(&names, *nh, memory_order_release);
	}
	return *mh && *nh;
}

/* Keeps object c, gone, and marks and names its frames. Under `lock`. */
static void
keep(const hp_ul_pending *p, const cand *c, heapprof_symcache **sc)
{
	mark_head *mh;
	name_head *nh;
	if (!tables(&mh, &nh))
		return;
	uint32_t o = obj_for(c);
	if (o == UINT32_MAX)
		return;
	const ul_obj *ob = objs[o];
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next) {
		if (b->id >= p->nbuckets)
			continue;
		uint64_t mask = 0;
		for (uint32_t d = 0; d < b->depth; d++)
			for (uint32_t k = 0; k < ob->nseg; k++)
				if (b->stack[d] >= ob->seg[k].start &&
				    b->stack[d] < ob->seg[k].limit)
					mask |= 1ULL << d;
		mask &= ~marked(mh, b);
		if (!mask)
			continue;
		ul_mark *m = ul_alloc(sizeof(*m));
		if (!m)
			return; /* out of budget: the rest as before */
		m->b = b;
		m->mask = mask;
		m->obj = o;
		size_t h = hash_of((uintptr_t)b);
		m->next = atomic_load_explicit(&mh[h], memory_order_relaxed);
		atomic_store_explicit(&mh[h], m, memory_order_release);
		if (heapprof__cfg.symbolize)
			for (uint32_t d = 0; d < b->depth; d++)
				if (mask >> d & 1)
					keep_name(nh, o, b->stack[d], sc);
	}
}

void
heapprof__unloaded_after(hp_ul_pending *p)
{
	for (size_t i = 0; i < p->n; i++)
		p->c[i].present = !p->c[i].frames || !p->c[i].nseg;
	dl_iterate_phdr(on_present, p);
	heapprof_symcache *sc = NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < p->n; i++)
		if (!p->c[i].present)
			keep(p, &p->c[i], &sc);
	pthread_mutex_unlock(&lock);
	/* Its files unmapped: a library loaded next finds the address
	 * space as the dlclose left it. */
	if (sc)
		heapprof__symcache_free(sc);
	heapprof__maps_free(&p->maps);
	free(p);
}

HP_RARE void
heapprof__unloaded_atfork_child(void)
{
	hp_mutex_reset(&lock);
}

/* -------------------------------------------------------------- view */

static uint64_t
synth(uint32_t o, uint64_t pc)
{
	return UL_BASE + ((uint64_t)o << UL_SHIFT) + (pc - objs[o]->seg[0].start);
}

static const hp_bucket *
bucket_of(const uint64_t *stack)
{
	return (const hp_bucket *)(const void *)((const char *)stack -
	                                         offsetof(hp_bucket, stack));
}

int
heapprof__unloaded_view(hp_ul_view *v, const heapprof_record *recs,
                        size_t n, const heapprof_mapping *maps, size_t nmaps)
{
	heapprof_symbolize_fn *sym = v->sym;
	void *sym_arg = v->sym_arg;
	heapprof_symbolize_frames_fn *frames = v->frames;
	void *frames_arg = v->frames_arg;
	memset(v, 0, sizeof(*v));
	v->sym = sym;
	v->sym_arg = sym_arg;
	v->frames = frames;
	v->frames_arg = frames_arg;
	uint32_t no = atomic_load_explicit(&nobj, memory_order_acquire);
	mark_head *mh = atomic_load_explicit(&marks, memory_order_acquire);
	if (!no || !mh)
		return 0;
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].depth && marked(mh, bucket_of(recs[i].stack)))
			total += recs[i].depth;
	if (!total)
		return 0;
	unsigned char *used = calloc(no, 1);
	v->recs = malloc(n * sizeof(*v->recs));
	v->stacks = malloc(total * sizeof(*v->stacks));
	if (!used || !v->recs || !v->stacks)
		goto nomem;
	memcpy(v->recs, recs, n * sizeof(*recs));
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		const hp_bucket *b = recs[i].depth ? bucket_of(recs[i].stack) : NULL;
		if (!b || !marked(mh, b))
			continue;
		uint64_t *s = v->stacks + at;
		memcpy(s, recs[i].stack, recs[i].depth * sizeof(*s));
		for (ul_mark *k = atomic_load_explicit(&mh[hash_of((uintptr_t)b)],
		                                       memory_order_acquire);
		     k; k = k->next) {
			if (k->b != b || k->obj >= no)
				continue;
			for (size_t d = 0; d < recs[i].depth; d++)
				if (k->mask >> d & 1)
					s[d] = synth(k->obj, recs[i].stack[d]);
			used[k->obj] = 1;
		}
		v->recs[i].stack = s;
		at += recs[i].depth;
	}
	size_t extra = 0;
	for (uint32_t o = 0; o < no; o++)
		if (used[o])
			extra += objs[o]->nseg;
	v->maps = malloc((nmaps + extra) * sizeof(*v->maps));
	if (!v->maps)
		goto nomem;
	if (nmaps)
		memcpy(v->maps, maps, nmaps * sizeof(*maps));
	v->nmaps = nmaps;
	for (uint32_t o = 0; o < no; o++) {
		if (!used[o])
			continue;
		for (uint32_t k = 0; k < objs[o]->nseg; k++) {
			heapprof_mapping m = objs[o]->seg[k];
			m.start = synth(o, m.start);
			m.limit = synth(o, m.limit - 1) + 1;
			v->maps[v->nmaps++] = m;
		}
	}
	v->nobj = no;
	free(used);
	return 0;
nomem:
	free(used);
	heapprof__unloaded_view_free(v);
	return -ENOMEM;
}

/* The object and its address of a moved frame; 0 for any other. */
static int
moved(const hp_ul_view *v, uint64_t addr, uint32_t *o, uint64_t *pc)
{
	if (addr < UL_BASE || addr >= UL_BASE + ((uint64_t)v->nobj << UL_SHIFT))
		return 0;
	*o = (uint32_t)((addr - UL_BASE) >> UL_SHIFT);
	*pc = objs[*o]->seg[0].start +
	      ((addr - UL_BASE) & ((1ULL << UL_SHIFT) - 1));
	return 1;
}

const char *
heapprof__unloaded_symbolize(void *arg, uint64_t addr,
                             const heapprof_mapping *m)
{
	const hp_ul_view *v = arg;
	uint32_t o;
	uint64_t pc;
	if (moved(v, addr, &o, &pc)) {
		name_head *nh = atomic_load_explicit(&names, memory_order_acquire);
		const ul_name *e = nh ? name_find(nh, o, pc) : NULL;
		return e ? e->name : NULL;
	}
	return v->sym ? v->sym(v->sym_arg, addr, m) : NULL;
}

size_t
heapprof__unloaded_symbolize_frames(void *arg, uint64_t addr,
                                    const heapprof_mapping *m,
                                    heapprof_frame *out, size_t cap)
{
	const hp_ul_view *v = arg;
	uint32_t o;
	uint64_t pc;
	if (moved(v, addr, &o, &pc))
		return 0; /* the kept name, through symbolize */
	return v->frames ? v->frames(v->frames_arg, addr, m, out, cap) : 0;
}

void
heapprof__unloaded_view_free(hp_ul_view *v)
{
	free(v->recs);
	free(v->stacks);
	free(v->maps);
	v->recs = NULL;
	v->stacks = NULL;
	v->maps = NULL;
	v->nmaps = 0;
	v->nobj = 0;
}
