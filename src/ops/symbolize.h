/*
 * symbolize.h: a decoded profile -> the same profile with Function/Line data
 * added to the locations of chosen mappings (offline symbolization). Every
 * other field (samples, labels, comments, header, other mappings and
 * locations, unknown fields) is copied byte for byte; see symbolize.c.
 */
#ifndef HEAPPROF_SYMBOLIZE_H
#define HEAPPROF_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapprof.h"
#include "pb.h"
#include "pprof_dec.h"

/* Frames for address `addr` of mapping number `mi` (index into d->maps),
 * described by `m`; innermost first, at most cap. 0: unknown. */
typedef size_t(heapprof_sym_frames_fn)(void *arg, size_t mi,
                                       const heapprof_mapping *m,
                                       uint64_t addr, heapprof_frame *out,
                                       size_t cap);

typedef struct heapprof_sym_map_stats {
	size_t locations; /* locations in the mapping */
	size_t named;     /* of which got at least one named frame */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
} heapprof_sym_map_stats;

/*! heapprof__symbolize_profile() :
 *  Writes the profile open in `d` (uncompressed) to `sink`, with the
 *  locations of every mapping i for which which[i] is true given the
 *  frames `fn` returns (one Line per frame; a location with no frames keeps
 *  its old lines), those mappings' has_* flags set to what is true of all
 *  their locations, and the new functions and strings appended. `stats`
 *  (d->nmaps entries, may be NULL) receives per-mapping results.
 *  @return : 0, or a negative error code (decoder, -ENOMEM, sink). */
int heapprof__symbolize_profile(pprof_dec *d, const bool *which,
                                heapprof_sym_frames_fn *fn, void *arg,
                                pb_sink_fn *sink, void *sink_ctx,
                                heapprof_sym_map_stats *stats);

#endif
