/*
 * test_elf_many.c: heapprof__elf_lookup_many (the exit dump's one pass over
 * a symbol table) against a reference written here from the rules, not from
 * the pass: the table is .symtab if it has a function symbol, else .dynsym;
 * at each address the nearest function symbol at or below it, aliases at
 * one address ranked sized first, then global, weak, local, then fewer
 * leading underscores (at most 15 counted), the shorter name, the smaller
 * name, the earlier symbol; a sized nearest symbol that ends before the
 * address gives way to the nearest sized symbol around it, else no name.
 *
 * Hand-built images (ELF64 and ELF32, through the same builder) check the
 * corner cases by name; then every ELF file under /usr/lib/x86_64-linux-gnu
 * and /usr/lib/gcc/x86_64-linux-gnu/12 that can be read (in name order, up
 * to a fixed count, never cut by time), at symbol starts, starts + 1, last bytes, ends, gaps, below the
 * first and above the last symbol, all at once and as sparse subsets.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elffile.h"
#include "test.h"

/* ------------------------------------------------------------ reference */

typedef struct rsym {
	uint64_t addr, size;
	const char *name;
	unsigned bind;
	size_t index; /* in the table */
} rsym;

static unsigned
bind_class(unsigned bind)
{
	return bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
}

static unsigned
underscores(const char *s)
{
	unsigned n = 0;
	while (s[n] == '_' && n < 15)
		n++;
	return n;
}

/* Which of two symbols at one address names it: < 0 if a. */
static int
rank_cmp(const rsym *a, const rsym *b)
{
	int d = (a->size == 0) - (b->size == 0);
	if (d)
		return d;
	d = (int)bind_class(a->bind) - (int)bind_class(b->bind);
	if (d)
		return d;
	d = (int)underscores(a->name) - (int)underscores(b->name);
	if (d)
		return d;
	size_t la = strlen(a->name), lb = strlen(b->name);
	la = la < 0xfffff ? la : 0xfffff;
	lb = lb < 0xfffff ? lb : 0xfffff;
	if (la != lb)
		return la < lb ? -1 : 1;
	d = strcmp(a->name, b->name);
	if (d)
		return d;
	return a->index < b->index ? -1 : a->index > b->index;
}

static int
by_addr_then_rank(const void *pa, const void *pb)
{
	const rsym *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return rank_cmp(a, b);
}

typedef struct ref {
	rsym *s; /* sorted by_addr_then_rank */
	size_t n;
	uint64_t maxsize;
} ref;

/* The function symbols of one table (entsize checked by the caller).
 * Returns how many have a defined section, a non-zero value and a name
 * offset inside the string table; those whose name is NUL-terminated
 * are kept in r. */
static size_t
ref_table(ref *r, const uint8_t *f, size_t fsize, int is64, uint64_t off,
          uint64_t size, uint64_t entsize, const char *strs, uint64_t strsize)
{
	size_t counted = 0;
	for (uint64_t i = 0; i < size / entsize; i++) {
		const uint8_t *at = f + off + i * entsize;
		uint64_t value, sz;
		unsigned info, shndx;
		uint32_t name;
		if (is64) {
			Elf64_Sym s;
			memcpy(&s, at, sizeof(s));
			name = s.st_name, info = s.st_info, shndx = s.st_shndx;
			value = s.st_value, sz = s.st_size;
		} else {
			Elf32_Sym s;
			memcpy(&s, at, sizeof(s));
			name = s.st_name, info = s.st_info, shndx = s.st_shndx;
			value = s.st_value, sz = s.st_size;
		}
		unsigned type = info & 15;
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    shndx == SHN_UNDEF || value == 0 || name == 0 ||
		    name >= strsize)
			continue;
		counted++;
		if (!memchr(strs + name, 0, strsize - name))
			continue;
		rsym *ns = realloc(r->s, (r->n + 1) * sizeof(*ns));
		if (!ns)
			abort();
		r->s = ns;
		r->s[r->n++] = (rsym){value, sz, strs + name, info >> 4, i};
		if (sz > r->maxsize)
			r->maxsize = sz;
	}
	(void)fsize;
	return counted;
}

/* The reference's symbols of the file f (host byte order only): 0, or
 * -1 if its headers are not what this reader handles. */
static int
ref_load(ref *r, const uint8_t *f, size_t fsize)
{
	memset(r, 0, sizeof(*r));
	if (fsize < EI_NIDENT || memcmp(f, ELFMAG, SELFMAG) != 0 ||
	    f[EI_DATA] != ELFDATA2LSB)
		return -1;
	int is64 = f[EI_CLASS] == ELFCLASS64;
	uint64_t shoff, shnum, shentsize;
	if (is64) {
		Elf64_Ehdr h;
		if (fsize < sizeof(h))
			return -1;
		memcpy(&h, f, sizeof(h));
		shoff = h.e_shoff, shnum = h.e_shnum, shentsize = h.e_shentsize;
	} else {
		Elf32_Ehdr h;
		if (fsize < sizeof(h))
			return -1;
		memcpy(&h, f, sizeof(h));
		shoff = h.e_shoff, shnum = h.e_shnum, shentsize = h.e_shentsize;
	}
	size_t shsz = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	if (!shoff || shentsize < shsz || shnum == 0 ||
	    shoff > fsize || shnum > (fsize - shoff) / shentsize)
		return -1;
	static const uint32_t kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
	for (int k = 0; k < 2; k++) {
		for (uint64_t i = 0; i < shnum; i++) {
			Elf64_Shdr s, str;
			const uint8_t *at = f + shoff + i * shentsize;
			if (is64) {
				memcpy(&s, at, sizeof(s));
			} else {
				Elf32_Shdr s32;
				memcpy(&s32, at, sizeof(s32));
				s.sh_type = s32.sh_type, s.sh_link = s32.sh_link;
				s.sh_offset = s32.sh_offset, s.sh_size = s32.sh_size;
				s.sh_entsize = s32.sh_entsize;
			}
			if (s.sh_type != kinds[k] || s.sh_size == 0)
				continue;
			size_t esz = is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
			uint64_t entsize = s.sh_entsize ? s.sh_entsize : esz;
			if (entsize < esz || s.sh_offset > fsize ||
			    s.sh_size > fsize - s.sh_offset || s.sh_link == 0 ||
			    s.sh_link >= shnum)
				continue;
			at = f + shoff + (uint64_t)s.sh_link * shentsize;
			if (is64) {
				memcpy(&str, at, sizeof(str));
			} else {
				Elf32_Shdr s32;
				memcpy(&s32, at, sizeof(s32));
				str.sh_type = s32.sh_type;
				str.sh_offset = s32.sh_offset, str.sh_size = s32.sh_size;
			}
			if (str.sh_type != SHT_STRTAB || str.sh_offset > fsize ||
			    str.sh_size > fsize - str.sh_offset)
				continue;
			r->n = 0;
			r->maxsize = 0;
			if (ref_table(r, f, fsize, is64, s.sh_offset, s.sh_size,
			              entsize, (const char *)f + str.sh_offset,
			              str.sh_size) > 0)
				goto found;
		}
	}
found:
	qsort(r->s, r->n, sizeof(*r->s), by_addr_then_rank);
	return 0;
}

/* The reference's name at v. */
static const char *
ref_name(const ref *r, uint64_t v)
{
	size_t lo = 0, hi = r->n; /* first symbol above v */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->s[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	size_t g = lo - 1; /* the best at the highest address <= v */
	while (g > 0 && r->s[g - 1].addr == r->s[g].addr)
		g--;
	const rsym *near = &r->s[g];
	if (near->size == 0 || v - near->addr < near->size)
		return near->name;
	/* The nearest sized symbol around v: scan down, the best of the
	 * highest group with one. */
	for (size_t j = lo; j-- > 0;) {
		const rsym *s = &r->s[j];
		if (r->maxsize == 0 || v - s->addr >= r->maxsize)
			break; /* nothing from here down reaches v */
		if (!s->size || v - s->addr >= s->size)
			continue;
		size_t best = j; /* the best of its group around v */
		for (size_t k = j; k > 0 && r->s[k - 1].addr == s->addr; k--)
			if (r->s[k - 1].size && v - s->addr < r->s[k - 1].size)
				best = k - 1;
		return r->s[best].name;
	}
	return NULL;
}

/* -------------------------------------------------------- comparing */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static size_t
sort_unique(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[i] != v[k - 1])
			v[k++] = v[i];
	return k;
}

static size_t named; /* addresses the reference names, over all calls */

/* lookup_many on v[0..n) against ref_name: the number that differ. */
static size_t
compare(const char *what, const heapprof_elf *e, const ref *r,
        const uint64_t *v, size_t n)
{
	if (n == 0)
		return 0;
	const char **names = malloc(n * sizeof(*names));
	if (!names || heapprof__elf_lookup_many(e, v, n, names) != 0) {
		free(names);
		printf("  %s: lookup_many failed\n", what);
		return n;
	}
	size_t diff = 0;
	for (size_t i = 0; i < n; i++) {
		const char *want = ref_name(r, v[i]);
		named += want != NULL;
		if (want == names[i] ||
		    (want && names[i] && strcmp(want, names[i]) == 0))
			continue;
		if (diff++ < 3)
			printf("  %s: 0x%llx: reference %s, lookup_many %s\n", what,
			       (unsigned long long)v[i], want ? want : "(none)",
			       names[i] ? names[i] : "(none)");
	}
	free(names);
	return diff;
}

/* The addresses around the reference's symbols (every `step`th one). */
static size_t
addresses(const ref *r, size_t step, uint64_t **out)
{
	size_t cap = 8 * (r->n / step + 2), n = 0;
	uint64_t *v = malloc(cap * sizeof(*v));
	if (!v)
		abort();
	v[n++] = 1;
	v[n++] = UINT64_MAX;
	for (size_t i = 0; i < r->n; i += step) {
		const rsym *s = &r->s[i];
		v[n++] = s->addr - 1;
		v[n++] = s->addr;
		v[n++] = s->addr + 1;
		if (s->size) {
			v[n++] = s->addr + s->size - 1;
			v[n++] = s->addr + s->size;
		}
		if (i + 1 < r->n) /* the middle of what follows */
			v[n++] = s->addr + (r->s[i + 1].addr - s->addr) / 2;
		else
			v[n++] = s->addr + s->size + 4096;
	}
	*out = v;
	return sort_unique(v, n);
}

/* One file: 0 if it agrees (or is not a file both readers take), else
 * the number of differences. */
static size_t
check_file(const char *path, size_t *nfiles)
{
	heapprof_elf e;
	if (heapprof__elf_open(&e, path, 0) != 0)
		return 0;
	ref r;
	if (ref_load(&r, e.data, e.size) != 0 || r.n == 0) {
		free(r.s);
		heapprof__elf_close(&e);
		return 0;
	}
	(*nfiles)++;
	uint64_t *v;
	size_t step = r.n / 20000 + 1; /* at most ~20 k symbols' worth */
	size_t n = addresses(&r, step, &v), d = compare(path, &e, &r, v, n);
	/* Sparse sets, as a profile's are: every 61st, and runs of 8
	 * every 997 (the pass's shortcuts depend on what else is asked). */
	uint64_t *w = malloc(n * sizeof(*w));
	if (!w)
		abort();
	size_t m = 0;
	for (size_t i = 0; i < n; i += 61)
		w[m++] = v[i];
	d += compare(path, &e, &r, w, m);
	m = 0;
	for (size_t i = 0; i < n; i++)
		if (i % 997 < 8)
			w[m++] = v[i];
	d += compare(path, &e, &r, w, m);
	free(w);
	free(v);
	free(r.s);
	heapprof__elf_close(&e);
	return d;
}

/* ----------------------------------------------------- hand-built images */

typedef struct bsym {
	const char *name;
	uint64_t value, size;
	unsigned char info; /* ELF64_ST_INFO(bind, type) */
	uint16_t shndx;
} bsym;

#define F(b) ELF64_ST_INFO(b, STT_FUNC)
#define IMG 0x4000

/* An image with one symbol table (.symtab, or .dynsym if dyn) of the given
 * symbols, class 64 or 32, little-endian unless big. The string table has
 * no final NUL if `unterminated` (the last name runs to its end). */
#define DEFINE_IMAGE(N)                                                        \
	static size_t image##N(uint8_t *img, const bsym *s, size_t ns,         \
	                       int dyn, int unterminated)                      \
	{                                                                      \
		memset(img, 0, IMG);                                           \
		Elf##N##_Ehdr eh = {0};                                        \
		memcpy(eh.e_ident, ELFMAG, SELFMAG);                           \
		eh.e_ident[EI_CLASS] = ELFCLASS##N;                            \
		eh.e_ident[EI_DATA] = ELFDATA2LSB;                             \
		eh.e_ident[EI_VERSION] = EV_CURRENT;                           \
		eh.e_type = ET_DYN;                                            \
		eh.e_shoff = 0x3000;                                           \
		eh.e_shentsize = sizeof(Elf##N##_Shdr);                        \
		eh.e_shnum = 4;                                                \
		char *strs = (char *)img + 0x100;                              \
		size_t sl = 1;                                                 \
		for (size_t i = 0; i < ns; i++) {                              \
			Elf##N##_Sym y = {0};                                  \
			y.st_name = (uint32_t)sl;                              \
			y.st_value = s[i].value;                               \
			y.st_size = s[i].size;                                 \
			y.st_info = s[i].info;                                 \
			y.st_shndx = s[i].shndx;                               \
			memcpy(img + 0x1000 + (i + 1) * sizeof(y), &y,        \
			       sizeof(y));                                     \
			size_t l = strlen(s[i].name) + 1;                      \
			memcpy(strs + sl, s[i].name, l);                       \
			sl += l;                                               \
		}                                                              \
		if (unterminated)                                              \
			sl--;                                                  \
		Elf##N##_Shdr sh[4] = {{0}};                                   \
		sh[1].sh_type = SHT_PROGBITS;                                  \
		sh[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;                    \
		sh[2].sh_type = dyn ? SHT_DYNSYM : SHT_SYMTAB;                 \
		sh[2].sh_offset = 0x1000;                                      \
		sh[2].sh_size = (ns + 1) * sizeof(Elf##N##_Sym);               \
		sh[2].sh_entsize = sizeof(Elf##N##_Sym);                       \
		sh[2].sh_link = 3;                                             \
		sh[3].sh_type = SHT_STRTAB;                                    \
		sh[3].sh_offset = 0x100;                                       \
		sh[3].sh_size = sl;                                            \
		memcpy(img, &eh, sizeof(eh));                                  \
		memcpy(img + 0x3000, sh, sizeof(sh));                          \
		return 0x3000 + sizeof(sh);                                    \
	}
DEFINE_IMAGE(64)
DEFINE_IMAGE(32)

/* The corner cases: address -> expected name ("" for none). */
static const bsym corner_syms[] = {
	/* aliases at 0x1000: the sized, global, fewest-underscores,
	 * shortest, smallest name wins: "alias" */
	{"__libc_alias", 0x1000, 0x40, F(STB_GLOBAL), 1},
	{"aliasx", 0x1000, 0x40, F(STB_GLOBAL), 1},
	{"alias_weak", 0x1000, 0x40, F(STB_WEAK), 1},
	{"a_local", 0x1000, 0x40, F(STB_LOCAL), 1},
	{"unsized_a", 0x1000, 0, F(STB_GLOBAL), 1},
	{"blias", 0x1000, 0x40, F(STB_GLOBAL), 1},
	{"alias", 0x1000, 0x40, F(STB_GLOBAL), 1},
	/* an unsized symbol covers up to the next one */
	{"open_end", 0x1100, 0, F(STB_GLOBAL), 1},
	/* nested: outer [0x1200, 0x1300) around inner [0x1240, 0x1250) */
	{"outer", 0x1200, 0x100, F(STB_GLOBAL), 1},
	{"inner", 0x1240, 0x10, F(STB_GLOBAL), 1},
	/* a sized symbol alone, then a gap with nothing around it */
	{"lonely", 0x1400, 0x10, F(STB_GLOBAL), 1},
	/* not functions, undefined, value 0: never chosen */
	{"object", 0x1500, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 1},
	{"undef", 0x1600, 0x10, F(STB_GLOBAL), SHN_UNDEF},
	{"zero", 0, 0x10, F(STB_GLOBAL), 1},
	/* an IFUNC is a function */
	{"ifunc", 0x1700, 0x10, ELF64_ST_INFO(STB_GLOBAL, STT_GNU_IFUNC), 1},
	/* the same name twice at one address, sizes differ: the first is
	 * nearest, the second around 0x1808 */
	{"twin", 0x1800, 0x8, F(STB_GLOBAL), 1},
	{"twin", 0x1800, 0x80, F(STB_GLOBAL), 1},
	/* a weak sized and a global unsized alias: sized first */
	{"w_sized", 0x1900, 0x10, F(STB_WEAK), 1},
	{"g_unsized", 0x1900, 0, F(STB_GLOBAL), 1},
	/* 15 underscores count as many as 16: the smaller name wins */
	{"_______________x", 0x1a00, 0x10, F(STB_GLOBAL), 1},
	{"________________", 0x1a00, 0x10, F(STB_GLOBAL), 1},
	/* unsized aliases: the smaller name, whichever comes first */
	{"zz_unsized", 0x1b00, 0, F(STB_GLOBAL), 1},
	{"aa_unsized", 0x1b00, 0, F(STB_GLOBAL), 1},
	/* the shorter name before the smaller one */
	{"alpha1", 0x1c00, 0x10, F(STB_GLOBAL), 1},
	{"zeta", 0x1c00, 0x10, F(STB_GLOBAL), 1},
	/* a third alias against two already ranked in full */
	{"__b", 0x1d00, 0x10, F(STB_GLOBAL), 1},
	{"__c", 0x1d00, 0x10, F(STB_GLOBAL), 1},
	{"__d", 0x1d00, 0x10, F(STB_GLOBAL), 1},
};
static const struct {
	uint64_t at;
	const char *want;
} corner_want[] = {
	{0x0fff, ""},        {0x1000, "alias"},  {0x103f, "alias"},
	{0x1040, ""},        {0x10ff, ""},       {0x1100, "open_end"},
	{0x11ff, "open_end"}, {0x1200, "outer"}, {0x1240, "inner"},
	{0x124f, "inner"},   {0x1250, "outer"},  {0x12ff, "outer"},
	{0x1300, ""},        {0x1400, "lonely"}, {0x1410, ""},
	{0x1500, ""},        {0x1600, ""},       {0x1700, "ifunc"},
	{0x1807, "twin"},    {0x1808, "twin"},   {0x1900, "w_sized"},
	{0x1a00, "________________"}, {0x1b00, "aa_unsized"},
	{0x1b10, "aa_unsized"}, {0x1c08, "zeta"}, {0x1d00, "__b"},
};

static void
check_corners(const uint8_t *img, size_t size, const char *what)
{
	heapprof_elf e;
	if (heapprof__elf_parse(&e, img, size, 0) != 0) {
		T_FAIL("%s: parse", what);
		return;
	}
	size_t n = sizeof(corner_want) / sizeof(*corner_want);
	uint64_t v[sizeof(corner_want) / sizeof(*corner_want)];
	const char *names[sizeof(corner_want) / sizeof(*corner_want)];
	for (size_t i = 0; i < n; i++)
		v[i] = corner_want[i].at;
	CHECK_EQ(heapprof__elf_lookup_many(&e, v, n, names), 0);
	for (size_t i = 0; i < n; i++) {
		const char *got = names[i] ? names[i] : "";
		if (strcmp(got, corner_want[i].want) != 0)
			T_FAIL("%s: 0x%llx: want \"%s\", got \"%s\"", what,
			       (unsigned long long)v[i], corner_want[i].want, got);
	}
	/* Each address alone (no neighbours to share the pass with). */
	for (size_t i = 0; i < n; i++) {
		const char *one = NULL;
		CHECK_EQ(heapprof__elf_lookup_many(&e, &v[i], 1, &one), 0);
		const char *got = one ? one : "";
		if (strcmp(got, corner_want[i].want) != 0)
			T_FAIL("%s: 0x%llx alone: want \"%s\", got \"%s\"", what,
			       (unsigned long long)v[i], corner_want[i].want, got);
	}
	/* And the reference agrees on every hand-built case. */
	ref r;
	CHECK_EQ(ref_load(&r, img, size), 0);
	CHECK_EQ(compare(what, &e, &r, v, n), 0);
	free(r.s);
	heapprof__elf_close(&e);
}

TEST(corner_cases_elf64_and_elf32)
{
	static uint8_t img[IMG];
	size_t ns = sizeof(corner_syms) / sizeof(*corner_syms);
	size_t size = image64(img, corner_syms, ns, 0, 0);
	check_corners(img, size, "elf64 .symtab");
	size = image64(img, corner_syms, ns, 1, 0);
	check_corners(img, size, "elf64 .dynsym");
	/* ELF32 takes the 32-bit loop: the same answers. */
	size = image32(img, corner_syms, ns, 0, 0);
	check_corners(img, size, "elf32 .symtab");
}

TEST(foreign_and_hostile)
{
	static uint8_t img[IMG];
	size_t ns = sizeof(corner_syms) / sizeof(*corner_syms);
	uint64_t v[2] = {0x1000, 0x1240};
	const char *names[2];
	heapprof_elf e;
	/* Big-endian: the reader takes host byte order only, so no names
	 * (and no crash), whichever class. */
	for (int c = 0; c < 2; c++) {
		size_t size = c ? image64(img, corner_syms, ns, 0, 0)
		                : image32(img, corner_syms, ns, 0, 0);
		img[EI_DATA] = ELFDATA2MSB;
		e = (heapprof_elf){.data = img, .size = size};
		names[0] = names[1] = "x";
		CHECK_EQ(heapprof__elf_lookup_many(&e, v, 2, names), 0);
		CHECK(names[0] == NULL && names[1] == NULL);
	}
	/* A string table without its final NUL: the last name has no end,
	 * so that symbol (the last, "________________") is never chosen;
	 * the others are. */
	ns -= 7; /* the table then ends with the 16 underscores */
	size_t size = image64(img, corner_syms, ns, 0, 1);
	REQUIRE_OK(heapprof__elf_parse(&e, img, size, 0));
	uint64_t u[2] = {0x1000, 0x1a00};
	CHECK_EQ(heapprof__elf_lookup_many(&e, u, 2, names), 0);
	CHECK_STR(names[0], "alias");
	CHECK_STR(names[1], "_______________x");
	heapprof__elf_close(&e);
	/* The last symbol's name unterminated: the one before is nearest to
	 * an address inside the last one, and does not reach it. */
	bsym last[2] = {{"t", 0x2000, 0x10, F(STB_GLOBAL), 1},
	                {"u", 0x2010, 0x10, F(STB_GLOBAL), 1}};
	size = image64(img, last, 2, 0, 1);
	REQUIRE_OK(heapprof__elf_parse(&e, img, size, 0));
	uint64_t w[2] = {0x2004, 0x2014};
	CHECK_EQ(heapprof__elf_lookup_many(&e, w, 2, names), 0);
	CHECK_STR(names[0], "t");
	CHECK(names[1] == NULL);
	heapprof__elf_close(&e);
	/* A .symtab with no function symbol: none counted, no names. */
	bsym obj[1] = {{"obj", 0x2000, 0x10,
	                ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 1}};
	size = image64(img, obj, 1, 0, 0);
	REQUIRE_OK(heapprof__elf_parse(&e, img, size, 0));
	CHECK_EQ(heapprof__elf_lookup_many(&e, w, 1, names), 0);
	CHECK(names[0] == NULL);
	heapprof__elf_close(&e);
}

/* ------------------------------------------------ symbol cache + debug */

/* Adds to an image64 image a PT_LOAD of the whole image at vaddr 0 and a
 * PT_NOTE with the GNU build id 0123456789abcdef. */
static void
add_load_and_id(uint8_t *img)
{
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	eh.e_phoff = 0x40;
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	memcpy(img, &eh, sizeof(eh));
	Elf64_Phdr ph[2] = {
		{.p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
		 .p_vaddr = 0, .p_filesz = IMG, .p_memsz = IMG},
		{.p_type = PT_NOTE, .p_offset = 0xc0, .p_filesz = 24,
		 .p_align = 4}};
	memcpy(img + 0x40, ph, sizeof(ph));
	static const uint8_t note[24] = {4, 0, 0, 0, 8, 0, 0, 0,
	                                 NT_GNU_BUILD_ID, 0, 0, 0,
	                                 'G', 'N', 'U', 0,
	                                 0x01, 0x23, 0x45, 0x67,
	                                 0x89, 0xab, 0xcd, 0xef};
	memcpy(img + 0xc0, note, sizeof(note));
}

static int
write_file(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(b, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* A file with only .dynsym and its debug file (by build id) with .symtab:
 * an address the debug file names takes its name, the others the file's
 * own (the symbol cache reads the file's table only for those). */
TEST(symcache_debug_file_then_own_table)
{
	static uint8_t img[IMG];
	char dir[] = "/tmp/heapprof_test_many_XXXXXX", path[256], dbg[256];
	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/main", dir);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/01", dir);
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	REQUIRE(mkdir(sub, 0700) == 0 && mkdir(dbg, 0700) == 0);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/01/23456789abcdef.debug", dir);
	const bsym own[] = {{"m_a", 0x1000, 0x40, F(STB_GLOBAL), 1},
	                    {"m_b", 0x1100, 0x40, F(STB_GLOBAL), 1},
	                    {"m_c", 0x1200, 0x40, F(STB_GLOBAL), 1}};
	const bsym deb[] = {{"d_a", 0x1000, 0x40, F(STB_GLOBAL), 1},
	                    {"d_inner", 0x1210, 0x10, F(STB_LOCAL), 1}};
	size_t size = image64(img, own, 3, 1, 0);
	add_load_and_id(img);
	REQUIRE(write_file(path, img, size) == 0);
	size = image64(img, deb, 2, 0, 0);
	add_load_and_id(img);
	REQUIRE(write_file(dbg, img, size) == 0);

	static const struct {
		uint64_t at;
		const char *want;
	} w[] = {{0x1000, "d_a"}, {0x1104, "m_b"}, {0x1204, "m_c"},
	         {0x1210, "d_inner"}, {0x1230, "m_c"}, {0x1300, ""}};
	size_t n = sizeof(w) / sizeof(*w);
	heapprof_mapping m = {0x10000, 0x10000 + IMG, 0, path,
	                      "0123456789abcdef"};
	for (int announce = 0; announce < 2; announce++) {
		heapprof_symcache *c = heapprof__symcache_new();
		REQUIRE(c != NULL);
		heapprof__symcache_set_debug_dir(c, dir);
		for (size_t i = 0; announce && i < n; i++)
			heapprof__symcache_want(c, &m, 0x10000 + w[i].at);
		for (size_t i = 0; i < n; i++) {
			const char *got =
				heapprof__symcache_lookup(c, &m, 0x10000 + w[i].at);
			if (strcmp(got ? got : "", w[i].want) != 0)
				T_FAIL("%s: 0x%llx: want \"%s\", got \"%s\"",
				       announce ? "one pass" : "full tables",
				       (unsigned long long)w[i].at, w[i].want,
				       got ? got : "");
		}
		heapprof__symcache_free(c);
	}
	unlink(dbg);
	unlink(path);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/01", dir);
	rmdir(dbg);
	rmdir(sub);
	rmdir(dir);
}

/* ------------------------------------------------------------ real files */

/* The files compared do not depend on time or load: every ELF file under
 * the two directories, walked in name order, up to MAX_FILES of them (the
 * machine this was written on has 1102). */
#define MAX_FILES 4000
static size_t nfiles, ndiff;

static void
walk(const char *dir, int depth)
{
	struct dirent **ents;
	int ne = scandir(dir, &ents, NULL, alphasort);
	if (ne < 0)
		return;
	char path[4096];
	for (int i = 0; i < ne; i++) {
		const struct dirent *de = ents[i];
		if (de->d_name[0] == '.' || nfiles >= MAX_FILES)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4) {
			walk(path, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_size < 64)
			continue;
		size_t dd = check_file(path, &nfiles);
		if (dd)
			printf("  %s: %zu addresses differ\n", path, dd);
		ndiff += dd;
	}
	for (int i = 0; i < ne; i++)
		free(ents[i]);
	free(ents);
}

TEST(real_files_match_the_reference)
{
	/* Every file reached must agree; which files are reached depends
	 * only on what is installed, never on how loaded the machine is. */
	walk("/usr/lib/gcc/x86_64-linux-gnu/12", 0);
	walk("/usr/lib/x86_64-linux-gnu", 0);
	printf("  %zu ELF files compared (%zu named addresses)%s\n", nfiles,
	       named, nfiles >= MAX_FILES ? ", the first ones in name order" : "");
	CHECK_EQ(ndiff, 0);
	CHECK(nfiles >= 10); /* libc, libz, cc1 ... at least */
	CHECK(named > 1000);
}

int
main(void)
{
	RUN(corner_cases_elf64_and_elf32);
	RUN(foreign_and_hostile);
	RUN(symcache_debug_file_then_own_table);
	RUN(real_files_match_the_reference);
	TEST_MAIN_END();
}
