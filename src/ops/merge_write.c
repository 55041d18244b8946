/*
 * merge_write.c: writing the merged profile, and heapprof_merge(), the
 * public entry point. Renumbers what survives (samples whose summed values
 * are not all zero) 1..N in order of first use, mapping 1 staying the main
 * binary, as pprof's Merge (and its re-merge after dropping zero samples)
 * does, then encodes the result with pprof's field order, string-table
 * order and packing rules (repeated scalars packed only when more than two),
 * through the shared streaming encoder (pb_write.c) and gzip (gz.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "gz.h"
#include "merge.h"

#define V(m, T, vec) ((T *)(m)->vec.p)

typedef struct wstate {
	mg_merger *m;
	pb_writer w;
	uint32_t *loc_out, *map_out, *func_out, *str_out; /* new id, 0: unused */
	uint32_t *loc_order, *map_order, *func_order, *str_order;
	size_t nloc, nmap, nfunc, nstr;
	uint64_t *tmp; /* per-sample id / value scratch */
	size_t tmp_cap;
} wstate;

static bool
sample_live(const mg_merger *m, const mg_sample *s)
{
	const int64_t *v = V(m, const int64_t, svals) + s->vals;
	for (size_t i = 0; i < m->ntypes; i++)
		if (v[i])
			return true;
	return false;
}

/* Output string index of interned string id, assigned on first use. */
static uint64_t
ostr(wstate *ws, uint32_t id)
{
	if (id == 0)
		return 0;
	if (!ws->str_out[id]) {
		ws->str_order[ws->nstr] = id;
		ws->str_out[id] = (uint32_t)++ws->nstr;
	}
	return ws->str_out[id];
}

/* Renumbers locations, mappings and functions in order of first use by the
 * surviving samples. */
static void
renumber(wstate *ws)
{
	mg_merger *m = ws->m;
	const mg_location *locs = m->locs.p;
	const mg_line *lines = m->lines.p;
	if (m->maps.n) {
		ws->map_out[0] = 1;
		ws->map_order[ws->nmap++] = 0;
	}
	for (size_t i = 0; i < m->samples.n; i++) {
		const mg_sample *s = V(m, const mg_sample, samples) + i;
		if (!sample_live(m, s))
			continue;
		const uint32_t *sl = V(m, const uint32_t, sloc) + s->locs;
		for (uint32_t j = 0; j < s->nlocs; j++) {
			uint32_t li = sl[j];
			if (ws->loc_out[li])
				continue;
			ws->loc_order[ws->nloc] = li;
			ws->loc_out[li] = (uint32_t)++ws->nloc;
			const mg_location *l = &locs[li];
			if (l->mapping && !ws->map_out[l->mapping - 1]) {
				ws->map_order[ws->nmap] = l->mapping - 1;
				ws->map_out[l->mapping - 1] = (uint32_t)++ws->nmap;
			}
			for (uint32_t k = 0; k < l->nlines; k++) {
				uint32_t f = lines[l->lines + k].func;
				if (f && !ws->func_out[f - 1]) {
					ws->func_order[ws->nfunc] = f - 1;
					ws->func_out[f - 1] = (uint32_t)++ws->nfunc;
				}
			}
		}
	}
}

/* pprof's encodeUint64s / encodeInt64s: packed only when n > 2. */
static void
put_repeated(pb_writer *w, uint32_t field, const uint64_t *v, size_t n)
{
	if (n > 2) {
		heapprof__pb_packed_u64(w, field, v, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		heapprof__pb_varint_field(w, field, v[i]);
}

static int
write_samples(wstate *ws)
{
	mg_merger *m = ws->m;
	pb_writer *w = &ws->w;
	for (size_t i = 0; i < m->samples.n && !w->err; i++) {
		const mg_sample *s = V(m, const mg_sample, samples) + i;
		if (!sample_live(m, s))
			continue;
		size_t need = s->nlocs > m->ntypes ? s->nlocs : m->ntypes;
		if (need > ws->tmp_cap) {
			uint64_t *t = realloc(ws->tmp, need * sizeof(uint64_t));
			if (!t)
				return -ENOMEM;
			ws->tmp = t;
			ws->tmp_cap = need;
		}
		heapprof__pb_begin(w, PPROF_SAMPLE);
		const uint32_t *sl = V(m, const uint32_t, sloc) + s->locs;
		for (uint32_t j = 0; j < s->nlocs; j++)
			ws->tmp[j] = ws->loc_out[sl[j]];
		put_repeated(w, 1, ws->tmp, s->nlocs);
		const int64_t *v = V(m, const int64_t, svals) + s->vals;
		for (size_t j = 0; j < m->ntypes; j++)
			ws->tmp[j] = (uint64_t)v[j];
		put_repeated(w, 2, ws->tmp, m->ntypes);
		const mg_label *l = V(m, const mg_label, slab) + s->labels;
		for (uint32_t j = 0; j < s->nlabels; j++) {
			heapprof__pb_begin(w, 3);
			heapprof__pb_uint_opt(w, 1, ostr(ws, l[j].key));
			if (l[j].is_str) {
				heapprof__pb_uint_opt(w, 2, ostr(ws, l[j].str));
			} else {
				heapprof__pb_uint_opt(w, 3, (uint64_t)l[j].num);
				heapprof__pb_uint_opt(w, 4, ostr(ws, l[j].unit));
			}
			heapprof__pb_end(w);
		}
		heapprof__pb_end(w);
	}
	return w->err;
}

static void
write_tables(wstate *ws)
{
	mg_merger *m = ws->m;
	pb_writer *w = &ws->w;
	for (size_t i = 0; i < ws->nmap && !w->err; i++) {
		const mg_mapping *mm = V(m, const mg_mapping, maps) + ws->map_order[i];
		heapprof__pb_begin(w, PPROF_MAPPING);
		heapprof__pb_uint_opt(w, 1, i + 1);
		heapprof__pb_uint_opt(w, 2, mm->start);
		heapprof__pb_uint_opt(w, 3, mm->limit);
		heapprof__pb_uint_opt(w, 4, mm->offset);
		heapprof__pb_uint_opt(w, 5, ostr(ws, mm->file));
		heapprof__pb_uint_opt(w, 6, ostr(ws, mm->build_id));
		for (int b = 0; b < 4; b++)
			heapprof__pb_uint_opt(w, 7 + (uint32_t)b, (mm->flags >> b) & 1);
		heapprof__pb_end(w);
	}
	for (size_t i = 0; i < ws->nloc && !w->err; i++) {
		const mg_location *l = V(m, const mg_location, locs) + ws->loc_order[i];
		heapprof__pb_begin(w, PPROF_LOCATION);
		heapprof__pb_uint_opt(w, 1, i + 1);
		heapprof__pb_uint_opt(w, 2, l->mapping ? ws->map_out[l->mapping - 1] : 0);
		heapprof__pb_uint_opt(w, 3, l->addr);
		const mg_line *ln = V(m, const mg_line, lines) + l->lines;
		for (uint32_t k = 0; k < l->nlines; k++) {
			heapprof__pb_begin(w, 4);
			heapprof__pb_uint_opt(w, 1, ln[k].func ? ws->func_out[ln[k].func - 1] : 0);
			heapprof__pb_uint_opt(w, 2, (uint64_t)ln[k].line);
			heapprof__pb_uint_opt(w, 3, (uint64_t)ln[k].column);
			heapprof__pb_end(w);
		}
		heapprof__pb_uint_opt(w, 5, l->folded);
		heapprof__pb_end(w);
	}
	for (size_t i = 0; i < ws->nfunc && !w->err; i++) {
		const mg_function *f = V(m, const mg_function, funcs) + ws->func_order[i];
		heapprof__pb_begin(w, PPROF_FUNCTION);
		heapprof__pb_uint_opt(w, 1, i + 1);
		heapprof__pb_uint_opt(w, 2, ostr(ws, f->name));
		heapprof__pb_uint_opt(w, 3, ostr(ws, f->system_name));
		heapprof__pb_uint_opt(w, 4, ostr(ws, f->filename));
		heapprof__pb_uint_opt(w, 5, (uint64_t)f->start_line);
		heapprof__pb_end(w);
	}
}

static void
write_header(wstate *ws)
{
	mg_merger *m = ws->m;
	pb_writer *w = &ws->w;
	/* Intern in pprof's preEncode order before the table goes out. */
	uint64_t drop = ostr(ws, m->drop_frames), keep = ostr(ws, m->keep_frames);
	uint64_t pt = ostr(ws, m->period_type[0]), pu = ostr(ws, m->period_type[1]);
	for (size_t i = 0; i < m->comments.n; i++)
		ostr(ws, ((const uint32_t *)m->comments.p)[i]);
	uint64_t dflt = ostr(ws, m->default_sample_type);
	uint64_t doc = ostr(ws, m->doc_url);

	heapprof__pb_bytes_field(w, PPROF_STRING_TABLE, "", 0);
	for (size_t i = 0; i < ws->nstr && !w->err; i++) {
		size_t n;
		const char *p = heapprof__strtab_get(&m->str, ws->str_order[i], &n);
		heapprof__pb_bytes_field(w, PPROF_STRING_TABLE, p, n);
	}
	heapprof__pb_uint_opt(w, PPROF_DROP_FRAMES, drop);
	heapprof__pb_uint_opt(w, PPROF_KEEP_FRAMES, keep);
	heapprof__pb_uint_opt(w, PPROF_TIME_NANOS, (uint64_t)m->time_nanos);
	heapprof__pb_uint_opt(w, PPROF_DURATION_NANOS, (uint64_t)m->duration_nanos);
	if (pt || pu) {
		heapprof__pb_begin(w, PPROF_PERIOD_TYPE);
		heapprof__pb_uint_opt(w, 1, pt);
		heapprof__pb_uint_opt(w, 2, pu);
		heapprof__pb_end(w);
	}
	heapprof__pb_uint_opt(w, PPROF_PERIOD, (uint64_t)m->period);
	for (size_t i = 0; i < m->comments.n; i++)
		ws->tmp[i] = ostr(ws, ((const uint32_t *)m->comments.p)[i]);
	put_repeated(w, PPROF_COMMENT, ws->tmp, m->comments.n);
	heapprof__pb_varint_field(w, PPROF_DEFAULT_SAMPLE_TYPE, dflt);
	heapprof__pb_uint_opt(w, PPROF_DOC_URL, doc);
}

int
heapprof__mg_write(mg_merger *m, pb_sink_fn *sink, void *sink_ctx)
{
	if (m->err)
		return m->err;
	if (m->ninputs == 0)
		return -EINVAL;
	wstate ws = {.m = m};
	int rc = -ENOMEM;
	size_t nl = m->locs.n + 1, nm = m->maps.n + 1, nf = m->funcs.n + 1;
	size_t ns = m->str.n + 1;
	ws.loc_out = calloc(nl, sizeof(uint32_t));
	ws.map_out = calloc(nm, sizeof(uint32_t));
	ws.func_out = calloc(nf, sizeof(uint32_t));
	ws.str_out = calloc(ns, sizeof(uint32_t));
	ws.loc_order = malloc(nl * sizeof(uint32_t));
	ws.map_order = malloc(nm * sizeof(uint32_t));
	ws.func_order = malloc(nf * sizeof(uint32_t));
	ws.str_order = malloc(ns * sizeof(uint32_t));
	ws.tmp_cap = m->comments.n + m->ntypes + 16;
	ws.tmp = malloc(ws.tmp_cap * sizeof(uint64_t));
	if (!ws.loc_out || !ws.map_out || !ws.func_out || !ws.str_out ||
	    !ws.loc_order || !ws.map_order || !ws.func_order || !ws.str_order ||
	    !ws.tmp)
		goto out;
	renumber(&ws);
	heapprof__pb_init(&ws.w, NULL, NULL, sink, sink_ctx);
	pb_writer *w = &ws.w;
	for (size_t i = 0; i < m->ntypes; i++) {
		heapprof__pb_begin(w, PPROF_SAMPLE_TYPE);
		heapprof__pb_uint_opt(w, 1, ostr(&ws, m->types[2 * i]));
		heapprof__pb_uint_opt(w, 2, ostr(&ws, m->types[2 * i + 1]));
		heapprof__pb_end(w);
	}
	rc = write_samples(&ws);
	if (rc == 0) {
		write_tables(&ws);
		write_header(&ws);
		rc = heapprof__pb_finish(w);
	}
	heapprof__pb_free(w);
out:
	free(ws.loc_out);
	free(ws.map_out);
	free(ws.func_out);
	free(ws.str_out);
	free(ws.loc_order);
	free(ws.map_order);
	free(ws.func_order);
	free(ws.str_order);
	free(ws.tmp);
	return rc;
}

/* ---------------------------------------------------------------- public */

struct user_sink {
	heapprof_write_fn *write;
	void *arg;
};

static int
to_user(void *ctx, const uint8_t *p, size_t n)
{
	const struct user_sink *u = ctx;
	return u->write(u->arg, p, n);
}

HP_EXPORT int
heapprof_merge_ex(const heapprof_merge_input *in, size_t n, unsigned flags,
                  size_t limit, size_t *failed, heapprof_write_fn *write,
                  void *arg)
{
	if (failed)
		*failed = n;
	if (n == 0 || !in || !write)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(in[i].scale) || (!in[i].data && in[i].len)) {
			if (failed)
				*failed = i;
			return -EINVAL;
		}
	}
	mg_merger *m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	heapprof__mg_init(m);
	int rc = m->err;
	for (size_t i = 0; i < n && rc == 0; i++) {
		double r = in[i].scale == 0 ? 1 : in[i].scale;
		rc = heapprof__mg_add(m, in[i].data, in[i].len, r, limit);
		if (rc < 0 && failed)
			*failed = i;
	}
	if (rc == 0) {
		struct user_sink u = {write, arg};
		if (flags & HEAPPROF_MERGE_GZIP) {
			gz_writer *g = malloc(sizeof(*g));
			rc = g ? heapprof__gz_writer_init(g, 1, to_user, &u, NULL,
			                                  NULL, NULL)
			       : -ENOMEM;
			if (rc == 0) {
				rc = heapprof__mg_write(m, heapprof__gz_write, g);
				if (rc == 0)
					rc = heapprof__gz_writer_finish(g);
				else
					heapprof__gz_writer_abort(g);
			}
			free(g);
		} else {
			rc = heapprof__mg_write(m, to_user, &u);
		}
	}
	heapprof__mg_free(m);
	free(m);
	return rc;
}

HP_EXPORT int
heapprof_merge(const heapprof_merge_input *in, size_t n, unsigned flags,
               heapprof_write_fn *write, void *arg)
{
	return heapprof_merge_ex(in, n, flags, 0, NULL, write, arg);
}
