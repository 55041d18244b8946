/*
 * attach_symval.c: while `heapprof attach` has a process routed, the
 * loader's own lookups of the malloc family find the profiler's entry
 * points. attach.c rewrites the GOT entries of the objects loaded at the
 * attach; an object relocated afterwards (a dlopen, or a lazy PLT slot
 * bound by _dl_fixup on its first call) looks the name up in the global
 * scope and takes l_addr + st_value of the first definition, the
 * program's allocator's (usually libc.so.6's). Here that definition's
 * .dynsym entries get st_value = ours - l_addr (an unsigned wrap-around,
 * as the loader's own sum wraps): every relocation processed from then on
 * binds ours, with no hook in the loader. Names, hashes and versions are
 * untouched; only the definer is patched (a program's own wrapper found
 * first keeps its dlsym(RTLD_NEXT) target: the objects after it are not
 * changed). Internal calls inside the defining object never read its
 * .dynsym. IFUNC definitions (the loader would call ours as a resolver)
 * are not patched: those functions stay routed at the first sample after
 * a load (attach.c's rescan).
 *
 * .dynsym lies in a read-only file-backed mapping: its page is made
 * writable for the store and given back the protection the loader gave
 * it (its PT_LOAD's flags; PROT_READ inside the RELRO). The store makes
 * the page a private copy: one page of the process's memory per page
 * touched, for good (libc 2.36: the 11 names on 9 pages, 36 KiB).
 *
 * The freeing functions' entries are never put back (a block sampled
 * while attached may reach a free bound after the detach: ours knows it,
 * and forwards every other pointer); the allocating ones are at the
 * detach. The st_value store is one aligned 8-byte write, atomic for a
 * concurrent lookup (old or new value, both valid functions).
 *
 * Shared state: `ent` and `nent` are under attach.c's lock (attach, stop).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect.h"

#ifndef HP_ENTRY_RENAMED

/* One patched .dynsym entry. */
typedef struct symval {
	ElfW(Sym) *sym;
	ElfW(Addr) old;      /* its st_value as the object was loaded */
	ElfW(Addr) l_addr;   /* its object's load bias */
	const void *fbase;   /* its object's ELF header (the mapping's start) */
	uintptr_t ours;      /* the entry point it leads to now */
	int fn;
	int on;              /* holds ours now */
} symval;
#define MAXENT 64
static symval ent[MAXENT]; /* under attach.c's lock */
static int nent;

static uintptr_t
dyn_ptr(ElfW(Addr) base, ElfW(Addr) v)
{
	/* glibc relocates the dynamic section's pointers in place */
	return v < base ? base + v : v;
}

/* How many symbols .dynsym holds: DT_HASH's nchain, or the end of the
 * last chain of DT_GNU_HASH. */
static size_t
sym_count(const ElfW(Word) *hash, const uint32_t *gnu)
{
	if (hash)
		return hash[1];
	if (!gnu)
		return 0;
	uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
	const uint32_t *buckets = gnu + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return (size_t)last + 1;
}

/* The protection the loader gave the page at `page` of the object whose
 * ELF header is at fbase: 0 and *prot, or -1 (not in one of its
 * segments: not touched). */
static int
page_prot(const void *fbase, ElfW(Addr) l_addr, uintptr_t page, long pg, int *prot)
{
	const ElfW(Ehdr) *eh = fbase;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return -1;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	int found = 0, relro = 0;
	for (int k = 0; k < eh->e_phnum; k++) {
		uintptr_t a = l_addr + ph[k].p_vaddr;
		uintptr_t lo = a & ~(uintptr_t)(pg - 1);
		uintptr_t hi = (a + ph[k].p_memsz + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
		if (ph[k].p_type == PT_LOAD && page >= lo && page < hi) {
			/* the loader maps the segments in order: a later
			 * one sharing the page replaced it */
			*prot = (ph[k].p_flags & PF_R ? PROT_READ : 0) |
			        (ph[k].p_flags & PF_W ? PROT_WRITE : 0) |
			        (ph[k].p_flags & PF_X ? PROT_EXEC : 0);
			found = 1;
		}
		/* the RELRO's whole pages, read-only after the loading */
		if (ph[k].p_type == PT_GNU_RELRO && page >= lo &&
		    page + (uintptr_t)pg <= ((a + ph[k].p_memsz) & ~(uintptr_t)(pg - 1)))
			relro = 1;
	}
	if (!found)
		return -1;
	if (relro)
		*prot = PROT_READ;
	return 0;
}

/* Stores v in e's st_value, the page writable for the time: 0 or -errno. */
static int
store(symval *e, ElfW(Addr) v)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)&e->sym->st_value & ~(uintptr_t)(pg - 1);
	int prot;
	if (page_prot(e->fbase, e->l_addr, page, pg, &prot) != 0)
		return -EFAULT;
	if (!(prot & PROT_WRITE) &&
	    mprotect((void *)page, (size_t)pg, prot | PROT_WRITE) != 0)
		return -errno;
	atomic_store_explicit((_Atomic ElfW(Addr) *)&e->sym->st_value, v,
	                      memory_order_release);
	if (!(prot & PROT_WRITE))
		mprotect((void *)page, (size_t)pg, prot);
	return 0;
}

int
heapprof__symval_route(int fn, const char *name, uintptr_t theirs, uintptr_t ours)
{
	/* patched already (a freeing function, by an earlier attach) */
	for (int i = 0; i < nent; i++)
		if (ent[i].fn == fn && ent[i].on && ent[i].ours == ours)
			return 0;
	Dl_info di;
	struct link_map *lm = NULL;
	if (!theirs || !dladdr1((void *)theirs, &di, (void **)&lm, RTLD_DL_LINKMAP) ||
	    !lm || !di.dli_fbase || !lm->l_ld)
		return -ENOENT;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Word) *hash = NULL;
	const uint32_t *gnu = NULL;
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
		case DT_HASH: hash = (const ElfW(Word) *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
		case DT_GNU_HASH: gnu = (const uint32_t *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
		default: break;
		}
	}
	size_t n = symtab && strtab ? sym_count(hash, gnu) : 0;
	int done = 0, rc = -ENOENT;
	for (size_t i = 1; i < n; i++) {
		const ElfW(Sym) *s = &symtab[i];
		if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS ||
		    strcmp(strtab + s->st_name, name) != 0)
			continue;
		/* every version of the name that is this function (an
		 * older version's other function is left alone) */
		if ((uintptr_t)(lm->l_addr + s->st_value) != theirs)
			continue;
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC) {
			rc = -ENOTSUP; /* IFUNC: the loader would call ours */
			continue;
		}
		symval *e = NULL;
		for (int k = 0; k < nent; k++)
			if (ent[k].sym == s)
				e = &ent[k];
		if (!e) {
			if (nent == MAXENT)
				return -ENOSPC;
			e = &ent[nent];
			e->sym = (ElfW(Sym) *)s;
			e->old = s->st_value;
			e->l_addr = lm->l_addr;
			e->fbase = di.dli_fbase;
			e->fn = fn;
			e->on = 0;
		}
		int r = store(e, (ElfW(Addr))(ours - lm->l_addr));
		if (r != 0) {
			rc = r;
			continue;
		}
		e->ours = ours;
		e->on = 1;
		if (e == &ent[nent])
			nent++;
		done++;
	}
	return done ? done : rc;
}

void
heapprof__symval_restore(int from)
{
	for (int i = 0; i < nent; i++) {
		symval *e = &ent[i];
		if (!e->on || e->fn < from)
			continue;
		/* its object still loaded, where it was (the definer of the
		 * program's allocator is not unloaded, but a dlopen'd one
		 * could be) */
		Dl_info di;
		struct link_map *lm = NULL;
		if (!dladdr1((void *)(e->l_addr + e->old), &di, (void **)&lm,
		             RTLD_DL_LINKMAP) ||
		    !lm || lm->l_addr != e->l_addr || di.dli_fbase != e->fbase) {
			e->on = 0;
			continue;
		}
		if (e->sym->st_value != (ElfW(Addr))(e->ours - e->l_addr) ||
		    store(e, e->old) == 0)
			e->on = 0;
	}
}

uintptr_t
heapprof__symval_orig(int fn)
{
	for (int i = 0; i < nent; i++)
		if (ent[i].fn == fn && ent[i].on)
			return (uintptr_t)(ent[i].l_addr + ent[i].old);
	return 0;
}

#endif
