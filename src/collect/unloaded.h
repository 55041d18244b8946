/*
 * unloaded.h: what the profiler keeps of an object dlclose unmapped
 * (unloaded.c), so that the sampled frames in it keep their mapping and
 * name in every later profile; the dlclose wrapper (unload_hook.c).
 */
#ifndef HEAPPROF_UNLOADED_H
#define HEAPPROF_UNLOADED_H

#include <stddef.h>

#include "collect.h"

typedef struct hp_ul_pending hp_ul_pending;

/* Before the real dlclose(handle), on the calling thread, busy: the
 * objects that call may unmap and that sampled frames lie in, with their
 * executable mappings, paths and build ids while they are still mapped.
 * NULL when there is nothing to keep (no such frame). */
hp_ul_pending *heapprof__unloaded_before(void *handle);
/* After it: those of them that are gone are kept (mapping, build id, the
 * names of their sampled frames); frees p. */
void heapprof__unloaded_after(hp_ul_pending *p);
/* In a fork child: the writers' lock, as if new. */
void heapprof__unloaded_atfork_child(void);

/* A snapshot's view of what was kept (snapshot.c): the records with the
 * unloaded objects' frames moved to their own addresses, and the mappings
 * with those objects' added. sym/frames (and their args) are the live
 * symbolizers, set by the caller before heapprof__unloaded_view; the
 * view's symbolizers (arg: the view) name the moved frames and pass the
 * others to them. */
typedef struct hp_ul_view {
	heapprof_record *recs;     /* NULL: no record has such a frame */
	uint64_t *stacks;          /* their stacks */
	heapprof_mapping *maps;    /* NULL: the live ones unchanged */
	size_t nmaps;
	heapprof_symbolize_fn *sym;
	void *sym_arg;
	heapprof_symbolize_frames_fn *frames;
	void *frames_arg;
	uint32_t nobj;             /* objects kept when the view was made */
} hp_ul_view;

/* Fills v for recs[0..n) (stacks pointing into their buckets) and the
 * live mappings (keeping v's sym/frames). 0, or
 * -ENOMEM (v then empty: the snapshot goes on without). */
int heapprof__unloaded_view(hp_ul_view *v, const heapprof_record *recs,
                            size_t n, const heapprof_mapping *maps,
                            size_t nmaps);
/* The view's symbolizers. */
const char *heapprof__unloaded_symbolize(void *arg, uint64_t addr,
                                         const heapprof_mapping *m);
size_t heapprof__unloaded_symbolize_frames(void *arg, uint64_t addr,
                                           const heapprof_mapping *m,
                                           heapprof_frame *out, size_t cap);
void heapprof__unloaded_view_free(hp_ul_view *v);

#endif
