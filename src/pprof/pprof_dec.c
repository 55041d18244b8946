/*
 * pprof_dec.c: the streaming profile.proto decoder (see pprof_dec.h): open
 * (from a buffer, or through a reader with pprof_stream.c), the index
 * pass, header validation, id tables. Samples are decoded in
 * pprof_sample.c; location/function/mapping records and their validation
 * are in pprof_rec.c; gzip input in a buffer is inflated whole by
 * pprof_stream.c into its reusable window.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"
#include "gz.h"
#include "pprof_stream.h"
#include "pprof_int.h"

/* ------------------------------------------------------------ helpers */

int
heapprof__pprof_fault(pprof_dec *d, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->fault, sizeof d->fault, fmt, ap);
	va_end(ap);
	return rc;
}

/* ------------------------------------------------------------ id maps */

/* The id map of recs (kind: "mapping", "function", "location", for
 * faults). */
static int
idmap_build(pprof_dec *d, pprof_idmap *m, const pprof_rec *recs, size_t n,
            const char *kind)
{
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++) {
		if (recs[i].id == 0)
			return heapprof__pprof_fault(d, HEAPPROF_EID,
			                             "%s %zu of %zu has id 0",
			                             kind, i + 1, n);
		if (recs[i].id > max)
			max = recs[i].id;
	}
	size_t cap = m->nslots;
	size_t want_slots;
	if (max <= 2 * (uint64_t)n + 64) {
		m->dense = true;
		want_slots = (size_t)max + 1;
	} else {
		m->dense = false;
		want_slots = 64;
		while (want_slots < 2 * n)
			want_slots *= 2;
	}
	/* nslots doubles as the capacity: keep the larger allocation. */
	if (want_slots > cap) {
		void *np = d->realloc_fn(d->realloc_ctx, m->slots,
		                         cap * sizeof(uint32_t),
		                         want_slots * sizeof(uint32_t));
		if (!np)
			return -ENOMEM;
		m->slots = np;
		cap = want_slots;
	}
	m->nslots = cap;
	/* Only the first want_slots entries are in use. */
	memset(m->slots, 0, want_slots * sizeof(uint32_t));
	size_t mask = want_slots - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = recs[i].id;
		if (m->dense) {
			if (m->slots[id])
				return heapprof__pprof_fault(
					d, HEAPPROF_EID, "%s id %llu: duplicate",
					kind, (unsigned long long)id);
			m->slots[id] = (uint32_t)i + 1;
			continue;
		}
		size_t h = id_hash(id) & mask;
		while (m->slots[h]) {
			if (recs[m->slots[h] - 1].id == id)
				return heapprof__pprof_fault(
					d, HEAPPROF_EID, "%s id %llu: duplicate",
					kind, (unsigned long long)id);
			h = (h + 1) & mask;
		}
		m->slots[h] = (uint32_t)i + 1;
	}
	m->used = want_slots;
	return 0;
}

long
heapprof__pprof_find_location(const pprof_dec *d, uint64_t id)
{
	return idmap_find(&d->loc_ids, d->locs, id);
}

long
heapprof__pprof_find_function(const pprof_dec *d, uint64_t id)
{
	return idmap_find(&d->func_ids, d->funcs, id);
}

long
heapprof__pprof_find_mapping(const pprof_dec *d, uint64_t id)
{
	return idmap_find(&d->map_ids, d->maps, id);
}

/* ------------------------------------------------------------ lifecycle */

void
heapprof__pprof_dec_init(pprof_dec *d, pb_realloc_fn *rf, void *rctx)
{
	memset(d, 0, sizeof(*d));
	d->limit = PPROF_DEC_DEFAULT_LIMIT;
	d->realloc_fn = rf ? rf : heapprof__pb_libc_realloc;
	d->realloc_ctx = rctx;
}

void
heapprof__pprof_dec_free(pprof_dec *d)
{
	heapprof__pprof_release(d, &d->str.off, d->str.cap * sizeof(uint32_t));
	heapprof__pprof_release(d, &d->str.len, d->str.cap * sizeof(uint32_t));
	heapprof__pprof_release(d, &d->types, d->types_cap * sizeof(*d->types));
	heapprof__pprof_release(d, &d->comments, d->comments_cap * sizeof(*d->comments));
	heapprof__pprof_release(d, &d->locs, d->locs_cap * sizeof(*d->locs));
	heapprof__pprof_release(d, &d->loc_addr, d->locs_cap * sizeof(*d->loc_addr));
	heapprof__pprof_release(d, &d->funcs, d->funcs_cap * sizeof(*d->funcs));
	heapprof__pprof_release(d, &d->maps, d->maps_cap * sizeof(*d->maps));
	heapprof__pprof_release(d, &d->loc_ids.slots, d->loc_ids.nslots * sizeof(uint32_t));
	heapprof__pprof_release(d, &d->func_ids.slots, d->func_ids.nslots * sizeof(uint32_t));
	heapprof__pprof_release(d, &d->map_ids.slots, d->map_ids.nslots * sizeof(uint32_t));
	heapprof__pprof_release(d, &d->s_locs, d->s_locs_cap * sizeof(*d->s_locs));
	heapprof__pprof_release(d, &d->s_lidx, d->s_locs_cap * sizeof(*d->s_lidx));
	heapprof__pprof_release(d, &d->s_vals, d->s_vals_cap * sizeof(*d->s_vals));
	heapprof__pprof_release(d, &d->s_labels, d->s_labels_cap * sizeof(*d->s_labels));
	heapprof__pprof_release(d, &d->l_lines, d->l_lines_cap * sizeof(*d->l_lines));
	heapprof__pprof_stream_free(d);
	pb_realloc_fn *rf = d->realloc_fn;
	void *rctx = d->realloc_ctx;
	size_t limit = d->limit;
	heapprof__pprof_dec_init(d, rf, rctx);
	d->limit = limit;
}

size_t
heapprof__pprof_dec_memory(const pprof_dec *d)
{
	size_t b = d->str.cap * 8 + d->types_cap * sizeof(*d->types) +
	           d->comments_cap * sizeof(*d->comments) +
	           d->locs_cap * (sizeof(*d->locs) + sizeof(*d->loc_addr)) +
	           d->funcs_cap * sizeof(*d->funcs) +
	           d->maps_cap * sizeof(*d->maps);
	b += (d->loc_ids.nslots + d->func_ids.nslots + d->map_ids.nslots) *
	     sizeof(uint32_t);
	b += d->s_locs_cap * (sizeof(*d->s_locs) + sizeof(*d->s_lidx)) +
	     d->s_vals_cap * sizeof(*d->s_vals) +
	     d->s_labels_cap * sizeof(*d->s_labels) +
	     d->l_lines_cap * sizeof(*d->l_lines);
	return b + d->zbuf_cap + heapprof__pprof_stream_memory(d);
}

static void
clear_profile(pprof_dec *d)
{
	d->buf = NULL;
	d->len = 0;
	d->was_gzip = false;
	d->s_win = d->s_hard = NULL;
	d->s_at = 0;
	d->s_len = 0;
	d->st.on = false;
	d->ntypes = d->ncomments = d->nstrings = d->nsamples = 0;
	d->nlocs = d->nfuncs = d->nmaps = 0;
	d->period_type.type = d->period_type.unit = 0;
	d->period = d->time_nanos = d->duration_nanos = 0;
	d->drop_frames = d->keep_frames = 0;
	d->default_sample_type = d->doc_url = 0;
	d->first_sample = d->end_sample = 0;
	d->loc_ids.used = d->func_ids.used = d->map_ids.used = 0;
	d->loc_ids.dense = d->func_ids.dense = d->map_ids.dense = false;
}

/* ------------------------------------------------------------ index pass */

static int
parse_value_type(const uint8_t *hard, const pb_field *f,
                 pprof_value_type *vt)
{
	HP_TRY(want(f, PB_LEN));
	pb_reader r;
	pb_field g;
	heapprof__pb_reader_init(&r, f->data, f->len);
	vt->type = vt->unit = 0;
	while (heapprof__pb_more(&r)) {
		HP_TRY(fnext(&r, hard, &g));
		if (g.num == 1 || g.num == 2) {
			HP_TRY(want(&g, PB_VARINT));
			HP_TRY(str_idx(g.v, g.num == 1 ? &vt->type : &vt->unit));
		}
	}
	return 0;
}

/* Id (field 1) and, for locations, address (field 3) of a message. */
static int
parse_id(const uint8_t *hard, const pb_field *f, uint64_t *id,
         uint64_t *addr)
{
	HP_TRY(want(f, PB_LEN));
	pb_reader r;
	pb_field g;
	heapprof__pb_reader_init(&r, f->data, f->len);
	*id = 0;
	if (addr)
		*addr = 0;
	while (heapprof__pb_more(&r)) {
		HP_TRY(fnext(&r, hard, &g));
		if (g.num == 1) {
			HP_TRY(want(&g, PB_VARINT));
			*id = g.v;
		} else if (g.num == 3 && addr) {
			HP_TRY(want(&g, PB_VARINT));
			*addr = g.v;
		}
	}
	return 0;
}

static int
push_rec(pprof_dec *d, pprof_rec **recs, size_t *n, size_t *cap,
         const pb_field *f, int kind)
{
	uint64_t id, addr = 0;
	bool is_loc = kind == 1;
	HP_TRY(want(f, PB_LEN));
	HP_TRY(parse_id(d->buf + d->len, f, &id, is_loc ? &addr : NULL));
	if (*n + 1 > *cap) {
		/* locs and loc_addr share locs_cap; the cap only moves once
		 * both have grown (same doubling policy, same result). */
		size_t c = *cap, c2 = *cap;
		HP_TRY(heapprof__pprof_grow(d, recs, &c, *n + 1, sizeof(pprof_rec)));
		if (is_loc)
			HP_TRY(heapprof__pprof_grow(d, &d->loc_addr, &c2, *n + 1,
			            sizeof(uint64_t)));
		*cap = c;
	}
	if (is_loc)
		d->loc_addr[*n] = addr;
	pprof_rec *rc = &(*recs)[(*n)++];
	rc->id = id;
	rc->off = (uint32_t)(f->data - d->buf);
	rc->len = (uint32_t)f->len;
	return 0;
}

/* Indexes the fields of buf[0, len). */
static int
index_pass(pprof_dec *d)
{
	pb_reader r;
	pb_field f;
	bool seen_time = false;
	uint32_t first = UINT32_MAX, end = 0;
	heapprof__pb_reader_init(&r, d->buf, d->len);
	while (heapprof__pb_more(&r)) {
		uint32_t at = (uint32_t)(r.p - d->buf);
		HP_TRY(fnext(&r, d->buf + d->len, &f));
		switch (f.num) {
		case PPROF_SAMPLE_TYPE:
			HP_TRY(heapprof__pprof_grow(d, &d->types, &d->types_cap, d->ntypes + 1,
			            sizeof(*d->types)));
			HP_TRY(parse_value_type(d->buf + d->len, &f, &d->types[d->ntypes]));
			d->ntypes++;
			break;
		case PPROF_SAMPLE: {
			HP_TRY(want(&f, PB_LEN));
			d->nsamples++;
			if (first == UINT32_MAX)
				first = at;
			/* The samples that follow, in a tight loop: their tag,
			 * a length of one to three bytes, the payload. */
			const uint8_t *p = r.p, *e = r.end;
			size_t n = 0;
			while (e - p >= 4 && p[0] == TAG_SAMPLE) {
				size_t l = p[1], h = 2;
				if (l >= 0x80) {
					if (p[2] >= 0x80) {
						if (p[3] >= 0x80)
							break;
						l = (l & 0x7f) | (size_t)(p[2] & 0x7f) << 7 |
						    (size_t)p[3] << 14;
						h = 4;
					} else {
						l = (l & 0x7f) | (size_t)p[2] << 7;
						h = 3;
					}
				}
				if (l > (size_t)(e - p) - h)
					break; /* fnext reports it */
				p += h + l;
				n++;
			}
			d->nsamples += n;
			r.p = p;
			end = (uint32_t)(r.p - d->buf);
			break;
		}
		case PPROF_MAPPING:
			HP_TRY(push_rec(d, &d->maps, &d->nmaps, &d->maps_cap, &f,
			                0));
			break;
		case PPROF_LOCATION:
			HP_TRY(push_rec(d, &d->locs, &d->nlocs, &d->locs_cap, &f,
			                1));
			break;
		case PPROF_FUNCTION:
			HP_TRY(push_rec(d, &d->funcs, &d->nfuncs, &d->funcs_cap,
			                &f, 2));
			break;
		case PPROF_STRING_TABLE: {
			HP_TRY(want(&f, PB_LEN));
			if (d->nstrings == 0 && f.len != 0)
				return HEAPPROF_ESTRING0;
			if (d->nstrings + 1 > d->str.cap) {
				size_t c = d->str.cap, c2 = d->str.cap;
				HP_TRY(heapprof__pprof_grow(d, &d->str.off, &c, d->nstrings + 1,
				            sizeof(uint32_t)));
				HP_TRY(heapprof__pprof_grow(d, &d->str.len, &c2, d->nstrings + 1,
				            sizeof(uint32_t)));
				d->str.cap = c;
			}
			d->str.off[d->nstrings] = (uint32_t)(f.data - d->buf);
			d->str.len[d->nstrings] = (uint32_t)f.len;
			d->nstrings++;
			break;
		}
		case PPROF_DROP_FRAMES:
		case PPROF_KEEP_FRAMES:
		case PPROF_DEFAULT_SAMPLE_TYPE:
		case PPROF_DOC_URL: {
			HP_TRY(want(&f, PB_VARINT));
			uint32_t *dst = f.num == PPROF_DROP_FRAMES ? &d->drop_frames
			                : f.num == PPROF_KEEP_FRAMES
			                        ? &d->keep_frames
			                : f.num == PPROF_DOC_URL
			                        ? &d->doc_url
			                        : &d->default_sample_type;
			HP_TRY(str_idx(f.v, dst));
			break;
		}
		case PPROF_TIME_NANOS:
			HP_TRY(want(&f, PB_VARINT));
			if (seen_time && d->time_nanos != 0)
				return HEAPPROF_ECONCAT;
			seen_time = true;
			d->time_nanos = (int64_t)f.v;
			break;
		case PPROF_DURATION_NANOS:
			HP_TRY(want(&f, PB_VARINT));
			d->duration_nanos = (int64_t)f.v;
			break;
		case PPROF_PERIOD:
			HP_TRY(want(&f, PB_VARINT));
			d->period = (int64_t)f.v;
			break;
		case PPROF_PERIOD_TYPE:
			HP_TRY(parse_value_type(d->buf + d->len, &f, &d->period_type));
			break;
		case PPROF_COMMENT: {
			pb_packed it;
			uint64_t v;
			int rc;
			HP_TRY(heapprof__pb_packed_start(&it, &f));
			while ((rc = heapprof__pb_packed_next(&it, &v)) == 0) {
				HP_TRY(heapprof__pprof_grow(d, &d->comments, &d->comments_cap,
				            d->ncomments + 1, sizeof(uint32_t)));
				HP_TRY(str_idx(v, &d->comments[d->ncomments]));
				d->ncomments++;
			}
			HP_TRY(rc);
			break;
		}
		default:
			break; /* unknown field: skipped, as pprof does */
		}
	}
	d->first_sample = first == UINT32_MAX ? 0 : first;
	d->end_sample = end;
	return 0;
}

/* ------------------------------------------------------------ validation */

#define CHECK_STR(d, i)                                                        \
	do {                                                                   \
		if ((i) >= (d)->nstrings)                                      \
			return HEAPPROF_EINDEX;                                \
	} while (0)

/* What validate checks but the records. */
static int
validate_header(pprof_dec *d)
{
	if (d->nstrings == 0)
		return HEAPPROF_ESTRING0;
	if (d->ntypes == 0 && d->nsamples != 0)
		return heapprof__pprof_fault(d, HEAPPROF_EVALUES,
		                             "%zu samples and no sample type",
		                             d->nsamples);
	for (size_t i = 0; i < d->ntypes; i++) {
		CHECK_STR(d, d->types[i].type);
		CHECK_STR(d, d->types[i].unit);
	}
	CHECK_STR(d, d->period_type.type);
	CHECK_STR(d, d->period_type.unit);
	/* pprof scales by the period (and heap profiles unsample with it):
	 * a negative one has no meaning, and would flip every sign. */
	if (d->period < 0)
		return heapprof__pprof_fault(d, HEAPPROF_EFORMAT,
		                             "period %lld is negative",
		                             (long long)d->period);
	CHECK_STR(d, d->drop_frames);
	CHECK_STR(d, d->keep_frames);
	CHECK_STR(d, d->default_sample_type);
	CHECK_STR(d, d->doc_url);
	for (size_t i = 0; i < d->ncomments; i++)
		CHECK_STR(d, d->comments[i]);
	return 0;
}

/* The id maps and the records' checks. */
static int
validate_records(pprof_dec *d)
{
	HP_TRY(idmap_build(d, &d->map_ids, d->maps, d->nmaps, "mapping"));
	HP_TRY(idmap_build(d, &d->func_ids, d->funcs, d->nfuncs, "function"));
	HP_TRY(idmap_build(d, &d->loc_ids, d->locs, d->nlocs, "location"));
	return heapprof__pprof_validate_records(d);
}

int
heapprof__pprof_dec_open(pprof_dec *d, const void *data, size_t len)
{
	clear_profile(d);
	d->fault[0] = '\0';
	if (len == 0)
		return HEAPPROF_EEMPTY;
	int rc;
	if (heapprof__gz_is_gzip(data, len)) {
		const uint8_t *out;
		size_t olen;
		rc = heapprof__pprof_inflate(d, data, len, &out, &olen);
		if (rc < 0)
			return rc;
		if (olen == 0)
			return HEAPPROF_EEMPTY;
		d->buf = out;
		d->len = olen;
		d->was_gzip = true;
	} else {
		d->buf = data;
		d->len = len;
	}
	if (d->len > d->limit || d->len >= UINT32_MAX) {
		clear_profile(d);
		return HEAPPROF_ETOOBIG;
	}
	d->s_win = d->buf;
	d->s_len = d->len;
	d->s_hard = d->buf + d->len;
	rc = index_pass(d);
	if (rc == 0)
		rc = validate_header(d);
	if (rc == 0)
		rc = validate_records(d);
	if (rc < 0)
		clear_profile(d);
	return rc;
}

int
heapprof__pprof_dec_open_read(pprof_dec *d, pprof_read_fn *read, void *arg)
{
	size_t n = 0, ns = 0;
	static const uint8_t none[1];
	clear_profile(d);
	d->fault[0] = '\0';
	int rc = heapprof__pprof_stream_open(d, read, arg, &n, &ns);
	if (rc == 0) {
		/* The non-sample fields, indexed as a profile of their own
		 * (none: an empty one, not a null pointer). */
		d->buf = n ? d->zbuf : none;
		d->len = n;
		d->was_gzip = d->st.gzip;
		rc = index_pass(d);
	}
	if (rc == 0) {
		d->nsamples += ns;
		rc = validate_header(d);
	}
	if (rc == 0)
		rc = validate_records(d);
	if (rc < 0) {
		clear_profile(d);
		return rc;
	}
	d->st.on = true;
	return 0;
}
