/*
 * heap_encode.c: heap records -> pprof profile.proto (optionally gzip'd),
 * the shape of Go's runtime/pprof heap profile: period space/bytes, the four
 * sample types alloc_objects, alloc_space, inuse_objects, inuse_space, values
 * unsampled by scaleHeapSample, one numeric "bytes" label per sample (the
 * average object size) and, with HEAPPROF_ENCODE_LABELS, each record's
 * string labels (label sets, issue 33), locations deduplicated by address, one mapping per
 * executable segment, function names from a caller-supplied symbolizer,
 * or, with symbolize_frames, one Line per source frame (inlined callees
 * first; functions keyed on name, system name, file and start line) and
 * mapping has_* flags that hold for every location of the mapping.
 *
 * Field order follows Go: period type, period, sample types, locations and
 * functions, samples, time, mappings, comments, and the string table last,
 * so the output streams through pb_writer without holding the profile.
 *
 * Owns: heapprof_encode_heap(), heapprof_scale_heap_sample(). Uses libc
 * malloc for its hash tables: in-process it runs on the dumping thread with
 * the profiler's re-entrancy guard set, so those allocations go straight to
 * the real allocator.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "gz.h"
#include "demangle.h"
#include "fntab.h"
#include "heap_encode.h"
#include "hpmath.h"
#include "pb.h"
#include "strtab.h"
#include "u64map.h"
#include "utf8.h"

/* profile.proto field numbers (perftools.profiles.Profile). */
enum {
	P_SAMPLE_TYPE = 1,
	P_SAMPLE = 2,
	P_MAPPING = 3,
	P_LOCATION = 4,
	P_FUNCTION = 5,
	P_STRING_TABLE = 6,
	P_TIME_NANOS = 9,
	P_DURATION_NANOS = 10,
	P_PERIOD_TYPE = 11,
	P_PERIOD = 12,
	P_COMMENT = 13,
	P_DEFAULT_SAMPLE_TYPE = 14,
};

HP_EXPORT void
heapprof_scale_heap_sample(int64_t count, int64_t size, int64_t rate,
                           int64_t *out_count, int64_t *out_size)
{
	/* Go's scaleHeapSample (runtime/pprof/protomem.go): a sample of
	 * average size S is taken with probability 1 - exp(-S/R), so each
	 * one stands for 1 / (1 - exp(-S/R)) allocations. Truncates, as Go. */
	if (count == 0) {
		*out_count = 0;
		*out_size = 0;
		return;
	}
	if (rate <= 1) {
		*out_count = count;
		*out_size = size;
		return;
	}
	/* Zero-byte objects were sampled as weighing one byte (Go returns
	 * 0, 0 here; it never samples them): their count is unsampled with
	 * that weight, so 100,000 live malloc(0) blocks stay 100,000. */
	double avg = size == 0 ? 1.0 : (double)size / (double)count;
	double scale = 1.0 / (1.0 - hp_exp_neg(avg / (double)rate));
	*out_count = (int64_t)((double)count * scale);
	*out_size = (int64_t)((double)size * scale);
}

/* ------------------------------------------------------------- encoding */

typedef struct enc {
	const heapprof_heap_profile *p;
	unsigned flags;
	pb_writer w;
	strtab st;
	u64map locs;
	uint32_t nloc;
	uint32_t *fn_ids; /* string id -> function id (0 = none yet) */
	size_t fn_ids_cap;
	uint32_t nfn;
	size_t *map_order; /* mapping indexes sorted by start */
	uint64_t *loc_buf;
	size_t loc_buf_cap;
	/* With p->symbolize_frames: functions keyed on (name, system name,
	 * file, start line), and per mapping what all its locations had. */
	fntab fns;
	uint8_t *map_flags; /* MF_* */
	const heapprof__age_split *ages; /* NULL: no age labels */
	uint32_t s_age, s_seconds;       /* their strings, once interned */
	int64_t *age_vals;               /* scratch: 2 per part */
	size_t age_vals_cap;
	/* The string ids of the record being written's labels
	 * (HEAPPROF_ENCODE_LABELS): key, value, ... */
	uint32_t *lab_ids;
	size_t nlab, lab_cap;
} enc;

/* What a mapping's locations got from the symbolizers. A mapping that got
 * any function name is written has_functions: it was symbolized here, from
 * the symbol table that also covers its unnamed addresses, and go tool
 * pprof must not symbolize it again (from a binary rebuilt since, or one
 * that lacks a name this profile has, it would show "[file]" for all).
 * has_filenames and has_line_numbers need a file and a line on every
 * frame of every named location. */
enum {
	MF_USED = 1,      /* the mapping has locations */
	MF_FUNCTIONS = 2, /* ... at least one with a function */
	MF_NOFILES = 4,   /* ... a named one with a frame without a file */
	MF_NOLINES = 8,   /* ... a named one with a frame without a line */
};

static void
note_mapping(enc *e, long mi, int named, int files, int lines)
{
	if (mi < 0 || !e->map_flags)
		return;
	uint8_t f = e->map_flags[mi] | MF_USED;
	if (named)
		f |= (uint8_t)(MF_FUNCTIONS | (files ? 0 : MF_NOFILES) |
		               (lines ? 0 : MF_NOLINES));
	e->map_flags[mi] = f;
}

#define MAX_FRAMES 64

static int
map_cmp(const void *a, const void *b, void *arg)
{
	const heapprof_mapping *m = arg;
	uint64_t x = m[*(const size_t *)a].start, y = m[*(const size_t *)b].start;
	return x < y ? -1 : x > y;
}

/* The index of the mapping containing addr, or -1. */
static long
find_mapping(const enc *e, uint64_t addr)
{
	const heapprof_mapping *m = e->p->mappings;
	size_t lo = 0, hi = e->p->nmappings;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m[e->map_order[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	size_t i = e->map_order[lo - 1];
	return addr < m[i].limit ? (long)i : -1;
}

/* The string ids of a symbol's system name (without a version suffix:
 * "__libc_start_main@@GLIBC_2.34" is "__libc_start_main") and display name.
 *
 * C++ names are demangled here, at write time in the process, with the
 * __cxa_demangle of a C++ runtime the program already has loaded (a name is
 * mangled only because C++ code is there): Function.name is what pprof and
 * Go show ("store::Cache::put"), system_name the linkage name. This runs on
 * the dumping thread with the re-entrancy guard set, so the demangler's
 * malloc goes to the real allocator, unsampled. No library is loaded for it
 * (dlopen would run a C++ runtime's constructors inside the program, from
 * an exit handler): without one the name stays mangled, name equal to
 * system_name, which go tool pprof and heapprof's tools demangle when they
 * show it. */
/* Interns the n bytes at s as valid UTF-8 (utf8.h: proto3 strings; an
 * invalid run becomes U+FFFD). */
static int
intern_n(enc *e, const char *s, size_t n, uint32_t *id)
{
	if (heapprof__utf8_valid(s, n))
		return heapprof__strtab_intern(&e->st, s, n, id);
	size_t fn;
	char *f = heapprof__utf8_fix(s, n, &fn);
	if (!f)
		return -ENOMEM;
	int rc = heapprof__strtab_intern(&e->st, f, fn, id);
	free(f);
	return rc;
}

static int
symbol_names(enc *e, const char *raw, const char *sys_given, uint32_t *name,
             uint32_t *sys)
{
	size_t n = heapprof__sym_unversioned_len(raw);
	HP_TRY(intern_n(e, raw, n, name));
	*sys = *name;
	if (sys_given) {
		size_t sn = heapprof__sym_unversioned_len(sys_given);
		return intern_n(e, sys_given, sn, sys);
	}
	if (n < 3 || raw[0] != '_' || raw[1] != 'Z')
		return 0;
	heapprof_demangle_fn *dm = heapprof__demangler_loaded();
	if (!dm)
		return 0;
	char *z = strndup(raw, n);
	if (!z)
		return -ENOMEM;
	char *d = heapprof__demangle_with(dm, z, 0);
	free(z);
	if (!d)
		return 0;
	int rc = intern_n(e, d, strlen(d), name);
	free(d);
	return rc;
}

static int
function_id(enc *e, const char *raw, uint32_t *out)
{
	uint32_t rid;
	if (!heapprof__utf8_valid(raw, strlen(raw))) {
		size_t fn;
		char *f = heapprof__utf8_fix(raw, strlen(raw), &fn);
		if (!f)
			return -ENOMEM;
		int rc = function_id(e, f, out);
		free(f);
		return rc;
	}
	HP_TRY(heapprof__strtab_intern(&e->st, raw, strlen(raw), &rid));
	if (rid >= e->fn_ids_cap) {
		size_t ncap = e->fn_ids_cap ? e->fn_ids_cap : 256;
		while (ncap <= rid)
			ncap *= 2;
		uint32_t *n = realloc(e->fn_ids, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + e->fn_ids_cap, 0,
		       (ncap - e->fn_ids_cap) * sizeof(*n));
		e->fn_ids = n;
		e->fn_ids_cap = ncap;
	}
	if (!e->fn_ids[rid]) {
		uint32_t name, sys;
		HP_TRY(symbol_names(e, raw, NULL, &name, &sys));
		uint32_t id = e->fn_ids[rid] = ++e->nfn;
		/* Function: id, name, system_name. */
		heapprof__pb_begin(&e->w, P_FUNCTION);
		heapprof__pb_varint_field(&e->w, 1, id);
		heapprof__pb_varint_field(&e->w, 2, name);
		heapprof__pb_varint_field(&e->w, 3, sys);
		heapprof__pb_end(&e->w);
	}
	*out = e->fn_ids[rid];
	return 0;
}

/* The function of a frame, written if new (frames mode). */
static int
frame_function(enc *e, const heapprof_frame *f, uint64_t *out)
{
	fntab_key k = {0};
	HP_TRY(symbol_names(e, f->function, f->system_name, &k.name,
	                    &k.system_name));
	if (f->file)
		HP_TRY(intern_n(e, f->file, strlen(f->file), &k.filename));
	k.start_line = f->start_line;
	int is_new;
	HP_TRY(heapprof__fntab_get(&e->fns, &k, out, &is_new));
	if (is_new) {
		heapprof__pb_begin(&e->w, P_FUNCTION);
		heapprof__pb_varint_field(&e->w, 1, *out);
		heapprof__pb_varint_field(&e->w, 2, k.name);
		heapprof__pb_varint_field(&e->w, 3, k.system_name);
		heapprof__pb_uint_opt(&e->w, 4, k.filename);
		heapprof__pb_uint_opt(&e->w, 5, (uint64_t)k.start_line);
		heapprof__pb_end(&e->w);
	}
	return 0;
}

/* Frames mode: asks symbolize_frames (then symbolize) for the frames of
 * addr, writes their functions, and notes what the mapping has. Returns
 * the number of lines in fid/line. */
static int
frame_lines(enc *e, uint64_t addr, long mi, uint64_t *fid, int64_t *line,
            size_t *nout)
{
	const heapprof_mapping *m = mi >= 0 ? &e->p->mappings[mi] : NULL;
	heapprof_frame fr[MAX_FRAMES];
	size_t n = e->p->symbolize_frames(e->p->symbolize_frames_arg, addr, m,
	                                  fr, MAX_FRAMES);
	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	int files = 1, lines = 1;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!fr[i].file || !fr[i].file[0])
			files = 0;
		if (fr[i].line <= 0)
			lines = 0;
		if (!fr[i].function || !fr[i].function[0])
			continue;
		HP_TRY(frame_function(e, &fr[i], &fid[k]));
		line[k++] = fr[i].line;
	}
	if (k == 0 && e->p->symbolize) {
		heapprof_frame f = {0};
		f.function = e->p->symbolize(e->p->symbolize_arg, addr, m);
		if (f.function && *f.function) {
			HP_TRY(frame_function(e, &f, &fid[0]));
			line[k++] = 0;
		}
		files = lines = 0;
	}
	note_mapping(e, mi, k > 0, files, lines);
	*nout = k;
	return 0;
}

/* Writes the Location for addr if new; returns its id. */
static int
location_id(enc *e, uint64_t addr, uint64_t *out)
{
	uint32_t id;
	int found;
	HP_TRY(heapprof__u64map_get_or_put(&e->locs, addr, e->nloc + 1, &id,
	                                   &found));
	if (found) {
		*out = id;
		return 0;
	}
	e->nloc++;
	long mi = find_mapping(e, addr);
	uint32_t fid = 0;
	if (e->p->symbolize_frames) {
		uint64_t fids[MAX_FRAMES];
		int64_t lines[MAX_FRAMES];
		size_t n = 0;
		HP_TRY(frame_lines(e, addr, mi, fids, lines, &n));
		heapprof__pb_begin(&e->w, P_LOCATION);
		heapprof__pb_varint_field(&e->w, 1, id);
		heapprof__pb_uint_opt(&e->w, 2, mi >= 0 ? (uint64_t)mi + 1 : 0);
		heapprof__pb_varint_field(&e->w, 3, addr);
		for (size_t k = 0; k < n; k++) {
			heapprof__pb_begin(&e->w, 4); /* Line */
			heapprof__pb_varint_field(&e->w, 1, fids[k]);
			heapprof__pb_uint_opt(&e->w, 2, (uint64_t)lines[k]);
			heapprof__pb_end(&e->w);
		}
		heapprof__pb_end(&e->w);
		*out = id;
		return 0;
	}
	if (e->p->symbolize) {
		const char *name = e->p->symbolize(
			e->p->symbolize_arg, addr, mi >= 0 ? &e->p->mappings[mi] : NULL);
		if (name && *name)
			HP_TRY(function_id(e, name, &fid));
		note_mapping(e, mi, fid != 0, 0, 0);
	}
	heapprof__pb_begin(&e->w, P_LOCATION);
	heapprof__pb_varint_field(&e->w, 1, id);
	heapprof__pb_uint_opt(&e->w, 2, mi >= 0 ? (uint64_t)mi + 1 : 0);
	heapprof__pb_varint_field(&e->w, 3, addr);
	if (fid) {
		heapprof__pb_begin(&e->w, 4); /* Line */
		heapprof__pb_varint_field(&e->w, 1, fid);
		heapprof__pb_end(&e->w);
	}
	heapprof__pb_end(&e->w);
	*out = id;
	return 0;
}

/* How many leaf frames of r are C++ allocator entry points (operator new
 * and new[], any form; they call malloc, which the profiler interposes).
 * They belong to the allocation, as Go's profiles start at the function
 * that allocates, so the sample starts below them: the leaf of a `new` is
 * the function that wrote it. Needs symbol names; one frame always stays. */
static size_t
alloc_frames(enc *e, const heapprof_record *r)
{
	size_t k = 0;
	if (!e->p->symbolize)
		return 0;
	while (k + 1 < r->depth) {
		long mi = find_mapping(e, r->stack[k]);
		const char *name = e->p->symbolize(
			e->p->symbolize_arg, r->stack[k],
			mi >= 0 ? &e->p->mappings[mi] : NULL);
		if (!name || !heapprof__is_alloc_entry(
			             name, heapprof__sym_unversioned_len(name)))
			break;
		k++;
	}
	return k;
}

static void
value_type(enc *e, uint32_t field, uint32_t type, uint32_t unit)
{
	heapprof__pb_begin(&e->w, field);
	heapprof__pb_varint_field(&e->w, 1, type);
	heapprof__pb_varint_field(&e->w, 2, unit);
	heapprof__pb_end(&e->w);
}

static int
intern(enc *e, const char *s, uint32_t *id)
{
	return intern_n(e, s, strlen(s), id);
}

/* The two peak sample types, after Go's four (tools that index 0..3 keep
 * working). */
static int
peak_types(enc *e, uint32_t s_count, uint32_t s_bytes)
{
	uint32_t s_po, s_ps;
	HP_TRY(intern(e, "peak_objects", &s_po));
	HP_TRY(intern(e, "peak_space", &s_ps));
	value_type(e, P_SAMPLE_TYPE, s_po, s_count);
	value_type(e, P_SAMPLE_TYPE, s_ps, s_bytes);
	return 0;
}

/* One Sample: locations e->loc_buf[0 .. depth), the nv values, the
 * "bytes" label (if block) and, for age >= 0, the age_s label. */
static void
write_sample(enc *e, size_t depth, const int64_t *v, size_t nv,
             uint32_t s_label, int64_t block, int64_t age)
{
	heapprof__pb_begin(&e->w, P_SAMPLE);
	heapprof__pb_packed_u64(&e->w, 1, e->loc_buf, depth);
	heapprof__pb_packed_i64(&e->w, 2, v, nv);
	if (block != 0) {
		heapprof__pb_begin(&e->w, 3); /* Label{key, num} */
		heapprof__pb_varint_field(&e->w, 1, s_label);
		heapprof__pb_varint_field(&e->w, 3, (uint64_t)block);
		heapprof__pb_end(&e->w);
	}
	if (age >= 0) {
		heapprof__pb_begin(&e->w, 3); /* Label{key, num, num_unit} */
		heapprof__pb_varint_field(&e->w, 1, e->s_age);
		heapprof__pb_uint_opt(&e->w, 3, (uint64_t)age);
		heapprof__pb_varint_field(&e->w, 4, e->s_seconds);
		heapprof__pb_end(&e->w);
	}
	for (size_t i = 0; i < e->nlab; i++) {
		heapprof__pb_begin(&e->w, 3); /* Label{key, str} */
		heapprof__pb_varint_field(&e->w, 1, e->lab_ids[2 * i]);
		heapprof__pb_varint_field(&e->w, 2, e->lab_ids[2 * i + 1]);
		heapprof__pb_end(&e->w);
	}
	heapprof__pb_end(&e->w);
}

/* Record i's age parts as in-use-only samples labelled age_s; *io, *is
 * (its unsampled in-use pair) become what is left for the record's own
 * sample, which keeps the alloc values: nothing is counted twice. */
static int
age_samples(enc *e, size_t i, const heapprof_record *r, int64_t rate,
            size_t depth, size_t nv, uint32_t s_label, int64_t block, int64_t *io,
            int64_t *is)
{
	size_t a = e->ages->first[i], n = e->ages->first[i + 1] - a;
	if (n == 0 || r->alloc_objects - r->free_objects <= 0)
		return 0;
	if (2 * n > e->age_vals_cap) {
		int64_t *grown = realloc(e->age_vals, 2 * n * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		e->age_vals = grown;
		e->age_vals_cap = 2 * n;
	}
	const heapprof__age_part *parts = e->ages->parts + a;
	int64_t ro, rb;
	heapprof__age_part_values(r, rate, parts, n, e->age_vals, &ro, &rb);
	if (*io == 0 && *is == 0)
		return 0;
	if (!e->s_age) {
		HP_TRY(intern(e, "age_s", &e->s_age));
		HP_TRY(intern(e, "seconds", &e->s_seconds));
	}
	for (size_t j = 0; j < n; j++) {
		int64_t v[6] = {0, 0, e->age_vals[2 * j], e->age_vals[2 * j + 1], 0, 0};
		if (v[2] || v[3])
			write_sample(e, depth, v, nv, s_label, block,
			             heapprof__age_class_floor(parts[j].cls));
	}
	*io = ro;
	*is = rb;
	return 0;
}

/* Record i's string labels interned into e->lab_ids (none without
 * HEAPPROF_ENCODE_LABELS). Pairs with an empty key are left out. */
static int
record_labels(enc *e, size_t i)
{
	e->nlab = 0;
	if (!(e->flags & HEAPPROF_ENCODE_LABELS) || !e->p->labels)
		return 0;
	const heapprof_record_labels *l = &e->p->labels[i];
	if (2 * l->n > e->lab_cap) {
		uint32_t *g = realloc(e->lab_ids, 2 * l->n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		e->lab_ids = g;
		e->lab_cap = 2 * l->n;
	}
	for (size_t j = 0; j < l->n; j++) {
		const heapprof_label *x = &l->labels[j];
		if (!x->key || !*x->key)
			continue;
		HP_TRY(intern(e, x->key, &e->lab_ids[2 * e->nlab]));
		HP_TRY(intern(e, x->value ? x->value : "",
		              &e->lab_ids[2 * e->nlab + 1]));
		e->nlab++;
	}
	return 0;
}

static int
encode_body(enc *e)
{
	const heapprof_heap_profile *p = e->p;
	uint32_t s_space, s_bytes, s_count, s_ao, s_as, s_io, s_is, s_label;
	HP_TRY(intern(e, "space", &s_space));
	HP_TRY(intern(e, "bytes", &s_bytes));
	HP_TRY(intern(e, "alloc_objects", &s_ao));
	HP_TRY(intern(e, "count", &s_count));
	HP_TRY(intern(e, "alloc_space", &s_as));
	HP_TRY(intern(e, "inuse_objects", &s_io));
	HP_TRY(intern(e, "inuse_space", &s_is));
	s_label = s_bytes;
	int peak = (e->flags & HEAPPROF_ENCODE_PEAK) && p->peaks;
	size_t nv = peak ? 6 : 4;

	value_type(e, P_PERIOD_TYPE, s_space, s_bytes);
	heapprof__pb_varint_field(&e->w, P_PERIOD, (uint64_t)p->rate);
	value_type(e, P_SAMPLE_TYPE, s_ao, s_count);
	value_type(e, P_SAMPLE_TYPE, s_as, s_bytes);
	value_type(e, P_SAMPLE_TYPE, s_io, s_count);
	value_type(e, P_SAMPLE_TYPE, s_is, s_bytes);
	if (peak)
		HP_TRY(peak_types(e, s_count, s_bytes));

	for (size_t i = 0; i < p->nrecords; i++) {
		const heapprof_record *r = &p->records[i];
		int64_t v[6] = {0, 0, 0, 0, 0, 0};
		/* Each record with the rate it was sampled at. */
		int64_t rate = r->rate ? r->rate : p->rate;
		heapprof_scale_heap_sample(r->alloc_objects, r->alloc_bytes,
		                           rate, &v[0], &v[1]);
		heapprof_scale_heap_sample(r->alloc_objects - r->free_objects,
		                           r->alloc_bytes - r->free_bytes, rate,
		                           &v[2], &v[3]);
		if (peak)
			heapprof_scale_heap_sample(p->peaks[i].objects,
			                           p->peaks[i].bytes, rate, &v[4],
			                           &v[5]);
		if (e->flags & HEAPPROF_ENCODE_INUSE_ONLY)
			v[0] = v[1] = 0;
		if ((e->flags & HEAPPROF_ENCODE_DROP_ZERO) && !v[0] && !v[1] &&
		    !v[2] && !v[3] && !v[4] && !v[5])
			continue;
		if (r->depth > e->loc_buf_cap) {
			size_t ncap = r->depth * 2;
			uint64_t *nb = realloc(e->loc_buf, ncap * sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			e->loc_buf = nb;
			e->loc_buf_cap = ncap;
		}
		/* Locations (and their functions) go out before the sample
		 * that uses them, as Go writes them. */
		size_t skip = alloc_frames(e, r), depth = r->depth - skip;
		for (size_t d = 0; d < depth; d++)
			HP_TRY(location_id(e, r->stack[skip + d], &e->loc_buf[d]));
		HP_TRY(record_labels(e, i));
		int64_t block = r->object_size ? r->object_size
		                : r->alloc_objects > 0 ? r->alloc_bytes / r->alloc_objects
		                                       : 0;
		if (e->ages)
			HP_TRY(age_samples(e, i, r, rate, depth, nv, s_label,
			                   block, &v[2], &v[3]));
		if ((e->flags & HEAPPROF_ENCODE_DROP_ZERO) && !v[0] && !v[1] &&
		    !v[2] && !v[3] && !v[4] && !v[5])
			continue; /* all in use went to age samples */
		write_sample(e, depth, v, nv, s_label, block, -1);
	}
	heapprof__pb_uint_opt(&e->w, P_TIME_NANOS, (uint64_t)p->time_nanos);
	heapprof__pb_uint_opt(&e->w, P_DURATION_NANOS, (uint64_t)p->duration_nanos);

	for (size_t i = 0; i < p->nmappings; i++) {
		const heapprof_mapping *m = &p->mappings[i];
		uint32_t file = 0, bid = 0;
		if (m->file)
			HP_TRY(intern(e, m->file, &file));
		if (m->build_id)
			HP_TRY(intern(e, m->build_id, &bid));
		heapprof__pb_begin(&e->w, P_MAPPING);
		heapprof__pb_varint_field(&e->w, 1, i + 1);
		heapprof__pb_uint_opt(&e->w, 2, m->start);
		heapprof__pb_uint_opt(&e->w, 3, m->limit);
		heapprof__pb_uint_opt(&e->w, 4, m->offset);
		heapprof__pb_uint_opt(&e->w, 5, file);
		heapprof__pb_uint_opt(&e->w, 6, bid);
		if (e->map_flags && (e->map_flags[i] & MF_FUNCTIONS)) {
			unsigned f = e->map_flags[i];
			heapprof__pb_varint_field(&e->w, 7, 1);
			heapprof__pb_uint_opt(&e->w, 8, !(f & MF_NOFILES));
			heapprof__pb_uint_opt(&e->w, 9, !(f & MF_NOLINES));
			heapprof__pb_uint_opt(&e->w, 10,
			                      !(f & (MF_NOFILES | MF_NOLINES)));
		}
		heapprof__pb_end(&e->w);
	}
	for (size_t i = 0; i < p->ncomments; i++) {
		uint32_t c;
		HP_TRY(intern(e, p->comments[i], &c));
		heapprof__pb_varint_field(&e->w, P_COMMENT, c);
	}
	const char *dflt = p->default_sample_type;
	if (peak && !(dflt && *dflt))
		dflt = "inuse_space"; /* not the last type, peak_space */
	if (dflt && *dflt) {
		uint32_t d;
		HP_TRY(intern(e, dflt, &d));
		heapprof__pb_varint_field(&e->w, P_DEFAULT_SAMPLE_TYPE, d);
	}
	for (uint32_t i = 0; i < e->st.n; i++) {
		size_t len;
		const char *s = heapprof__strtab_get(&e->st, i, &len);
		heapprof__pb_bytes_field(&e->w, P_STRING_TABLE, s, len);
	}
	return heapprof__pb_finish(&e->w);
}

struct sink_adapter {
	heapprof_write_fn *write;
	void *arg;
};

static int
adapter_write(void *ctx, const uint8_t *p, size_t n)
{
	struct sink_adapter *a = ctx;
	return a->write(a->arg, p, n);
}

static int
encode_to(const heapprof_heap_profile *p, unsigned flags,
          const heapprof__age_split *ages, pb_sink_fn *sink, void *sink_ctx)
{
	enc e;
	memset(&e, 0, sizeof(e));
	e.p = p;
	e.flags = flags;
	e.ages = ages;
	if (p->nmappings) {
		e.map_order = malloc(p->nmappings * sizeof(size_t));
		if (!e.map_order)
			return -ENOMEM;
		for (size_t i = 0; i < p->nmappings; i++)
			e.map_order[i] = i;
		qsort_r(e.map_order, p->nmappings, sizeof(size_t), map_cmp,
		        (void *)p->mappings);
	}
	if ((p->symbolize_frames || p->symbolize) && p->nmappings) {
		e.map_flags = calloc(p->nmappings, 1);
		if (!e.map_flags) {
			free(e.map_order);
			return -ENOMEM;
		}
	}
	heapprof__pb_init(&e.w, NULL, NULL, sink, sink_ctx);
	int rc = heapprof__strtab_init_pprof(&e.st);
	if (rc == 0)
		rc = encode_body(&e);
	heapprof__pb_free(&e.w);
	heapprof__strtab_free(&e.st);
	heapprof__u64map_free(&e.locs);
	free(e.fn_ids);
	free(e.map_order);
	free(e.loc_buf);
	free(e.map_flags);
	free(e.age_vals);
	free(e.lab_ids);
	heapprof__fntab_free(&e.fns);
	return rc;
}

int
heapprof__encode_heap_to(const heapprof_heap_profile *p, unsigned flags,
                         pb_sink_fn *sink, void *sink_ctx)
{
	return encode_to(p, flags, NULL, sink, sink_ctx);
}

HP_EXPORT int
heapprof_encode_heap(const heapprof_heap_profile *p, unsigned flags,
                     heapprof_write_fn *write, void *arg)
{
	return heapprof__encode_heap_age(p, flags, NULL, write, arg);
}

int
heapprof__encode_heap_age(const heapprof_heap_profile *p, unsigned flags,
                          const heapprof__age_split *ages,
                          heapprof_write_fn *write, void *arg)
{
	if (!p || !write || (p->nrecords && !p->records) ||
	    (p->nmappings && !p->mappings) || p->rate < 0)
		return -EINVAL;
	struct sink_adapter a = {write, arg};
	if (!(flags & HEAPPROF_ENCODE_GZIP))
		return encode_to(p, flags, ages, adapter_write, &a);
	gz_writer *g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc = heapprof__gz_writer_init(g, 1, adapter_write, &a, NULL, NULL,
	                                  NULL);
	if (rc == 0) {
		rc = encode_to(p, flags, ages, heapprof__gz_write, g);
		if (rc == 0)
			rc = heapprof__gz_writer_finish(g);
		else
			heapprof__gz_writer_abort(g);
	}
	free(g);
	return rc;
}
