/*
 * symbolize.c: adds symbols to a decoded profile (see symbolize.h).
 *
 * Pass 1 asks for the frames of every location of the chosen mappings,
 * interns the new functions (deduplicated on name, system name, file and
 * start line, as pprof's Function key) and strings, and works out each
 * mapping's flags. Pass 2 walks the input's top-level fields in order and
 * copies them through untouched, except the rewritten Locations (their own
 * fields kept, Lines replaced) and the chosen Mappings (flags replaced);
 * then appends the new Functions and the new strings, which take indexes
 * after the input's last string. Copied spans go out in one piece through a
 * small output buffer; everything re-encoded goes through pb_writer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "symbolize.h"
#include "fntab.h"
#include "strtab.h"

#define MAX_FRAMES 64

typedef struct new_line {
	uint64_t function_id;
	int64_t line;
} new_line;

/* Output buffer in front of the sink: batches small writes. */
typedef struct obuf {
	uint8_t buf[1 << 16];
	size_t n;
	pb_sink_fn *sink;
	void *ctx;
	int err;
} obuf;

typedef struct sym {
	pprof_dec *d;
	strtab st;
	fntab fns;
	pb_writer fw; /* the new Function fields (no sink) */
	new_line *lines;
	size_t nlines, lines_cap;
	uint32_t *loc_first, *loc_n; /* per location: its new lines (n 0: kept) */
	obuf *ob;
	pb_writer ow; /* re-encoded fields, sinks into ob */
} sym;

static int
ob_write(void *ctx, const uint8_t *p, size_t n)
{
	obuf *o = ctx;
	if (o->err)
		return o->err;
	if (n > sizeof(o->buf) - o->n && o->n) {
		int rc = o->sink(o->ctx, o->buf, o->n);
		if (rc < 0)
			return o->err = rc;
		o->n = 0;
	}
	if (n >= sizeof(o->buf)) {
		int rc = o->sink(o->ctx, p, n);
		return rc < 0 ? (o->err = rc) : 0;
	}
	memcpy(o->buf + o->n, p, n);
	o->n += n;
	return 0;
}

/* Raw input bytes to the output, after whatever ow holds. */
static int
emit_raw(sym *s, const uint8_t *p, size_t n)
{
	HP_TRY(heapprof__pb_finish(&s->ow));
	return n ? ob_write(s->ob, p, n) : 0;
}

static uint32_t
out_str(const sym *s, uint32_t sid)
{
	return sid ? (uint32_t)(s->d->nstrings + sid - 1) : 0;
}

static int
intern(sym *s, const char *str, uint32_t *id)
{
	if (!str) {
		*id = 0;
		return 0;
	}
	return heapprof__strtab_intern(&s->st, str, strlen(str), id);
}

/* The id of the function of frame f, writing a new Function if needed. */
static int
function_id(sym *s, const heapprof_frame *f, uint64_t *out)
{
	fntab_key k = {0};
	const char *sys = f->system_name ? f->system_name : f->function;
	HP_TRY(intern(s, f->function, &k.name));
	HP_TRY(intern(s, sys, &k.system_name));
	HP_TRY(intern(s, f->file, &k.filename));
	k.start_line = f->start_line;
	int is_new;
	HP_TRY(heapprof__fntab_get(&s->fns, &k, out, &is_new));
	if (!is_new)
		return 0;
	heapprof__pb_begin(&s->fw, PPROF_FUNCTION);
	heapprof__pb_varint_field(&s->fw, 1, *out);
	heapprof__pb_uint_opt(&s->fw, 2, out_str(s, k.name));
	heapprof__pb_uint_opt(&s->fw, 3, out_str(s, k.system_name));
	heapprof__pb_uint_opt(&s->fw, 4, out_str(s, k.filename));
	heapprof__pb_uint_opt(&s->fw, 5, (uint64_t)k.start_line);
	heapprof__pb_end(&s->fw);
	return s->fw.err;
}

/* NUL-terminated copy of string i (malloc'd), or NULL for "". */
static char *
str_copy(const pprof_dec *d, uint32_t i, int *err)
{
	size_t n;
	const char *p = heapprof__pprof_string(d, i, &n);
	if (!n)
		return NULL;
	char *c = malloc(n + 1);
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(c, p, n);
	c[n] = 0;
	return c;
}

/* Pass 1. */
static int
collect(sym *s, const bool *which, heapprof_sym_frames_fn *fn, void *arg,
        heapprof_mapping *hm, heapprof_sym_map_stats *st)
{
	pprof_dec *d = s->d;
	heapprof_frame fr[MAX_FRAMES];
	for (size_t i = 0; i < d->nlocs; i++) {
		pprof_location l;
		HP_TRY(heapprof__pprof_location(d, i, &l));
		long mi = heapprof__pprof_find_mapping(d, l.mapping_id);
		if (mi < 0 || !which[mi])
			continue;
		heapprof_sym_map_stats *ms = &st[mi];
		ms->locations++;
		size_t n = fn(arg, (size_t)mi, &hm[mi], l.address, fr, MAX_FRAMES);
		if (n > MAX_FRAMES)
			n = MAX_FRAMES;
		/* A Line needs a function: frames without a name are dropped. */
		size_t kept = 0;
		for (size_t k = 0; k < n; k++)
			if (fr[k].function && fr[k].function[0])
				fr[kept++] = fr[k];
		n = kept;
		int named = n > 0, files = n > 0, lines = n > 0;
		for (size_t k = 0; k < n; k++) {
			files &= fr[k].file && fr[k].file[0];
			lines &= fr[k].line > 0;
		}
		if (n == 0) {
			/* Kept as it was: only its function status is known. */
			named = l.nlines > 0;
			files = lines = 0;
		}
		ms->named += named;
		ms->has_functions &= named;
		ms->has_filenames &= files;
		ms->has_line_numbers &= lines;
		ms->has_inline_frames &= files && lines;
		if (n == 0)
			continue;
		if (s->nlines + n > s->lines_cap) {
			size_t nc = s->lines_cap ? s->lines_cap * 2 : 4096;
			while (nc < s->nlines + n)
				nc *= 2;
			new_line *nv = realloc(s->lines, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			s->lines = nv;
			s->lines_cap = nc;
		}
		s->loc_first[i] = (uint32_t)s->nlines;
		s->loc_n[i] = (uint32_t)n;
		for (size_t k = 0; k < n; k++) {
			new_line *nl = &s->lines[s->nlines++];
			nl->line = fr[k].line;
			HP_TRY(function_id(s, &fr[k], &nl->function_id));
		}
	}
	return 0;
}

/* Re-encodes the fields of message `raw` except those in [skip_lo,
 * skip_hi] (unknown fixed-width fields are dropped). */
static int
copy_fields(pb_writer *w, const uint8_t *raw, size_t len, uint32_t skip_lo,
            uint32_t skip_hi)
{
	pb_reader r;
	pb_field f;
	heapprof__pb_reader_init(&r, raw, len);
	while (heapprof__pb_more(&r)) {
		HP_TRY(heapprof__pb_next(&r, &f));
		if (f.num >= skip_lo && f.num <= skip_hi)
			continue;
		if (f.wire == PB_VARINT)
			heapprof__pb_varint_field(w, f.num, f.v);
		else if (f.wire == PB_LEN)
			heapprof__pb_bytes_field(w, f.num, f.data, f.len);
	}
	return 0;
}

static int
write_location(sym *s, size_t i)
{
	pprof_location l;
	HP_TRY(heapprof__pprof_location(s->d, i, &l));
	heapprof__pb_begin(&s->ow, PPROF_LOCATION);
	HP_TRY(copy_fields(&s->ow, l.raw, l.raw_len, 4, 4));
	for (uint32_t k = 0; k < s->loc_n[i]; k++) {
		const new_line *nl = &s->lines[s->loc_first[i] + k];
		heapprof__pb_begin(&s->ow, 4);
		heapprof__pb_uint_opt(&s->ow, 1, nl->function_id);
		heapprof__pb_uint_opt(&s->ow, 2, (uint64_t)nl->line);
		heapprof__pb_end(&s->ow);
	}
	heapprof__pb_end(&s->ow);
	return s->ow.err;
}

static int
write_mapping(sym *s, size_t i, const heapprof_sym_map_stats *ms)
{
	const pprof_rec *rec = &s->d->maps[i];
	heapprof__pb_begin(&s->ow, PPROF_MAPPING);
	HP_TRY(copy_fields(&s->ow, s->d->buf + rec->off, rec->len, 7, 10));
	heapprof__pb_uint_opt(&s->ow, 7, ms->has_functions);
	heapprof__pb_uint_opt(&s->ow, 8, ms->has_filenames);
	heapprof__pb_uint_opt(&s->ow, 9, ms->has_line_numbers);
	heapprof__pb_uint_opt(&s->ow, 10, ms->has_inline_frames);
	heapprof__pb_end(&s->ow);
	return s->ow.err;
}

/* Pass 2. */
static int
rewrite(sym *s, const bool *which, const heapprof_sym_map_stats *st)
{
	pprof_dec *d = s->d;
	pb_reader r;
	pb_field f;
	size_t li = 0, mi = 0;
	heapprof__pb_reader_init(&r, d->buf, d->len);
	const uint8_t *span = r.p;
	while (heapprof__pb_more(&r)) {
		const uint8_t *p0 = r.p;
		HP_TRY(heapprof__pb_next(&r, &f));
		if (f.num == PPROF_LOCATION && f.wire == PB_LEN) {
			size_t i = li++;
			if (i >= d->nlocs || !s->loc_n[i])
				continue;
			HP_TRY(emit_raw(s, span, (size_t)(p0 - span)));
			HP_TRY(write_location(s, i));
			span = r.p;
		} else if (f.num == PPROF_MAPPING && f.wire == PB_LEN) {
			size_t i = mi++;
			if (i >= d->nmaps || !which[i] || !st[i].locations)
				continue;
			HP_TRY(emit_raw(s, span, (size_t)(p0 - span)));
			HP_TRY(write_mapping(s, i, &st[i]));
			span = r.p;
		}
	}
	HP_TRY(emit_raw(s, span, (size_t)(r.p - span)));
	HP_TRY(emit_raw(s, s->fw.buf, s->fw.len));
	for (uint32_t i = 1; i < s->st.n; i++) {
		size_t n;
		const char *str = heapprof__strtab_get(&s->st, i, &n);
		heapprof__pb_bytes_field(&s->ow, PPROF_STRING_TABLE, str, n);
	}
	HP_TRY(heapprof__pb_finish(&s->ow));
	if (s->ob->n && !s->ob->err)
		s->ob->err = s->ob->sink(s->ob->ctx, s->ob->buf, s->ob->n);
	return s->ob->err < 0 ? s->ob->err : 0;
}

int
heapprof__symbolize_profile(pprof_dec *d, const bool *which,
                            heapprof_sym_frames_fn *fn, void *arg,
                            pb_sink_fn *sink, void *sink_ctx,
                            heapprof_sym_map_stats *stats)
{
	sym s;
	memset(&s, 0, sizeof(s));
	s.d = d;
	int rc = heapprof__strtab_init_pprof(&s.st);
	heapprof__pb_init(&s.fw, NULL, NULL, NULL, NULL);
	s.ob = calloc(1, sizeof(*s.ob));
	heapprof_mapping *hm = calloc(d->nmaps + 1, sizeof(*hm));
	heapprof_sym_map_stats *st = calloc(d->nmaps + 1, sizeof(*st));
	s.loc_first = calloc(d->nlocs + 1, sizeof(uint32_t));
	s.loc_n = calloc(d->nlocs + 1, sizeof(uint32_t));
	if (rc == 0 && (!s.ob || !hm || !st || !s.loc_first || !s.loc_n))
		rc = -ENOMEM;
	if (rc == 0) {
		s.ob->sink = sink;
		s.ob->ctx = sink_ctx;
		heapprof__pb_init(&s.ow, NULL, NULL, ob_write, s.ob);
		for (size_t i = 0; i < d->nfuncs; i++)
			if (d->funcs[i].id >= s.fns.next)
				s.fns.next = d->funcs[i].id + 1;
	}
	for (size_t i = 0; rc == 0 && i < d->nmaps; i++) {
		pprof_mapping m;
		rc = heapprof__pprof_mapping(d, i, &m);
		if (rc < 0)
			break;
		hm[i].start = m.memory_start;
		hm[i].limit = m.memory_limit;
		hm[i].offset = m.file_offset;
		hm[i].file = str_copy(d, m.filename, &rc);
		hm[i].build_id = str_copy(d, m.build_id, &rc);
		st[i].has_functions = st[i].has_filenames = true;
		st[i].has_line_numbers = st[i].has_inline_frames = true;
	}
	if (rc == 0)
		rc = collect(&s, which, fn, arg, hm, st);
	if (rc == 0)
		rc = s.fw.err;
	if (rc == 0)
		rc = rewrite(&s, which, st);
	if (stats && st)
		for (size_t i = 0; i < d->nmaps; i++) {
			stats[i] = st[i];
			if (!st[i].locations)
				stats[i].has_functions = stats[i].has_filenames =
				stats[i].has_line_numbers =
				stats[i].has_inline_frames = false;
		}
	for (size_t i = 0; hm && i < d->nmaps; i++) {
		free((char *)hm[i].file);
		free((char *)hm[i].build_id);
	}
	free(hm);
	free(st);
	free(s.loc_first);
	free(s.loc_n);
	free(s.lines);
	heapprof__fntab_free(&s.fns);
	free(s.ob);
	heapprof__pb_free(&s.fw);
	heapprof__pb_free(&s.ow);
	heapprof__strtab_free(&s.st);
	return rc;
}
