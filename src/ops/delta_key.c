/*
 * delta_key.c: the delta computer's sample identity by content, the exact
 * slow path every sample the raw cache (delta_raw.c) does not recognise
 * takes. A frame is its address, or (function name, file, line) of each
 * line when the address is 0; a label set is its labels sorted by content;
 * a key is (label set id, frame ids leaf first). All three are interned in
 * dt_tables that compare bytes exactly. Samples in the usual wire form are
 * read straight from their bytes; anything else goes through the decoder,
 * which validates it.
 *
 * Raw-only keys. A key first seen in a profile whose raw records the raw
 * cache keeps, under a dictionary whose location ids are 1..n in order,
 * keeps only its label set id of its content (4 bytes instead of about
 * 50): while that dictionary lasts, its raw record's location ids are its
 * frames, through loc_frame[] (kept across calls with the same dictionary;
 * location id v is index v - 1). Before the records go (a new dictionary,
 * compaction, the raw arena started over) every such key gets its content
 * bytes back.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

/* ------------------------------------------------------------ identity */

/* Appends bytes to bbuf at *n. */
static int
bput(heapprof_delta *d, size_t *n, const void *p, size_t len)
{
	HP_TRY(heapprof__delta_grow(d, &d->bbuf, &d->bbuf_cap, *n + len, 1));
	memcpy(d->bbuf + *n, p, len);
	*n += len;
	return 0;
}

static int
bput_str(heapprof_delta *d, size_t *n, uint64_t idx)
{
	size_t l;
	const char *s = heapprof__pprof_string(&d->dec, idx, &l);
	uint32_t l32 = (uint32_t)l;
	HP_TRY(bput(d, n, &l32, 4));
	return bput(d, n, s, l);
}

/* Frame id of locs[li]: interned address, or lines by content. */
static int
frame_of(heapprof_delta *d, uint32_t li, uint32_t *out)
{
	size_t n = 0;
	uint64_t addr = d->dec.loc_addr[li];
	if (addr) {
		uint8_t b[9];
		b[0] = 'A';
		memcpy(b + 1, &addr, 8);
		HP_TRY(bput(d, &n, b, 9));
	} else {
		pprof_location l;
		HP_TRY(heapprof__pprof_location(&d->dec, li, &l));
		HP_TRY(bput(d, &n, "S", 1));
		for (size_t k = 0; k < l.nlines; k++) {
			long fi = heapprof__pprof_find_function(
				&d->dec, l.lines[k].function_id);
			pprof_function fn = {0};
			if (fi >= 0)
				HP_TRY(heapprof__pprof_function(&d->dec,
				                                (size_t)fi, &fn));
			HP_TRY(bput_str(d, &n, fn.name));
			HP_TRY(bput_str(d, &n, fn.filename));
			HP_TRY(bput(d, &n, &l.lines[k].line, 8));
		}
	}
	int rc = heapprof__dt_intern(&d->frames, d->bbuf, n,
	                             heapprof__dt_hash(d->bbuf, n), out);
	return rc < 0 ? rc : 0;
}

static int
str_cmp(const pprof_dec *dec, uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	size_t la, lb;
	const char *sa = heapprof__pprof_string(dec, a, &la);
	const char *sb = heapprof__pprof_string(dec, b, &lb);
	int c = memcmp(sa, sb, la < lb ? la : lb);
	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

static int
label_cmp(const pprof_dec *dec, const pprof_label *x, const pprof_label *y)
{
	int c = str_cmp(dec, x->key, y->key);
	if (!c)
		c = str_cmp(dec, x->str, y->str);
	if (!c)
		c = x->num < y->num ? -1 : x->num > y->num;
	if (!c)
		c = str_cmp(dec, x->num_unit, y->num_unit);
	return c;
}

/* A label's canonical bytes (its strings by content) appended to bbuf. */
static int
put_label(heapprof_delta *d, size_t *n, const pprof_label *lb)
{
	HP_TRY(bput_str(d, n, lb->key));
	HP_TRY(bput_str(d, n, lb->str));
	HP_TRY(bput(d, n, &lb->num, 8));
	return bput_str(d, n, lb->num_unit);
}

/* Label set id of a sample's labels, order-independent; DELTA_NONE if it
 * has none. */
static int
labelset_of(heapprof_delta *d, const pprof_sample *s, uint32_t *out)
{
	if (s->nlabels == 0) {
		*out = DELTA_NONE;
		return 0;
	}
	HP_TRY(heapprof__delta_grow(d, &d->lorder, &d->lorder_cap, s->nlabels,
	                            4));
	/* Insertion sort: label lists are short. */
	for (size_t i = 0; i < s->nlabels; i++) {
		size_t j = i;
		while (j > 0 && label_cmp(&d->dec, &s->labels[d->lorder[j - 1]],
		                          &s->labels[i]) > 0) {
			d->lorder[j] = d->lorder[j - 1];
			j--;
		}
		d->lorder[j] = (uint32_t)i;
	}
	size_t n = 0;
	for (size_t i = 0; i < s->nlabels; i++)
		HP_TRY(put_label(d, &n, &s->labels[d->lorder[i]]));
	int rc = heapprof__dt_intern(&d->labelsets, d->bbuf, n,
	                             heapprof__dt_hash(d->bbuf, n), out);
	return rc < 0 ? rc : 0;
}

/* Makes the per-key arrays hold `n` keys; new rows start at zero. */
static int
keys_room(heapprof_delta *d, size_t n)
{
	if (n <= d->kcap)
		return 0;
	size_t c = d->kcap ? d->kcap + d->kcap / 4 : 256;
	if (c < n)
		c = d->keys.n ? n + n / 8 : n; /* exactly n: a reservation */
	int64_t *p = d->rf(d->rctx, d->prev,
	                   d->prev ? heapprof__delta_prev_bytes(d, d->kcap) : 0,
	                   heapprof__delta_prev_bytes(d, c));
	if (!p)
		return -ENOMEM;
	d->prev = p;
	uint32_t *g = d->rf(d->rctx, d->kgen, d->kcap * 4, c * 4);
	if (!g)
		return -ENOMEM; /* prev already grown: harmless, kcap unchanged */
	d->kgen = g;
	uint32_t *q = d->rf(d->rctx, d->kpos, d->kcap * 4, c * 4);
	if (!q)
		return -ENOMEM;
	d->kpos = q;
	delta_kraw *r = d->rf(d->rctx, d->kraw, d->kcap * sizeof(delta_kraw),
	                      c * sizeof(delta_kraw));
	if (!r)
		return -ENOMEM;
	d->kraw = r;
	d->kcap = c;
	return 0;
}

int
heapprof__delta_reserve(heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	size_t n = dec->nsamples;
	if (d->keys.n || n < 1024)
		return 0;
	/* Keys keep 4 bytes when raw-only; frames are 9 bytes by address. */
	HP_TRY(heapprof__dt_reserve(&d->keys, n, 4 * n));
	HP_TRY(heapprof__dt_reserve(&d->frames, dec->nlocs, 9 * dec->nlocs));
	HP_TRY(keys_room(d, n));
	/* A raw record is at most its sample's bytes and 2 of room. */
	return heapprof__delta_grow(d, &d->raw, &d->raw_cap,
	                            (size_t)(dec->end_sample - dec->first_sample) +
	                                    2 * n + 1,
	                            1);
}

/* A raw-only key's content (label set id, frame ids) into rwbuf from its
 * kept label set id and its raw record: the number of words, or a
 * negative error. */
static long
raw_words(heapprof_delta *d, uint32_t kid)
{
	const delta_kraw *r = &d->kraw[kid];
	if (r->len == DELTA_RAW_NONE)
		return -EFAULT; /* cannot happen: records go after materialize */
	const uint8_t *p = d->raw + r->off, *e = p + r->len;
	HP_TRY(heapprof__delta_grow(d, &d->rwbuf, &d->rwbuf_cap,
	                            (size_t)r->len + 2, 4));
	uint32_t *w = d->rwbuf;
	size_t n = 0, bl;
	memcpy(&w[n++], heapprof__dt_bytes(&d->keys, kid, &bl), 4);
	while (p < e) {
		uint8_t tag = *p++;
		const uint8_t *fe = e;
		uint64_t v;
		if (tag == 0x0a || tag == 0x1a) {
			if (rd_varint(&p, e, &v) < 0 || v > (uint64_t)(e - p))
				return -EFAULT;
			fe = p + v;
			if (tag == 0x1a) {
				p = fe; /* labels: the kept label set */
				continue;
			}
		} else if (tag != 0x08) {
			return -EFAULT; /* split() takes no other field */
		}
		if (p == fe)
			continue; /* an empty packed field: no ids */
		do {
			if (rd_varint(&p, fe, &v) < 0 || v == 0 ||
			    v > d->dict_nlocs)
				return -EFAULT;
			uint32_t f = d->loc_frame[v - 1];
			if (f == DELTA_NONE)
				return -EFAULT; /* set when the key was made */
			w[n++] = f;
		} while (tag == 0x0a && p < fe);
	}
	return (long)n;
}

int
heapprof__delta_key_eq(void *ctx, uint32_t kid, const void *key, size_t len)
{
	heapprof_delta *d = ctx;
	long n = raw_words(d, kid);
	if (n < 0)
		return (int)n;
	return (size_t)n * 4 == len && memcmp(d->rwbuf, key, len) == 0;
}

int
heapprof__delta_materialize(heapprof_delta *d)
{
	if (!d->nrawonly)
		return 0;
	/* Their bytes in one reservation, not by growth: a stream's first
	 * change of dictionary is the one call after the key set stops
	 * growing that allocates (every later one finds keys whole). */
	size_t need = 0;
	for (uint32_t k = 0; k < d->keys.n; k++) {
		size_t bl;
		if (heapprof__dt_partial(&d->keys, k)) {
			heapprof__dt_bytes(&d->keys, k, &bl);
			need += bl;
		}
	}
	HP_TRY(heapprof__dt_reserve(&d->keys, d->keys.n, need));
	for (uint32_t k = 0; k < d->keys.n; k++) {
		if (!heapprof__dt_partial(&d->keys, k))
			continue;
		long n = raw_words(d, k);
		if (n < 0)
			return (int)n;
		size_t bl;
		heapprof__dt_bytes(&d->keys, k, &bl);
		if ((size_t)n * 4 != bl)
			return -EFAULT; /* cannot happen: its content is its own */
		HP_TRY(heapprof__dt_set_bytes(&d->keys, k, d->rwbuf));
	}
	d->nrawonly = 0;
	return 0;
}

/* Interns the key in keybuf (klen words); new keys get their rows.
 * Returns 1 if the key is new, 0 if not, or a negative error. */
static int
intern_key(heapprof_delta *d, size_t klen, uint32_t *kidp)
{
	uint32_t *kb = d->keybuf, kid;
	int rc = heapprof__dt_intern(&d->keys, kb, klen * 4,
	                             heapprof__dt_hash(kb, klen * 4), &kid);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		/* A key in the table always has its rows. */
		if (keys_room(d, d->keys.n) < 0) {
			heapprof__dt_drop_last(&d->keys);
			return -ENOMEM;
		}
		memset(d->prev + (size_t)kid * d->npcols, 0, d->npcols * 8);
		d->kgen[kid] = d->gen - 1;
		d->kraw[kid].len = DELTA_RAW_NONE;
		d->kraw[kid].next = DELTA_NONE;
		d->kraw[kid].flags = 0;
	}
	*kidp = kid;
	return rc;
}

/* The key of a decoded sample (slow path: exact identity by content). */
static int
key_of(heapprof_delta *d, const pprof_sample *s, uint32_t *kidp)
{
	HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap,
	                            s->nlocations + 1, 4));
	uint32_t *kb = d->keybuf;
	HP_TRY(labelset_of(d, s, &kb[0]));
	for (size_t i = 0; i < s->nlocations; i++) {
		uint32_t li = s->location_index[i];
		uint32_t f = d->loc_frame[li];
		if (HP_UNLIKELY(f == DELTA_NONE)) {
			HP_TRY(frame_of(d, li, &f));
			d->loc_frame[li] = f;
		}
		kb[i + 1] = f;
	}
	return intern_key(d, s->nlocations + 1, kidp);
}

/* Label set id of one label, through a per-call cache (string indexes
 * are only stable within a call). */
static int
labelset_one(heapprof_delta *d, const pprof_label *lb, uint32_t *out)
{
	uint64_t h = ((uint64_t)lb->num ^ (uint64_t)lb->key << 40 ^
	              (uint64_t)lb->str << 20 ^ lb->num_unit) *
	             0x9e3779b97f4a7c15ULL;
	delta_lcache *c = &d->lcache[h >> 55]; /* 9 bits: DELTA_LCACHE */
	if (c->gen == d->gen && c->key == lb->key && c->str == lb->str &&
	    c->num == lb->num && c->unit == lb->num_unit) {
		*out = c->id;
		return 0;
	}
	size_t n = 0;
	HP_TRY(put_label(d, &n, lb));
	int rc = heapprof__dt_intern(&d->labelsets, d->bbuf, n,
	                             heapprof__dt_hash(d->bbuf, n), out);
	if (rc < 0)
		return rc;
	c->gen = d->gen;
	c->key = lb->key;
	c->str = lb->str;
	c->num = lb->num;
	c->unit = lb->num_unit;
	c->id = *out;
	return 0;
}

/* The key and values of the sample at (off, len) read straight from its
 * bytes when it has the usual form (one-byte tags; packed or single
 * location ids; one packed values field; at most one label, varint fields
 * only): 1. Anything else, or anything the decoder would reject: 0 (the
 * decoder then decides). The key is the one key_of computes. */
static int
fast_key(heapprof_delta *d, uint32_t off, uint32_t len, uint32_t *kidp,
         int64_t *vals)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *p = dec->buf + off, *e = p + len;
	const uint8_t *hard = dec->buf + dec->len;
	size_t nt = dec->ntypes, nf = 0, nv = 0;
	bool have_vals = false;
	int nlab = 0;
	pprof_label lb = {0};
	if (nt > DELTA_RAW_MAXT)
		return 0;
	HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap, len + 2, 4));
	uint32_t *kb = d->keybuf + 1;
	while (p < e) {
		uint8_t tag = *p;
		const uint8_t *q = p + 1;
		uint64_t n, v;
		if (tag == 0x08 || tag == 0x0a) {
			const uint8_t *fe;
			if (tag == 0x08) {
				fe = e; /* one id */
			} else {
				if (rd_varint(&q, hard, &n) < 0 || q > e ||
				    n > (uint64_t)(e - q))
					return 0;
				fe = q + n;
			}
			do {
				if (q >= fe || rd_varint(&q, hard, &v) < 0 || q > fe)
					return 0;
				long li = idmap_find(&dec->loc_ids, dec->locs, v);
				if (li < 0)
					return 0;
				uint32_t f = d->loc_frame[li];
				if (HP_UNLIKELY(f == DELTA_NONE)) {
					HP_TRY(frame_of(d, (uint32_t)li, &f));
					d->loc_frame[li] = f;
				}
				kb[nf++] = f;
			} while (tag == 0x0a && q < fe);
			p = q;
			continue;
		}
		if ((tag != 0x12 && tag != 0x1a) ||
		    rd_varint(&q, hard, &n) < 0 || q > e ||
		    n > (uint64_t)(e - q))
			return 0;
		const uint8_t *fe = q + n;
		if (tag == 0x12) {
			if (have_vals)
				return 0;
			have_vals = true;
			while (q < fe) {
				if (nv == nt || rd_varint(&q, hard, &v) < 0 || q > fe)
					return 0;
				vals[nv++] = (int64_t)v;
			}
		} else {
			if (nlab++)
				return 0;
			while (q < fe) {
				uint8_t t = *q++;
				if ((t != 0x08 && t != 0x10 && t != 0x18 &&
				     t != 0x20) ||
				    rd_varint(&q, hard, &v) < 0 || q > fe)
					return 0;
				if (t != 0x18 && v >= dec->nstrings)
					return 0;
				if (t == 0x08)
					lb.key = (uint32_t)v;
				else if (t == 0x10)
					lb.str = (uint32_t)v;
				else if (t == 0x18)
					lb.num = (int64_t)v;
				else
					lb.num_unit = (uint32_t)v;
			}
		}
		p = fe;
	}
	if (nv != nt)
		return 0;
	if (nlab)
		HP_TRY(labelset_one(d, &lb, &d->keybuf[0]));
	else
		d->keybuf[0] = DELTA_NONE;
	int rc = intern_key(d, nf + 1, kidp);
	return rc < 0 ? rc : 1 + rc;
}

int
heapprof__delta_slow_sample(heapprof_delta *d, uint32_t off, uint32_t len)
{
	pprof_sample s;
	uint32_t kid;
	int64_t fv[DELTA_RAW_MAXT];
	const int64_t *vals = fv;
	if (len >= DELTA_ITEM_SAME)
		return HEAPPROF_ETOOBIG; /* an item's length must fit 31 bits */
	/* fast_key: 0 (not its form), 1 + (1 if a new key); key_of: 0/1 */
	int rc = d->slow_only & DELTA_SLOW_NOKEY ? 0
	                                         : fast_key(d, off, len, &kid, fv);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		HP_TRY(heapprof__pprof_sample_at(&d->dec, off, len, &s));
		rc = key_of(d, &s, &kid);
		if (rc < 0)
			return rc;
		vals = s.values;
		rc++;
	}
	bool inserted = rc == 2;
	if (d->kgen[kid] == d->gen) /* a second sample: before its record */
		HP_TRY(heapprof__delta_unsame(d, kid));
	if (d->raw_ok) {
		HP_TRY(heapprof__delta_raw_record(d, kid, off, len, vals));
		if (inserted && d->dict_seq &&
		    d->kraw[kid].len != DELTA_RAW_NONE &&
		    heapprof__dt_trim_bytes(&d->keys, kid, 4)) {
			d->nrawonly++;
			/* Room to read it back (raw_words) taken now. */
			HP_TRY(heapprof__delta_grow(
				d, &d->rwbuf, &d->rwbuf_cap,
				(size_t)d->kraw[kid].len + 2, 4));
		}
	}
	heapprof__delta_raw_link(d, kid);
	return heapprof__delta_add_values(d, kid, off, len, vals);
}

