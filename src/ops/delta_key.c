/*
 * delta_key.c: the delta computer's sample identity, exact and by content.
 * A frame is its address, or (function name, file, line) of each line when
 * the address is 0; a label set is its labels sorted by content; a stack is
 * a path of nodes (parent node, frame) from the root, shared by every stack
 * with the same root-side frames; a key is (stack node, label set). Frames
 * and label sets are interned in dt_tables that compare bytes exactly,
 * nodes and keys in pair tables (delta_pairs.c), so a key costs 8 bytes
 * and a stack about one node per sample, whatever its depth.
 *
 * A sample in the usual wire form is read straight from its bytes (its
 * location ids through loc_frame[] to frames), anything else through the
 * decoder, which validates it. Its key is predicted from the last call's
 * order (the key that followed the previous one, else the next key id) and
 * confirmed by walking the predicted key's stack against the sample's
 * frames: a profile written in the same order as the last one takes no
 * hash lookup. Anything else is looked up node by node.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

/* ------------------------------------------------------------ content */

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

/* Label set id of one label, through a per-call cache (string indexes
 * are only stable within a call). */
static int
labelset_one(heapprof_delta *d, const pprof_label *lb, uint32_t *out)
{
	uint64_t h = ((uint64_t)lb->num ^ (uint64_t)lb->key << 40 ^
	              (uint64_t)lb->str << 20 ^ lb->num_unit) *
	             0x9e3779b97f4a7c15ULL;
	delta_lcache *c = &d->lcache[h >> 52]; /* 12 bits: DELTA_LCACHE */
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

/* ------------------------------------------------------------ keys */

/* Makes the per-key arrays hold `n` keys. */
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
	/* Each grown in turn: a failure leaves kcap, the smallest, true. */
	uint32_t **arr[3] = {&d->kgen, &d->kpos, &d->knext};
	for (int i = 0; i < 3; i++) {
		uint32_t *g = d->rf(d->rctx, *arr[i], d->kcap * 4, c * 4);
		if (!g)
			return -ENOMEM;
		*arr[i] = g;
	}
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
	/* A key per sample, a node per sample or so (stacks share their
	 * root side), frames 9 bytes by address. */
	HP_TRY(heapprof__dp_reserve(&d->keys, n));
	HP_TRY(heapprof__dp_reserve(&d->nodes, n));
	HP_TRY(heapprof__dt_reserve(&d->frames, dec->nlocs, 9 * dec->nlocs));
	return keys_room(d, n);
}

int
heapprof__delta_key_prepare(heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	/* The frames of the last valid profile's locations, if its records
	 * are these (addresses only: lines would name strings, which the
	 * records do not cover). Not kept if the room below fails: the
	 * decoder's last valid profile is this one then. */
	bool keep = d->lf_ok && dec->records_same && dec->snap.gen == d->lf_gen;
	d->lf_ok = false;
	HP_TRY(heapprof__delta_grow(d, &d->loc_frame, &d->loc_frame_cap,
	                            dec->nlocs + 1, 4));
	if (!keep) {
		memset(d->loc_frame, 0xff, dec->nlocs * 4);
		if (d->nvb)
			memset(d->nvb, 0, d->nvb_cap * 8);
	}
	bool ok = dec->snap.valid;
	for (size_t i = 0; i < dec->nlocs && ok; i++)
		ok = dec->loc_addr[i] != 0;
	d->lf_ok = ok;
	d->lf_gen = dec->snap.gen;
	d->klast = DELTA_NONE;
	return 0;
}

/* Frame id of location index li. */
HP_INLINE int
frame_at(heapprof_delta *d, uint32_t li, uint32_t *f)
{
	*f = d->loc_frame[li];
	if (HP_UNLIKELY(*f == DELTA_NONE)) {
		HP_TRY(frame_of(d, li, f));
		d->loc_frame[li] = *f;
	}
	return 0;
}

/* True if node ref `node` is the stack fr[0, nf), leaf first. */
HP_INLINE bool
stack_is(const dp_table *nodes, uint32_t node, const uint32_t *fr, size_t nf)
{
	for (size_t i = 0; i < nf; i++) {
		if (node == 0)
			return false;
		uint64_t p = nodes->pairs[node - 1];
		if ((uint32_t)(p >> 32) != fr[i])
			return false;
		node = (uint32_t)p;
	}
	return node == 0;
}

/* True if key c is (stack fr[0, nf), label set ls). */
HP_INLINE bool
key_is(const heapprof_delta *d, uint32_t c, const uint32_t *fr, size_t nf,
       uint32_t ls)
{
	return c < d->keys.n && heapprof__dp_b(&d->keys, c) == ls &&
	       stack_is(&d->nodes, heapprof__dp_a(&d->keys, c), fr, nf);
}

/* The key of (stack fr[0, nf), label set ls), new keys with their rows. */
static int
key_intern(heapprof_delta *d, const uint32_t *fr, size_t nf, uint32_t ls,
           uint32_t *kidp)
{
	uint32_t node = 0, id, kid;
	/* Nodes left behind by a failure below are unused, not wrong. */
	for (size_t i = nf; i-- > 0; node = id + 1)
		if (heapprof__dp_intern(&d->nodes, node, fr[i], &id) < 0)
			return -ENOMEM;
	if (d->nodes.n > d->nvb_cap) {
		/* nvb[] has a row per node; new rows read as "none" (rows
		 * past nodes.n stay 0: nodes go only with a compaction or a
		 * reset, and then all of nvb is cleared). */
		size_t old = d->nvb_cap;
		HP_TRY(heapprof__delta_grow(d, &d->nvb, &d->nvb_cap, d->nodes.n,
		                            8));
		memset(d->nvb + old, 0, (d->nvb_cap - old) * 8);
	}
	int rc = heapprof__dp_intern(&d->keys, node, ls, &kid);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		/* A key in the table always has its rows. */
		if (keys_room(d, d->keys.n) < 0) {
			heapprof__dp_drop_last(&d->keys);
			return -ENOMEM;
		}
		memset(d->prev + (size_t)kid * d->npcols, 0, d->npcols * 8);
		d->kgen[kid] = d->gen - 1;
		d->knext[kid] = DELTA_NONE;
	}
	*kidp = kid;
	return 0;
}

/* ------------------------------------------------------------ samples */

/* The frames (into keybuf, leaf first), label set and values of the
 * sample at (off, len) read straight from its bytes when it has the usual
 * form (one-byte tags; packed or single location ids; one packed values
 * field; at most one label, varint fields only): 1, *nfp set. Anything
 * else, or anything the decoder would reject: 0 (the decoder then
 * decides). */
static int
parse_usual(heapprof_delta *d, uint32_t off, uint32_t len, size_t *nfp,
            uint32_t *ls, int64_t *vals, uint32_t *voff)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *p = dec->buf + off, *e = p + len;
	const uint8_t *hard = dec->buf + dec->len;
	size_t nt = dec->ntypes, nf = 0, nv = 0;
	bool have_vals = false;
	int nlab = 0;
	pprof_label lb = {0};
	if (nt > DELTA_MAXT || len >= DELTA_VALS)
		return 0;
	HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap, len + 1, 4));
	uint32_t *kb = d->keybuf;
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
				if (q >= fe)
					return 0;
				if (HP_LIKELY(*q < 0x80))
					v = *q++;
				else if (rd_varint(&q, hard, &v) < 0 || q > fe)
					return 0;
				long li = idmap_find(&dec->loc_ids, dec->locs, v);
				if (li < 0)
					return 0;
				HP_TRY(frame_at(d, (uint32_t)li, &kb[nf]));
				nf++;
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
			*voff = DELTA_VALS | (uint32_t)(q - (dec->buf + off));
			while (q < fe) {
				if (nv == nt)
					return 0;
				if (HP_LIKELY(*q < 0x80))
					v = *q++;
				else if (rd_varint(&q, hard, &v) < 0 || q > fe)
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
	*ls = DELTA_NONE;
	if (nlab)
		HP_TRY(labelset_one(d, &lb, ls));
	*nfp = nf;
	return 1;
}

void
heapprof__delta_item_values(const heapprof_delta *d, const delta_item *item,
                            size_t n, uint64_t *out)
{
	if (!(item->arow & DELTA_VALS)) {
		memcpy(out, d->acc + (size_t)item->arow * d->dec.ntypes, n * 8);
		return;
	}
	/* The packed values of a sample parse_usual took whole: the input's
	 * end bounds the reads. */
	const uint8_t *q = d->dec.buf + item->off + (item->arow & ~DELTA_VALS);
	const uint8_t *hard = d->dec.buf + d->dec.len;
	for (size_t t = 0; t < n; t++)
		if (rd_varint(&q, hard, &out[t]) < 0)
			out[t] = 0; /* cannot happen */
}

/* Room for a new accumulator row: *row set (its values to be filled). */
static int
acc_row(heapprof_delta *d, uint32_t *row)
{
	size_t nt = d->dec.ntypes;
	if (d->nacc >= DELTA_VALS)
		return HEAPPROF_ETOOBIG; /* rows are 31 bits */
	if (HP_UNLIKELY((d->nacc + 1) * nt > d->acc_cap))
		HP_TRY(heapprof__delta_grow(d, &d->acc, &d->acc_cap,
		                            (d->nacc + 1) * nt, 8));
	*row = (uint32_t)d->nacc++;
	return 0;
}

/* Adds one sample's values to its key's item: the first sample makes the
 * item (values read again from the input later if voff is DELTA_VALS and
 * their offset, else a row); a second one gives it a row holding the
 * sum. */
static int
add_values(heapprof_delta *d, uint32_t kid, uint32_t off, uint32_t len,
           const int64_t *values, uint32_t voff)
{
	size_t nt = d->dec.ntypes;
	uint32_t row = voff;
	if (d->kgen[kid] != d->gen) {
		if (voff == DELTA_NONE) {
			HP_TRY(acc_row(d, &row));
			for (size_t t = 0; t < nt; t++)
				d->acc[(size_t)row * nt + t] = (uint64_t)values[t];
		}
		/* items holds a row per sample (prepare). */
		d->kgen[kid] = d->gen;
		d->kpos[kid] = (uint32_t)d->nitems;
		delta_item *item = &d->items[d->nitems++];
		item->kid = kid;
		item->off = off;
		item->len = len;
		item->arow = row;
		return 0;
	}
	delta_item *item = &d->items[d->kpos[kid]];
	if (item->arow & DELTA_VALS) {
		HP_TRY(acc_row(d, &row));
		heapprof__delta_item_values(d, item, nt,
		                            d->acc + (size_t)row * nt);
		item->arow = row;
	}
	uint64_t *acc = d->acc + (size_t)item->arow * nt;
	for (size_t t = 0; t < nt; t++)
		acc[t] += (uint64_t)values[t];
	return 0;
}

/* Key kid follows the previous sample's. */
HP_INLINE void
link_key(heapprof_delta *d, uint32_t kid)
{
	if (d->klast == DELTA_NONE)
		d->khead = kid;
	else
		d->knext[d->klast] = kid;
	d->klast = kid;
}

/* True if node ref `node` is the stack whose packed location ids are
 * [p, e), by the bytes nvb[] holds (nodes.n <= nvb_cap; 4 bytes readable
 * from each id on). The ids are prefix-free, so the bytes agree id by id
 * and end together, or the stacks differ. */
HP_INLINE bool
stack_bytes_are(const heapprof_delta *d, uint32_t node, const uint8_t *p,
                const uint8_t *e)
{
	static const uint32_t mask[4] = {0, 0xff, 0xffff, 0xffffff};
	while (p < e) {
		if (node == 0)
			return false;
		uint64_t x = d->nvb[node - 1];
		uint32_t nb = (uint32_t)(x >> 32), l = nb >> 24, w;
		memcpy(&w, p, 4);
		if (((w ^ nb) & mask[l]) != 0 || l == 0)
			return false;
		p += l;
		node = (uint32_t)x;
	}
	return node == 0 && p == e;
}

/* The quick path: a sample of the usual form (packed ids, values and at
 * most one label) that is the predicted key by its id bytes. 1: done; 0:
 * not known this way (the caller takes the full path). */
static int
quick(heapprof_delta *d, uint32_t off, uint32_t len)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *base = dec->buf, *p = base + off, *e = p + len;
	const uint8_t *hard = base + dec->len;
	const uint8_t *ids = NULL, *ide = NULL, *lab = NULL, *labe = NULL;
	size_t nt = dec->ntypes, nv = 0;
	uint32_t voff = 0;
	int64_t vals[DELTA_MAXT];
	if (nt > DELTA_MAXT || len >= DELTA_VALS || d->nodes.n > d->nvb_cap ||
	    hard - e < 4)
		return 0;
	while (p < e) {
		uint8_t tag = *p++;
		uint64_t n, v;
		if ((tag != 0x0a && tag != 0x12 && tag != 0x1a) ||
		    rd_varint(&p, hard, &n) < 0 || p > e ||
		    n > (uint64_t)(e - p))
			return 0;
		const uint8_t *fe = p + n;
		if (tag == 0x0a) {
			if (ids)
				return 0;
			ids = p;
			ide = fe;
		} else if (tag == 0x1a) {
			if (lab)
				return 0;
			lab = p;
			labe = fe;
		} else {
			if (voff)
				return 0;
			voff = DELTA_VALS | (uint32_t)(p - (base + off));
			while (p < fe) {
				if (nv == nt || rd_varint(&p, hard, &v) < 0 || p > fe)
					return 0;
				vals[nv++] = (int64_t)v;
			}
		}
		p = fe;
	}
	if (!voff || nv != nt)
		return 0;
	uint32_t ls = DELTA_NONE;
	if (lab) {
		pprof_label lb = {0};
		const uint8_t *q = lab;
		while (q < labe) {
			uint8_t t = *q++;
			uint64_t v;
			if ((t != 0x08 && t != 0x10 && t != 0x18 && t != 0x20) ||
			    rd_varint(&q, hard, &v) < 0 || q > labe)
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
		HP_TRY(labelset_one(d, &lb, &ls));
	}
	uint32_t c = d->klast == DELTA_NONE ? d->khead : d->knext[d->klast];
	if (!(c < d->keys.n && heapprof__dp_b(&d->keys, c) == ls &&
	      stack_bytes_are(d, heapprof__dp_a(&d->keys, c), ids, ide))) {
		c = d->klast == DELTA_NONE ? 0 : d->klast + 1;
		if (!(c < d->keys.n && heapprof__dp_b(&d->keys, c) == ls &&
		      stack_bytes_are(d, heapprof__dp_a(&d->keys, c), ids,
		                      ide)))
			return 0;
	}
	d->pred_hits++;
	d->quick_hits++;
	link_key(d, c);
	HP_TRY(add_values(d, c, off, len, vals, voff));
	return 1;
}

/* Records in nvb[] the id bytes of the sample at (off, len), a usual form
 * whose stack is node ref `node`: what the quick path compares next
 * time. */
static void
record_bytes(heapprof_delta *d, uint32_t node, uint32_t off, uint32_t len)
{
	const uint8_t *p = d->dec.buf + off, *e = p + len, *ids = NULL;
	const uint8_t *ide = NULL;
	if (node == 0 || d->nodes.n > d->nvb_cap)
		return; /* (a failed call's nodes without their rows) */
	/* Only a stack written as one packed field (parse_usual took the
	 * sample: one-byte tags, whole fields). */
	while (p < e) {
		uint64_t n;
		uint8_t tag = *p++;
		if (tag == 0x08 || (tag == 0x0a && ids))
			return;
		rd_varint(&p, e, &n);
		if (tag == 0x0a) {
			ids = p;
			ide = p + n;
		}
		p += n;
	}
	for (p = ids; p && p < ide && node; node = heapprof__dp_a(&d->nodes,
	                                                           node - 1)) {
		size_t l = 1;
		while (p + l <= ide && p[l - 1] >= 0x80)
			l++;
		uint32_t nb = 0;
		if (l <= 3) {
			for (size_t i = 0; i < l; i++)
				nb |= (uint32_t)p[i] << (8 * i);
			nb |= (uint32_t)l << 24;
		}
		uint32_t parent = heapprof__dp_a(&d->nodes, node - 1);
		d->nvb[node - 1] = parent | (uint64_t)nb << 32;
		p += l;
	}
}

int
heapprof__delta_sample(heapprof_delta *d, uint32_t off, uint32_t len)
{
	int64_t fv[DELTA_MAXT];
	const int64_t *vals = fv;
	size_t nf;
	uint32_t ls, kid, voff = DELTA_NONE;
	int rc = 0;
	if (!(d->slow_only & (DELTA_SLOW_NOKEY | DELTA_SLOW_NOPRED))) {
		rc = quick(d, off, len);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	rc = d->slow_only & DELTA_SLOW_NOKEY
	                 ? 0
	                 : parse_usual(d, off, len, &nf, &ls, fv, &voff);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		voff = DELTA_NONE;
		pprof_sample s;
		HP_TRY(heapprof__pprof_sample_at(&d->dec, off, len, &s));
		HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap,
		                            s.nlocations + 1, 4));
		for (size_t i = 0; i < s.nlocations; i++)
			HP_TRY(frame_at(d, s.location_index[i], &d->keybuf[i]));
		nf = s.nlocations;
		HP_TRY(labelset_of(d, &s, &ls));
		vals = s.values;
	}
	const uint32_t *fr = d->keybuf;
	/* The key that followed the previous one last time, else the next
	 * key id; else the tables. */
	uint32_t c = d->klast == DELTA_NONE ? d->khead : d->knext[d->klast];
	if (d->slow_only & DELTA_SLOW_NOPRED) {
		HP_TRY(key_intern(d, fr, nf, ls, &kid));
	} else if (key_is(d, c, fr, nf, ls)) {
		kid = c;
		d->pred_hits++;
	} else if (c = d->klast == DELTA_NONE ? 0 : d->klast + 1,
	           key_is(d, c, fr, nf, ls)) {
		kid = c;
		d->pred_hits++;
	} else {
		HP_TRY(key_intern(d, fr, nf, ls, &kid));
	}
	link_key(d, kid);
	if (voff != DELTA_NONE)
		record_bytes(d, heapprof__dp_a(&d->keys, kid), off, len);
	return add_values(d, kid, off, len, vals, voff);
}

/* ------------------------------------------------------------ eviction */

/* The new tables compact builds, and old id -> new id maps. */
typedef struct rebuilt {
	dt_table frames, labelsets;
	dp_table nodes, keys;
	uint32_t *fmap, *lmap, *nmap; /* DELTA_NONE: not carried over */
	int64_t *prev;
	uint32_t *kgen, *kpos, *knext;
	size_t cap;
} rebuilt;

/* An entry of dt_table src carried into dst (through map). */
static int
carry(const dt_table *src, dt_table *dst, uint32_t *map, uint32_t id,
      uint32_t *out)
{
	if (map[id] == DELTA_NONE) {
		size_t bl;
		const uint8_t *b = heapprof__dt_bytes(src, id, &bl);
		int rc = heapprof__dt_intern(dst, b, bl, src->ents[id].hash,
		                             &map[id]);
		if (rc < 0)
			return rc;
	}
	*out = map[id];
	return 0;
}

/* Node ref `node` of the old trie carried into the new one. */
static int
carry_node(heapprof_delta *d, rebuilt *r, uint32_t node, uint32_t *out)
{
	/* Up to the root or a node already carried, then down again. */
	size_t n = 0;
	for (uint32_t x = node; x && r->nmap[x - 1] == DELTA_NONE;
	     x = heapprof__dp_a(&d->nodes, x - 1)) {
		HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap, n + 1,
		                            4));
		d->keybuf[n++] = x;
	}
	uint32_t at = n ? heapprof__dp_a(&d->nodes, d->keybuf[n - 1] - 1)
	                : node;
	uint32_t parent = at ? r->nmap[at - 1] + 1 : 0;
	while (n--) {
		uint32_t x = d->keybuf[n], f, id;
		HP_TRY(carry(&d->frames, &r->frames, r->fmap,
		             heapprof__dp_b(&d->nodes, x - 1), &f));
		int rc = heapprof__dp_intern(&r->nodes, parent, f, &id);
		if (rc < 0)
			return rc;
		r->nmap[x - 1] = id;
		parent = id + 1;
	}
	*out = parent;
	return 0;
}

static void
rebuilt_free(heapprof_delta *d, rebuilt *r, bool tables)
{
	if (tables) {
		heapprof__dt_free(&r->frames);
		heapprof__dt_free(&r->labelsets);
		heapprof__dp_free(&r->nodes);
		heapprof__dp_free(&r->keys);
		heapprof__delta_release(d, &r->prev,
		                        heapprof__delta_prev_bytes(d, r->cap));
		heapprof__delta_release(d, &r->kgen, r->cap * 4);
		heapprof__delta_release(d, &r->kpos, r->cap * 4);
		heapprof__delta_release(d, &r->knext, r->cap * 4);
	}
	heapprof__delta_release(d, &r->fmap, (d->frames.n + 1) * 4);
	heapprof__delta_release(d, &r->lmap, (d->labelsets.n + 1) * 4);
	heapprof__delta_release(d, &r->nmap, (d->nodes.n + 1) * 4);
}

static int
rebuild(heapprof_delta *d, rebuilt *r)
{
	size_t nn = d->npcols;
	uint32_t **maps[3] = {&r->fmap, &r->lmap, &r->nmap};
	size_t counts[3] = {d->frames.n, d->labelsets.n, d->nodes.n};
	for (int i = 0; i < 3; i++) {
		*maps[i] = d->rf(d->rctx, NULL, 0, (counts[i] + 1) * 4);
		if (!*maps[i])
			return -ENOMEM;
		memset(*maps[i], 0xff, (counts[i] + 1) * 4);
	}
	r->prev = d->rf(d->rctx, NULL, 0, heapprof__delta_prev_bytes(d, r->cap));
	r->kgen = d->rf(d->rctx, NULL, 0, r->cap * 4);
	r->kpos = d->rf(d->rctx, NULL, 0, r->cap * 4);
	r->knext = d->rf(d->rctx, NULL, 0, r->cap * 4);
	if (!r->prev || !r->kgen || !r->kpos || !r->knext)
		return -ENOMEM;
	for (uint32_t k = 0; k < d->keys.n; k++) {
		if (d->gen - d->kgen[k] > d->max_age)
			continue;
		uint32_t node, ls = heapprof__dp_b(&d->keys, k), id;
		if (ls != DELTA_NONE)
			HP_TRY(carry(&d->labelsets, &r->labelsets, r->lmap, ls,
			             &ls));
		HP_TRY(carry_node(d, r, heapprof__dp_a(&d->keys, k), &node));
		int rc = heapprof__dp_intern(&r->keys, node, ls, &id);
		if (rc < 0)
			return rc;
		memcpy(r->prev + (size_t)id * nn, d->prev + (size_t)k * nn,
		       nn * 8);
		r->kgen[id] = d->kgen[k];
		r->knext[id] = DELTA_NONE;
	}
	return 0;
}

int
heapprof__delta_compact(heapprof_delta *d, size_t live)
{
	rebuilt r;
	memset(&r, 0, sizeof(r));
	heapprof__dt_init(&r.frames, d->rf, d->rctx);
	heapprof__dt_init(&r.labelsets, d->rf, d->rctx);
	heapprof__dp_init(&r.nodes, d->rf, d->rctx);
	heapprof__dp_init(&r.keys, d->rf, d->rctx);
	r.cap = live ? live : 1;
	int rc = rebuild(d, &r);
	if (rc < 0) {
		rebuilt_free(d, &r, true);
		return rc;
	}
	rebuilt_free(d, &r, false);
	d->evicted += d->keys.n - r.keys.n;
	heapprof__delta_key_free(d);
	d->frames = r.frames;
	d->labelsets = r.labelsets;
	d->nodes = r.nodes;
	d->keys = r.keys;
	d->prev = r.prev;
	d->kgen = r.kgen;
	d->kpos = r.kpos;
	d->knext = r.knext;
	d->kcap = r.cap;
	/* Frame and key ids changed: no frames kept for locations, no
	 * prediction from the last order. */
	d->lf_ok = false;
	d->khead = DELTA_NONE;
	return 0;
}

void
heapprof__delta_key_free(heapprof_delta *d)
{
	heapprof__dt_free(&d->frames);
	heapprof__dt_free(&d->labelsets);
	heapprof__dp_free(&d->nodes);
	heapprof__dp_free(&d->keys);
	heapprof__delta_release(d, &d->prev,
	                        heapprof__delta_prev_bytes(d, d->kcap));
	heapprof__delta_release(d, &d->kgen, d->kcap * 4);
	heapprof__delta_release(d, &d->kpos, d->kcap * 4);
	heapprof__delta_release(d, &d->knext, d->kcap * 4);
	d->kcap = 0;
}
