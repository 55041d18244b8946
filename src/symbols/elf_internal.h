/*
 * elf_internal.h: what elffile.c's reader shares with elf_many.c (the
 * one-pass lookup): class-independent copies of the ELF headers, the
 * header and section readers, the symbol-table opener and the alias rank.
 * Not for use outside src/symbols/elf*.c.
 */
#ifndef HEAPPROF_ELF_INTERNAL_H
#define HEAPPROF_ELF_INTERNAL_H

#include <stdint.h>

#include "elffile.h"

typedef struct ehdr {
	unsigned type;
	uint64_t phoff, shoff;
	uint64_t phentsize, phnum, shentsize, shnum;
} ehdr;

typedef struct shdr {
	uint32_t type, link;
	uint64_t offset, size, entsize;
} shdr;

typedef struct sym {
	uint32_t name;
	unsigned type, bind, shndx;
	uint64_t value, size;
} sym;

#define read_ehdr heapprof__elf_read_ehdr
#define read_shdr heapprof__elf_read_shdr
#define symtab_open heapprof__elf_symtab_open
#define rank_of heapprof__elf_rank_of

/* Validates the identification and the header tables' placement: 0 or
 * -ENOEXEC. Sets e->is64 and e->type. */
int read_ehdr(heapprof_elf *e, ehdr *h);

/* Section header i (i < h->shnum, checked by read_ehdr). */
void read_shdr(const heapprof_elf *e, const ehdr *h, uint64_t i, shdr *s);

/* The entry size and string table of the SYMTAB or DYNSYM section `st`,
 * checked to lie in the file: 0, or -ENOEXEC. */
int symtab_open(const heapprof_elf *e, const ehdr *h, const shdr *st,
                uint64_t *entsize, const char **strs, uint64_t *strsize);

/* Ranks aliases at one address, lower is better: sized, then global over
 * weak over local, fewer leading underscores (15 at most), the shorter
 * name (bits 28, 24-25, 20-23, 0-19). */
unsigned rank_of(const sym *s, const char *name);

#endif
