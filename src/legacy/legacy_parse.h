/*
 * legacy_parse.h: the legacy heap-profile readers and the in-memory form
 * they produce, shared by the converters:
 *   - legacy_heap.c     pprof's legacy heap text: Go debug=1 (`heap/N`),
 *                       gperftools (`heapprofile`), `heap_v2/N`,
 *                       `heapz_v2/N`, `growthz`, `fragmentationz`;
 *   - legacy_jemalloc.c jemalloc's per-thread `heap_v2/N` dumps, as jeprof
 *                       reads them;
 *   - legacy_maps.c     the memory-map section (MAPPED_LIBRARIES: or
 *                       --- Memory map: ---) and pprof's mapping fix-ups;
 *   - legacy_parse.c    input detection, line splitting, the sample and
 *                       location tables, error positions;
 *   - legacy_pb.c       this form -> profile.proto;
 *   - legacy_text.c     profile.proto -> legacy text.
 *
 * The result is what pprof's Parse builds from the text (same sample types,
 * values, labels, location and mapping order and ids, drop/keep frames),
 * so the proto written from it reads back in `go tool pprof` as the text
 * itself does.
 */
#ifndef HEAPPROF_LEGACY_PARSE_H
#define HEAPPROF_LEGACY_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "u64map.h"

#include "heapprof.h"

enum {
	HP_LEGACY_PPROF = 1,    /* pprof legacy heap text */
	HP_LEGACY_JEMALLOC = 2, /* jemalloc heap_v2 per-thread dump */
};

typedef struct hp_legacy_map {
	uint64_t start, limit, offset;
	char *file;     /* malloc'd, never NULL ("" if none), NUL-terminated */
	char *build_id; /* malloc'd, never NULL, NUL-terminated */
	size_t file_len, build_id_len; /* (either may hold NUL bytes) */
} hp_legacy_map;

typedef struct hp_legacy {
	int kind;         /* HP_LEGACY_* */
	int ntypes;       /* 2 (objects, space) or 4 (alloc_*, inuse_*) */
	int64_t period;   /* period_type space/bytes */
	char sampler[32]; /* header's sampler name, e.g. "heap_v2" */

	size_t nsamples;
	int64_t *values;    /* nsamples * ntypes */
	int64_t *label;     /* "bytes" numeric label per sample */
	size_t *stack_at;   /* sample i's locations: stack[stack_at[i] ..
	                     * stack_at[i+1]) (nsamples + 1 entries) */
	uint32_t *stack;    /* location indexes, leaf first */
	size_t nstack;

	size_t nlocs;
	uint64_t *loc_addr; /* location i has id i + 1 */
	uint32_t *loc_map;  /* mapping index + 1, 0 = none */

	hp_legacy_map *maps; /* in pprof's order; mapping i has id i + 1 */
	size_t nmaps;

	/* internal: capacities and the address -> location hash */
	size_t samples_cap, stack_cap, locs_cap, maps_cap;
	u64map locmap;    /* address -> location index */
} hp_legacy;

/* Where a parse failed: 1-based line number (0: not line-specific). */
typedef struct hp_legacy_err {
	size_t line;
} hp_legacy_err;

/* Names of the sample types for ntypes (2 or 4): type i is
 * names[2i] / names[2i+1] (type, unit). */
const char *const *heapprof__legacy_type_names(int ntypes);

/* Parses a legacy heap text or a jemalloc dump (not gzip'd: see
 * heapprof__legacy_detect). On error *out is left empty and err->line says
 * where. Returns 0 or a negative HEAPPROF_E* / -ENOMEM. */
int heapprof__legacy_parse(const char *buf, size_t len, hp_legacy *out,
                           hp_legacy_err *err);
void heapprof__legacy_free(hp_legacy *p);

/* The formats heapprof__legacy_detect tells apart. */
enum {
	HP_FMT_UNKNOWN = 0,
	HP_FMT_PPROF = 1,    /* profile.proto (decoder decides validity) */
	HP_FMT_LEGACY = 2,   /* "heap profile: ..." first line */
	HP_FMT_JEMALLOC = 3, /* "heap_v2/N" first line */
};
/* Classifies an (inflated) input by its first bytes. */
int heapprof__legacy_detect(const void *buf, size_t len);

/* Writes the parsed profile as profile.proto (gzip'd if `gzip`). */
int heapprof__legacy_write_pb(const hp_legacy *p, int gzip,
                              heapprof_write_fn *write, void *arg);

/* ---- internal, between the parser files ---- */

/* Go's strings.TrimSpace on a byte range (ASCII and Unicode white space in
 * UTF-8). Updates *s and *n. */
void heapprof__legacy_trim(const char **s, size_t *n);
/* Splits the next line off [*pos, len): Go bufio.ScanLines (drops "\n" and
 * one trailing "\r"). Returns 0 at the end. */
int heapprof__legacy_next_line(const char *buf, size_t len, size_t *pos,
                               const char **line, size_t *n);
/* Appends a sample: values (ntypes of them), label, and addresses already
 * adjusted; locations are deduplicated by address in order of first use. */
int heapprof__legacy_add_sample(hp_legacy *p, const int64_t *values,
                                int64_t label, const uint64_t *addrs,
                                size_t naddrs);
/* pprof's scaleHeapSample (truncating; out-of-range results as Go on
 * amd64 converts them: INT64_MIN). */
void heapprof__legacy_scale(int64_t count, int64_t size, int64_t rate,
                            int64_t *oc, int64_t *os);
/* Parses the memory-map section: lines [pos, len) after the sentinel
 * line, then applies pprof's fix-ups (merge adjacent, main binary first,
 * /anon_hugepage, 0x400000) and assigns every location its mapping (or a
 * fake one). Also called with pos == len when there is no section. */
int heapprof__legacy_maps(hp_legacy *p, const char *buf, size_t len,
                          size_t pos, size_t line_no, hp_legacy_err *err);
/* True if the line contains a memory-map sentinel (pprof's test). */
int heapprof__legacy_is_sentinel(const char *s, size_t n);

int heapprof__legacy_parse_pprof(const char *buf, size_t len, hp_legacy *p,
                                 hp_legacy_err *err);
int heapprof__legacy_parse_jemalloc(const char *buf, size_t len,
                                    hp_legacy *p, hp_legacy_err *err);

#endif
