/*
 * delta_write.c: the output side of the delta computer: samples as they
 * are emitted, then only the mappings, locations, functions and strings
 * those samples reference, with strings renumbered compactly, through
 * pb_write.c and (optionally) a reused gzip stream.
 */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

/* ------------------------------------------------------------ sinks */

static int
raw_sink(void *ctx, const uint8_t *p, size_t n)
{
	heapprof_delta *d = ctx;
	return d->write(d->write_arg, p, n);
}


void
heapprof__delta_out_free(heapprof_delta *d)
{
	heapprof__pb_free(&d->w);
	if (d->gz_ready)
		heapprof__gz_writer_abort(&d->gz);
	d->gz_ready = false;
}

/* ------------------------------------------------------------ strings */

HP_INLINE uint64_t
str_out(heapprof_delta *d, uint32_t i)
{
	if (i == 0)
		return 0;
	uint32_t o = d->str_map[i];
	if (o)
		return o;
	/* out_strs has room for every input string (sized in begin). */
	o = (uint32_t)d->nout_strs++;
	d->out_strs[o] = i;
	d->str_map[i] = o;
	return o;
}

/* A message of varint fields 1..n (v[1..n], zeros omitted as
 * pb_uint_opt does; n <= 11) under the one-byte tag of top-level field
 * `tag`, at out (room for 2 + 11 * n bytes): its length. */
HP_INLINE size_t
put_varints(uint8_t *out, unsigned field, const uint64_t *v, unsigned n)
{
	size_t k = 2;
	for (unsigned i = 1; i <= n; i++) {
		if (!v[i])
			continue;
		out[k++] = (uint8_t)(i << 3);
		k += heapprof__pb_put_varint_fast(out + k, v[i]);
	}
	out[0] = (uint8_t)(field << 3 | PB_LEN);
	out[1] = (uint8_t)(k - 2);
	return k;
}

/* The same as a top-level field of the output. */
static void
write_varints(pb_writer *w, unsigned field, const uint64_t *v, unsigned n)
{
	uint8_t *o = heapprof__pb_room(w, 2 + 11 * n);
	if (o)
		heapprof__pb_advance(w, put_varints(o, field, v, n));
}

/* ------------------------------------------------------------ output */

int
heapprof__delta_out_begin(heapprof_delta *d, unsigned flags,
                          heapprof_write_fn *write, void *arg)
{
	pprof_dec *dec = &d->dec;
	d->write = write;
	d->write_arg = arg;
	HP_TRY(heapprof__delta_grow(d, &d->str_map, &d->str_map_cap,
	                            dec->nstrings + 1, 4));
	HP_TRY(heapprof__delta_grow(d, &d->out_strs, &d->out_strs_cap,
	                            dec->nstrings + 1, 4));
	HP_TRY(heapprof__delta_grow(d, &d->loc_used, &d->loc_used_cap,
	                            dec->nlocs + 1, 1));
	HP_TRY(heapprof__delta_grow(d, &d->func_used, &d->func_used_cap,
	                            dec->nfuncs + 1, 1));
	HP_TRY(heapprof__delta_grow(d, &d->map_used, &d->map_used_cap,
	                            dec->nmaps + 1, 1));
	memset(d->str_map, 0, dec->nstrings * 4);
	memset(d->loc_used, 0, dec->nlocs);
	memset(d->func_used, 0, dec->nfuncs);
	memset(d->map_used, 0, dec->nmaps);
	d->out_strs[0] = 0;
	d->nout_strs = 1;

	pb_sink_fn *sink = raw_sink;
	void *sctx = d;
	if (flags & HEAPPROF_DELTA_GZIP) {
		if (!d->gz_ready) {
			d->gza.rf = d->rf;
			d->gza.rctx = d->rctx;
			HP_TRY(heapprof__gz_writer_init(&d->gz, 1, raw_sink, d,
			                                heapprof__gz_zalloc,
			                                heapprof__gz_zfree, &d->gza));
			d->gz_ready = true;
		} else if (deflateReset(&d->gz.zs) != Z_OK) {
			return HEAPPROF_EGZIP;
		}
		d->gz.err = 0;
		sink = heapprof__gz_write;
		sctx = &d->gz;
	}
	pb_writer *w = &d->w;
	w->len = 0;
	w->depth = 0;
	w->err = 0;
	w->sink = sink;
	w->sink_ctx = sctx;
	for (size_t t = 0; t < dec->ntypes; t++) {
		uint64_t v[3] = {0, str_out(d, dec->types[t].type)};
		v[2] = str_out(d, dec->types[t].unit);
		write_varints(w, PPROF_SAMPLE_TYPE, v, 2);
	}
	return w->err;
}

int
heapprof__delta_out_sample(heapprof_delta *d, const pprof_sample *s,
                           const int64_t *values)
{
	pb_writer *w = &d->w;
	heapprof__pb_begin(w, PPROF_SAMPLE);
	heapprof__pb_packed_u64(w, 1, s->location_ids, s->nlocations);
	heapprof__pb_packed_i64(w, 2, values, s->nvalues);
	for (size_t i = 0; i < s->nlabels; i++) {
		const pprof_label *lb = &s->labels[i];
		heapprof__pb_begin(w, 3);
		heapprof__pb_uint_opt(w, 1, str_out(d, lb->key));
		heapprof__pb_uint_opt(w, 2, str_out(d, lb->str));
		heapprof__pb_uint_opt(w, 3, (uint64_t)lb->num);
		heapprof__pb_uint_opt(w, 4, str_out(d, lb->num_unit));
		heapprof__pb_end(w);
	}
	heapprof__pb_end(w);
	for (size_t i = 0; i < s->nlocations; i++)
		d->loc_used[s->location_index[i]] = 1;
	return w->err;
}

/* The fast path's label encoder: one Label message (varint fields 1-4
 * only, string indexes in range) of the input at [q, fe) re-encoded with
 * renumbered strings at out (room for 2 + 4 * 11 bytes); its length, or 0
 * if its form needs the decoder. */
HP_INLINE size_t
fast_label(heapprof_delta *d, const uint8_t *q, const uint8_t *fe,
           uint8_t *out)
{
	const pprof_dec *dec = &d->dec;
	uint64_t f[5];
	if (!label_fields(q, fe, dec->s_hard, dec->nstrings, f))
		return 0;
	/* Renumber after parsing: the last of repeated fields wins. */
	f[1] = str_out(d, (uint32_t)f[1]);
	f[2] = str_out(d, (uint32_t)f[2]);
	f[4] = str_out(d, (uint32_t)f[4]);
	return put_varints(out, 3, f, 4); /* Sample.label */
}

/* Most labels per sample the fast path re-encodes on the stack. */
#define FAST_MAXLAB 8

int
heapprof__delta_out_fast(heapprof_delta *d, uint32_t off, uint32_t len,
                         const int64_t *values)
{
	pprof_dec *dec = &d->dec;
	const uint8_t *p = heapprof__pprof_sbytes(dec, off), *e = p + len;
	const uint8_t *hard = dec->s_hard;
	const uint8_t *ids = NULL; /* the one packed ids field */
	size_t ids_len = 0, nids_fields = 0, lab_len = 0, nlab = 0;
	uint8_t lab[FAST_MAXLAB * 46];
	bool minimal = true;
	while (p < e) {
		uint8_t tag;
		uint64_t n;
		if (!sample_field(&p, e, hard, &tag, &n) ||
		    tag == TAG_SAMPLE_LOCATION_ID)
			return 0;
		const uint8_t *q = p, *fe = p + n;
		p = fe;
		if (tag == TAG_SAMPLE_LOCATION_IDS) {
			ids = q;
			ids_len = (size_t)n;
			nids_fields++;
			const pprof_idmap *m = &dec->loc_ids;
			/* Dense ids (1..n, as Go writes them) and room to read
			 * two bytes past the run: ids of up to three bytes
			 * decoded inline, the table indexed directly. */
			if (m->dense && hard - fe >= 2) {
				while (q < fe) {
					uint64_t id = q[0];
					if (id < 0x80) {
						q++;
					} else if (q[1] < 0x80) {
						id = (id & 0x7f) | (uint64_t)q[1] << 7;
						minimal &= q[1] != 0;
						q += 2;
					} else if (q[2] < 0x80) {
						id = (id & 0x7f) |
						     (uint64_t)(q[1] & 0x7f) << 7 |
						     (uint64_t)q[2] << 14;
						minimal &= q[2] != 0;
						q += 3;
					} else {
						if (rd_varint(&q, hard, &id) < 0)
							return 0;
						minimal &= q[-1] != 0;
					}
					if (q > fe || id == 0 || id >= m->used ||
					    m->slots[id] == 0)
						return 0;
					d->loc_used[m->slots[id] - 1] = 1;
				}
				continue;
			}
			while (q < fe) {
				uint64_t id;
				long li;
				if (!packed_next(&q, fe, hard, &id) ||
				    (li = idmap_find(m, dec->locs, id)) < 0)
					return 0;
				minimal &= q[-1] != 0; /* no trailing 0x00 byte */
				d->loc_used[li] = 1;
			}
		} else if (tag == TAG_SAMPLE_LABEL) {
			if (nlab == FAST_MAXLAB)
				return 0;
			size_t l = fast_label(d, q, fe, lab + lab_len);
			if (!l)
				return 0;
			lab_len += l;
			nlab++;
		}
	}
	/* Anything but one minimal packed run of ids: the decoder's path. */
	if (nids_fields > 1 || !minimal)
		return 0;
	size_t nt = dec->ntypes;
	uint8_t vb[DELTA_MAXT * 10];
	size_t vlen = 0;
	if (nt > DELTA_MAXT)
		return 0;
	for (size_t t = 0; t < nt; t++)
		vlen += heapprof__pb_put_varint_fast(vb + vlen,
		                                     (uint64_t)values[t]);
	size_t body = lab_len;
	if (ids_len)
		body += 1 + heapprof__pb_varint_size(ids_len) + ids_len;
	if (nt)
		body += 1 + heapprof__pb_varint_size(vlen) + vlen;
	pb_writer *w = &d->w;
	uint8_t *o = heapprof__pb_room(w, body + 11);
	if (!o)
		return w->err;
	size_t k = 0;
	o[k++] = TAG_SAMPLE;
	k += heapprof__pb_put_varint_fast(o + k, body);
	if (ids_len) {
		o[k++] = TAG_SAMPLE_LOCATION_IDS;
		k += heapprof__pb_put_varint_fast(o + k, ids_len);
		memcpy(o + k, ids, ids_len);
		k += ids_len;
	}
	if (nt) {
		o[k++] = TAG_SAMPLE_VALUES;
		k += heapprof__pb_put_varint_fast(o + k, vlen);
		memcpy(o + k, vb, vlen);
		k += vlen;
	}
	memcpy(o + k, lab, lab_len);
	heapprof__pb_advance(w, k + lab_len);
	return 1;
}

static int
write_refs(heapprof_delta *d)
{
	pprof_dec *dec = &d->dec;
	pb_writer *w = &d->w;
	/* Which functions and mappings the used locations need. */
	for (size_t i = 0; i < dec->nlocs; i++) {
		if (!d->loc_used[i])
			continue;
		pprof_location l;
		HP_TRY(heapprof__pprof_location(dec, i, &l));
		long m = heapprof__pprof_find_mapping(dec, l.mapping_id);
		if (m >= 0)
			d->map_used[m] = 1;
		for (size_t k = 0; k < l.nlines; k++) {
			long f = heapprof__pprof_find_function(
				dec, l.lines[k].function_id);
			if (f >= 0)
				d->func_used[f] = 1;
		}
	}
	for (size_t i = 0; i < dec->nmaps; i++) {
		if (!d->map_used[i])
			continue;
		pprof_mapping m;
		HP_TRY(heapprof__pprof_mapping(dec, i, &m));
		uint64_t v[11] = {0, m.id, m.memory_start, m.memory_limit,
		                  m.file_offset, 0, 0, m.has_functions,
		                  m.has_filenames, m.has_line_numbers,
		                  m.has_inline_frames};
		v[5] = str_out(d, m.filename);
		v[6] = str_out(d, m.build_id);
		write_varints(w, PPROF_MAPPING, v, 10);
	}
	/* Locations hold no string indexes: their bytes are copied. */
	for (size_t i = 0; i < dec->nlocs; i++)
		if (d->loc_used[i])
			heapprof__pb_bytes_field(w, PPROF_LOCATION,
			                         dec->buf + dec->locs[i].off,
			                         dec->locs[i].len);
	for (size_t i = 0; i < dec->nfuncs; i++) {
		if (!d->func_used[i])
			continue;
		pprof_function f;
		HP_TRY(heapprof__pprof_function(dec, i, &f));
		uint64_t v[6] = {0, f.id, 0, 0, 0, (uint64_t)f.start_line};
		v[2] = str_out(d, f.name);
		v[3] = str_out(d, f.system_name);
		v[4] = str_out(d, f.filename);
		write_varints(w, PPROF_FUNCTION, v, 5);
	}
	return w->err;
}

int
heapprof__delta_out_finish(heapprof_delta *d, unsigned flags,
                           int64_t time_nanos, int64_t duration_nanos)
{
	pprof_dec *dec = &d->dec;
	pb_writer *w = &d->w;
	HP_TRY(write_refs(d));
	heapprof__pb_uint_opt(w, PPROF_DROP_FRAMES, str_out(d, dec->drop_frames));
	heapprof__pb_uint_opt(w, PPROF_KEEP_FRAMES, str_out(d, dec->keep_frames));
	heapprof__pb_uint_opt(w, PPROF_TIME_NANOS, (uint64_t)time_nanos);
	heapprof__pb_uint_opt(w, PPROF_DURATION_NANOS, (uint64_t)duration_nanos);
	if (dec->period_type.type || dec->period_type.unit) {
		uint64_t v[3] = {0, str_out(d, dec->period_type.type)};
		v[2] = str_out(d, dec->period_type.unit);
		write_varints(w, PPROF_PERIOD_TYPE, v, 2);
	}
	heapprof__pb_uint_opt(w, PPROF_PERIOD, (uint64_t)dec->period);
	for (size_t i = 0; i < dec->ncomments; i++)
		heapprof__pb_varint_field(w, PPROF_COMMENT,
		                          str_out(d, dec->comments[i]));
	heapprof__pb_uint_opt(w, PPROF_DEFAULT_SAMPLE_TYPE,
	                      str_out(d, dec->default_sample_type));
	heapprof__pb_uint_opt(w, PPROF_DOC_URL, str_out(d, dec->doc_url));
	for (size_t i = 0; i < d->nout_strs; i++) {
		size_t l;
		const char *s = heapprof__pprof_string(dec, d->out_strs[i], &l);
		uint8_t *o = heapprof__pb_room(w, l + 11);
		if (!o)
			return w->err;
		o[0] = TAG_STRING;
		size_t k = 1 + heapprof__pb_put_varint_fast(o + 1, l);
		memcpy(o + k, s, l);
		heapprof__pb_advance(w, k + l);
	}
	HP_TRY(heapprof__pb_finish(w));
	if (flags & HEAPPROF_DELTA_GZIP)
		HP_TRY(heapprof__gz_writer_end(&d->gz));
	return 0;
}
