/*
 * heapprof.h: the public C API of heapprof.
 *
 * Every function returns 0 (or a non-negative count) on success and a
 * negative error code on failure: -errno for system errors, HEAPPROF_E* for
 * format errors. heapprof_strerror() turns either into text.
 *
 * Sections: errors; profiling the current process (libheapprof.so / .a);
 * encoding heap records of your own allocator; pprof toolkit (decode, delta,
 * merge).
 */
#ifndef HEAPPROF_H
#define HEAPPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HEAPPROF_API
#define HEAPPROF_API __attribute__((visibility("default")))
#endif

#define HEAPPROF_VERSION_MAJOR 0
#define HEAPPROF_VERSION_MINOR 1

/* ------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------- */

enum {
	HEAPPROF_EFORMAT = -4000,   /* malformed profile */
	HEAPPROF_ETRUNC = -4001,    /* input ends inside a value */
	HEAPPROF_EVARINT = -4002,   /* varint longer than 10 bytes */
	HEAPPROF_EWIRETYPE = -4003, /* wire type 3, 4, 6 or 7, or wrong for the field */
	HEAPPROF_ELENGTH = -4004,   /* length past the end of the enclosing message */
	HEAPPROF_EINDEX = -4005,    /* string index out of range */
	HEAPPROF_EID = -4006,       /* id 0, duplicate, or unresolvable */
	HEAPPROF_EVALUES = -4007,   /* len(sample.value) != len(sample_type) */
	HEAPPROF_ETOOBIG = -4008,   /* decompressed size past the limit */
	HEAPPROF_EGZIP = -4009,     /* corrupt gzip stream */
	HEAPPROF_ESTRING0 = -4010,  /* string_table[0] != "" */
	HEAPPROF_ETYPES = -4011,    /* sample types or period types differ */
	HEAPPROF_ECONCAT = -4012,   /* two time_nanos fields: concatenated input */
	HEAPPROF_EEMPTY = -4013,    /* empty input */
	HEAPPROF_ENOTINIT = -4014,  /* the profiler is not loaded in this process */
	HEAPPROF_EOVERFLOW = -4015, /* a count or size overflowed */
	HEAPPROF_ENOSUBTRACT = -4016, /* delta: no sample type to subtract */
	HEAPPROF_ECHANGED = -4017,  /* input read again differed (read callback) */
	HEAPPROF_ESAMPLECAP = -4018, /* a sample has more locations or labels than 65,536 */
	HEAPPROF_ESANDBOX = -4019,  /* a seccomp filter is in force: no profile is written */
	/* legacy text profiles (heapprof convert) */
	HEAPPROF_ENOTLEGACY = -4100, /* first line is not a known heap header */
	HEAPPROF_ESAMPLE = -4101,    /* malformed legacy sample line */
	HEAPPROF_EZEROCOUNT = -4102, /* legacy sample: count 0, bytes not 0 */
	HEAPPROF_EADDR = -4103,      /* stack address over 64 bits */
	HEAPPROF_EJEMALLOC = -4104,  /* malformed jemalloc heap dump */
	HEAPPROF_ENOTHEAP = -4105,   /* not a heap profile (sample types) */
	HEAPPROF_ETEXTVALUE = -4106, /* value not expressible as legacy text */
};

/*! heapprof_strerror() :
 *  @return : a static, human-readable description of `err`. Never NULL. */
HEAPPROF_API const char *heapprof_strerror(int err);

/* Output callback: write `len` bytes; return 0 or a negative error code. */
typedef int(heapprof_write_fn)(void *arg, const void *buf, size_t len);

/* ------------------------------------------------------------------------
 * Profiling this process (libheapprof.so preloaded, or libheapprof.a linked)
 * ---------------------------------------------------------------------- */

/*! heapprof_active() :
 *  @return : 1 if the profiler is installed and sampling, 0 if not (also
 *  when the library was loaded with dlopen after start-up: the program's
 *  malloc is then libc's, and nothing is sampled). */
HEAPPROF_API int heapprof_active(void);

/*! heapprof_dump() :
 *  Writes the current heap profile through `write`: gzip'd profile.proto,
 *  or the legacy text form if `text` is nonzero.
 *  @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_dump(heapprof_write_fn *write, void *arg, int text);

#define HEAPPROF_PROFILE_HEAP 0  /* all four values since the start (Go's heap) */
#define HEAPPROF_PROFILE_INUSE 1 /* in use only: alloc_* written as 0 and samples
                                  * with nothing in use dropped (the in-use
                                  * profile a continuous profiler sends) */

/*! heapprof_dump_profile() :
 *  Writes the current heap profile of the given kind (HEAPPROF_PROFILE_*)
 *  through `write`, gzip'd profile.proto.
 *  @return : 0, or a negative error code (-EINVAL for an unknown kind). */
HEAPPROF_API int heapprof_dump_profile(heapprof_write_fn *write, void *arg,
                                       int kind);

/*! heapprof_dump_file() :
 *  Writes the current heap profile to `path` (NULL: the HEAPPROF_OUT template),
 *  through a temporary file and rename(), so readers never see a torn file.
 *  @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_dump_file(const char *path);

/*! heapprof_peak_reset() :
 *  Restarts the peak (the peak_objects / peak_space sample types of every
 *  profile written in-process): from now on it is the highest in-use
 *  total reached after this call, starting with the in-use state now. In
 *  HEAPPROF_MODE=delta each periodic file also restarts it. */
HEAPPROF_API void heapprof_peak_reset(void);

/*! heapprof_set_sample_rate() :
 *  Mean bytes between samples (1: every allocation; 0: stop sampling). Takes
 *  effect in each thread at its next sample. @return : 0 or -EINVAL. */
HEAPPROF_API int heapprof_set_sample_rate(uint64_t bytes);

/*! heapprof_sample_rate() : @return : the current mean sampling interval. */
HEAPPROF_API uint64_t heapprof_sample_rate(void);

/* ------------------------------------------------------------------------
 * Labels: which request, route, tenant or job allocated (as Go's pprof.Do)
 * ---------------------------------------------------------------------- */

/* An interned label set: made once (heapprof_labels_make), kept by the
 * profiler for the life of the process, shared by every thread. */
typedef struct heapprof_labels heapprof_labels;

/*! heapprof_labels_make() :
 *  Interns the set of `n` pairs kv[2i] = kv[2i+1] (keys non-empty; a key
 *  given twice keeps its last value; order does not matter: the pairs are
 *  sorted by key, as Go sorts them). At most 64 pairs and 4 KiB of text.
 *  The same pairs always give the same set. Distinct sets are capped per
 *  process (HEAPPROF_LABEL_SETS, default 1024): past the cap *out is the
 *  overflow set, whose one label is heapprof_labels=overflow, and the
 *  refusal is counted in the profile's comments.
 *  @return : 0, 1 when capped (*out = the overflow set), or -EINVAL. */
HEAPPROF_API int heapprof_labels_make(const char *const *kv, size_t n,
                                      const heapprof_labels **out);

/*! heapprof_labels_use() :
 *  Makes `set` (NULL: none) this thread's label set: every allocation the
 *  thread samples from now on is recorded under it, in records keyed by
 *  (stack, size, labels), written as pprof string labels. One thread-local
 *  store; nothing on the unsampled path reads it.
 *  @return : the thread's previous set (NULL: none), to restore later. */
HEAPPROF_API const heapprof_labels *heapprof_labels_use(const heapprof_labels *set);

/*! heapprof_labels_set() :
 *  heapprof_labels_make() then heapprof_labels_use(): the thread's set
 *  becomes kv's, and *saved (if not NULL) gets the previous one for
 *  heapprof_labels_restore(). A server interns its few sets once and
 *  switches with heapprof_labels_use(), which takes no lock.
 *  @return : as heapprof_labels_make() (on -EINVAL nothing changes). */
HEAPPROF_API int heapprof_labels_set(const char *const *kv, size_t n,
                                     const heapprof_labels **saved);

/*! heapprof_labels_restore() : heapprof_labels_use(saved), the result
 *  dropped. */
HEAPPROF_API void heapprof_labels_restore(const heapprof_labels *saved);

/* ------------------------------------------------------------------------
 * Encoding heap records (for programs with their own allocators)
 * ---------------------------------------------------------------------- */

/* One bucket of sampled allocations, as Go's runtime.MemProfileRecord:
 * counts of *sampled* objects and bytes. The encoder unsamples them. */
typedef struct heapprof_record {
	int64_t alloc_objects;
	int64_t alloc_bytes;
	int64_t free_objects;
	int64_t free_bytes;
	const uint64_t *stack; /* leaf first; addresses as pprof wants them
	                        * (call sites: return address - 1) */
	size_t depth;
	int64_t object_size; /* size of every object of the record, for the
	                      * "bytes" label; 0: alloc_bytes / alloc_objects */
	int64_t rate; /* mean sampling interval this record was sampled at;
	               * 0: the profile's `rate`. Records sampled at different
	               * rates (the rate changed at run time) unsample each
	               * with its own. */
} heapprof_record;

/* One pprof string label, and the labels of one record. */
typedef struct heapprof_label {
	const char *key;
	const char *value;
} heapprof_label;
typedef struct heapprof_record_labels {
	const heapprof_label *labels;
	size_t n;
} heapprof_record_labels;

/* An executable mapping of the profiled process. */
typedef struct heapprof_mapping {
	uint64_t start, limit, offset;
	const char *file;     /* absolute path, or NULL */
	const char *build_id; /* hex GNU build id, or NULL */
} heapprof_mapping;

/* Optional symbolizer: the name of the function containing `addr` in the
 * mapping `m` (or NULL). The string must stay valid until the encoder returns. */
typedef const char *(heapprof_symbolize_fn)(void *arg, uint64_t addr,
                                            const heapprof_mapping *m);

/* One source-level frame of a code address: a function, with the file and
 * line executing in it. Inlining gives several frames for one address. */
typedef struct heapprof_frame {
	const char *function;    /* name as shown (demangled); NULL: unknown */
	const char *system_name; /* linkage (mangled) name; NULL: = function */
	const char *file;        /* source file; NULL: unknown */
	int64_t line;            /* line in `file`; 0: unknown */
	int64_t start_line;      /* first line of the function; 0: unknown */
} heapprof_frame;

/* Optional multi-frame symbolizer: fills out[0..cap) with the frames of
 * `addr` in mapping `m` (or NULL), innermost first: inlined callees, then
 * the function the code was compiled into, as pprof's Location.line lists
 * them. Returns how many it wrote (0: unknown; the encoder then asks
 * `symbolize`, if set). Strings stay valid until the encoder returns. */
typedef size_t (heapprof_symbolize_frames_fn)(void *arg, uint64_t addr,
                                              const heapprof_mapping *m,
                                              heapprof_frame *out, size_t cap);

typedef struct heapprof_heap_profile {
	const heapprof_record *records;
	size_t nrecords;
	int64_t rate;       /* mean sampling interval in bytes (period) */
	int64_t time_nanos; /* wall-clock time of the snapshot */
	const heapprof_mapping *mappings; /* mappings[0] = main binary */
	size_t nmappings;
	heapprof_symbolize_fn *symbolize; /* may be NULL */
	void *symbolize_arg;
	const char *const *comments; /* may be NULL */
	size_t ncomments;
	const char *default_sample_type; /* e.g. "alloc_space"; NULL: none */
	int64_t duration_nanos;          /* 0: not written */
	/* Optional (NULL: only `symbolize`): names, files, lines and inlined
	 * frames. A mapping whose every location got frames this way is
	 * written with has_functions (and has_filenames, has_line_numbers,
	 * has_inline_frames when every frame had a file and line). */
	heapprof_symbolize_frames_fn *symbolize_frames;
	void *symbolize_frames_arg;
	/* Read only with HEAPPROF_ENCODE_PEAK: one per record, what it had in
	 * use (sampled objects and bytes) when the in-use total peaked. */
	const struct heapprof_peak *peaks;
	/* Read only with HEAPPROF_ENCODE_LABELS: one per record (n 0: none),
	 * written as string labels of its sample. */
	const heapprof_record_labels *labels;
} heapprof_heap_profile;

/* What one record had in use at the peak, sampled counts as in
 * heapprof_record (unsampled by the encoder with the record's rate). */
typedef struct heapprof_peak {
	int64_t objects;
	int64_t bytes;
} heapprof_peak;

#define HEAPPROF_ENCODE_GZIP 1u       /* gzip the output (pprof's default form) */
#define HEAPPROF_ENCODE_INUSE_ONLY 2u /* write alloc_* as 0 (an in-use profile) */
#define HEAPPROF_ENCODE_DROP_ZERO 4u  /* omit samples whose values are all 0 */
/* Also write peak_objects and peak_space (after Go's four types, from
 * p->peaks), and default_sample_type inuse_space unless one is given. */
#define HEAPPROF_ENCODE_PEAK 8u
/* Write each record's string labels (p->labels). */
#define HEAPPROF_ENCODE_LABELS 16u
/* Records may carry negative counts (differences of two snapshots): each
 * pair is unsampled with its own average size, as pprof scales a delta. */

/*! heapprof_encode_heap() :
 *  Encodes `p` as a pprof heap profile (alloc_objects, alloc_space,
 *  inuse_objects, inuse_space; period space/bytes) with values unsampled as
 *  Go's scaleHeapSample does, and writes it through `write`.
 *  @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_encode_heap(const heapprof_heap_profile *p,
                                      unsigned flags, heapprof_write_fn *write,
                                      void *arg);

/*! heapprof_encode_heap_text() :
 *  Writes `p` in the legacy text form: a `heap_v2/RATE` header, raw sampled
 *  counts (readers unsample them), return addresses, and a MAPPED_LIBRARIES:
 *  section. @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_encode_heap_text(const heapprof_heap_profile *p,
                                           heapprof_write_fn *write, void *arg);

/*! heapprof_scale_heap_sample() :
 *  Go's scaleHeapSample: unsamples (count, size) sampled at mean `rate`.
 *  One extension: a nonzero count of zero bytes (zero-byte allocations,
 *  which the profiler samples as weighing one byte, as tcmalloc does) is
 *  unsampled as objects of one byte, with size 0; Go returns 0, 0. */
HEAPPROF_API void heapprof_scale_heap_sample(int64_t count, int64_t size,
                                             int64_t rate, int64_t *out_count,
                                             int64_t *out_size);

/* ------------------------------------------------------------------------
 * pprof toolkit: decode and delta
 * ---------------------------------------------------------------------- */

/* Allocator hook for the toolkit objects: grows, shrinks or frees (new_size
 * 0) a block; returns NULL on failure. Every allocation of a delta computer
 * (state tables, decoder index, inflate/deflate state, output buffer) goes
 * through it, so a counting hook can check the steady-state guarantee. */
typedef void *(heapprof_realloc_fn)(void *ctx, void *p, size_t old_size,
                                    size_t new_size);

/*! heapprof_pprof_check() :
 *  Parses and validates a profile.proto (gzip'd or not, at most `limit`
 *  bytes once inflated; 0: 1 GiB) as pprof's Parse + CheckValid would.
 *  @return : 0, or the HEAPPROF_E* code of the first problem found. */
HEAPPROF_API int heapprof_pprof_check(const void *data, size_t len,
                                      size_t limit);

/* A delta computer: one per stream of profiles from one source (one
 * process and profile type). Not thread-safe; use one per thread. */
typedef struct heapprof_delta heapprof_delta;

typedef struct heapprof_delta_options {
	/* Names of the sample types to subtract (matched by name, in any
	 * order). NULL: the cumulative types alloc_objects, alloc_space,
	 * contentions, delay. Every other type is passed through as is. */
	const char *const *types;
	size_t ntypes;
	/* A stack (with labels) absent from a profile keeps its last values:
	 * if it comes back, the delta is against those (as fastdelta does).
	 * Absent from at least this many consecutive profiles, it may be
	 * forgotten: such stacks are dropped together, once they are a
	 * quarter of all; a forgotten stack that comes back counts from
	 * zero. 0: 16. */
	unsigned max_age;
	size_t max_input; /* inflated input limit; 0: 1 GiB; at most 2 GiB */
	heapprof_realloc_fn *realloc_fn; /* NULL: libc */
	void *realloc_ctx;
} heapprof_delta_options;

typedef struct heapprof_delta_stats {
	uint64_t calls;          /* successful heapprof_delta_compute calls */
	size_t keys;             /* distinct (stack, labels) remembered */
	size_t frames;           /* distinct frames remembered */
	size_t state_bytes;      /* memory held, state and scratch */
	size_t last_samples_in;  /* samples in the last input */
	size_t last_samples_out; /* samples in the last output */
	uint64_t evicted;        /* keys forgotten so far */
} heapprof_delta_stats;

#define HEAPPROF_DELTA_GZIP 1u /* gzip the output (level 1) */
/* Fail with HEAPPROF_ETYPES unless the profile's sample types (type and
 * unit, in any order) are the previous successful call's (more than 64
 * types: in the same order). No check on a first call. */
#define HEAPPROF_DELTA_SAME_TYPES 2u
/* Fail with HEAPPROF_ENOSUBTRACT unless one of the profile's sample types
 * is to be subtracted (a --types name with no match, a profile with no
 * cumulative type). */
#define HEAPPROF_DELTA_SUBTRACT 4u

/*! heapprof_delta_new() :
 *  @opt may be NULL (defaults). @return : 0 or -ENOMEM / -EINVAL. */
HEAPPROF_API int heapprof_delta_new(heapprof_delta **out,
                                    const heapprof_delta_options *opt);
HEAPPROF_API void heapprof_delta_free(heapprof_delta *d);

/*! heapprof_delta_compute() :
 *  Reads the next profile of the stream (profile.proto, gzip'd or not) and
 *  writes the delta against the previous one through `write`:
 *    - subtracted types: current - previous (the first call, or a stack new
 *      to the stream, against zero); other types: current values;
 *    - samples with the same stack (addresses, or function/file/line where
 *      the address is 0) and labels are summed first; a sample is identified
 *      by that full key compared exactly;
 *    - samples whose values are all zero are dropped, and so are stacks
 *      present before but absent now (no negative "vanished" samples);
 *      negative deltas (a counter that went down) are kept;
 *    - only the locations, functions, mappings and strings the remaining
 *      samples need are written, strings renumbered compactly;
 *    - time_nanos = current; duration_nanos = current time - previous time
 *      (first call: the input's).
 *  On error the stream's values stay as they were (the caller may retry
 *  with the next profile), but output may have been partly written, and
 *  the stacks the failed call saw count as seen by it for max_age.
 *  @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_delta_compute(heapprof_delta *d, const void *profile,
                                        size_t len, unsigned flags,
                                        heapprof_write_fn *write, void *arg);

/* A positional reader of an input: copies up to n bytes from byte offset
 * `at` of the input into buf and returns how many (0 only at the input's
 * end; fewer than n is fine), or a negative error code, which the call
 * reading returns. pread(2) on a file descriptor is one. */
typedef long(heapprof_read_fn)(void *arg, uint64_t at, void *buf, size_t n);

/*! heapprof_delta_compute_read() :
 *  heapprof_delta_compute() for a profile read through `read` (gzip'd or
 *  not) rather than held in memory: the same output, byte for byte, while
 *  the computer holds only the profile's mappings, locations, functions
 *  and strings (a few percent of a heap profile) and a window of its
 *  samples. The input is read from its start up to four times per call
 *  (inflated each time if gzip'd: the index, the samples, then the samples
 *  whose values changed, to write them and to keep them), so it must give
 *  the same bytes each time: a difference that shows (other samples, another
 *  length, a sample of another form) is HEAPPROF_ECHANGED. Malformed input
 *  is an error as with heapprof_delta_compute; an input with several
 *  faults may be reported by another of them.
 *  An error in the last read, once the output is written, cannot leave the
 *  stream state as it was: the computer then starts the stream over (the
 *  next call is a first call). Any other error leaves it as an error of
 *  heapprof_delta_compute() does.
 *  @return : 0, or a negative error code. */
HEAPPROF_API int heapprof_delta_compute_read(heapprof_delta *d,
                                             heapprof_read_fn *read,
                                             void *rarg, unsigned flags,
                                             heapprof_write_fn *write,
                                             void *warg);

/*! heapprof_delta_reset() : forgets the stream (next call is a first call);
 *  keeps the memory for reuse. */
HEAPPROF_API void heapprof_delta_reset(heapprof_delta *d);

/*! heapprof_delta_get_stats() : @return : 0. */
HEAPPROF_API int heapprof_delta_get_stats(const heapprof_delta *d,
                                          heapprof_delta_stats *st);

/*! heapprof_delta_fault() :
 *  After a call that failed on a malformed input: what was wrong, naming
 *  the record, e.g. "location id 7: line has function 0" (for
 *  HEAPPROF_EID), "sample at byte 120: 3 values for 4 sample types";
 *  "" when the error code says all. Valid until the next call. */
HEAPPROF_API const char *heapprof_delta_fault(const heapprof_delta *d);

/* ------------------------------------------------------------------------
 * pprof toolkit: merge
 * ---------------------------------------------------------------------- */

/* One input of a merge: an encoded profile and a factor for its values. */
typedef struct heapprof_merge_input {
	const void *data; /* profile.proto, gzip'd or not; read during the call */
	size_t len;
	double scale;     /* values become int64(round(v * scale)), as pprof's
	                   * Profile.Scale; 0 means 1 (unscaled). -1 on the
	                   * older of two profiles gives pprof's -base delta. */
} heapprof_merge_input;

#define HEAPPROF_MERGE_GZIP 1u /* gzip the output (level 1) */

/*! heapprof_merge() :
 *  Merges `n` profiles with equal sample types and period type into one,
 *  as pprof's profile.Merge does: mappings matched by (size rounded up to
 *  4 KiB, file offset, build id or file name) with later inputs' addresses
 *  rebased; locations by (address in mapping, mapping, lines, folded);
 *  functions by (start line, name, system name, file); samples by
 *  (locations, labels); values summed; all-zero samples dropped; ids
 *  renumbered 1..N in order of first use. Header: earliest time, summed
 *  duration, largest period, comments de-duplicated, drop/keep frames and
 *  period type from the first input, first non-empty default sample type.
 *  The uncompressed output is byte for byte what pprof's Merge writes.
 *  @return : 0, or a negative error code: HEAPPROF_ETYPES if the types
 *  differ, HEAPPROF_EOVERFLOW if a summed value overflows int64, any
 *  decoder error, -EINVAL for n == 0 or a non-finite scale. On error some
 *  output may have been written. */
HEAPPROF_API int heapprof_merge(const heapprof_merge_input *in, size_t n,
                                unsigned flags, heapprof_write_fn *write,
                                void *arg);

/*! heapprof_merge_ex() :
 *  heapprof_merge() with a limit on each input's inflated size (0: 1 GiB)
 *  and, if `failed` is not NULL, the index of the input that caused the
 *  error stored in it (n if none or the error is not an input's). */
HEAPPROF_API int heapprof_merge_ex(const heapprof_merge_input *in, size_t n,
                                   unsigned flags, size_t limit, size_t *failed,
                                   heapprof_write_fn *write, void *arg);

/* ------------------------------------------------------------------------
 * legacy / convert: legacy text heap profiles <-> profile.proto
 * ---------------------------------------------------------------------- */

#define HEAPPROF_CONVERT_GZIP 1u /* gzip the profile.proto output */

/*! heapprof_legacy_to_pprof() :
 *  Reads a legacy heap profile -- pprof's legacy heap text (Go debug=1
 *  `heap/N`, gperftools `heapprofile`, `heap_v2/N`, `growthz`, ...) or a
 *  jemalloc `heap_v2/N` per-thread dump -- gzip'd or not, and writes it as
 *  profile.proto with the values, labels, locations and mappings pprof's
 *  own legacy parser gives (jemalloc: unsampled as jeprof does).
 *  @err_line : if not NULL, the 1-based line of a parse error (0: none).
 *  @return : 0, or a negative code (HEAPPROF_ENOTLEGACY, _ESAMPLE,
 *  _EZEROCOUNT, _EADDR, _EJEMALLOC, _EGZIP, -ENOMEM, write errors). */
HEAPPROF_API int heapprof_legacy_to_pprof(const void *data, size_t len,
                                          unsigned flags,
                                          heapprof_write_fn *write, void *arg,
                                          size_t *err_line);

/*! heapprof_pprof_to_legacy() :
 *  Writes a pprof heap profile (gzip'd or not) as legacy heap text that
 *  `go tool pprof`, google-pprof and jeprof read back with the same values
 *  per sample type and stack: `@ heapprofile` header (values taken as
 *  they are, no unsampling), return addresses, MAPPED_LIBRARIES:.
 *  @return : 0, or a negative code (HEAPPROF_ENOTHEAP, _ETEXTVALUE, decoder
 *  errors, write errors); output may be partial on error. */
HEAPPROF_API int heapprof_pprof_to_legacy(const void *data, size_t len,
                                          heapprof_write_fn *write, void *arg);

#ifdef __cplusplus
}
#endif
#endif
