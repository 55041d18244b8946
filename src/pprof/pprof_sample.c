/*
 * pprof_sample.c: the decoder's samples (pprof_dec.h): iteration in input
 * order over the buffer or, in stream mode, through pprof_stream.c;
 * decoding and validation of one sample (values per type, location ids,
 * label strings); the full CheckValid-equivalent check, and its public
 * entry point heapprof_pprof_check().
 */
#include "heapprof.h"
#include "pprof_int.h"
#include "pprof_stream.h"

/* Makes room for `need` location ids (s_locs and s_lidx share a cap). */
static int
room_locs(pprof_dec *d, size_t need)
{
	if (need <= d->s_locs_cap)
		return 0;
	size_t c = d->s_locs_cap, c2 = d->s_locs_cap;
	HP_TRY(heapprof__pprof_grow(d, &d->s_locs, &c, need, sizeof(uint64_t)));
	HP_TRY(heapprof__pprof_grow(d, &d->s_lidx, &c2, need, sizeof(uint32_t)));
	d->s_locs_cap = c;
	return 0;
}

/* Appends the varints of a packed or single field to arr[*n...]; the
 * caller made room for *n + (f->wire == PB_LEN ? f->len : 1). */
static int
read_repeated(const pb_field *f, uint64_t *arr, size_t *n, const uint8_t *hard)
{
	if (f->wire == PB_VARINT) {
		arr[(*n)++] = f->v;
		return 0;
	}
	if (f->len == 0)
		return 0; /* f->data may be NULL: no pointer arithmetic on it */
	const uint8_t *p = f->data, *e = f->data + f->len;
	uint64_t *out = arr + *n;
	/* Varints may be decoded against the end of the whole buffer (10
	 * bytes of slack make the fast path hit at the end of a message);
	 * one that crosses the end of this field is then an error. */
	while (p < e) {
		HP_TRY(rd_varint(&p, hard, out));
		out++;
	}
	if (p != e)
		return HEAPPROF_ETRUNC;
	*n = (size_t)(out - arr);
	return 0;
}

static int
parse_label(const pprof_dec *d, const pb_field *f, pprof_label *lb)
{
	uint64_t v[5] = {0, 0, 0, 0, 0};
	HP_TRY(want(f, PB_LEN));
	if (f->len != 0 && /* (f->data may be NULL when it is 0) */
	    !label_fields(f->data, f->data + f->len, d->s_hard, d->nstrings,
	                  v)) {
		pb_reader r = {f->data, f->data + f->len};
		memset(v, 0, sizeof(v));
		while (heapprof__pb_more(&r)) {
			pb_field g;
			HP_TRY(heapprof__pb_next(&r, &g));
			if (g.num < 1 || g.num > 4)
				continue;
			HP_TRY(want(&g, PB_VARINT));
			if (g.num != 3 && g.v > UINT32_MAX)
				return HEAPPROF_EINDEX;
			v[g.num] = g.v;
		}
		if (v[1] >= d->nstrings || v[2] >= d->nstrings ||
		    v[4] >= d->nstrings)
			return HEAPPROF_EINDEX;
	}
	lb->key = (uint32_t)v[1];
	lb->str = (uint32_t)v[2];
	lb->num = (int64_t)v[3];
	lb->num_unit = (uint32_t)v[4];
	return 0;
}

/* How many varints a packed field holds (each ends with a byte below
 * 0x80), or 1 for a single one. */
static size_t
varint_count(const pb_field *f)
{
	if (f->wire != PB_LEN)
		return 1;
	size_t n = 0;
	for (size_t i = 0; i < f->len; i++)
		n += f->data[i] < 0x80;
	return n;
}

/* A sample past one of the caps above: an error that names the cap. */
static int
too_many(pprof_dec *d, const uint8_t *data, const char *what, unsigned cap)
{
	return heapprof__pprof_fault(d, HEAPPROF_ESAMPLECAP,
	                             "sample at byte %u: more than %u %s "
	                             "(heapprof's limit for one sample)",
	                             d->s_at + (uint32_t)(data - d->s_win), cap,
	                             what);
}

static int
decode_sample(pprof_dec *d, const uint8_t *data, size_t len, pprof_sample *out)
{
	size_t nl = 0, nv = 0, nlab = 0;
	const uint8_t *p = data, *e = data + len;
	pb_field f;
	while (p < e) {
		uint8_t tag;
		uint64_t n;
		if (HP_LIKELY(sample_field(&p, e, d->s_hard, &tag, &n))) {
			f.num = tag >> 3;
			f.wire = tag & 7;
			f.v = n;
			f.data = p;
			f.len = 0;
			if (f.wire == PB_LEN) {
				f.len = (size_t)n;
				p += n;
			}
		} else {
			pb_reader r = {p, e};
			HP_TRY(heapprof__pb_next(&r, &f));
			p = r.p;
		}
		switch (f.num) {
		case 1:
			if (f.wire != PB_VARINT && f.wire != PB_LEN)
				return HEAPPROF_EWIRETYPE;
			/* f.len bounds the ids (a byte at least each): only a
			 * field that long is counted. */
			if (HP_UNLIKELY(nl + (f.wire == PB_LEN ? f.len : 1) >
			                PPROF_MAX_SAMPLE_LOCS) &&
			    nl + varint_count(&f) > PPROF_MAX_SAMPLE_LOCS)
				return too_many(d, data, "locations",
				                PPROF_MAX_SAMPLE_LOCS);
			HP_TRY(room_locs(d, nl + (f.wire == PB_LEN ? f.len : 1)));
			HP_TRY(read_repeated(&f, d->s_locs, &nl, d->s_hard));
			break;
		case 2:
			if (f.wire != PB_VARINT && f.wire != PB_LEN)
				return HEAPPROF_EWIRETYPE;
			/* More values than types is an error anyway; found
			 * before room is made for them (a varint is 10 bytes
			 * at most, so a longer field holds too many). */
			if (HP_UNLIKELY(f.wire == PB_LEN &&
			                f.len > 10 * (d->ntypes - (nv < d->ntypes ? nv : d->ntypes))))
				return heapprof__pprof_fault(
					d, HEAPPROF_EVALUES,
					"sample at byte %u: more values than "
					"its %zu sample types",
					d->s_at + (uint32_t)(data - d->s_win),
					d->ntypes);
			HP_TRY(heapprof__pprof_grow(
				d, &d->s_vals, &d->s_vals_cap,
				nv + (f.wire == PB_LEN ? f.len : 1), 8));
			HP_TRY(read_repeated(&f, (uint64_t *)(void *)d->s_vals,
			                     &nv, d->s_hard));
			break;
		case 3:
			if (HP_UNLIKELY(nlab >= PPROF_MAX_SAMPLE_LABELS))
				return too_many(d, data, "labels",
				                PPROF_MAX_SAMPLE_LABELS);
			HP_TRY(heapprof__pprof_grow(d, &d->s_labels, &d->s_labels_cap, nlab + 1,
			            sizeof(pprof_label)));
			HP_TRY(parse_label(d, &f, &d->s_labels[nlab]));
			nlab++;
			break;
		default:
			break;
		}
	}
	uint32_t at = d->s_at + (uint32_t)(data - d->s_win);
	if (nv != d->ntypes)
		return heapprof__pprof_fault(d, HEAPPROF_EVALUES,
		                             "sample at byte %u: %zu values for "
		                             "%zu sample types",
		                             at, nv, d->ntypes);
	for (size_t i = 0; i < nl; i++) {
		long li = idmap_find(&d->loc_ids, d->locs, d->s_locs[i]);
		if (li < 0)
			return heapprof__pprof_fault(
				d, HEAPPROF_EID,
				"sample at byte %u: location id %llu%s", at,
				(unsigned long long)d->s_locs[i],
				d->s_locs[i] ? " does not exist" : "");
		d->s_lidx[i] = (uint32_t)li;
	}
	out->location_ids = d->s_locs;
	out->location_index = d->s_lidx;
	out->nlocations = nl;
	out->values = d->s_vals;
	out->nvalues = nv;
	out->labels = d->s_labels;
	out->nlabels = nlab;
	out->offset = at;
	out->len = (uint32_t)len;
	return 0;
}

void
heapprof__pprof_samples(const pprof_dec *d, pprof_sample_iter *it)
{
	heapprof__pb_reader_init(&it->r, d->buf + d->first_sample,
	                         d->end_sample - d->first_sample);
	it->started = false;
	it->at = 0;
	it->n = 0;
}

int
heapprof__pprof_sample_raw_next(pprof_dec *d, pprof_sample_iter *it,
                                 uint32_t *offset, uint32_t *len)
{
	pb_field f;
	if (d->st.on)
		return heapprof__pprof_stream_sample(d, it, offset, len);
	while (heapprof__pb_more(&it->r)) {
		const uint8_t *p;
		size_t n;
		if (HP_LIKELY(*it->r.p == TAG_SAMPLE)) {
			uint64_t v;
			p = it->r.p + 1;
			HP_TRY(rd_varint(&p, it->r.end, &v));
			if (v > (uint64_t)(it->r.end - p))
				return HEAPPROF_ELENGTH;
			n = (size_t)v;
			it->r.p = p + n;
		} else {
			HP_TRY(heapprof__pb_next(&it->r, &f));
			if (f.num != PPROF_SAMPLE)
				continue;
			p = f.data;
			n = f.len;
		}
		*offset = (uint32_t)(p - d->buf);
		*len = (uint32_t)n;
		return 0;
	}
	return 1;
}

int
heapprof__pprof_sample_next(pprof_dec *d, pprof_sample_iter *it,
                            pprof_sample *out)
{
	uint32_t off, len;
	int rc = heapprof__pprof_sample_raw_next(d, it, &off, &len);
	if (rc != 0)
		return rc;
	return decode_sample(d, heapprof__pprof_sbytes(d, off), len, out);
}

int
heapprof__pprof_sample_at(pprof_dec *d, uint32_t offset, uint32_t len,
                          pprof_sample *out)
{
	if (offset < d->s_at || (size_t)(offset - d->s_at) + len > d->s_len)
		return HEAPPROF_ELENGTH;
	return decode_sample(d, heapprof__pprof_sbytes(d, offset), len, out);
}

int
heapprof__pprof_check(pprof_dec *d, const void *data, size_t len)
{
	HP_TRY(heapprof__pprof_dec_open(d, data, len));
	pprof_sample_iter it;
	pprof_sample s;
	int rc;
	heapprof__pprof_samples(d, &it);
	while ((rc = heapprof__pprof_sample_next(d, &it, &s)) == 0)
		;
	return rc == 1 ? 0 : rc;
}

HP_EXPORT int
heapprof_pprof_check(const void *data, size_t len, size_t limit)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	if (limit)
		d.limit = limit;
	int rc = heapprof__pprof_check(&d, data, len);
	heapprof__pprof_dec_free(&d);
	return rc;
}
