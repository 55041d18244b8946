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
	ElfW(Addr) next;     /* the value written (or to be, if pending) */
	ElfW(Addr) l_addr;   /* its object's load bias */
	const void *fbase;   /* its object's ELF header (the mapping's start) */
	int fn;
	int on;              /* holds ours now */
	int pending;         /* next to be written (flush) */
	int err;             /* the last write's errno, or 0 */
} symval;
#define MAXENT 64
/* HP_BIG_BSS: 3.5 KiB that only an attach touches, kept off the pages of
 * the small state every process touches at start-up (+3 page faults per
 * exec of /bin/true before, rel.cost.exec_faults) */
HP_BIG_BSS static symval ent[MAXENT]; /* under attach.c's lock */
static int nent;

static uintptr_t
dyn_ptr(ElfW(Addr) base, ElfW(Addr) v)
{
	/* glibc relocates the dynamic section's pointers in place */
	return v < base ? base + v : v;
}

/* The indexes of .dynsym's symbols that may be `name` (its hash chain:
 * every version of the name is on it), written to idx (at most cap):
 * their count. DT_GNU_HASH, or DT_HASH. */
static int
candidates(const char *name, const ElfW(Word) *hash, const uint32_t *gnu,
           uint32_t *idx, int cap)
{
	int n = 0;
	if (gnu) {
		uint32_t h = 5381;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			h = h * 33 + *c;
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
		const uint32_t *buckets =
		        gnu + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t i = nbuckets ? buckets[h % nbuckets] : 0;
		if (i < symoffset)
			return 0;
		for (;; i++) {
			uint32_t ch = chain[i - symoffset];
			if ((ch | 1) == (h | 1) && n < cap)
				idx[n++] = i;
			if (ch & 1)
				break;
		}
		return n;
	}
	if (hash) {
		uint32_t h = 0;
		for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
			h = (h << 4) + *c;
			uint32_t g = h & 0xf0000000u;
			if (g)
				h ^= g >> 24;
			h &= ~g;
		}
		ElfW(Word) nbucket = hash[0], nchain = hash[1];
		const ElfW(Word) *bucket = hash + 2, *chain = bucket + nbucket;
		for (ElfW(Word) i = nbucket ? bucket[h % nbucket] : 0;
		     i != STN_UNDEF && i < nchain && n < cap; i = chain[i])
			idx[n++] = i;
	}
	return n;
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

/* Writes each pending entry's `next` in its st_value. Entries of one
 * object whose pages the loader gave one protection are written under
 * one mprotect of their span (two calls, and two splits of the mapping,
 * in all); others one page at a time. An entry not written stays
 * pending. */
static void
flush(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < nent; i++) {
		if (!ent[i].pending)
			continue;
		const void *fbase = ent[i].fbase;
		uintptr_t lo = UINTPTR_MAX, hi = 0;
		int prot = -1, same = 1;
		for (int k = i; k < nent; k++) {
			if (!ent[k].pending || ent[k].fbase != fbase)
				continue;
			uintptr_t page = (uintptr_t)&ent[k].sym->st_value & ~(uintptr_t)(pg - 1);
			int p;
			if (page_prot(fbase, ent[k].l_addr, page, pg, &p) != 0) {
				ent[k].pending = 0; /* not in its object: left */
				ent[k].err = EFAULT;
				continue;
			}
			if (prot >= 0 && p != prot)
				same = 0;
			prot = p;
			if (page < lo)
				lo = page;
			if (page + (uintptr_t)pg > hi)
				hi = page + (uintptr_t)pg;
		}
		if (prot < 0)
			continue;
		/* one protection from lo to hi, the loader's: the pages
		 * between the entries' too */
		for (uintptr_t page = lo; same && page < hi; page += (uintptr_t)pg) {
			int p;
			if (page_prot(fbase, ent[i].l_addr, page, pg, &p) != 0 || p != prot)
				same = 0;
		}
		int opened = 0; /* the span made writable */
		for (int k = i; k < nent; k++) {
			symval *e = &ent[k];
			if (!e->pending || e->fbase != fbase)
				continue;
			uintptr_t a = lo, z = hi;
			int p = prot;
			if (!same) {
				a = (uintptr_t)&e->sym->st_value & ~(uintptr_t)(pg - 1);
				z = a + (uintptr_t)pg;
				page_prot(fbase, e->l_addr, a, pg, &p);
			}
			int w = !(p & PROT_WRITE);
			if (w && (!same || !opened) &&
			    mprotect((void *)a, z - a, p | PROT_WRITE) != 0) {
				e->err = errno;
				e->pending = 0;
				continue;
			}
			if (w && same)
				opened = 1;
			atomic_store_explicit((_Atomic ElfW(Addr) *)&e->sym->st_value,
			                      e->next, memory_order_release);
			e->on = e->next != e->old;
			e->pending = 0;
			e->err = 0;
			if (w && !same)
				mprotect((void *)a, z - a, p);
		}
		if (opened)
			mprotect((void *)lo, hi - lo, prot);
	}
}

/* Whether a lies in a segment of the object whose ELF header is fbase. */
static int
in_object(const void *fbase, ElfW(Addr) l_addr, uintptr_t a)
{
	const ElfW(Ehdr) *eh = fbase;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	for (int k = 0; k < eh->e_phnum; k++)
		if (ph[k].p_type == PT_LOAD && a >= l_addr + ph[k].p_vaddr &&
		    a < l_addr + ph[k].p_vaddr + ph[k].p_memsz)
			return 1;
	return 0;
}

void
heapprof__symval_route(int nfn, const char *const *name, const uintptr_t *theirs,
                       const uintptr_t *ours, int *err)
{
	struct link_map *lm = NULL;
	const void *fbase = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Word) *hash = NULL;
	const uint32_t *gnu = NULL;
	for (int fn = 0; fn < nfn; fn++) {
		err[fn] = ENOENT;
		if (!theirs[fn])
			continue;
		/* patched already (a freeing function, by an earlier
		 * attach) */
		int already = 0;
		for (int i = 0; i < nent; i++)
			if (ent[i].fn == fn && ent[i].on && ent[i].next == ours[fn] - ent[i].l_addr)
				already = 1;
		if (already) {
			err[fn] = 0;
			continue;
		}
		/* its defining object: the last one's again, mostly */
		if (!lm || !in_object(fbase, lm->l_addr, theirs[fn])) {
			Dl_info di;
			lm = NULL;
			if (!dladdr1((void *)theirs[fn], &di, (void **)&lm, RTLD_DL_LINKMAP) ||
			    !lm || !di.dli_fbase || !lm->l_ld) {
				lm = NULL;
				continue;
			}
			fbase = di.dli_fbase;
			symtab = NULL, strtab = NULL, hash = NULL, gnu = NULL;
			for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
				switch (d->d_tag) {
				case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
				case DT_STRTAB: strtab = (const char *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
				case DT_HASH: hash = (const ElfW(Word) *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
				case DT_GNU_HASH: gnu = (const uint32_t *)dyn_ptr(lm->l_addr, d->d_un.d_ptr); break;
				default: break;
				}
			}
		}
		uint32_t idx[32];
		int n = symtab && strtab ? candidates(name[fn], hash, gnu, idx, 32) : 0;
		for (int i = 0; i < n; i++) {
			const ElfW(Sym) *s = &symtab[idx[i]];
			if (s->st_shndx == SHN_UNDEF || s->st_shndx == SHN_ABS ||
			    strcmp(strtab + s->st_name, name[fn]) != 0)
				continue;
			/* every version of the name that is this function
			 * (an older version's other function is left) */
			if ((uintptr_t)(lm->l_addr + s->st_value) != theirs[fn])
				continue;
			if (ELF64_ST_TYPE(s->st_info) != STT_FUNC) {
				err[fn] = ENOTSUP; /* IFUNC: the loader would call ours */
				continue;
			}
			symval *e = NULL;
			for (int k = 0; k < nent; k++)
				if (ent[k].sym == s)
					e = &ent[k];
			if (!e) {
				if (nent == MAXENT) {
					err[fn] = ENOSPC;
					break;
				}
				e = &ent[nent++];
				memset(e, 0, sizeof(*e));
				e->sym = (ElfW(Sym) *)s;
				e->old = s->st_value;
				e->l_addr = lm->l_addr;
				e->fbase = fbase;
				e->fn = fn;
			}
			e->next = (ElfW(Addr))(ours[fn] - lm->l_addr);
			e->pending = 1;
		}
	}
	flush();
	for (int i = 0; i < nent; i++)
		if (ent[i].on && ent[i].next == ours[ent[i].fn] - ent[i].l_addr)
			err[ent[i].fn] = 0;
		else if (ent[i].err && err[ent[i].fn] == ENOENT)
			err[ent[i].fn] = ent[i].err;
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
		if (e->sym->st_value != e->next) {
			e->on = 0; /* not ours now: left */
			continue;
		}
		e->next = e->old;
		e->pending = 1;
	}
	flush();
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
