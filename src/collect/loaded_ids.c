/*
 * loaded_ids.c: a snapshot's build ids of loaded objects, from memory
 * (issue 15). Opening every mapped file to read its notes cost each dump
 * ~5 system calls and 2 page faults per file (open, fstat, mmap, the ELF
 * header and the section headers at the file's end, munmap, close): a
 * quarter of a cc1 exit dump's faults. The loader has already mapped each
 * object's PT_NOTE segments, normally on its first page, which it touched.
 *
 * dl_iterate_phdr gives each object's load bias and program headers. An
 * executable mapping belongs to an object when it starts inside one of the
 * object's PT_LOAD segments at the file offset that segment maps there
 * (so ld.so's, the main program's and symlinked paths need no name
 * match, and the vDSO, which has no file, never matches). The object's
 * PT_NOTE segments are then scanned in order with the file reader's own
 * note parser (heapprof__elf_notes_build_id), so the hex is the one
 * heapprof__elf_build_id() gives for the file. A note segment is read only
 * where /proc/self/maps (read just before) shows it readable, mapped from
 * the same file (device and inode) at the segment's file offset; if one is
 * not, the object is left to the file reader rather than risk another
 * answer than the file's.
 *
 * The loader's lock, taken by dl_iterate_phdr, is what keeps another
 * thread's dlclose from unmapping an object while its notes are read. But
 * it is a recursive mutex that glibc (2.36) does not reset in a fork
 * child (a thread that held it at the fork never releases it there:
 * rel_buildids.sh hung so), and a signal handler may interrupt its own
 * thread in the middle of taking or releasing it. So a process with one
 * thread, where nothing can unmap an object meanwhile, uses
 * heapprof__loaded_ids_unlocked: the same walk from each file's first
 * mapping (its ELF header) as /proc/self/maps shows it, no loader state,
 * no lock. With more threads the caller (snapshot.c) takes the lock, but
 * not in a fork child nor in the profiler's own signal handlers and
 * _exit: the files are read there, as before. The callback allocates
 * nothing and takes no lock.
 */
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "loaded_ids.h"

struct walk {
	const heapprof_maps *all;
	hp_loaded_id *v;
	size_t n, found;
	uint64_t page;
};

/* Whether mapping e starts inside a PT_LOAD of the object at the file
 * offset that segment puts there. */
static int
belongs(const struct dl_phdr_info *info, const heapprof_maps_entry *e,
        uint64_t page)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		uint64_t at = (uint64_t)info->dlpi_addr + ph->p_vaddr;
		uint64_t lo = at & ~(page - 1);
		if (e->start < lo || e->start - lo >= ph->p_memsz + (at - lo))
			continue;
		return e->offset == (ph->p_offset & ~(page - 1)) + (e->start - lo);
	}
	return 0;
}

/* Whether the note segment ph of the object is readable in memory and
 * holds the file's bytes: one mapping of the same file as `exec` covers
 * it, readable and not writable, from the segment's file offset. */
static int
note_mapped(const struct walk *w, const struct dl_phdr_info *info,
            const ElfW(Phdr) *ph, const heapprof_maps_entry *exec)
{
	uint64_t at = (uint64_t)info->dlpi_addr + ph->p_vaddr;
	const heapprof_maps_entry *e = heapprof__maps_find(w->all, at);
	return e && (e->perms & HEAPPROF_MAP_R) &&
	       !(e->perms & HEAPPROF_MAP_W) && e->path[0] == '/' &&
	       e->inode == exec->inode && e->dev_major == exec->dev_major &&
	       e->dev_minor == exec->dev_minor &&
	       ph->p_filesz <= e->limit - at &&
	       e->offset + (at - e->start) == ph->p_offset;
}

/* The object's build id, as the file reader's PT_NOTE pass finds it: the
 * first in its note segments, in order. 0 when there is none, or when a
 * segment before it cannot be read here. */
static int
object_id(const struct walk *w, const struct dl_phdr_info *info,
          const heapprof_maps_entry *exec, char *hex)
{
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE || ph->p_filesz == 0)
			continue;
		if (!note_mapped(w, info, ph, exec))
			return 0;
		const void *p = (const void *)(info->dlpi_addr + ph->p_vaddr);
		if (heapprof__elf_notes_build_id(p, ph->p_filesz, ph->p_align,
		                                 hex))
			return 1;
	}
	return 0;
}

static int
on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	(void)size;
	hp_loaded_id *first = NULL; /* this object's first mapping */
	for (size_t i = 0; i < w->n; i++) {
		hp_loaded_id *x = &w->v[i];
		if (x->hex[0] || x->map->path[0] != '/' ||
		    !belongs(info, x->map, w->page))
			continue;
		if (!first) {
			if (!object_id(w, info, x->map, x->hex))
				return 0; /* left to the file reader */
			first = x;
		} else if (x->map->inode == first->map->inode &&
		           x->map->dev_major == first->map->dev_major &&
		           x->map->dev_minor == first->map->dev_minor) {
			memcpy(x->hex, first->hex, sizeof(x->hex));
		} else {
			continue; /* not the same file: left to the file reader */
		}
		w->found++;
	}
	return w->found == w->n; /* all found: stop */
}

/* The mapping of offset 0 of e's file (device and inode) nearest below
 * e, readable and not writable, where an ELF header is: the object's
 * first page, mapped by the loader. */
static const heapprof_maps_entry *
header_of(const heapprof_maps *all, const heapprof_maps_entry *e)
{
	const heapprof_maps_entry *h = NULL;
	for (size_t i = 0; i < all->n && all->v[i].start <= e->start; i++) {
		const heapprof_maps_entry *c = &all->v[i];
		if (c->offset == 0 && c->inode == e->inode &&
		    c->dev_major == e->dev_major && c->dev_minor == e->dev_minor &&
		    (c->perms & HEAPPROF_MAP_R) && !(c->perms & HEAPPROF_MAP_W))
			h = c;
	}
	return h;
}

/* The object whose ELF header is at h->start, as dl_iterate_phdr would
 * describe it: its program headers (inside h) and its load bias (h maps
 * the PT_LOAD of file offset 0). 0 if h holds no such header. */
static int
object_at(const heapprof_maps_entry *h, struct dl_phdr_info *info,
          uint64_t page)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(uintptr_t)h->start;
	uint64_t room = h->limit - h->start;
	if (room < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64
	                                                   : ELFCLASS32) ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum == 0 ||
	    eh->e_phnum == PN_XNUM || eh->e_phoff > room ||
	    eh->e_phoff % _Alignof(ElfW(Phdr)) != 0 ||
	    (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > room - eh->e_phoff)
		return 0;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(h->start + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_offset >= page)
			continue;
		memset(info, 0, sizeof(*info));
		info->dlpi_addr = (ElfW(Addr))(h->start -
		                               (ph[i].p_vaddr & ~(page - 1)));
		info->dlpi_phdr = ph;
		info->dlpi_phnum = eh->e_phnum;
		return 1;
	}
	return 0;
}

size_t
heapprof__loaded_ids_unlocked(const heapprof_maps *all, hp_loaded_id *v,
                              size_t n)
{
	struct walk w = {all, v, n, 0, (uint64_t)getpagesize()};
	for (size_t i = 0; i < n; i++)
		v[i].hex[0] = '\0';
	for (size_t i = 0; i < n && w.found < n; i++) {
		const heapprof_maps_entry *e = v[i].map;
		if (v[i].hex[0] || e->path[0] != '/')
			continue;
		const heapprof_maps_entry *h = header_of(all, e);
		struct dl_phdr_info info;
		if (h && object_at(h, &info, w.page))
			on_object(&info, sizeof(info), &w);
	}
	return w.found;
}

size_t
heapprof__loaded_ids(const heapprof_maps *all, hp_loaded_id *v, size_t n)
{
	struct walk w = {all, v, n, 0, (uint64_t)getpagesize()};
	for (size_t i = 0; i < n; i++)
		v[i].hex[0] = '\0';
	if (n)
		dl_iterate_phdr(on_object, &w);
	return w.found;
}
