/*
 * loaded_ids.h: the GNU build ids of the objects the dynamic loader mapped,
 * read from their notes in memory (loaded_ids.c), for a snapshot's
 * executable mappings.
 */
#ifndef HEAPPROF_LOADED_IDS_H
#define HEAPPROF_LOADED_IDS_H

#include <stddef.h>

#include "elffile.h"
#include "maps.h"

typedef struct hp_loaded_id {
	const heapprof_maps_entry *map; /* in: an executable mapping */
	char hex[2 * HEAPPROF_BUILD_ID_MAX + 1]; /* out: its id, or "" */
} hp_loaded_id;

/* For each v[i].map that is a file mapping of an object the dynamic
 * loader has loaded (the program, ld.so, its libraries, dlopen'd ones),
 * the first NT_GNU_BUILD_ID of the object's PT_NOTE segments, read in
 * memory where `all` (the whole of /proc/self/maps, sorted) shows them
 * readable and mapped from the same file at their file offset: the hex
 * heapprof__elf_build_id() gives for that file. v[i].hex is "" for the
 * rest (a file the program mapped itself, an object whose notes are not
 * so mapped): the caller reads those files. Takes the loader's lock
 * (dl_iterate_phdr): not in a signal handler, nor in a fork child (the
 * lock may be held by a thread that no longer exists). No allocation,
 * no system call.
 * @return : how many of v[] have an id. */
size_t heapprof__loaded_ids(const heapprof_maps *all, hp_loaded_id *v,
                            size_t n);

/* The same without the loader: each object's ELF header and program
 * headers are read where `all` shows its file's offset 0 mapped. Takes no
 * lock, so it may run anywhere, but nothing keeps another thread from
 * unmapping what it reads: only for a process with one thread. Also finds
 * ELF files the program mapped itself. */
size_t heapprof__loaded_ids_unlocked(const heapprof_maps *all,
                                     hp_loaded_id *v, size_t n);

#endif
