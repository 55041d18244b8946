/*
 * tlssym.c: finds a thread-local variable that a loaded object exports in
 * its .dynsym (and, optionally, a data symbol of the same object), by
 * walking the objects' own .gnu.hash tables with dl_iterate_phdr: no
 * dlsym (otel.c says why: page faults at start-up, the loader's lock,
 * dlerror). Used once, by the constructor or heapprof_attach_start, for
 * otel_thread_ctx_v1 (otel.c) and the custom-labels variables
 * (customlabels.c); never on the sampled path. No shared state.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "collect.h"
#include "tlssym.h"

typedef struct {
	const char *name;
	uint32_t hash;
	uintptr_t addr;   /* the TLS variable's copy in this thread, once found */
	heapprof_tls_peer *peer;
} tls_find;

/* d_ptr of a dynamic entry as an address (glibc relocates most in place;
 * an object whose dynamic section is read-only keeps them relative). */
HP_RARE static uintptr_t
dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

HP_RARE static uint32_t
gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const char *c = name; *c; c++)
		h = h * 33 + (uint8_t)*c;
	return h;
}

typedef struct {
	uintptr_t gh, sym, str;
} dyn_tables;

/* The symbol `name` (hash h) defined in the object, or NULL. */
HP_RARE static const ElfW(Sym) *
lookup(const dyn_tables *t, const char *name, uint32_t hash)
{
	/* The GNU hash table: nbuckets, symoffset, bloom words, bloom
	 * shift; the Bloom filter, the buckets, the chains. */
	const uint32_t *h = (const uint32_t *)t->gh;
	uint32_t nb = h[0], symoff = h[1], nbloom = h[2], shift = h[3];
	if (!nb || !nbloom)
		return NULL;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + nbloom);
	const uint32_t *chain = buckets + nb;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word = bloom[(hash / bits) % nbloom];
	ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % bits)) |
	                  ((ElfW(Addr))1 << ((hash >> shift) % bits));
	if ((word & mask) != mask)
		return NULL;
	uint32_t i = buckets[hash % nb];
	if (i < symoff)
		return NULL;
	const ElfW(Sym) *syms = (const ElfW(Sym) *)t->sym;
	for (;; i++) {
		uint32_t h2 = chain[i - symoff];
		const ElfW(Sym) *s = &syms[i];
		if ((h2 | 1) == (hash | 1) &&
		    strcmp((const char *)t->str + s->st_name, name) == 0)
			return s->st_shndx != SHN_UNDEF ? s : NULL;
		if (h2 & 1)
			return NULL;
	}
}

/* Whether one of the object's loaded segments holds address a. */
HP_RARE static int
holds(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && a >= lo && a - lo < ph->p_memsz)
			return 1;
	}
	return 0;
}

HP_RARE static int
tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	tls_find *f = arg;
	if (!info->dlpi_tls_data)
		return 0; /* no TLS in this object (or none for this thread) */
	/* Neither libc nor libheapprof.so defines these variables: their
	 * symbol tables are not read (each lookup touched pages of libc's
	 * .gnu.hash and .dynsym that nothing else does: +2 to +3 page faults
	 * per process with the custom-labels names, rel.cost.exec_faults).
	 * A program that links libheapprof.a is the main object (no name). */
	uintptr_t own = (uintptr_t)&heapprof__tls_static_off;
	uintptr_t libc = (uintptr_t)&dl_iterate_phdr;
	if (holds(info, libc) || (info->dlpi_name[0] && holds(info, own)))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
			                          info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	uintptr_t base = info->dlpi_addr;
	dyn_tables t = {0, 0, 0};
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_GNU_HASH)
			t.gh = dyn_ptr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_SYMTAB)
			t.sym = dyn_ptr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			t.str = dyn_ptr(base, dyn->d_un.d_ptr);
	}
	if (!t.gh || !t.sym || !t.str)
		return 0;
	const ElfW(Sym) *s = lookup(&t, f->name, f->hash);
	if (!s)
		return 0;
	if (ELF64_ST_TYPE(s->st_info) != STT_TLS)
		return 0; /* defined otherwise: not this one */
	f->addr = (uintptr_t)info->dlpi_tls_data + s->st_value;
	if (f->peer) {
		const ElfW(Sym) *p = lookup(&t, f->peer->name, gnu_hash(f->peer->name));
		if (p && ELF64_ST_TYPE(p->st_info) == STT_OBJECT) {
			f->peer->addr = (const void *)(base + p->st_value);
			f->peer->size = p->st_size;
		}
	}
	return 1;
}

HP_RARE int
heapprof__tls_static_off(const char *name, int startup,
                         heapprof_tls_peer *peer, intptr_t *off)
{
	uintptr_t tp = heapprof__thread_pointer();
	if (!tp)
		return 0;
	int saved = errno;
	if (peer)
		peer->addr = NULL;
	tls_find f = {name, gnu_hash(name), 0, peer};
	dl_iterate_phdr(tls_cb, &f);
	uintptr_t a = f.addr;
	if (!a) {
		errno = saved;
		return 0;
	}
	/* At start-up every object's TLS is static. Later (attach), the
	 * loader's static TLS size bounds it, when the loader says it
	 * (glibc's, as the sanitizers read it); else it is not read. */
	if (!startup) {
		void (*info)(size_t *, size_t *);
		void *fn = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
		memcpy(&info, &fn, sizeof(info));
		size_t size = 0, align = 0;
		if (info)
			info(&size, &align);
		else
			(void)dlerror();
#if defined(__x86_64__)
		int in_static = a < tp && tp - a <= size;
#else
		int in_static = a >= tp && a - tp < size;
#endif
		if (!in_static) {
			errno = saved;
			return 0;
		}
	}
	*off = (intptr_t)(a - tp);
	errno = saved;
	return 1;
}
