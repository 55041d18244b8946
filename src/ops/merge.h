/*
 * merge.h: the profile merger behind heapprof_merge() and `heapprof merge`
 * (internal). Owns pprof's Merge semantics (profile/merge.go): N profiles
 * with equal sample and period types become one; mappings, functions,
 * locations and samples are matched by pprof's keys, values summed (after an
 * optional per-input scale, as Profile.Scale), all-zero samples dropped,
 * the result renumbered 1..N in order of first use and written with
 * pprof's own field and string-table order, so the uncompressed output is
 * byte-identical to `pprofcheck merge` / `go tool pprof -proto A B`.
 *
 * Files: merge.c (accumulating inputs: keys, tables, scaling),
 * merge_write.c (renumbering and encoding, the public entry point),
 * merge_tab.c (the open-addressing hash tables; strings: strtab.c).
 * Inputs are decoded with the shared streaming decoder (pprof_dec.h); the
 * decoder is reused between inputs and strings are interned, so inputs need
 * not stay in memory together.
 */
#ifndef HEAPPROF_MERGE_H
#define HEAPPROF_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../pprof/pb.h"
#include "../pprof/pprof_dec.h"
#include "../pprof/strtab.h"

/* ---------------------------------------------------------------- tables */

/* Open-addressing hash set of entity indexes (slot = index + 1, 0 empty);
 * keys live in the entity arrays and are compared by a callback. */
typedef struct mg_tab {
	uint32_t *slot;
	uint32_t *hash;
	size_t cap, n; /* cap is a power of two (or 0) */
} mg_tab;


/* ---------------------------------------------------------------- entities */

typedef struct mg_mapping {
	uint64_t start, limit, offset;
	uint64_t ksize;        /* key: size rounded up to 0x1000 */
	uint32_t file, build_id; /* interned */
	uint32_t kname;        /* key: build_id if non-empty, else file */
	uint8_t flags;         /* bit 0..3: has_functions, filenames,
	                        * line_numbers, inline_frames */
} mg_mapping;

typedef struct mg_function {
	uint32_t name, system_name, filename; /* interned */
	int64_t start_line;
} mg_function;

typedef struct mg_line {
	uint32_t func; /* merged function index + 1; 0 = none */
	int64_t line, column;
} mg_line;

typedef struct mg_location {
	uint64_t addr;    /* rebased onto the merged mapping */
	uint64_t kaddr;   /* key: addr - mapping start (addr if no mapping) */
	size_t lines;     /* offset into the line pool */
	uint32_t nlines;
	uint32_t mapping; /* merged mapping index + 1; 0 = none */
	bool folded;
} mg_location;

/* One label in canonical order: string labels first, then numeric ones,
 * each group stably sorted by key bytes (pprof's sampleKey and its
 * encoder's order). */
typedef struct mg_label {
	uint32_t key, str, unit; /* interned */
	uint32_t is_str;         /* 1: string label (str may be "") */
	int64_t num;
} mg_label;

typedef struct mg_sample {
	size_t locs;   /* offset into the location-index pool */
	size_t labels; /* offset into the label pool */
	size_t vals;   /* offset into the value pool (ntypes values) */
	uint32_t nlocs, nlabels;
} mg_sample;

/* A growable array of fixed-size elements. */
typedef struct mg_vec {
	void *p;
	size_t n, cap;
} mg_vec;

typedef struct mg_merger {
	pprof_dec dec;
	int ninputs;
	int err; /* sticky */

	/* header, combined as pprof's combineHeaders */
	size_t ntypes;
	uint32_t *types;       /* 2*ntypes interned (type, unit) */
	uint32_t period_type[2];
	int64_t period, time_nanos, duration_nanos;
	uint32_t drop_frames, keep_frames, default_sample_type, doc_url;
	mg_vec comments; /* uint32 interned, de-duplicated */
	mg_tab comment_tab;
	uint32_t cur_comment; /* the comment being looked up */

	strtab str;
	mg_vec maps, funcs, locs, lines, samples; /* mg_mapping ... mg_sample */
	mg_vec sloc;   /* uint32 merged location index per sample frame */
	mg_vec slab;   /* mg_label */
	mg_vec svals;  /* int64 */
	mg_tab map_tab, func_tab, loc_tab, sample_tab;

	/* per-input memo: decoder index -> merged index + 1 (0: not yet) */
	uint32_t *in_str;   /* input string index -> interned id + 1 */
	uint32_t *in_map, *in_func, *in_loc;
	uint64_t *in_map_delta; /* merged start - input start */
	size_t in_str_cap, in_map_cap, in_map_delta_cap, in_func_cap, in_loc_cap;

	/* per-sample scratch */
	int64_t *tvals;
	uint32_t *tlocs;
	mg_label *tlabs;
	size_t tvals_cap, tlocs_cap, tlabs_cap;
	mg_line *tlines;
	size_t tlines_cap;
} mg_merger;

/* merge_tab.c */
int heapprof__mg_vec_reserve(mg_vec *v, size_t elem, size_t more);
void heapprof__mg_vec_free(mg_vec *v);
uint64_t heapprof__mg_hash(uint64_t h, uint64_t v);
/* Finds an entry whose hash matches and for which eq(ctx, index) is true;
 * returns index + 1, or 0. */
uint32_t heapprof__mg_tab_find(const mg_tab *t, uint32_t hash,
                               bool (*eq)(const void *ctx, uint32_t idx),
                               const void *ctx);
/* Inserts index (not present). 0 or -ENOMEM. */
int heapprof__mg_tab_insert(mg_tab *t, uint32_t hash, uint32_t idx);
void heapprof__mg_tab_free(mg_tab *t);
/* Interns (p, n); returns the id (>= 0) or -ENOMEM / HEAPPROF_EOVERFLOW. */

/* merge.c */
void heapprof__mg_init(mg_merger *m);
void heapprof__mg_free(mg_merger *m);
/* Adds one encoded profile (gzip'd or not), values multiplied by `scale`
 * as pprof's Profile.Scale does (1: unchanged). The input need not outlive
 * the call. `limit`: max inflated size (0: decoder default).
 * Returns 0 or a negative error (decoder errors, HEAPPROF_ETYPES,
 * HEAPPROF_EOVERFLOW when a summed value overflows int64, -ENOMEM). */
int heapprof__mg_add(mg_merger *m, const void *data, size_t len, double scale,
                     size_t limit);
/* int64(math.Round(v * r)) as Go computes it on amd64 (out-of-range and NaN
 * give INT64_MIN), without C's undefined behaviour. */
int64_t heapprof__mg_scale_value(int64_t v, double r);

/* merge_write.c */
/* Writes the merged profile (uncompressed protobuf) to a pb writer sink. */
int heapprof__mg_write(mg_merger *m, pb_sink_fn *sink, void *sink_ctx);

#endif
