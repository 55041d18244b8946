/* API STABLE: heapprof__pprof_dec_* (init/open/free, string/find/location/
 * function/mapping/sample iteration). Additions only from here on. */
/*
 * pprof_dec.h: the streaming profile.proto decoder shared by delta, merge,
 * converters and the CLI. No tree is built: heapprof__pprof_dec_open() makes
 * one index pass over the (inflated) buffer that records
 *   - the header scalars (period, time, duration, drop/keep frames, ...),
 *   - the sample types and comments,
 *   - the offset of every string,
 *   - the position of every location, function and mapping with an id ->
 *     position table (dense when ids are small, hashed otherwise),
 * and validates everything pprof's CheckValid validates except samples.
 * Samples are then pulled one at a time with heapprof__pprof_sample_next(),
 * which validates each one (values per type, location ids, label strings).
 *
 * All memory (index arrays, inflate buffer, zlib state, per-sample scratch)
 * comes from the allocator given to init and is reused by the next open, so
 * a decoder reused on similar inputs allocates nothing at steady state.
 * Pointers returned (strings, sample arrays, location lines) point into the
 * input buffer or the decoder's scratch; they are valid until the next call
 * that fills the same scratch (documented per function) or the next open.
 *
 * Errors (negative HEAPPROF_E*): ETRUNC, EVARINT, EWIRETYPE, ELENGTH from the
 * wire; EINDEX (string index out of range), EID (id 0, duplicate, or a
 * reference that does not resolve), EVALUES (values != sample types, or
 * samples without sample types), ESTRING0 (string_table[0] != "" or no string
 * table), ECONCAT (second time_nanos), EEMPTY (empty input), ETOOBIG (input
 * or inflated size over the limit), EGZIP (corrupt gzip), -ENOMEM.
 */
#ifndef HEAPPROF_PPROF_DEC_H
#define HEAPPROF_PPROF_DEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "gz.h"
#include "pb.h"

/* profile.proto field numbers of Profile. */
enum {
	PPROF_SAMPLE_TYPE = 1,
	PPROF_SAMPLE = 2,
	PPROF_MAPPING = 3,
	PPROF_LOCATION = 4,
	PPROF_FUNCTION = 5,
	PPROF_STRING_TABLE = 6,
	PPROF_DROP_FRAMES = 7,
	PPROF_KEEP_FRAMES = 8,
	PPROF_TIME_NANOS = 9,
	PPROF_DURATION_NANOS = 10,
	PPROF_PERIOD_TYPE = 11,
	PPROF_PERIOD = 12,
	PPROF_COMMENT = 13,
	PPROF_DEFAULT_SAMPLE_TYPE = 14,
	PPROF_DOC_URL = 15,
};

/* Default limit on the inflated (or raw) profile size: 1 GiB. Inputs are
 * also limited to < 4 GiB because offsets are stored in 32 bits. */
#define PPROF_DEC_DEFAULT_LIMIT ((size_t)1 << 30)

/* What one sample may reference: the decoder's arrays take 12 bytes a
 * location id (1-byte varints: 12x the input), and merge and delta more, so
 * a 48 KB gzip'd sample of 50 M ids took 1.47 GB. No real stack is near
 * 65,536 frames (Go keeps 128 at most, heapprof 64, jemalloc 128). */
#define PPROF_MAX_SAMPLE_LOCS 65536u
#define PPROF_MAX_SAMPLE_LABELS 65536u

typedef struct pprof_value_type {
	uint32_t type, unit; /* string indexes */
} pprof_value_type;

typedef struct pprof_label {
	uint32_t key, str; /* string indexes; str 0 = numeric label */
	uint32_t num_unit; /* string index */
	int64_t num;
} pprof_label;

typedef struct pprof_line {
	uint64_t function_id;
	int64_t line, column;
} pprof_line;

typedef struct pprof_location {
	uint64_t id, mapping_id, address;
	bool is_folded;
	const pprof_line *lines; /* decoder scratch, valid until the next
	                          * heapprof__pprof_location() call */
	size_t nlines;
	const uint8_t *raw; /* the encoded Location message (no strings in it) */
	size_t raw_len;
} pprof_location;

typedef struct pprof_function {
	uint64_t id;
	uint32_t name, system_name, filename; /* string indexes */
	int64_t start_line;
} pprof_function;

typedef struct pprof_mapping {
	uint64_t id, memory_start, memory_limit, file_offset;
	uint32_t filename, build_id; /* string indexes */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
} pprof_mapping;

/* A decoded sample. Arrays are decoder scratch, valid until the next
 * heapprof__pprof_sample_next()/..._sample_at() call on the same decoder. */
typedef struct pprof_sample {
	const uint64_t *location_ids; /* leaf first */
	const uint32_t *location_index; /* index into d->locs of each id */
	size_t nlocations;
	const int64_t *values; /* exactly d->ntypes of them */
	size_t nvalues;
	const pprof_label *labels;
	size_t nlabels;
	uint32_t offset; /* of the Sample message body in the buffer: pass to
	                  * heapprof__pprof_sample_at() to decode it again */
	uint32_t len;
} pprof_sample;

/* Position of one Location/Function/Mapping message body in the buffer. */
typedef struct pprof_rec {
	uint64_t id;
	uint32_t off, len;
} pprof_rec;

/* id -> record index table (internal layout; use heapprof__pprof_find_*). */
typedef struct pprof_idmap {
	uint32_t *slots; /* dense: slots[id] = index + 1; hashed: index + 1 */
	size_t nslots; /* allocated */
	size_t used;   /* in use: max id + 1 (dense) or a power of two */
	bool dense;
} pprof_idmap;

/* A positional reader (heapprof_read_fn): up to n bytes at offset `at`
 * of the input into buf; the count (0: the end), or a negative error. */
typedef long(pprof_read_fn)(void *arg, uint64_t at, void *buf, size_t n);

/* Input read through a pprof_read_fn (pprof_stream.c), never held whole:
 * open keeps the non-sample fields in zbuf, in input order; each sample
 * pass reads the input again, inflating it if gzip, through a window that
 * holds the current sample. Gzip'd input in a buffer is inflated whole
 * into the same window. */
typedef struct pprof_stream {
	pprof_read_fn *read;
	void *arg;
	bool on;   /* the open profile is read through `read` */
	bool gzip; /* ... and inflated */
	bool eof;  /* no more (inflated) input bytes */
	bool zend; /* no more source bytes */
	uint64_t src_at; /* next source offset */
	/* inflated bytes [win_at, win_at + win_len) of the input, then 8
	 * zero bytes; pos: the next field */
	uint8_t *win;
	size_t win_len, win_cap, pos;
	uint32_t win_at;
	/* source bytes read, not yet inflated: zin[zpos, zlen) */
	uint8_t *zin;
	size_t zpos, zlen, zcap;
	uint64_t total; /* the input's (inflated) length, found by open */
} pprof_stream;

typedef struct pprof_dec {
	/* --- configuration (set after init, before open) */
	size_t limit; /* max raw or inflated size; default PPROF_DEC_DEFAULT_LIMIT */

	/* --- the profile, valid after a successful open */
	const uint8_t *buf; /* the decoded (inflated) protobuf */
	size_t len;
	bool was_gzip;

	pprof_value_type *types; /* sample_type, in input order */
	size_t ntypes;
	pprof_value_type period_type; /* {0,0} when absent */
	int64_t period, time_nanos, duration_nanos;
	uint32_t drop_frames, keep_frames, default_sample_type, doc_url;
	uint32_t *comments; /* string indexes */
	size_t ncomments;

	/* Sample bytes: offset off (pprof_sample.offset) is at
	 * s_win + (off - s_at), valid up to s_win + s_len; reads may look
	 * up to s_hard (the buffer's end, or the window's zero bytes). In
	 * stream mode only the sample the last iteration step returned is
	 * there. */
	const uint8_t *s_win, *s_hard;
	uint32_t s_at;
	size_t s_len;
	pprof_stream st;

	size_t nstrings;  /* string i: heapprof__pprof_string(d, i, &len) */
	size_t nsamples;  /* number of Sample fields */
	pprof_rec *locs, *funcs, *maps; /* input order */
	size_t nlocs, nfuncs, nmaps;
	uint64_t *loc_addr; /* loc_addr[i] = address of locs[i] */

	/* --- internal */
	struct {
		uint32_t *off, *len; /* string offsets and lengths */
		size_t cap;
	} str;
	size_t types_cap, comments_cap, locs_cap, funcs_cap, maps_cap;
	pprof_idmap loc_ids, func_ids, map_ids;
	uint32_t first_sample, end_sample; /* byte range holding the samples */
	/* sample / location scratch */
	uint64_t *s_locs;
	uint32_t *s_lidx;
	int64_t *s_vals;
	pprof_label *s_labels;
	pprof_line *l_lines;
	size_t s_locs_cap, s_vals_cap, s_labels_cap, l_lines_cap;
	/* What the last failed open or sample decoding found wrong, naming
	 * the record ("location id 7: line has function 0"); "" if the error
	 * code says all (cleared by each open). */
	char fault[112];
	/* inflate state, kept for reuse; zbuf: stream mode's non-sample
	 * fields */
	void *zs;
	uint8_t *zbuf;
	size_t zbuf_cap;

	pb_realloc_fn *realloc_fn;
	void *realloc_ctx;
	gz_alloc gza; /* zlib's view of realloc_fn (pprof_stream.c) */
} pprof_dec;

/* Sample iteration cursor over the top-level fields that hold samples. */
typedef struct pprof_sample_iter {
	pb_reader r;
	bool started; /* stream mode: the input read again from its start */
	uint32_t at;  /* stream mode: offset of the sample returned last + 1 */
	size_t n;     /* stream mode: samples returned */
} pprof_sample_iter;

/* Sets up an empty decoder. rf == NULL: libc. Never fails. */
void heapprof__pprof_dec_init(pprof_dec *d, pb_realloc_fn *rf, void *rctx);
/* Releases everything the decoder holds. */
void heapprof__pprof_dec_free(pprof_dec *d);
/* Bytes the decoder holds (index, scratch, inflate buffer; not
 * zlib's own state). */
size_t heapprof__pprof_dec_memory(const pprof_dec *d);

/* Indexes and validates a profile (gzip detected and inflated into the
 * decoder's buffer, bounded by d->limit). The input must stay alive and
 * unchanged while the decoder is used, unless it was gzip. Returns 0 or a
 * negative code; after an error the decoder holds no profile but stays
 * reusable. */
int heapprof__pprof_dec_open(pprof_dec *d, const void *data, size_t len);

/* String i (bounds-checked by open for every index the profile uses; here
 * an index >= nstrings returns "" with *len 0). Not NUL-terminated. */
const char *heapprof__pprof_string(const pprof_dec *d, uint64_t i, size_t *len);
/* True if string i equals the NUL-terminated s. */
bool heapprof__pprof_string_eq(const pprof_dec *d, uint64_t i, const char *s);

/* id -> index into locs/funcs/maps, or -1 if absent (id 0 is absent). */
long heapprof__pprof_find_location(const pprof_dec *d, uint64_t id);
long heapprof__pprof_find_function(const pprof_dec *d, uint64_t id);
long heapprof__pprof_find_mapping(const pprof_dec *d, uint64_t id);

/* Decodes locs[i] / funcs[i] / maps[i] (already validated by open). */
int heapprof__pprof_location(pprof_dec *d, size_t i, pprof_location *out);
int heapprof__pprof_function(const pprof_dec *d, size_t i, pprof_function *out);
int heapprof__pprof_mapping(const pprof_dec *d, size_t i, pprof_mapping *out);

/* Sample iteration in input order. next returns 0 with *out filled, 1 at
 * the end, or a negative error (EVALUES, EID, EINDEX, wire errors). */
void heapprof__pprof_samples(const pprof_dec *d, pprof_sample_iter *it);
int heapprof__pprof_sample_next(pprof_dec *d, pprof_sample_iter *it,
                                pprof_sample *out);
/* Like sample_next, but only finds the next Sample body: (offset, len) for
 * heapprof__pprof_sample_at(), which decodes and validates it. Additions. */
int heapprof__pprof_sample_raw_next(pprof_dec *d, pprof_sample_iter *it,
                                    uint32_t *offset, uint32_t *len);
/* Decodes again the sample whose body is at (offset, len) (from a previous
 * pprof_sample of the same open; in stream mode, the one the iteration
 * returned last). */
int heapprof__pprof_sample_at(pprof_dec *d, uint32_t offset, uint32_t len,
                              pprof_sample *out);

/* Stream mode (heapprof__pprof_dec_open_read). Opens the profile that
 * `read` gives (gzip detected), holding only its non-sample fields: the
 * same index and checks as open on the same bytes, and the same error for
 * an input with one fault (see pprof_stream.c; a read error: its code).
 * Sample iteration then reads the input again from its start at each
 * heapprof__pprof_samples(): a pass that finds other samples than open
 * counted, or another length, ends in HEAPPROF_ECHANGED. Sample bytes
 * are those of the sample returned last (sample_at on that one only). */
int heapprof__pprof_dec_open_read(pprof_dec *d, pprof_read_fn *read,
                                  void *arg);
/* Moves the iteration to the sample at `offset` of this open: in stream
 * mode by reading on (HEAPPROF_ECHANGED if the input no longer has one
 * there: it changed between reads), in buffer mode nothing to do. */
int heapprof__pprof_stream_seek(pprof_dec *d, pprof_sample_iter *it,
                                 uint32_t offset);
HP_INLINE int
heapprof__pprof_sample_seek(pprof_dec *d, pprof_sample_iter *it,
                            uint32_t offset)
{
	return d->st.on ? heapprof__pprof_stream_seek(d, it, offset) : 0;
}
/* Sample bytes at offset off (see s_win). */
HP_INLINE const uint8_t *
heapprof__pprof_sbytes(const pprof_dec *d, uint32_t off)
{
	return d->s_win + (off - d->s_at);
}

/* Full CheckValid-equivalent: open + decode every sample. */
int heapprof__pprof_check(pprof_dec *d, const void *data, size_t len);

#endif
