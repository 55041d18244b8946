/*
 * elffile.c: the bounds-checked ELF reader: headers, PT_LOAD segments, the GNU
 * build id note and the sorted function-symbol table (the one-pass lookup
 * for a known set of addresses is elf_many.c's). Every offset, count
 * and string read from the file is checked against the file size; fields
 * are copied out with memcpy, so unaligned hostile offsets are fine.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_internal.h"
#include "elffile.h"

typedef struct phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
} phdr;

/* True if [off, off+len) lies inside the file. */
static int
in_file(const heapprof_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

/* True if a table of n entries of entsize bytes at off lies in the file. */
static int
table_in_file(const heapprof_elf *e, uint64_t off, uint64_t n,
              uint64_t entsize)
{
	if (!in_file(e, off, 0))
		return 0;
	return n == 0 || (entsize && n <= (e->size - off) / entsize);
}

static void
read_phdr(const heapprof_elf *e, const ehdr *h, uint64_t i, phdr *p)
{
	const uint8_t *at = e->data + h->phoff + i * h->phentsize;
	if (e->is64) {
		Elf64_Phdr r;
		memcpy(&r, at, sizeof(r));
		*p = (phdr){r.p_type, r.p_flags, r.p_offset, r.p_vaddr,
		            r.p_filesz, r.p_memsz, r.p_align};
	} else {
		Elf32_Phdr r;
		memcpy(&r, at, sizeof(r));
		*p = (phdr){r.p_type, r.p_flags, r.p_offset, r.p_vaddr,
		            r.p_filesz, r.p_memsz, r.p_align};
	}
}

void
read_shdr(const heapprof_elf *e, const ehdr *h, uint64_t i, shdr *s)
{
	const uint8_t *at = e->data + h->shoff + i * h->shentsize;
	if (e->is64) {
		Elf64_Shdr r;
		memcpy(&r, at, sizeof(r));
		*s = (shdr){r.sh_type, r.sh_link, r.sh_offset, r.sh_size,
		            r.sh_entsize};
	} else {
		Elf32_Shdr r;
		memcpy(&r, at, sizeof(r));
		*s = (shdr){r.sh_type, r.sh_link, r.sh_offset, r.sh_size,
		            r.sh_entsize};
	}
}

static void
read_sym(const heapprof_elf *e, const uint8_t *at, sym *s)
{
	if (e->is64) {
		Elf64_Sym r;
		memcpy(&r, at, sizeof(r));
		*s = (sym){r.st_name, ELF64_ST_TYPE(r.st_info),
		           ELF64_ST_BIND(r.st_info), r.st_shndx, r.st_value,
		           r.st_size};
	} else {
		Elf32_Sym r;
		memcpy(&r, at, sizeof(r));
		*s = (sym){r.st_name, ELF32_ST_TYPE(r.st_info),
		           ELF32_ST_BIND(r.st_info), r.st_shndx, r.st_value,
		           r.st_size};
	}
}

/* Validates the identification and the header tables' placement. */
int
read_ehdr(heapprof_elf *e, ehdr *h)
{
	if (e->size < EI_NIDENT || memcmp(e->data, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	unsigned cls = e->data[EI_CLASS], enc = e->data[EI_DATA];
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (enc != ELFDATA2LSB)
		return -ENOEXEC;
#else
	if (enc != ELFDATA2MSB)
		return -ENOEXEC;
#endif
	size_t phsz, shsz;
	if (cls == ELFCLASS64) {
		Elf64_Ehdr r;
		if (e->size < sizeof(r))
			return -ENOEXEC;
		memcpy(&r, e->data, sizeof(r));
		e->is64 = 1;
		*h = (ehdr){r.e_type, r.e_phoff, r.e_shoff, r.e_phentsize,
		            r.e_phnum, r.e_shentsize, r.e_shnum};
		phsz = sizeof(Elf64_Phdr);
		shsz = sizeof(Elf64_Shdr);
	} else if (cls == ELFCLASS32) {
		Elf32_Ehdr r;
		if (e->size < sizeof(r))
			return -ENOEXEC;
		memcpy(&r, e->data, sizeof(r));
		e->is64 = 0;
		*h = (ehdr){r.e_type, r.e_phoff, r.e_shoff, r.e_phentsize,
		            r.e_phnum, r.e_shentsize, r.e_shnum};
		phsz = sizeof(Elf32_Phdr);
		shsz = sizeof(Elf32_Shdr);
	} else {
		return -ENOEXEC;
	}
	e->type = h->type;
	/* Section headers: optional (stripped files may drop them). Bad ones
	 * are ignored rather than fatal, as long as we never read them. */
	if (h->shoff == 0 || h->shentsize < shsz) {
		h->shnum = 0;
	} else {
		if (h->shnum == 0 && in_file(e, h->shoff, shsz)) {
			shdr s0; /* extended numbering: count in sh_size */
			read_shdr(e, h, 0, &s0);
			h->shnum = s0.size;
		}
		if (!table_in_file(e, h->shoff, h->shnum, h->shentsize))
			return -ENOEXEC;
	}
	if (h->phnum == PN_XNUM && h->shnum > 0) {
		uint32_t info; /* extended numbering: count in sh[0].sh_info */
		size_t at = (size_t)h->shoff + (e->is64 ? 44 : 28);
		memcpy(&info, e->data + at, sizeof(info));
		h->phnum = info;
	}
	if (h->phnum == 0 || h->phoff == 0) {
		h->phnum = 0;
	} else if (h->phentsize < phsz ||
	           !table_in_file(e, h->phoff, h->phnum, h->phentsize)) {
		return -ENOEXEC;
	}
	return 0;
}

static int
read_loads(heapprof_elf *e, const ehdr *h)
{
	size_t n = 0;
	for (uint64_t i = 0; i < h->phnum; i++) {
		phdr p;
		read_phdr(e, h, i, &p);
		n += p.type == PT_LOAD;
	}
	if (!n)
		return 0;
	e->loads = malloc(n * sizeof(*e->loads));
	if (!e->loads)
		return -ENOMEM;
	for (uint64_t i = 0; i < h->phnum; i++) {
		phdr p;
		read_phdr(e, h, i, &p);
		if (p.type != PT_LOAD)
			continue;
		e->loads[e->nloads++] = (heapprof_elf_load){
			p.offset, p.vaddr, p.filesz, p.memsz, p.flags};
	}
	return 0;
}

static uint64_t
align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int
heapprof__elf_notes_build_id(const void *notes, uint64_t len, uint64_t align,
                             char hex[2 * HEAPPROF_BUILD_ID_MAX + 1])
{
	align = align == 8 ? 8 : 4;
	const uint8_t *p = notes;
	uint64_t pos = 0;
	while (len - pos >= 12) {
		uint32_t nh[3]; /* namesz, descsz, type */
		memcpy(nh, p + pos, sizeof(nh));
		pos += 12;
		uint64_t name_end = pos + align_up(nh[0], align);
		if (name_end > len)
			return 0;
		uint64_t desc = name_end, desc_end = desc + align_up(nh[1], align);
		if (desc + nh[1] > len)
			return 0;
		if (nh[2] == NT_GNU_BUILD_ID && nh[0] == 4 &&
		    memcmp(p + pos, "GNU", 4) == 0 && nh[1] > 0 &&
		    nh[1] <= HEAPPROF_BUILD_ID_MAX) {
			static const char hx[] = "0123456789abcdef";
			for (uint32_t i = 0; i < nh[1]; i++) {
				uint8_t b = p[desc + i];
				hex[2 * i] = hx[b >> 4];
				hex[2 * i + 1] = hx[b & 15];
			}
			hex[2 * nh[1]] = '\0';
			return 1;
		}
		pos = desc_end;
		if (pos > len)
			return 0;
	}
	return 0;
}

/* Looks for NT_GNU_BUILD_ID in the notes at [off, off+len); 1 if found. */
static int
scan_notes(heapprof_elf *e, uint64_t off, uint64_t len, uint64_t align)
{
	if (!in_file(e, off, len))
		return 0;
	return heapprof__elf_notes_build_id(e->data + off, len, align,
	                                    e->build_id);
}

static void
read_build_id(heapprof_elf *e, const ehdr *h)
{
	for (uint64_t i = 0; i < h->phnum; i++) {
		phdr p;
		read_phdr(e, h, i, &p);
		if (p.type == PT_NOTE &&
		    scan_notes(e, p.offset, p.filesz, p.align))
			return;
	}
	for (uint64_t i = 0; i < h->shnum; i++) {
		shdr s;
		read_shdr(e, h, i, &s);
		if (s.type == SHT_NOTE && scan_notes(e, s.offset, s.size, 4))
			return;
	}
}

/* Ranks aliases at one address: lower is better. Prefers sized symbols,
 * then global over weak over local, then fewer leading underscores
 * ("malloc" over "__libc_malloc"), then the shorter name. */
typedef struct cand {
	heapprof_elf_sym s;
	unsigned rank;
} cand;

static int
cmp_cand(const void *pa, const void *pb)
{
	const cand *a = pa, *b = pb;
	if (a->s.addr != b->s.addr)
		return a->s.addr < b->s.addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return strcmp(a->s.name, b->s.name);
}

unsigned
rank_of(const sym *s, const char *name)
{
	unsigned bind = s->bind == STB_GLOBAL ? 0 : s->bind == STB_WEAK ? 1 : 2;
	unsigned us = 0;
	while (name[us] == '_' && us < 15)
		us++;
	size_t nl = strlen(name);
	return (s->size == 0) << 28 | bind << 24 | us << 20 |
	       (unsigned)(nl < 0xfffff ? nl : 0xfffff);
}

/* The entry size and string table of the SYMTAB or DYNSYM section `st`,
 * checked to lie in the file: 0, or -ENOEXEC. */
int
symtab_open(const heapprof_elf *e, const ehdr *h, const shdr *st,
            uint64_t *entsize, const char **strs, uint64_t *strsize)
{
	size_t esz = e->is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
	*entsize = st->entsize ? st->entsize : esz;
	if (*entsize < esz || !in_file(e, st->offset, st->size) ||
	    st->link == 0 || st->link >= h->shnum)
		return -ENOEXEC;
	shdr str;
	read_shdr(e, h, st->link, &str);
	if (str.type != SHT_STRTAB || !in_file(e, str.offset, str.size))
		return -ENOEXEC;
	*strs = (const char *)e->data + str.offset;
	*strsize = str.size;
	return 0;
}

/* Loads the function symbols of the SYMTAB or DYNSYM section `st`. */
static int
read_symtab(heapprof_elf *e, const ehdr *h, const shdr *st)
{
	uint64_t entsize, strsize;
	const char *strs;
	if (symtab_open(e, h, st, &entsize, &strs, &strsize) != 0)
		return -ENOEXEC;
	uint64_t n = st->size / entsize, nf = 0;
	cand *c = NULL;
	/* Two passes: count the function symbols, then collect them. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t i = 0; i < n; i++) {
			sym s;
			read_sym(e, e->data + st->offset + i * entsize, &s);
			if ((s.type != STT_FUNC && s.type != STT_GNU_IFUNC) ||
			    s.shndx == SHN_UNDEF || s.value == 0 ||
			    s.name == 0 || s.name >= strsize)
				continue;
			const char *nm = strs + s.name;
			if (!memchr(nm, '\0', strsize - s.name))
				continue;
			if (pass == 1)
				c[nf] = (cand){{s.value, s.size, nm},
				               rank_of(&s, nm)};
			nf++;
		}
		if (pass == 0) {
			if (!nf)
				return 0;
			if (nf > SIZE_MAX / sizeof(cand))
				return -ENOMEM;
			c = malloc((size_t)nf * sizeof(cand));
			if (!c)
				return -ENOMEM;
			nf = 0;
		}
	}
	qsort(c, (size_t)nf, sizeof(cand), cmp_cand);
	e->syms = malloc((size_t)nf * sizeof(heapprof_elf_sym));
	if (!e->syms) {
		free(c);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < nf; i++)
		if (i == 0 || c[i].s.addr != c[i - 1].s.addr)
			e->syms[e->nsyms++] = c[i].s;
	free(c);
	return 0;
}

static int
read_symbols(heapprof_elf *e, const ehdr *h)
{
	static const uint32_t kinds[2] = {SHT_SYMTAB, SHT_DYNSYM};
	for (int k = 0; k < 2; k++) {
		for (uint64_t i = 0; i < h->shnum; i++) {
			shdr s;
			read_shdr(e, h, i, &s);
			if (s.type != kinds[k] || s.size == 0)
				continue;
			int rc = read_symtab(e, h, &s);
			if (rc == -ENOMEM)
				return rc;
			if (rc == 0 && e->nsyms) {
				e->sym_source = k + 1;
				return 0;
			}
			free(e->syms);
			e->syms = NULL;
			e->nsyms = 0;
		}
	}
	return 0;
}

void
heapprof__elf_close(heapprof_elf *e)
{
	if (e->mapped && e->data)
		munmap((void *)e->data, e->size);
	free(e->loads);
	free(e->syms);
	memset(e, 0, sizeof(*e));
}

int
heapprof__elf_parse(heapprof_elf *e, const void *data, size_t size,
                    unsigned flags)
{
	memset(e, 0, sizeof(*e));
	e->data = data;
	e->size = size;
	ehdr h;
	int rc = read_ehdr(e, &h);
	if (!rc)
		rc = read_loads(e, &h);
	if (!rc)
		read_build_id(e, &h);
	for (uint64_t i = 0; !rc && i < h.shnum; i++) {
		shdr sh;
		read_shdr(e, &h, i, &sh);
		if (sh.size && (sh.type == SHT_SYMTAB || sh.type == SHT_DYNSYM))
			e->has_symbols |= sh.type == SHT_SYMTAB ? 1 : 2;
	}
	if (!rc && (flags & HEAPPROF_ELF_SYMBOLS))
		rc = read_symbols(e, &h);
	if (rc)
		heapprof__elf_close(e);
	return rc;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels say EINVAL */
#endif

/* The pages every open reads, the ELF header's and the section header
 * table's, mapped with one system call each rather than a page fault
 * each (15-40 us on this VM; an exit dump opens 3-5 files). Best effort:
 * the checks are read_ehdr's, later; errors leave the reads to fault. */
static void
headers_present(const uint8_t *p, size_t size)
{
	(void)madvise((void *)p, size < 4096 ? size : 4096, MADV_POPULATE_READ);
	/* Nothing is checked yet: only an ELF file's table, at its own
	 * entry size (at most 65,535 x 64 bytes), not what a file that is
	 * not one says (a whole file made present, then -ENOEXEC). */
	if (memcmp(p, ELFMAG, SELFMAG) != 0)
		return;
	uint64_t off = 0, n = 0;
	if (size >= sizeof(Elf64_Ehdr) && p[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr r;
		memcpy(&r, p, sizeof(r));
		off = r.e_shoff;
		if (r.e_shentsize == sizeof(Elf64_Shdr))
			n = (uint64_t)r.e_shnum * r.e_shentsize;
	} else if (size >= sizeof(Elf32_Ehdr) && p[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr r;
		memcpy(&r, p, sizeof(r));
		off = r.e_shoff;
		if (r.e_shentsize == sizeof(Elf32_Shdr))
			n = (uint64_t)r.e_shnum * r.e_shentsize;
	}
	if (off < 4096 || off >= size || n == 0)
		return;
	uint64_t end = n > size - off ? size : off + n;
	off &= ~(uint64_t)4095;
	(void)madvise((void *)(p + off), (size_t)(end - off), MADV_POPULATE_READ);
}

int
heapprof__elf_open(heapprof_elf *e, const char *path, unsigned flags)
{
	memset(e, 0, sizeof(*e));
	/* O_NONBLOCK: a FIFO at `path` must not hang us; fstat rejects it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < EI_NIDENT ||
	    (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return -ENOEXEC;
	}
	size_t size = (size_t)st.st_size;
	void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	int err = -errno;
	close(fd);
	if (p == MAP_FAILED)
		return err;
	headers_present(p, size);
	int rc = heapprof__elf_parse(e, p, size, flags);
	if (rc) {
		munmap(p, size);
		return rc;
	}
	e->mapped = 1;
	return 0;
}

int
heapprof__elf_file_to_vaddr(const heapprof_elf *e, uint64_t off,
                            uint64_t *vaddr)
{
	const heapprof_elf_load *best = NULL;
	for (size_t i = 0; i < e->nloads; i++) {
		const heapprof_elf_load *l = &e->loads[i];
		if (off < l->offset || off - l->offset >= l->filesz)
			continue;
		if (!best || ((l->flags & PF_X) && !(best->flags & PF_X)))
			best = l;
	}
	if (!best)
		return -ENOENT;
	*vaddr = off - best->offset + best->vaddr;
	return 0;
}

int
heapprof__elf_runtime_to_vaddr(const heapprof_elf *e, uint64_t start,
                               uint64_t offset, uint64_t addr,
                               uint64_t *vaddr)
{
	if (addr < start)
		return -ENOENT;
	return heapprof__elf_file_to_vaddr(e, addr - start + offset, vaddr);
}

const char *
heapprof__elf_lookup(const heapprof_elf *e, uint64_t vaddr, uint64_t *sym_addr)
{
	size_t lo = 0, hi = e->nsyms; /* first symbol with addr > vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const heapprof_elf_sym *s = &e->syms[lo - 1];
	if (s->size == 0 || vaddr - s->addr < s->size) {
		if (sym_addr)
			*sym_addr = s->addr;
		return s->name;
	}
	/* A few earlier symbols may still enclose vaddr (nested symbols). */
	for (size_t k = 1; k < 8 && k < lo; k++) {
		s = &e->syms[lo - 1 - k];
		if (s->size && vaddr - s->addr < s->size) {
			if (sym_addr)
				*sym_addr = s->addr;
			return s->name;
		}
	}
	return NULL;
}

int
heapprof__elf_build_id(const char *path, char *hex, size_t cap)
{
	heapprof_elf e;
	int rc = heapprof__elf_open(&e, path, 0);
	if (rc)
		return rc;
	size_t n = strlen(e.build_id);
	if (n == 0)
		rc = -ENODATA;
	else if (n >= cap)
		rc = -ERANGE;
	else {
		memcpy(hex, e.build_id, n + 1);
		rc = (int)n;
	}
	heapprof__elf_close(&e);
	return rc;
}
