/*
 * elffile.h: a small bounds-checked ELF reader (32- and 64-bit, host byte order)
 * for symbolization: the GNU build id, the PT_LOAD segments (runtime address
 * -> ELF virtual address) and function symbols (.symtab, else .dynsym) as a
 * sorted array. A truncated or hostile file gives an error, never a crash.
 * Files are mapped read-only; names point into the mapping.
 *
 * The symbol cache (symcache.c) opens each mapped file once and implements
 * heapprof_symbolize_fn. No stdio, no globals; malloc is used.
 */
#ifndef HEAPPROF_ELFFILE_H
#define HEAPPROF_ELFFILE_H

#include <stddef.h>
#include <stdint.h>

#include "heapprof.h"

/* Longest build id kept (bytes); GNU ld writes 20 (sha1). */
#define HEAPPROF_BUILD_ID_MAX 64

typedef struct heapprof_elf_load {
	uint64_t offset, vaddr, filesz, memsz;
	uint32_t flags; /* PF_X | PF_W | PF_R */
} heapprof_elf_load;

typedef struct heapprof_elf_sym {
	uint64_t addr, size;
	const char *name; /* NUL-terminated, inside the file's string table */
} heapprof_elf_sym;

typedef struct heapprof_elf {
	const uint8_t *data; /* the whole file */
	size_t size;
	int mapped;      /* data is our mmap (unmapped by close) */
	int is64;
	unsigned type;   /* ET_EXEC, ET_DYN, ... */
	heapprof_elf_load *loads; /* PT_LOAD in file order */
	size_t nloads;
	heapprof_elf_sym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	int sym_source;  /* 0: none, 1: .symtab, 2: .dynsym */
	int has_symbols; /* sections present, symbols read or not: 1 .symtab,
	                  * 2 .dynsym (bits) */
	char build_id[2 * HEAPPROF_BUILD_ID_MAX + 1]; /* lowercase hex or "" */
} heapprof_elf;

#define HEAPPROF_ELF_SYMBOLS 1u /* also read the function symbols */

/*! heapprof__elf_parse() :
 *  Parses the ELF image data[0..size) (borrowed: it must outlive `e`).
 *  @return : 0, -ENOEXEC (not ELF, wrong byte order, truncated or
 *  inconsistent headers) or -ENOMEM. Missing symbols or build id are not
 *  errors. On error `e` holds nothing. */
int heapprof__elf_parse(heapprof_elf *e, const void *data, size_t size,
                        unsigned flags);

/*! heapprof__elf_open() :
 *  Maps the regular file `path` read-only and parses it.
 *  @return : 0, -errno from open/fstat/mmap, -ENOEXEC or -ENOMEM. */
int heapprof__elf_open(heapprof_elf *e, const char *path, unsigned flags);

/* Releases `e` (unmaps the file if elf_open mapped it). Idempotent. */
void heapprof__elf_close(heapprof_elf *e);

/*! heapprof__elf_file_to_vaddr() :
 *  The ELF virtual address of file offset `off`, through the PT_LOAD whose
 *  file bytes contain it. @return : 0, or -ENOENT when no segment does. */
int heapprof__elf_file_to_vaddr(const heapprof_elf *e, uint64_t off,
                                uint64_t *vaddr);

/*! heapprof__elf_runtime_to_vaddr() :
 *  Runtime address `addr` inside a mapping that starts at `start` with file
 *  offset `offset`: file_off = addr - start + offset, then as above. */
int heapprof__elf_runtime_to_vaddr(const heapprof_elf *e, uint64_t start,
                                   uint64_t offset, uint64_t addr,
                                   uint64_t *vaddr);

/*! heapprof__elf_lookup() :
 *  The function containing `vaddr`: the symbol with addr <= vaddr <
 *  addr + size, or the nearest preceding one if it has size 0.
 *  @return : its name, or NULL. *sym_addr (if not NULL) gets its address. */
const char *heapprof__elf_lookup(const heapprof_elf *e, uint64_t vaddr,
                                 uint64_t *sym_addr);

/*! heapprof__elf_lookup_many() :
 *  The functions of `n` sorted, distinct ELF virtual addresses in one pass
 *  over the function symbols (.symtab, else .dynsym), without reading them
 *  into a sorted table: `e` may be parsed without HEAPPROF_ELF_SYMBOLS.
 *  names[i] is what heapprof__elf_lookup would give for vaddrs[i] (NULL:
 *  none), except that an enclosing sized symbol is found however many
 *  symbols lie between. @return : 0 or -ENOMEM (2n scratch entries). */
int heapprof__elf_lookup_many(const heapprof_elf *e, const uint64_t *vaddrs,
                              size_t n, const char **names);

/*! heapprof__elf_notes_build_id() :
 *  Looks for the first NT_GNU_BUILD_ID note (name "GNU") in the notes
 *  notes[0..len) (a PT_NOTE segment or SHT_NOTE section, `align` its
 *  alignment: 8, else 4), bounds-checked against len. The file reader and
 *  the capture's in-memory reader (src/collect/loaded_ids.c) share it, so
 *  both give the same hex for the same bytes.
 *  @return : 1 and the lowercase hex in `hex`, or 0 (`hex` untouched). */
int heapprof__elf_notes_build_id(const void *notes, uint64_t len,
                                 uint64_t align,
                                 char hex[2 * HEAPPROF_BUILD_ID_MAX + 1]);

/*! heapprof__elf_build_id() :
 *  Writes the NT_GNU_BUILD_ID of the file at `path` as lowercase hex.
 *  @return : the hex length, -ENODATA (no build id), -ERANGE (`cap` too
 *  small for hex + NUL), -ENOEXEC, or -errno. */
int heapprof__elf_build_id(const char *path, char *hex, size_t cap);

/* ---- symbol cache (symcache.c): each file opened once, kept mapped. Not
 * thread-safe: one cache per thread, or the caller serializes. */
typedef struct heapprof_symcache heapprof_symcache;

/* @return : a new empty cache, or NULL (no memory). */
heapprof_symcache *heapprof__symcache_new(void);
void heapprof__symcache_free(heapprof_symcache *c);

/*! heapprof__symcache_lookup() :
 *  The name of the function at runtime address `addr` in mapping `m`
 *  (m->file opened and parsed on first use; a missing file, [vdso] and
 *  the like, or a build id that differs from m->build_id give NULL).
 *  Names stay valid until the cache is freed. */
const char *heapprof__symcache_lookup(heapprof_symcache *c,
                                      const heapprof_mapping *m,
                                      uint64_t addr);

/* Announces that runtime address `addr` of mapping `m` will be looked up:
 * the announced addresses of a file are then found in one pass over its
 * symbols, without sorting them (a dump announces its PCs first). */
void heapprof__symcache_want(heapprof_symcache *c, const heapprof_mapping *m,
                             uint64_t addr);

/* The same as a heapprof_symbolize_fn (arg: the cache). */
const char *heapprof__symcache_symbolize(void *arg, uint64_t addr,
                                         const heapprof_mapping *m);

/* Directory of separate debug files looked up by build id when a file has
 * no .symtab (default "/usr/lib/debug"; NULL or "" turns it off). */
void heapprof__symcache_set_debug_dir(heapprof_symcache *c, const char *dir);

#endif
