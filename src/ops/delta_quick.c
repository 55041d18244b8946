/*
 * delta_quick.c: the delta computer's quick path. While consecutive
 * profiles keep one dictionary (the decoder finds their records
 * unchanged), a sample's location ids are the same bytes as last time, so
 * each stack node keeps the id bytes a sample had for it and the nodes
 * after it (up to 7 bytes a window, delta.h nvb): a sample in the usual
 * wire form whose ids are the predicted key's windows, byte for byte, is
 * that key, with no id decoded and no table looked up. Its values field,
 * if byte for byte what a zero delta would have, is not decoded either.
 * Anything else takes the full path (delta_key.c), which records the
 * windows for the next call.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

/* True if node ref `node` is the stack whose packed location ids are
 * [p, e), by the windows nvb[] holds (nodes.n <= nvb_cap; 8 bytes
 * readable from each id on). The ids are prefix-free, so the bytes agree
 * window by window and end together, or the stacks differ. */
HP_INLINE bool
stack_bytes_are(const heapprof_delta *d, uint32_t node, const uint8_t *p,
                const uint8_t *e)
{
	while (p < e) {
		if (node == 0)
			return false;
		const delta_nvb *x = &d->nvb[node - 1];
		uint64_t win = x->w0 | (uint64_t)x->w1 << 32, w;
		unsigned l = (unsigned)(win >> 56);
		memcpy(&w, p, 8);
		if (l == 0 || ((w ^ win) & ((1ULL << (8 * l)) - 1)) != 0)
			return false;
		p += l;
		node = x->skip;
	}
	return node == 0 && p == e;
}

/* The label set id of one label field's payload [q, e) (varint fields
 * only), through a per-call cache by its bytes when they fit 8 (string
 * indexes are stable within a call); DELTA_VALS if not that form. */
static int
label_bytes(heapprof_delta *d, const uint8_t *q, const uint8_t *e,
            uint32_t *ls)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *hard = dec->s_hard;
	size_t m = (size_t)(e - q);
	uint64_t w = 0;
	delta_lbcache *c = NULL;
	if (m <= 8 && hard - q >= 8) {
		memcpy(&w, q, 8);
		w &= m == 8 ? ~0ULL : (1ULL << (8 * m)) - 1;
		c = &d->lbcache[((w ^ m) * 0x9e3779b97f4a7c15ULL) >> 54];
		if (c->gen == d->gen && c->len == m && c->bytes == w) {
			*ls = c->ls;
			return 0;
		}
	}
	pprof_label lb;
	if (!heapprof__delta_label_fields(dec, q, e, &lb)) {
		*ls = DELTA_VALS;
		return 0;
	}
	HP_TRY(heapprof__delta_labelset_one(d, &lb, ls));
	if (c) {
		c->gen = d->gen;
		c->len = (uint32_t)m;
		c->bytes = w;
		c->ls = *ls;
	}
	return 0;
}

/* True if the varint at *pp (before e) is v's minimal encoding; *pp then
 * moves past it. No bytes are written and compared later: a mismatch
 * stops at its first byte. */
HP_INLINE bool
varint_is(const uint8_t **pp, const uint8_t *e, uint64_t v)
{
	const uint8_t *p = *pp;
	for (; v >= 0x80; v >>= 7, p++)
		if (p >= e || *p != (uint8_t)(v | 0x80))
			return false;
	if (p >= e || *p != v)
		return false;
	*pp = p + 1;
	return true;
}

/* The quick path: a sample of the usual form (packed ids, values and at
 * most one label) that is the predicted key by its id bytes. 1: done; 0:
 * not known this way (the caller takes the full path). */
int
heapprof__delta_quick(heapprof_delta *d, uint32_t off, uint32_t len)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *base = heapprof__pprof_sbytes(dec, off), *p = base;
	const uint8_t *e = p + len, *hard = dec->s_hard;
	const uint8_t *ids = NULL, *ide = NULL, *lab = NULL, *labe = NULL;
	const uint8_t *vs = NULL, *ve = NULL;
	size_t nt = dec->ntypes, nv = 0;
	uint32_t voff = 0;
	int64_t vals[DELTA_MAXT];
	if (nt > DELTA_MAXT || len >= DELTA_VALS || d->nodes.n > d->nvb_cap ||
	    hard - e < 8)
		return 0;
	/* The order pprof writers use: ids, values, at most one label. */
	uint64_t n;
	if (*p == 0x0a) {
		p++;
		if (rd_varint(&p, hard, &n) < 0 || n > (uint64_t)(e - p))
			return 0;
		ids = p;
		ide = p += n;
	}
	if (p >= e || *p++ != 0x12 || rd_varint(&p, hard, &n) < 0 ||
	    n > (uint64_t)(e - p))
		return 0;
	voff = DELTA_VALS | (uint32_t)(p - base);
	vs = p;
	ve = p += n;
	if (p < e && *p == 0x1a) {
		p++;
		if (rd_varint(&p, hard, &n) < 0 || n > (uint64_t)(e - p))
			return 0;
		lab = p;
		labe = p += n;
	}
	if (p != e)
		return 0;
	uint32_t ls = DELTA_NONE;
	if (lab)
		HP_TRY(label_bytes(d, lab, labe, &ls));
	if (ls == DELTA_VALS)
		return 0; /* not the usual form: the full path says */
	uint32_t c = d->klast == DELTA_NONE ? d->khead : d->knext[d->klast];
	if (!(c < d->keys.n && heapprof__dp_b(&d->keys, c) == ls &&
	      stack_bytes_are(d, heapprof__dp_a(&d->keys, c), ids, ide))) {
		c = d->klast == DELTA_NONE ? 0 : d->klast + 1;
		if (!(c < d->keys.n && heapprof__dp_b(&d->keys, c) == ls &&
		      stack_bytes_are(d, heapprof__dp_a(&d->keys, c), ids,
		                      ide)))
			return 0;
	}
	/* Its values: if they are, byte for byte, its previous values for
	 * the subtracted types and 0 for the others, its delta is 0 (none
	 * decoded); else decoded and checked now. */
	if (d->kgen[c] != d->gen) {
		const int64_t *pv = d->prev + (size_t)c * d->npcols;
		const uint8_t *q = vs;
		size_t t = 0;
		while (t < nt &&
		       varint_is(&q, ve, d->tcol[t] >= 0 ? (uint64_t)pv[d->tcol[t]]
		                                          : 0))
			t++;
		if (t == nt && q == ve) {
			if (HP_UNLIKELY(d->nitems >= d->items_cap))
				return HEAPPROF_ECHANGED; /* see add_values */
			d->pred_hits++;
			d->quick_hits++;
			link_key(d, c);
			d->kgen[c] = d->gen;
			d->kpos[c] = (uint32_t)d->nitems;
			delta_item *item = &d->items[d->nitems++];
			item->kid = c;
			item->off = off | DELTA_ITEM_SAME;
			return 1;
		}
	}
	while (vs < ve) {
		uint64_t v;
		if (nv == nt || rd_varint(&vs, hard, &v) < 0 || vs > ve)
			return 0;
		vals[nv++] = (int64_t)v;
	}
	if (nv != nt)
		return 0;
	d->pred_hits++;
	d->quick_hits++;
	link_key(d, c);
	HP_TRY(heapprof__delta_add_values(d, c, off, vals, voff));
	return 1;
}

/* Records in nvb[] the id bytes of the sample at (off, len), a usual form
 * whose stack is node ref `node`: what the quick path compares next
 * time. */
void
heapprof__delta_record_bytes(heapprof_delta *d, uint32_t node, uint32_t off,
                             uint32_t len)
{
	const uint8_t *p = heapprof__pprof_sbytes(&d->dec, off), *e = p + len;
	const uint8_t *ids = NULL;
	const uint8_t *ide = NULL;
	if (node == 0 || d->nodes.n > d->nvb_cap)
		return; /* (a failed call's nodes without their rows) */
	/* Only a stack written as one packed field (parse_usual took the
	 * sample: one-byte tags, whole fields). */
	while (p < e) {
		uint64_t n = 0;
		uint8_t tag = *p++;
		if (tag == 0x08 || (tag == 0x0a && ids) ||
		    rd_varint(&p, e, &n) < 0 || n > (uint64_t)(e - p))
			return;
		if (tag == 0x0a) {
			ids = p;
			ide = p + n;
		}
		p += n;
	}
	if (!ids)
		return;
	/* The path's nodes and where their ids start, leaf first (keybuf:
	 * 2 words a frame, room taken by parse_usual for the whole sample). */
	uint32_t *nd = d->keybuf;
	size_t n = 0;
	for (p = ids; p < ide && node; n++) {
		nd[2 * n] = node;
		nd[2 * n + 1] = (uint32_t)(p - ids);
		while (p < ide && *p >= 0x80)
			p++;
		p++;
		node = heapprof__dp_a(&d->nodes, node - 1);
	}
	if (p != ide || node != 0)
		return; /* cannot happen: the sample is this stack */
	const uint8_t *hard = d->dec.s_hard;
	size_t j = 0, total = (size_t)(ide - ids);
	for (size_t i = 0; i < n; i++) {
		/* Whole ids from node i on, up to 7 bytes: ids [i, j). */
		size_t at = nd[2 * i + 1];
		if (j <= i)
			j = i + 1;
		while (j < n && nd[2 * j + 1] - at <= 7)
			j++;
		/* ids [i, j) start within 7 bytes; the last may end past 7 */
		size_t end = j < n ? nd[2 * j + 1] : total;
		if (end - at > 7) {
			j--;
			end = nd[2 * j + 1];
		}
		size_t m = end - at;
		uint64_t win = 0;
		if (hard - (ids + at) >= 8) {
			memcpy(&win, ids + at, 8);
			win &= (1ULL << (8 * m)) - 1;
		} else {
			for (size_t k = 0; k < m; k++)
				win |= (uint64_t)ids[at + k] << (8 * k);
		}
		win |= (uint64_t)m << 56;
		delta_nvb *x = &d->nvb[nd[2 * i] - 1];
		x->w0 = (uint32_t)win;
		x->w1 = (uint32_t)(win >> 32);
		x->skip = j < n ? nd[2 * j] : 0;
	}
}
