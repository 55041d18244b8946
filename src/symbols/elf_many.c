/*
 * elf_many.c: heapprof__elf_lookup_many, the functions of a known, sorted
 * set of addresses found in one pass over a file's symbols with no sort
 * and no table kept: a dump's symbolization then costs in proportion to
 * its distinct PCs and one read of .symtab/.dynsym, not a sort of cc1's
 * or python's symbol table (issue 15). The pass reads the four fields it
 * needs in place and rejects most symbols in a few instructions; names
 * are read only for ties at one address and for the winners. Which name
 * it gives is pinned by test_elf_many: a reference written from the rules
 * (elffile.h), on every ELF file of the system's library directories.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "compiler.h"
#include "elf_internal.h"

/* Where a symbol's address falls among the wanted ones (the first vaddr
 * >= it), in a few instructions: the span of the vaddrs cut into nspan
 * equal slices (a power of two, 8 per vaddr, 64 to 1024), each knowing
 * its first vaddr, then a binary search inside the slice. A plain binary
 * search over all of them was half of cc1's exit-dump symbolization (27 k
 * .dynsym functions: 2.3 M of 4.8 M instructions, BENCHMARKS.md). */
typedef struct span_index {
	const uint64_t *v;
	size_t n, nspan;
	unsigned shift;
	uint32_t *first; /* nspan + 1 */
	/* For a slice without a vaddr (all its symbols share one `first`),
	 * at most the address of the best symbol so far below that vaddr
	 * (near[first].addr), else 0: lower symbols that do not reach the
	 * vaddr are passed over with no search (cc1: ~14 of ~41
	 * instructions per symbol). */
	uint64_t *floor; /* nspan */
} span_index;

/* Sets up x for v[0, n) in one zeroed allocation (x->floor): 0 or
 * -ENOMEM. */
static int
span_init(span_index *x, const uint64_t *v, size_t n)
{
	x->v = v;
	x->n = n;
	x->nspan = 64;
	while (x->nspan < 8 * n && x->nspan < 1024)
		x->nspan *= 2;
	x->floor = calloc(x->nspan + x->nspan / 2 + 1, sizeof(uint64_t));
	if (!x->floor)
		return -ENOMEM;
	x->first = (uint32_t *)(x->floor + x->nspan);
	x->shift = 0;
	while (((v[n - 1] - v[0]) >> x->shift) >= x->nspan)
		x->shift++;
	size_t i = 0;
	for (uint64_t b = 0; b < x->nspan; b++) {
		uint64_t off = b << x->shift; /* the slice's start, saturated */
		uint64_t at = off > UINT64_MAX - v[0] ? UINT64_MAX : v[0] + off;
		while (i < n && v[i] < at)
			i++;
		x->first[b] = (uint32_t)i;
	}
	x->first[x->nspan] = (uint32_t)n; /* every vaddr is below the last end */
	return 0;
}

/* A symbol kept during the pass, without its name: names are read only
 * when a decision needs them (two symbols at one address) and for the
 * winners, so the pass touches the string-table pages of a few names,
 * not those of every symbol that was the best for a while (cc1: a 1.3 MB
 * .dynstr, ~28 page faults in memchr before). */
typedef struct pick {
	uint64_t addr, size;
	uint32_t name;  /* offset in the string table; 0: empty pick */
	uint32_t rank;  /* rank_of's; only its high part (size, binding)
	                 * until `ranked` */
	uint32_t ranked;
} pick;

/* One pass over one symbol table: the string table, the wanted vaddrs,
 * near[i] (the best symbol in (vaddrs[i-1], vaddrs[i]]) and encl[i] (the
 * best sized symbol containing vaddrs[i]). */
typedef struct pass {
	const char *strs;
	uint64_t lastnul; /* the string table's last NUL: names above it are
	                   * unterminated (what memchr checked per name) */
	span_index *x;
	pick *near, *encl;
} pass;

/* rank_of's high part, which needs no name. */
static unsigned
rank_hi(uint64_t size, unsigned bind)
{
	sym s = {.bind = bind, .size = size};
	return rank_of(&s, "");
}

static void
rank_full(const pass *p, pick *a)
{
	if (a->ranked)
		return;
	sym s = {.bind = STB_GLOBAL, .size = 1}; /* high part 0 */
	a->rank |= rank_of(&s, p->strs + a->name);
	a->ranked = 1;
}

/* The better of two symbols at one address (as elffile.c's cmp_cand
 * orders them: rank_of, then the name). */
static int
better_at(const pass *p, pick *a, pick *b)
{
	if ((a->rank ^ b->rank) >> 24) /* size or binding decide */
		return a->rank < b->rank;
	rank_full(p, a);
	rank_full(p, b);
	if (a->rank != b->rank)
		return a->rank < b->rank;
	return strcmp(p->strs + a->name, p->strs + b->name) < 0;
}

/* Higher address first, then better_at; an empty pick loses. */
static inline int
better(const pass *p, pick *a, pick *b)
{
	if (!b->name)
		return 1;
	if (a->addr != b->addr)
		return a->addr > b->addr;
	return better_at(p, a, b);
}

/* The symbol that passed the cheap test of scan(): it may be the best
 * below vaddrs[lo] or around some of vaddrs[lo..]. */
static HP_NOINLINE void
take(pass *p, size_t lo, uint32_t name, uint64_t value, uint64_t size,
     unsigned bind)
{
	span_index *x = p->x;
	pick c = {value, size, name, rank_hi(size, bind), 0};
	if (better(p, &c, &p->near[lo])) {
		p->near[lo] = c;
		/* The slices strictly between vaddrs lo-1 and lo hold none. */
		if (lo > 0)
			for (uint64_t b = ((x->v[lo - 1] - x->v[0]) >> x->shift) + 1;
			     b < (x->v[lo] - x->v[0]) >> x->shift; b++)
				x->floor[b] = value;
	}
	for (size_t j = lo; size && j < x->n && x->v[j] - value < size; j++)
		if (better(p, &c, &p->encl[j]))
			p->encl[j] = c;
}

#define FUNC_TYPES (1u << STT_FUNC | 1u << STT_GNU_IFUNC)

/* Field k (0 st_name, 1 st_value, 2 st_size) of the symbol at `at`. */
HP_INLINE uint64_t
sym_field(const uint8_t *at, int is64, int k)
{
	static const uint8_t off64[3] = {offsetof(Elf64_Sym, st_name),
	                                 offsetof(Elf64_Sym, st_value),
	                                 offsetof(Elf64_Sym, st_size)};
	static const uint8_t off32[3] = {offsetof(Elf32_Sym, st_name),
	                                 offsetof(Elf32_Sym, st_value),
	                                 offsetof(Elf32_Sym, st_size)};
	if (is64 && k > 0) {
		uint64_t f;
		memcpy(&f, at + off64[k], 8);
		return f;
	}
	uint32_t f;
	memcpy(&f, at + (is64 ? off64[k] : off32[k]), 4);
	return f;
}

/* The symbols [at, end) of class 64 or 32 (a constant: one loop each),
 * four fields read in place, the common rejections first and the state
 * in locals: cc1's 29 k .dynsym symbols cost ~95 instructions each
 * through read_sym and a call per function symbol. 1 if a function
 * symbol was seen (one with a name offset inside the string table:
 * which table to use, read_symbols' rule), else 0. */
HP_INLINE int
scan(pass *p, const uint8_t *at, const uint8_t *end, uint64_t entsize,
     uint64_t strsize, int is64)
{
	const span_index *x = p->x;
	const uint64_t *v = x->v, v0 = v[0], vlast = v[x->n - 1];
	const uint64_t *floor = x->floor;
	const uint32_t *first = x->first;
	const unsigned shift = x->shift;
	const uint64_t lastnul = p->lastnul;
	pick *near = p->near;
	int any = 0;
	for (; at != end; at += entsize) {
		unsigned info = at[is64 ? offsetof(Elf64_Sym, st_info)
		                        : offsetof(Elf32_Sym, st_info)];
		if (!(FUNC_TYPES >> (info & 15) & 1)) /* ELF{32,64}_ST_TYPE */
			continue;
		uint64_t value = sym_field(at, is64, 1), size;
		size_t lo = 0; /* the first vaddr >= value */
		if (value - 1 < vlast && value > v0) {
			uint64_t b = (value - v0) >> shift;
			/* floor[b] > 0: a symbol was taken, so any == 1. */
			if (value < floor[b]) {
				size = sym_field(at, is64, 2);
				if (!size || v[first[b]] - value >= size)
					continue;
			}
			size_t hi = first[b + 1];
			lo = first[b];
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (v[mid] < value)
					lo = mid + 1;
				else
					hi = mid;
			}
		}
		uint32_t name = (uint32_t)sym_field(at, is64, 0);
		uint16_t shndx;
		memcpy(&shndx, at + (is64 ? offsetof(Elf64_Sym, st_shndx)
		                          : offsetof(Elf32_Sym, st_shndx)), 2);
		/* Beyond the last vaddr, value 0, undefined, or a name that
		 * is 0, outside the table or unterminated. */
		if (value - 1 >= vlast || shndx == SHN_UNDEF ||
		    (uint64_t)name - 1 >= lastnul) {
			if (!any)
				any = shndx != SHN_UNDEF && value != 0 &&
				      name != 0 && name < strsize;
			continue;
		}
		any = 1;
		/* Most symbols are neither the nearest below a wanted address
		 * nor around one (an empty pick's addr is 0). */
		size = sym_field(at, is64, 2);
		if (value < near[lo].addr && (!size || v[lo] - value >= size))
			continue;
		take(p, lo, name, value, size, info >> 4); /* ELF{32,64}_ST_BIND */
	}
	return any;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels say EINVAL */
#endif

/* Maps [at, at+len) of a file we mapped in one system call rather than
 * a page fault per 64 KiB read (fault-around): on this VM a fault costs
 * ~20 us, so cc1's 693 KB .dynsym took ~11 faults, ~240 us, against
 * ~40 us to populate it (BENCHMARKS.md). Best effort: errors are ignored,
 * the reads then fault as before. */
static void
populate(const heapprof_elf *e, const void *at, uint64_t len)
{
	if (!e->mapped || len < 64 * 1024)
		return;
	uintptr_t a = (uintptr_t)at, base = (uintptr_t)e->data;
	uintptr_t start = base + ((a - base) & ~(uintptr_t)4095);
	(void)madvise((void *)start, a + len - start, MADV_POPULATE_READ);
}

/* One pass over the function symbols of `st` (into p->near, p->encl).
 * 1 if it has function symbols, 0 if not, or -ENOEXEC. */
static HP_NOINLINE int
pass_symtab(const heapprof_elf *e, const ehdr *h, const shdr *st, pass *p)
{
	uint64_t entsize, strsize;
	const char *strs;
	if (symtab_open(e, h, st, &entsize, &strs, &strsize) != 0)
		return -ENOEXEC;
	const char *z = strsize ? memrchr(strs, '\0', strsize) : NULL;
	p->strs = strs;
	p->lastnul = z ? (uint64_t)(z - strs) : 0;
	const uint8_t *at = e->data + st->offset;
	const uint8_t *end = at + st->size / entsize * entsize;
	populate(e, at, (uint64_t)(end - at));
	/* The names of the winners are read next, by the encoder: all of the
	 * string table when there is a wanted address per 64 KiB of it. */
	if (strsize / p->x->n <= 64 * 1024)
		populate(e, strs, strsize);
	return e->is64 ? scan(p, at, end, entsize, strsize, 1)
	               : scan(p, at, end, entsize, strsize, 0);
}

int
heapprof__elf_lookup_many(const heapprof_elf *e, const uint64_t *vaddrs,
                          size_t n, const char **names)
{
	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	ehdr h;
	heapprof_elf tmp = *e;
	if (n == 0 || read_ehdr(&tmp, &h) != 0)
		return 0;
	if (n > SIZE_MAX / (2 * sizeof(pick)))
		return -ENOMEM;
	pick *near = calloc(2 * n, sizeof(pick));
	if (!near)
		return -ENOMEM;
	span_index xs, *x = &xs;
	if (n > UINT32_MAX || span_init(x, vaddrs, n) != 0) {
		free(near);
		return -ENOMEM;
	}
	pass p = {.x = x, .near = near, .encl = near + n};
	/* .symtab if it has function symbols, else .dynsym (read_symbols). */
	static const uint32_t kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
	int nf = 0;
	for (int k = 0; k < 2 && nf <= 0; k++) {
		for (uint64_t i = 0; i < h.shnum && nf <= 0; i++) {
			shdr sh;
			read_shdr(&tmp, &h, i, &sh);
			if (sh.type != kinds[k] || sh.size == 0)
				continue;
			nf = pass_symtab(&tmp, &h, &sh, &p);
			if (nf <= 0) {
				memset(near, 0, 2 * n * sizeof(pick));
				memset(x->floor, 0, x->nspan * sizeof(*x->floor));
			}
		}
	}
	/* The nearest symbol at or below vaddrs[i] is the last one found in
	 * the intervals up to i; if it is sized and ends before vaddrs[i],
	 * the innermost sized symbol around it (heapprof__elf_lookup). */
	const pick *cur = NULL;
	for (size_t i = 0; i < n; i++) {
		if (near[i].name)
			cur = &near[i];
		if (!cur)
			continue;
		if (cur->size == 0 || vaddrs[i] - cur->addr < cur->size)
			names[i] = p.strs + cur->name;
		else if (p.encl[i].name)
			names[i] = p.strs + p.encl[i].name;
	}
	free(x->floor);
	free(near);
	return 0;
}
