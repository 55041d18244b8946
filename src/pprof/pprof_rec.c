/*
 * pprof_rec.c: the decoder's records (see pprof_dec.h): strings by index,
 * Location, Function and Mapping records decoded one by index, and the
 * validation open runs over all of them (string indexes in range, line
 * functions resolvable).
 */
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"
#include "pprof_int.h"

const char *
heapprof__pprof_string(const pprof_dec *d, uint64_t i, size_t *len)
{
	if (i >= d->nstrings) {
		*len = 0;
		return "";
	}
	*len = d->str.len[i];
	return (const char *)d->buf + d->str.off[i];
}

bool
heapprof__pprof_string_eq(const pprof_dec *d, uint64_t i, const char *s)
{
	size_t n;
	const char *p = heapprof__pprof_string(d, i, &n);
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

int
heapprof__pprof_location(pprof_dec *d, size_t i, pprof_location *out)
{
	const pprof_rec *rec = &d->locs[i];
	const uint8_t *hard = d->buf + d->len;
	pb_reader r, lr;
	pb_field f, g;
	size_t n = 0;
	memset(out, 0, sizeof(*out));
	out->raw = d->buf + rec->off;
	out->raw_len = rec->len;
	heapprof__pb_reader_init(&r, out->raw, rec->len);
	while (heapprof__pb_more(&r)) {
		HP_TRY(fnext(&r, hard, &f));
		switch (f.num) {
		case 1:
		case 2:
		case 3:
		case 5:
			HP_TRY(want(&f, PB_VARINT));
			if (f.num == 1)
				out->id = f.v;
			else if (f.num == 2)
				out->mapping_id = f.v;
			else if (f.num == 3)
				out->address = f.v;
			else
				out->is_folded = f.v != 0;
			break;
		case 4: {
			HP_TRY(want(&f, PB_LEN));
			HP_TRY(heapprof__pprof_grow(d, &d->l_lines, &d->l_lines_cap, n + 1,
			            sizeof(pprof_line)));
			pprof_line *ln = &d->l_lines[n++];
			memset(ln, 0, sizeof(*ln));
			heapprof__pb_reader_init(&lr, f.data, f.len);
			while (heapprof__pb_more(&lr)) {
				HP_TRY(fnext(&lr, hard, &g));
				if (g.num < 1 || g.num > 3)
					continue;
				HP_TRY(want(&g, PB_VARINT));
				if (g.num == 1)
					ln->function_id = g.v;
				else if (g.num == 2)
					ln->line = (int64_t)g.v;
				else
					ln->column = (int64_t)g.v;
			}
			break;
		}
		default:
			break;
		}
	}
	out->lines = d->l_lines;
	out->nlines = n;
	return 0;
}

int
heapprof__pprof_function(const pprof_dec *d, size_t i, pprof_function *out)
{
	const pprof_rec *rec = &d->funcs[i];
	const uint8_t *hard = d->buf + d->len;
	pb_reader r;
	pb_field f;
	memset(out, 0, sizeof(*out));
	heapprof__pb_reader_init(&r, d->buf + rec->off, rec->len);
	while (heapprof__pb_more(&r)) {
		HP_TRY(fnext(&r, hard, &f));
		if (f.num < 1 || f.num > 5)
			continue;
		HP_TRY(want(&f, PB_VARINT));
		switch (f.num) {
		case 1:
			out->id = f.v;
			break;
		case 2:
			HP_TRY(str_idx(f.v, &out->name));
			break;
		case 3:
			HP_TRY(str_idx(f.v, &out->system_name));
			break;
		case 4:
			HP_TRY(str_idx(f.v, &out->filename));
			break;
		default:
			out->start_line = (int64_t)f.v;
			break;
		}
	}
	return 0;
}

int
heapprof__pprof_mapping(const pprof_dec *d, size_t i, pprof_mapping *out)
{
	const pprof_rec *rec = &d->maps[i];
	const uint8_t *hard = d->buf + d->len;
	pb_reader r;
	pb_field f;
	memset(out, 0, sizeof(*out));
	heapprof__pb_reader_init(&r, d->buf + rec->off, rec->len);
	while (heapprof__pb_more(&r)) {
		HP_TRY(fnext(&r, hard, &f));
		if (f.num < 1 || f.num > 10)
			continue;
		HP_TRY(want(&f, PB_VARINT));
		switch (f.num) {
		case 1: out->id = f.v; break;
		case 2: out->memory_start = f.v; break;
		case 3: out->memory_limit = f.v; break;
		case 4: out->file_offset = f.v; break;
		case 5: HP_TRY(str_idx(f.v, &out->filename)); break;
		case 6: HP_TRY(str_idx(f.v, &out->build_id)); break;
		case 7: out->has_functions = f.v != 0; break;
		case 8: out->has_filenames = f.v != 0; break;
		case 9: out->has_line_numbers = f.v != 0; break;
		default: out->has_inline_frames = f.v != 0; break;
		}
	}
	return 0;
}

/* String index i of field `what` of record `kind` id `id` in range. */
#define CHECK_STR(d, kind, id, what, i)                                        \
	do {                                                                   \
		if ((i) >= (d)->nstrings)                                      \
			return heapprof__pprof_fault(                          \
				d, HEAPPROF_EINDEX,                            \
				"%s id %llu: %s is string %llu of %zu", kind,  \
				(unsigned long long)(id), what,                \
				(unsigned long long)(i), (d)->nstrings);       \
	} while (0)

int
heapprof__pprof_validate_records(pprof_dec *d)
{
	for (size_t i = 0; i < d->nmaps; i++) {
		pprof_mapping m;
		HP_TRY(heapprof__pprof_mapping(d, i, &m));
		CHECK_STR(d, "mapping", d->maps[i].id, "filename", m.filename);
		CHECK_STR(d, "mapping", d->maps[i].id, "build_id", m.build_id);
	}
	for (size_t i = 0; i < d->nfuncs; i++) {
		pprof_function fn;
		HP_TRY(heapprof__pprof_function(d, i, &fn));
		CHECK_STR(d, "function", d->funcs[i].id, "name", fn.name);
		CHECK_STR(d, "function", d->funcs[i].id, "system_name",
		          fn.system_name);
		CHECK_STR(d, "function", d->funcs[i].id, "filename",
		          fn.filename);
	}
	for (size_t i = 0; i < d->nlocs; i++) {
		pprof_location l;
		HP_TRY(heapprof__pprof_location(d, i, &l));
		/* An unresolved mapping_id is allowed (pprof leaves it nil);
		 * a line must name a function that exists. */
		for (size_t k = 0; k < l.nlines; k++) {
			uint64_t f = l.lines[k].function_id;
			if (idmap_find(&d->func_ids, d->funcs, f) < 0)
				return heapprof__pprof_fault(
					d, HEAPPROF_EID,
					"location id %llu: line has function "
					"%llu%s",
					(unsigned long long)d->locs[i].id,
					(unsigned long long)f,
					f ? ", which does not exist" : "");
		}
	}
	return 0;
}
