/*
 * bootstrap.c: finding the next allocator: the one the program would call
 * without us (the first malloc in the lookup order other than ours), with
 * the entry points it lacks built on its own functions. Until dlsym has
 * resolved it (dlsym itself may call calloc), requests are served from the
 * profiler's range with a "boot" header, which free ignores: they are few
 * and tiny. The "next" function table starts out pointing at lazy_*
 * functions that resolve on first use, so no entry point needs a NULL check.
 *
 * Also defines the thread state, which only the owning thread touches.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"

__thread hp_tls heapprof__tls __attribute__((tls_model("initial-exec")));
_Atomic uint64_t heapprof__dropped_samples;

/* ------------------------------------------------------------- bootstrap */

static _Atomic int resolve_state; /* 0 none, 1 in progress, 2 done */

static void *
boot_alloc(size_t size, size_t align, bool zero)
{
	if (!heapprof__range_span && heapprof__range_init() != 0)
		return NULL;
	void *p = heapprof__range_alloc(size, align < 16 ? 16 : align, zero);
	if (p)
		heapprof__range_obj(p)->magic = HP_BOOT_MAGIC;
	return p;
}

static void *lazy_malloc(size_t n);
static void lazy_free(void *p);
static void *lazy_calloc(size_t n, size_t s);
static void *lazy_realloc(void *p, size_t n);
static int lazy_posix_memalign(void **pp, size_t a, size_t n);
static void *lazy_aligned_alloc(size_t a, size_t n);
static void *lazy_memalign(size_t a, size_t n);
static void *lazy_valloc(size_t n);
static void *lazy_pvalloc(size_t n);
static size_t lazy_usable(void *p);

/* Until resolution the "next" functions are these, so no entry point needs
 * a NULL check. Written by resolve() only, before heapprof__ready. */
/* The next allocator's nallocx (jemalloc, tcmalloc), or NULL (glibc has
 * none): what its malloc_usable_size says of a size without allocating.
 * Written by resolve() only, before heapprof__ready. */
size_t (*heapprof__next_nallocx)(size_t, int);
int (*heapprof__next_mallctl)(const char *, void *, size_t *, void *, size_t);
int (*heapprof__next_tcprop)(const char *, size_t *);

hp_next heapprof__next = {
	lazy_malloc, lazy_free, lazy_calloc, lazy_realloc, lazy_posix_memalign,
	lazy_aligned_alloc, lazy_memalign, lazy_valloc, lazy_pvalloc, lazy_usable,
};

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* Is f one of ours? Our own names may resolve to another library's
 * functions (the library loaded with dlopen after libc), so compare f with
 * the section our entry points live in (interpose.c): two compares, where
 * dladdr() cost 1.8 M instructions at start-up (issue 15). */
static int
is_self(void *f)
{
	return (const char *)f >= __start_heapprof_entry &&
	       (const char *)f < __stop_heapprof_entry;
}

/* After us in the lookup order: the next definition of name, as when our
 * malloc is the program's (preloaded first, or linked in). */
HP_RARE static void *
find(const char *name, void *fallback)
{
	void *f = dlsym(RTLD_NEXT, name);
	/* Linked into a program whose libc is not next in line, or loaded
	 * with dlopen after libc (nothing comes after us then), RTLD_NEXT
	 * finds nothing, or ourselves: then the process's own definition,
	 * unless that is ourselves too. */
	if (!f || is_self(f))
		f = dlsym(RTLD_DEFAULT, name);
	return f && !is_self(f) ? f : fallback;
}

/* The first definition of name in the global lookup order that is not
 * ours: what the program calls. Where another object's malloc comes
 * before ours (an allocator preloaded ahead of us, or linked into the
 * executable), RTLD_NEXT would skip it and land on glibc's, which then
 * got the other allocator's pointers ("realloc(): invalid pointer" at
 * the first reallocarray, issue 29). */
HP_RARE static void *default_def(const char *name);

HP_RARE static void *
find_first(const char *name, void *fallback)
{
	void *f = default_def(name);
	if (f && is_self(f))
		f = dlsym(RTLD_NEXT, name); /* nothing before us defines it */
	return f && !is_self(f) ? f : fallback;
}

/* Whose malloc the program calls when it is not ours (collect.h). */
HP_HIDDEN int heapprof__unreached_kind;
HP_HIDDEN char heapprof__unreached_name[160];

#ifndef HP_ENTRY_RENAMED /* the sanitizer build's next allocator is fixed */
/* ------------------------------------------- another allocator than glibc */

/* The next allocator's own functions (NULL where its object does not
 * define the name), for the entry points it lacks: written once by
 * resolve, before resolve_state is 2; read after. */
static hp_next own;
static size_t own_page;

/* The PT_LOAD spans of the object holding an address. */
typedef struct {
	uintptr_t want;
	uintptr_t lo[16], hi[16];
	int n;
	const char *name;
	int seen;    /* objects looked at before it */
	int is_main; /* it is the executable (listed first) */
} hp_objspan;

static int
objspan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	hp_objspan *s = arg;
	int hit = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && s->want >= lo && s->want < lo + ph->p_memsz)
			hit = 1;
	}
	if (!hit) {
		s->seen++;
		return 0;
	}
	for (int i = 0; i < info->dlpi_phnum && s->n < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		s->lo[s->n] = info->dlpi_addr + ph->p_vaddr;
		s->hi[s->n] = s->lo[s->n] + ph->p_memsz;
		s->n++;
	}
	s->name = info->dlpi_name;
	s->is_main = s->seen == 0;
	return 1;
}

HP_RARE static void
objspan(hp_objspan *s, void *f)
{
	memset(s, 0, sizeof(*s));
	s->want = (uintptr_t)f;
	dl_iterate_phdr(objspan_cb, s);
}

static int
in_span(const hp_objspan *s, void *f)
{
	for (int i = 0; i < s->n; i++)
		if ((uintptr_t)f >= s->lo[i] && (uintptr_t)f < s->hi[i])
			return 1;
	return 0;
}

/* ---------------------------------------- the first definition of a name */

/* Is f a non-PIE executable's canonical PLT entry: an undefined symbol
 * with a value, which the loader gives for the name when the executable
 * takes the function's address (Debian's /usr/bin/python3 does for malloc
 * and free)? It is no definition: it jumps to the first real one, which
 * may be ours (taking it for the program's allocator made malloc call
 * itself for ever). */
static int
canonical_plt(void *f)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT))
		return 0;
	if (sym && sym->st_shndx == SHN_UNDEF)
		return 1;
	/* A symbol defined at f is a definition, whatever its code: an
	 * allocator selector's malloc that forwards through a pointer is one
	 * `jmp *ptr(%rip)` too (taken for a PLT entry, glibc's realloc got
	 * its blocks: rel.allocators.forwarding_first). */
	if (sym && info.dli_saddr == f)
		return 0;
	/* Canonical PLT entries are the executable's, and only the
	 * executable's (the first object listed). */
	hp_objspan s;
	objspan(&s, f);
	if (!s.n || !s.is_main)
		return 0;
#if defined(__x86_64__)
	/* dladdr finds the undefined symbol only where the hash table
	 * lists it (not in every executable's .gnu.hash): a PLT entry is
	 * also known by its code, an indirect jump through the GOT
	 * ([endbr64] [bnd] jmp *disp32(%rip)), with no symbol of its own. */
	const unsigned char *c = f;
	if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		c += 4;
	if (c[0] == 0xf2)
		c++;
	return c[0] == 0xff && c[1] == 0x25;
#else
	return 0;
#endif
}

/* The objects' names in the lookup order of the global scope (the order
 * dl_iterate_phdr lists them: the executable, the preloaded objects, then
 * the needed ones), and which of them is ours. */
typedef struct {
	const char *name[32];
	int n, self;
} hp_order;

static int
order_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	hp_order *o = arg;
	if (o->n == 32)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t me = (uintptr_t)__start_heapprof_entry;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz)
			o->self = o->n;
	}
	o->name[o->n++] = info->dlpi_name;
	return 0;
}

/* What dlsym(RTLD_DEFAULT, name) means to find: the first definition in
 * the global lookup order. Where that answer is the executable's
 * canonical PLT entry, the objects after the executable are asked in
 * order (each with dlopen(RTLD_NOLOAD) and dlsym, which looks in the
 * object first), up to ours: an earlier definition is another
 * allocator's; none means ours comes first (then an address in our entry
 * section, which is_self() recognises). The objects before ours were all
 * loaded at start-up (preloaded or needed) and are never unloaded: the
 * reference RTLD_NOLOAD takes is not given back, so no dlclose (ours is
 * the program's, unload_hook.c). Start-up only. */
HP_RARE static void *
default_def(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	if (!f || is_self(f) || !canonical_plt(f))
		return f;
	hp_order o;
	memset(&o, 0, sizeof(o));
	o.self = -1;
	dl_iterate_phdr(order_cb, &o);
	for (int i = 1; i < o.n && i != o.self; i++) {
		if (!o.name[i] || !o.name[i][0])
			continue; /* the vDSO */
		void *h = dlopen(o.name[i], RTLD_NOLOAD | RTLD_LAZY);
		if (!h)
			continue;
		void *g = dlsym(h, name);
		hp_objspan sp;
		if (g && !canonical_plt(g)) {
			objspan(&sp, g);
			if (sp.n && sp.seen == i)
				return g;
		}
	}
	return o.self > 0 ? (void *)__start_heapprof_entry : NULL;
}

/* The next allocator's block of n bytes aligned to a (a power of two, at
 * least a pointer's size), from whichever aligned function it has. */
static void *
own_aligned(size_t a, size_t n)
{
	if (own.memalign)
		return own.memalign(a, n);
	if (own.aligned_alloc)
		return own.aligned_alloc(a, n);
	void *p;
	int saved = errno, rc = own.posix_memalign(&p, a, n);
	if (rc) {
		errno = rc;
		return NULL;
	}
	errno = saved;
	return p;
}

/* memalign's alignment as glibc takes it: a power of two at least a
 * pointer's size, rounded up; 0 when none is that large. */
static size_t
align_up(size_t a)
{
	if (a < sizeof(void *))
		return sizeof(void *);
	if (a > SIZE_MAX / 2 + 1)
		return 0;
	size_t p = sizeof(void *);
	while (p < a)
		p <<= 1;
	return p;
}

/* The entry points the next allocator lacks, as glibc's would be if they
 * were its wrappers: on its own functions, never on glibc's malloc family
 * (whose free would then get the other allocator's pointers). */
static void *
emu_calloc(size_t n, size_t s)
{
	size_t t;
	if (__builtin_mul_overflow(n, s, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = own.malloc(t);
	if (p)
		memset(p, 0, t);
	return p;
}
static void *
emu_memalign(size_t a, size_t n)
{
	size_t al = align_up(a);
	if (!al) {
		errno = EINVAL;
		return NULL;
	}
	return own_aligned(al, n);
}
static void *
emu_aligned_alloc(size_t a, size_t n)
{
	if (a == 0 || (a & (a - 1))) { /* glibc 2.36: a power of two */
		errno = EINVAL;
		return NULL;
	}
	return own_aligned(align_up(a), n);
}
static int
emu_posix_memalign(void **pp, size_t a, size_t n)
{
	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	int saved = errno;
	void *p = own_aligned(a, n);
	errno = saved;
	if (!p)
		return ENOMEM;
	*pp = p;
	return 0;
}
static void *
emu_valloc(size_t n)
{
	return own_aligned(own_page, n);
}
static void *
emu_pvalloc(size_t n)
{
	if (n > SIZE_MAX - 2 * own_page) {
		errno = ENOMEM;
		return NULL;
	}
	return own_aligned(own_page, (n + own_page - 1) & ~(own_page - 1));
}

/* n holds the first definition of each name; where that is not the next
 * allocator's own (its object is not malloc's), the entry point is
 * emulated on its functions if it can be. free, realloc and
 * malloc_usable_size cannot: they stay what the program would call. */
HP_RARE static void
own_functions(hp_next *n, void *(*look)(const char *, void *))
{
	hp_objspan s;
	objspan(&s, (void *)n->malloc);
	if (!s.n)
		return; /* not in any object: take the definitions as they are */
	/* jemalloc's and tcmalloc's nallocx: what their malloc_usable_size
	 * says of a size, so a sampled block reports the same (slowpath.c).
	 * Only the allocator's own, never another object's. */
	static char nm_nallocx[] = "nallocx";
	void *nx = look(nm_nallocx, NULL);
	if (nx && in_span(&s, nx))
		heapprof__next_nallocx = (size_t (*)(size_t, int))nx;
	/* Their statistics, for the profiles' memory line (allocstats.c). */
	static char nm_mallctl[] = "mallctl",
	            nm_tcprop[] = "MallocExtension_GetNumericProperty";
	void *mc = look(nm_mallctl, NULL), *tp = look(nm_tcprop, NULL);
	if (mc && in_span(&s, mc))
		heapprof__next_mallctl = (int (*)(const char *, void *, size_t *,
		                                  void *, size_t))mc;
	if (tp && in_span(&s, tp))
		heapprof__next_tcprop = (int (*)(const char *, size_t *))tp;
#define OWN(f) own.f = in_span(&s, (void *)n->f) ? n->f : NULL
	own.malloc = n->malloc;
	OWN(free);
	OWN(calloc);
	OWN(realloc);
	OWN(posix_memalign);
	OWN(aligned_alloc);
	OWN(memalign);
	OWN(valloc);
	OWN(pvalloc);
	OWN(malloc_usable_size);
#undef OWN
	own_page = (size_t)sysconf(_SC_PAGESIZE);
	if (!own.calloc)
		n->calloc = emu_calloc;
	if (!own.memalign && !own.aligned_alloc && !own.posix_memalign)
		return; /* nothing to align with: as the program would call */
	if (!own.memalign)
		n->memalign = emu_memalign;
	if (!own.aligned_alloc)
		n->aligned_alloc = emu_aligned_alloc;
	if (!own.posix_memalign)
		n->posix_memalign = emu_posix_memalign;
	if (!own.valloc)
		n->valloc = emu_valloc;
	if (!own.pvalloc)
		n->pvalloc = emu_pvalloc;
}

/* Whose malloc the program calls, when it is not ours: said once by init. */
HP_RARE static void
note_unreached(void *m)
{
	hp_objspan s, c;
	objspan(&s, m);
	objspan(&c, (void *)dl_iterate_phdr); /* glibc's own object */
	if (s.n && c.n && s.lo[0] == c.lo[0]) {
		heapprof__unreached_kind = 1;
		return;
	}
	heapprof__unreached_kind = s.is_main ? 2 : 3;
	const char *nm = s.name && s.name[0] ? s.name : "?";
	size_t l = strlen(nm);
	if (l >= sizeof(heapprof__unreached_name))
		nm += l - (sizeof(heapprof__unreached_name) - 1);
	strcpy(heapprof__unreached_name, nm);
}

#else
HP_RARE static void *
default_def(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}
#endif /* HP_ENTRY_RENAMED */

HP_RARE void
heapprof__interpose_resolve(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&resolve_state, &expect, 1))
		return; /* done, or in progress (dlsym re-entering us) */
	int saved = errno;
	if (!heapprof__range_span)
		heapprof__range_init();
	/* The names in .data, not string literals: dlsym reads them, and
	 * .data's pages are faulted in by the loader anyway, the constants'
	 * page is not (one page fault in every process). */
	static char nm_malloc[] = "malloc", nm_free[] = "free",
	            nm_calloc[] = "calloc", nm_realloc[] = "realloc",
	            nm_memalign[] = "memalign", nm_valloc[] = "valloc",
	            nm_pvalloc[] = "pvalloc", nm_posix_memalign[] = "posix_memalign",
	            nm_aligned_alloc[] = "aligned_alloc",
	            nm_usable[] = "malloc_usable_size";
	hp_next n;
#ifdef HP_ENTRY_RENAMED
	int first = 1; /* the sanitizer build: its driver calls hp_malloc */
#else
	/* Is our malloc the program's? Then whatever comes after us is
	 * next (RTLD_NEXT, one lookup a name, as before); if not, the
	 * program's allocator is whatever comes first. */
	void *m0 = default_def(nm_malloc);
	int first = m0 && is_self(m0);
	if (!first) {
		/* libheapprof.a linked into an executable that does not
		 * export its malloc: the executable's own calls still reach
		 * ours, so ours is the program's. */
		hp_objspan me;
		objspan(&me, (void *)__start_heapprof_entry);
		first = me.is_main;
	}
#endif
	void *(*look)(const char *, void *) = first ? find : find_first;
	n.malloc = look(nm_malloc, (void *)__libc_malloc);
	if (n.malloc == (void *)__libc_malloc) {
		/* glibc's malloc is next, so its free, calloc, ... are too:
		 * glibc defines them as aliases of the __libc_ names, which
		 * the loader bound already. Six dlsym calls fewer (~6 k
		 * instructions of every start-up, issue 15). (An allocator
		 * that defines __libc_malloc, as tcmalloc does, defines these
		 * six too, and the loader bound them to it.) */
		n.free = __libc_free;
		n.calloc = __libc_calloc;
		n.realloc = __libc_realloc;
		n.memalign = __libc_memalign;
		n.valloc = __libc_valloc;
		n.pvalloc = __libc_pvalloc;
	} else {
		n.free = look(nm_free, (void *)__libc_free);
		n.calloc = look(nm_calloc, (void *)__libc_calloc);
		n.realloc = look(nm_realloc, (void *)__libc_realloc);
		n.memalign = look(nm_memalign, (void *)__libc_memalign);
		n.valloc = look(nm_valloc, (void *)__libc_valloc);
		n.pvalloc = look(nm_pvalloc, (void *)__libc_pvalloc);
	}
	n.posix_memalign = look(nm_posix_memalign, NULL);
	n.aligned_alloc = look(nm_aligned_alloc, (void *)__libc_memalign);
	n.malloc_usable_size = look(nm_usable, NULL);
	if (!n.posix_memalign || !n.malloc_usable_size) {
		/* No libc to forward to: nothing sane is possible. */
		static const char m[] = "heapprof: cannot find the next allocator\n";
		ssize_t w = write(2, m, sizeof(m) - 1);
		(void)w;
		abort();
	}
#ifndef HP_ENTRY_RENAMED
	if (n.malloc != (void *)__libc_malloc)
		own_functions(&n, look);
	if (!first) {
		heapprof__unreached = 1;
		note_unreached(n.malloc);
	}
#endif
	heapprof__next = n;
	atomic_store_explicit(&resolve_state, 2, memory_order_release);
	errno = saved;
}

static bool
resolved(void)
{
	if (atomic_load_explicit(&resolve_state, memory_order_acquire) == 2)
		return true;
	heapprof__interpose_resolve();
	return atomic_load_explicit(&resolve_state, memory_order_acquire) == 2;
}

static void *
lazy_malloc(size_t n)
{
	return resolved() ? heapprof__next.malloc(n) : boot_alloc(n, 16, false);
}
static void
lazy_free(void *p)
{
	if (p && resolved())
		heapprof__next.free(p);
}
static void *
lazy_calloc(size_t n, size_t s)
{
	size_t t;
	if (resolved())
		return heapprof__next.calloc(n, s);
	if (__builtin_mul_overflow(n, s, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return boot_alloc(t, 16, true);
}
static void *
lazy_realloc(void *p, size_t n)
{
	return resolved() ? heapprof__next.realloc(p, n) : NULL;
}
static int
lazy_posix_memalign(void **pp, size_t a, size_t n)
{
	if (resolved())
		return heapprof__next.posix_memalign(pp, a, n);
	*pp = boot_alloc(n, a, false);
	return *pp ? 0 : ENOMEM;
}
static void *
lazy_aligned_alloc(size_t a, size_t n)
{
	return resolved() ? heapprof__next.aligned_alloc(a, n) : boot_alloc(n, a, false);
}
static void *
lazy_memalign(size_t a, size_t n)
{
	return resolved() ? heapprof__next.memalign(a, n) : boot_alloc(n, a, false);
}
static void *
lazy_valloc(size_t n)
{
	return resolved() ? heapprof__next.valloc(n) : boot_alloc(n, 4096, false);
}
static void *
lazy_pvalloc(size_t n)
{
	return resolved() ? heapprof__next.pvalloc(n) : boot_alloc(n, 4096, false);
}
static size_t
lazy_usable(void *p)
{
	return resolved() ? heapprof__next.malloc_usable_size(p) : 0;
}

