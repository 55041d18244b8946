/*
 * delta_key.c: the delta computer's sample identity, exact and by content.
 * A frame is its address, or (function name, file, line) of each line when
 * the address is 0; a label set is its labels sorted by content; a stack is
 * a path of nodes (parent node, frame) from the root, shared by every stack
 * with the same root-side frames; a key is (stack node, label set). Frames
 * by lines and label sets are interned in strtabs (strtab.c) that compare
 * bytes exactly; frames by address, nodes and keys in pair tables
 * (delta_pairs.c), so a key costs 8 bytes and a stack about one node per
 * sample, whatever its depth.
 *
 * A sample in the usual wire form is read straight from its bytes (its
 * location ids through loc_frame[] to frames), anything else through the
 * decoder, which validates it. Its key is predicted from the last call's
 * order (the key that followed the previous one) and confirmed by walking
 * the predicted key's stack against the sample's frames: a profile written
 * in the same order as the last one takes no hash lookup. Anything else
 * is looked up node by node. Eviction is in delta_evict.c.
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

/* Frame id of locs[li]: its address (a pair of halves), or its lines by
 * content. */
static int
frame_of(heapprof_delta *d, uint32_t li, uint32_t *out)
{
	size_t n = 0;
	uint64_t addr = d->dec.loc_addr[li];
	if (addr) {
		int rc = heapprof__dp_intern(&d->addr_frames, (uint32_t)addr,
		                             (uint32_t)(addr >> 32), out);
		if (rc < 0 || *out >= DELTA_LFRAME)
			return -ENOMEM; /* (ids are 31 bits) */
		return 0;
	}
	pprof_location l;
	HP_TRY(heapprof__pprof_location(&d->dec, li, &l));
	for (size_t k = 0; k < l.nlines; k++) {
		long fi = heapprof__pprof_find_function(&d->dec,
		                                        l.lines[k].function_id);
		pprof_function fn = {0};
		if (fi >= 0)
			HP_TRY(heapprof__pprof_function(&d->dec, (size_t)fi, &fn));
		HP_TRY(bput_str(d, &n, fn.name));
		HP_TRY(bput_str(d, &n, fn.filename));
		HP_TRY(bput(d, &n, &l.lines[k].line, 8));
	}
	int rc = heapprof__strtab_intern(&d->line_frames, d->bbuf, n, out);
	if (rc < 0 || *out >= DELTA_LFRAME)
		return -ENOMEM;
	*out |= DELTA_LFRAME;
	return 0;
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
	return heapprof__strtab_intern(&d->labelsets, d->bbuf, n, out);
}

/* Label set id of one label (its string indexes valid), through the
 * label cache. */
static int
labelset_one(heapprof_delta *d, const pprof_label *lb, uint32_t *out)
{
	uint64_t h = ((uint64_t)lb->num ^ (uint64_t)lb->key << 40 ^
	              (uint64_t)lb->str << 20 ^ lb->num_unit) *
	             0x9e3779b97f4a7c15ULL;
	delta_label_cache *c = &d->label_cache[h >> 52]; /* 12 bits */
	if (c->epoch == d->label_epoch && c->key == lb->key &&
	    c->str == lb->str && c->num == lb->num && c->unit == lb->num_unit) {
		*out = c->id;
		return 0;
	}
	size_t n = 0;
	HP_TRY(put_label(d, &n, lb));
	HP_TRY(heapprof__strtab_intern(&d->labelsets, d->bbuf, n, out));
	*c = (delta_label_cache){d->label_epoch, lb->key, lb->str,
	                         lb->num_unit, *out, lb->num};
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
	uint32_t **arr[3] = {&d->key_call, &d->kpos, &d->key_next};
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
	 * root side), a frame per location (by address). */
	HP_TRY(heapprof__dp_reserve(&d->keys, n));
	HP_TRY(heapprof__dp_reserve(&d->nodes, n));
	HP_TRY(heapprof__dp_reserve(&d->addr_frames, dec->nlocs));
	return keys_room(d, n);
}

int
heapprof__delta_key_prepare(heapprof_delta *d)
{
	const pprof_dec *dec = &d->dec;
	HP_TRY(heapprof__delta_grow(d, &d->loc_frame, &d->loc_frame_cap,
	                            dec->nlocs + 1, 4));
	/* String indexes name other strings in another call. */
	if (++d->label_epoch == 0) {
		memset(d->label_cache, 0, sizeof(d->label_cache));
		d->label_epoch = 1;
	}
	memset(d->loc_frame, 0xff, dec->nlocs * 4);
	d->prev_key = DELTA_NONE;
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
		d->key_call[kid] = d->gen - 1;
		d->key_next[kid] = DELTA_NONE;
	}
	*kidp = kid;
	return 0;
}

/* ------------------------------------------------------------ samples */

/* The frames (into keybuf, leaf first), label set and values of the
 * sample at (off, len) read straight from its bytes when it has the usual
 * form (sample_field's; packed location ids; one packed values
 * field; at most one label in label_fields' form): 1, *nfp set. Anything
 * else, or anything the decoder would reject: 0 (the decoder then
 * decides). */
static int
parse_usual(heapprof_delta *d, uint32_t off, uint32_t len, size_t *nfp,
            uint32_t *ls, int64_t *vals)
{
	const pprof_dec *dec = &d->dec;
	const uint8_t *p = heapprof__pprof_sbytes(dec, off), *e = p + len;
	const uint8_t *hard = dec->s_hard;
	size_t nt = dec->ntypes, nf = 0, nv = 0;
	bool have_vals = false;
	int nlab = 0;
	uint64_t lf[5];
	if (nt > DELTA_MAXT)
		return 0;
	/* A frame a location id (a byte at least): room for len of them,
	 * but no more than a sample may have (PPROF_MAX_SAMPLE_LOCS; one
	 * with more goes to the decoder, which refuses it). */
	size_t room = len < PPROF_MAX_SAMPLE_LOCS ? len : PPROF_MAX_SAMPLE_LOCS;
	HP_TRY(heapprof__delta_grow(d, &d->keybuf, &d->keybuf_cap,
	                            2 * room + 2, 4));
	uint32_t *kb = d->keybuf;
	while (p < e) {
		uint8_t tag;
		uint64_t n, v = 0;
		if (!sample_field(&p, e, hard, &tag, &n) ||
		    tag == TAG_SAMPLE_LOCATION_ID)
			return 0;
		const uint8_t *fe = p + n;
		if (tag == TAG_SAMPLE_LOCATION_IDS) {
			if (n == 0)
				return 0;
			while (p < fe) {
				if (nf == PPROF_MAX_SAMPLE_LOCS ||
				    !packed_next(&p, fe, hard, &v))
					return 0;
				long li = idmap_find(&dec->loc_ids, dec->locs, v);
				if (li < 0)
					return 0;
				HP_TRY(frame_at(d, (uint32_t)li, &kb[nf]));
				nf++;
			}
		} else if (tag == TAG_SAMPLE_VALUES) {
			if (have_vals)
				return 0;
			have_vals = true;
			while (p < fe) {
				if (nv == nt || !packed_next(&p, fe, hard, &v))
					return 0;
				vals[nv++] = (int64_t)v;
			}
		} else if (nlab++ ||
		           !label_fields(p, fe, hard, dec->nstrings, lf)) {
			return 0;
		}
		p = fe;
	}
	if (nv != nt)
		return 0;
	*ls = DELTA_NONE;
	if (nlab) {
		pprof_label lb = {(uint32_t)lf[1], (uint32_t)lf[2],
		                  (uint32_t)lf[4], (int64_t)lf[3]};
		HP_TRY(labelset_one(d, &lb, ls));
	}
	*nfp = nf;
	return 1;
}

int
heapprof__delta_item_values(heapprof_delta *d, const delta_item *item,
                            size_t n, uint64_t *out)
{
	uint32_t kp = d->kpos[item->kid], off = item->off;
	if (kp & DELTA_KROW) {
		memcpy(out, d->acc + (size_t)(kp & DELTA_KROWS) * d->dec.ntypes,
		       n * 8);
		if (kp & DELTA_KFIRST) {
			pprof_sample s;
			HP_TRY(heapprof__pprof_sample_at(
				&d->dec, off, item->len, &s));
			for (size_t t = 0; t < n; t++)
				out[t] += (uint64_t)s.values[t];
		}
		return 0;
	}
	/* The one packed values field of a sample parse_usual took whole.
	 * It was that form when the call read it first: anything else now
	 * is an input that changed between two reads of it. */
	const uint8_t *q = heapprof__pprof_sbytes(&d->dec, off);
	const uint8_t *e = q + item->len;
	const uint8_t *hard = d->dec.s_hard;
	uint8_t tag = 0;
	uint64_t m = 0;
	while (q < e && tag != TAG_SAMPLE_VALUES) {
		if (!sample_field(&q, e, hard, &tag, &m))
			return HEAPPROF_ECHANGED;
		if (tag != TAG_SAMPLE_VALUES && tag != TAG_SAMPLE_LOCATION_ID)
			q += m;
	}
	const uint8_t *fe = q + m;
	for (size_t t = 0; t < n; t++)
		if (tag != TAG_SAMPLE_VALUES || q >= fe ||
		    !packed_next(&q, fe, hard, &out[t]))
			return HEAPPROF_ECHANGED;
	return 0;
}

/* Room for a new accumulator row: *row set (its values to be filled). */
static int
acc_row(heapprof_delta *d, uint32_t *row)
{
	size_t nt = d->dec.ntypes;
	if (d->nacc > DELTA_KROWS)
		return HEAPPROF_ETOOBIG; /* rows are 30 bits (kpos) */
	if (HP_UNLIKELY((d->nacc + 1) * nt > d->acc_cap))
		HP_TRY(heapprof__delta_grow(d, &d->acc, &d->acc_cap,
		                            (d->nacc + 1) * nt, 8));
	*row = (uint32_t)d->nacc++;
	return 0;
}

/* Adds one sample's values to its key's item: the first sample makes the
 * item (values read again from the input later if usual, else a row); a
 * second one gives it a row holding the sum. */
static int
add_values(heapprof_delta *d, uint32_t kid, uint32_t off, uint32_t len,
           const int64_t *values, bool usual)
{
	size_t nt = d->dec.ntypes;
	uint32_t row;
	if (d->key_call[kid] != d->gen) {
		uint32_t kp = (uint32_t)d->nitems;
		if (!usual) {
			HP_TRY(acc_row(d, &row));
			for (size_t t = 0; t < nt; t++)
				d->acc[(size_t)row * nt + t] = (uint64_t)values[t];
			kp = DELTA_KROW | row;
		}
		/* items holds a row per sample (prepare): more samples than
		 * open counted is an input read again that changed. */
		if (HP_UNLIKELY(d->nitems >= d->items_cap))
			return HEAPPROF_ECHANGED;
		d->key_call[kid] = d->gen;
		d->kpos[kid] = kp;
		d->items[d->nitems++] = (delta_item){kid, off, len};
		return 0;
	}
	uint32_t kp = d->kpos[kid];
	if (!(kp & DELTA_KROW)) {
		delta_item *item = &d->items[kp];
		HP_TRY(acc_row(d, &row));
		uint64_t *a = d->acc + (size_t)row * nt;
		kp = DELTA_KROW | row;
		if (d->dec.st.on) {
			/* The first sample is no longer at hand. */
			memset(a, 0, nt * 8);
			kp |= DELTA_KFIRST;
		} else {
			HP_TRY(heapprof__delta_item_values(d, item, nt, a));
		}
		d->kpos[kid] = kp;
	}
	uint64_t *acc = d->acc + (size_t)(kp & DELTA_KROWS) * nt;
	for (size_t t = 0; t < nt; t++)
		acc[t] += (uint64_t)values[t];
	return 0;
}

int
heapprof__delta_sample(heapprof_delta *d, uint32_t off, uint32_t len)
{
	int64_t fv[DELTA_MAXT];
	const int64_t *vals = fv;
	size_t nf;
	uint32_t ls, kid;
	int rc = d->slow_only & DELTA_SLOW_NOKEY
	                 ? 0
	                 : parse_usual(d, off, len, &nf, &ls, fv);
	if (rc < 0)
		return rc;
	if (rc == 0) {
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
	/* The key that followed the previous one last time, else the
	 * tables. */
	uint32_t c = d->prev_key == DELTA_NONE ? d->first_key
	                                       : d->key_next[d->prev_key];
	if (!(d->slow_only & DELTA_SLOW_NOPRED) && key_is(d, c, fr, nf, ls)) {
		kid = c;
		d->pred_hits++;
	} else {
		HP_TRY(key_intern(d, fr, nf, ls, &kid));
	}
	link_key(d, kid);
	return add_values(d, kid, off, len, vals, rc == 1);
}

void
heapprof__delta_key_free(heapprof_delta *d)
{
	heapprof__dp_free(&d->addr_frames);
	heapprof__strtab_free(&d->line_frames);
	heapprof__strtab_free(&d->labelsets);
	heapprof__dp_free(&d->nodes);
	heapprof__dp_free(&d->keys);
	heapprof__delta_release(d, &d->prev,
	                        heapprof__delta_prev_bytes(d, d->kcap));
	heapprof__delta_release(d, &d->key_call, d->kcap * 4);
	heapprof__delta_release(d, &d->kpos, d->kcap * 4);
	heapprof__delta_release(d, &d->key_next, d->kcap * 4);
	d->kcap = 0;
}
