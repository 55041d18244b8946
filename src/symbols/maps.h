/*
 * maps.h: the Linux /proc/PID/maps text as a sorted list of mappings.
 *
 * The parser takes a buffer (no file I/O); heapprof__maps_read_self() reads
 * /proc/self/maps with read(2) and parses it. No stdio, no global state, no
 * locks: safe on any thread. Memory comes from malloc (two blocks per list);
 * the capture side calls these with its re-entrancy guard set.
 */
#ifndef HEAPPROF_MAPS_H
#define HEAPPROF_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* perms bits */
#define HEAPPROF_MAP_R 1u
#define HEAPPROF_MAP_W 2u
#define HEAPPROF_MAP_X 4u
#define HEAPPROF_MAP_P 8u /* private (copy on write); shared otherwise */

typedef struct heapprof_maps_entry {
	uint64_t start, limit; /* [start, limit) */
	uint64_t offset;       /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	unsigned perms;        /* HEAPPROF_MAP_* */
	int deleted;           /* the path ended in " (deleted)" (trimmed) */
	const char *path;      /* "" when anonymous; "[heap]", "[vdso]", ... */
} heapprof_maps_entry;

typedef struct heapprof_maps {
	heapprof_maps_entry *v; /* sorted by start */
	size_t n;
	char *strs; /* storage of every path */
} heapprof_maps;

/*! heapprof__maps_parse() :
 *  Parses maps text `buf[0..len)` (lines "start-limit perms offset
 *  maj:min inode [path]"; the last line may lack its newline) into `out`,
 *  sorted by start. Blank lines are skipped.
 *  @return : 0, -ENOMEM, or HEAPPROF_EFORMAT on a malformed line (`out`
 *  is then empty). */
int heapprof__maps_parse(const char *buf, size_t len, heapprof_maps *out);

/*! heapprof__maps_read_self() :
 *  Reads /proc/self/maps (open/read/close, no stdio) and parses it.
 *  @return : 0 or a negative error code. */
int heapprof__maps_read_self(heapprof_maps *out);

/*! heapprof__maps_read_fd() : the same from an open file descriptor. */
int heapprof__maps_read_fd(int fd, heapprof_maps *out);

/*! heapprof__maps_keep_exec() :
 *  Drops every entry without HEAPPROF_MAP_X (what Go keeps for heap
 *  profiles). @return : the new count. */
size_t heapprof__maps_keep_exec(heapprof_maps *m);

/*! heapprof__maps_find() :
 *  @return : the entry with start <= addr < limit, or NULL. O(log n). */
const heapprof_maps_entry *heapprof__maps_find(const heapprof_maps *m,
                                               uint64_t addr);

/* Releases the list; `m` is then empty (freeing twice is harmless). */
void heapprof__maps_free(heapprof_maps *m);

#endif
