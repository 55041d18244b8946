/*
 * delta.c: the allocation-free delta computer (heapprof_delta_* in
 * heapprof.h): stream state, aggregation of duplicate samples,
 * subtraction by type name, and eviction of vanished stacks. Sample
 * identity lives in delta_key.c, output encoding in delta_write.c.
 *
 * Identity (delta_key.c) is by exact content: two samples share a key
 * only if their stacks and labels are equal.
 *
 * One call: (1) open the decoder (index + validation); (2) pass A over the
 * samples: key -> item (first occurrence), values summed per item; (3) pass
 * B over the items: subtract, drop all-zero, write; (4) on success commit the
 * current values as "previous" and evict keys not seen for max_age calls.
 * Existing keys need no allocation, so once the key set stops growing a
 * call allocates nothing (all scratch keeps its capacity), unless it has
 * more keys with several samples (accumulator rows) than any call before;
 * test_delta_alloc.c counts this.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"
#include "pprof_int.h"

static const char *const default_types[] = {"alloc_objects", "alloc_space",
                                            "contentions", "delay"};

#define DEFAULT_MAX_AGE 16

/* ------------------------------------------------------------ lifecycle */

HP_EXPORT int
heapprof_delta_new(heapprof_delta **out, const heapprof_delta_options *opt)
{
	heapprof_delta_options def = {0};
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!opt)
		opt = &def;
	pb_realloc_fn *rf =
		opt->realloc_fn ? opt->realloc_fn : heapprof__pb_libc_realloc;
	heapprof_delta *d = rf(opt->realloc_ctx, NULL, 0, sizeof(*d));
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	d->rf = rf;
	d->rctx = opt->realloc_ctx;
	d->max_age = opt->max_age ? opt->max_age : DEFAULT_MAX_AGE;
	d->first_key = d->prev_key = DELTA_NONE;
	heapprof__dp_init(&d->addr_frames, rf, d->rctx);
	heapprof__strtab_init(&d->line_frames, rf, d->rctx);
	heapprof__strtab_init(&d->labelsets, rf, d->rctx);
	heapprof__strtab_init(&d->types, rf, d->rctx);
	heapprof__dp_init(&d->nodes, rf, d->rctx);
	heapprof__dp_init(&d->keys, rf, d->rctx);
	heapprof__pprof_dec_init(&d->dec, rf, d->rctx);
	d->dec.limit = opt->max_input ? opt->max_input : d->dec.limit;
	heapprof__pb_init(&d->w, rf, d->rctx, NULL, NULL);

	const char *const *names = opt->types ? opt->types : default_types;
	size_t n = opt->types ? opt->ntypes : HP_ARRAY_LEN(default_types);
	d->names = rf(d->rctx, NULL, 0, (n ? n : 1) * sizeof(char *));
	d->ncol = rf(d->rctx, NULL, 0, (n ? n : 1) * sizeof(int32_t));
	if (!d->names || !d->ncol)
		goto nomem;
	for (size_t i = 0; i < n; i++)
		d->ncol[i] = -1;
	for (size_t i = 0; i < n; i++) {
		if (!names[i]) {
			d->nnames = i;
			heapprof_delta_free(d);
			return -EINVAL;
		}
		size_t l = strlen(names[i]) + 1;
		d->names[i] = rf(d->rctx, NULL, 0, l);
		if (!d->names[i]) {
			d->nnames = i;
			goto nomem;
		}
		memcpy(d->names[i], names[i], l);
	}
	d->nnames = n;
	*out = d;
	return 0;
nomem:
	heapprof_delta_free(d);
	return -ENOMEM;
}

HP_EXPORT const char *
heapprof_delta_fault(const heapprof_delta *d)
{
	return d->dec.fault;
}

HP_EXPORT void
heapprof_delta_free(heapprof_delta *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nnames; i++)
		d->rf(d->rctx, d->names[i], strlen(d->names[i]) + 1, 0);
	heapprof__delta_release(d, &d->names,
	                        (d->nnames ? d->nnames : 1) * sizeof(char *));
	heapprof__delta_release(d, &d->ncol,
	                        (d->nnames ? d->nnames : 1) * sizeof(int32_t));
	heapprof__delta_key_free(d);
	heapprof__pprof_dec_free(&d->dec);
	heapprof__delta_release(d, &d->loc_frame, d->loc_frame_cap * 4);
	heapprof__delta_release(d, &d->keybuf, d->keybuf_cap * 4);
	heapprof__strtab_free(&d->types);
	heapprof__delta_release(d, &d->tid, d->tid_cap * 4);
	heapprof__delta_release(d, &d->ptid, d->ptid_cap * 4);
	heapprof__delta_release(d, &d->bbuf, d->bbuf_cap);
	heapprof__delta_release(d, &d->lorder, d->lorder_cap * 4);
	heapprof__delta_release(d, &d->items, d->items_cap * sizeof(delta_item));
	heapprof__delta_release(d, &d->acc, d->acc_cap * 8);
	heapprof__delta_release(d, &d->slot, d->slot_cap * 4);
	heapprof__delta_release(d, &d->outv, d->outv_cap * 8);
	heapprof__delta_release(d, &d->sub, d->sub_cap * 4);
	heapprof__delta_release(d, &d->tcol, d->tcol_cap * 4);
	heapprof__delta_release(d, &d->str_map, d->str_map_cap * 4);
	heapprof__delta_release(d, &d->out_strs, d->out_strs_cap * 4);
	heapprof__delta_release(d, &d->loc_used, d->loc_used_cap);
	heapprof__delta_release(d, &d->func_used, d->func_used_cap);
	heapprof__delta_release(d, &d->map_used, d->map_used_cap);
	heapprof__delta_out_free(d);
	d->rf(d->rctx, d, sizeof(*d), 0);
}

HP_EXPORT void
heapprof_delta_reset(heapprof_delta *d)
{
	heapprof__dp_clear(&d->addr_frames);
	heapprof__strtab_clear(&d->line_frames);
	heapprof__strtab_clear(&d->labelsets);
	heapprof__dp_clear(&d->nodes);
	heapprof__dp_clear(&d->keys);
	d->first_key = DELTA_NONE;
	d->have_prev = false;
	d->prev_time = 0;
}

HP_EXPORT int
heapprof_delta_get_stats(const heapprof_delta *d, heapprof_delta_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->calls = d->calls;
	st->keys = d->keys.n;
	st->frames = d->addr_frames.n + d->line_frames.n;
	st->evicted = d->evicted;
	st->last_samples_in = d->last_in;
	st->last_samples_out = d->last_out;
	size_t b = heapprof__dp_memory(&d->addr_frames) +
	           heapprof__strtab_memory(&d->line_frames) +
	           heapprof__strtab_memory(&d->labelsets) +
	           heapprof__dp_memory(&d->nodes) +
	           heapprof__dp_memory(&d->keys);
	b += heapprof__delta_prev_bytes(d, d->kcap) + d->kcap * 20;
	b += heapprof__pprof_dec_memory(&d->dec);
	b += heapprof__strtab_memory(&d->types) + (d->tid_cap + d->ptid_cap) * 4;
	b += d->loc_frame_cap * 4 + d->keybuf_cap * 4 + d->bbuf_cap +
	     d->lorder_cap * 4 + d->items_cap * sizeof(delta_item) +
	     d->acc_cap * 8 + d->slot_cap * 4 + d->outv_cap * 8 +
	     d->tcol_cap * 4 +
	     d->str_map_cap * 4 + d->out_strs_cap * 4 + d->loc_used_cap +
	     d->func_used_cap + d->map_used_cap + d->w.cap;
	st->state_bytes = b;
	return 0;
}

/* ------------------------------------------------------------ passes */

/* Pass A: every sample -> its key's item; values summed per item. */
static int
aggregate(heapprof_delta *d)
{
	pprof_dec *dec = &d->dec;
	pprof_sample_iter it;
	uint32_t off, len;
	int rc;
	d->nitems = 0;
	heapprof__pprof_samples(dec, &it);
	while ((rc = heapprof__pprof_sample_raw_next(dec, &it, &off, &len)) ==
	       0) {
		d->last_in++;
		HP_TRY(heapprof__delta_sample(d, off, len));
	}
	return rc == 1 ? 0 : rc;
}

/* The subtracted types of this profile: input type index and name slot. */
static size_t
subtracted(const heapprof_delta *d, uint32_t *ti, uint32_t *si)
{
	size_t n = 0;
	for (size_t t = 0; t < d->dec.ntypes; t++)
		if (d->slot[t] >= 0) {
			ti[n] = (uint32_t)t;
			si[n++] = (uint32_t)d->ncol[d->slot[t]];
		}
	return n;
}

/* Pass B: subtract, drop all-zero, write. Does not touch prev. */
static int
emit(heapprof_delta *d)
{
	pprof_dec *dec = &d->dec;
	size_t nt = dec->ntypes, nn = d->npcols;
	uint32_t *ti = d->sub, *si = d->sub + nt;
	size_t ns = subtracted(d, ti, si);
	uint64_t *outv = (uint64_t *)d->outv;
	pprof_sample s;
	pprof_sample_iter it;
	heapprof__pprof_samples(dec, &it);
	for (size_t i = 0; i < d->nitems; i++) {
		const delta_item *item = &d->items[i];
		const int64_t *prev = d->prev + (size_t)item->kid * nn;
		uint32_t off = item->off;
		uint64_t nz = 0;
		/* (stream input: read on to the item's first sample) */
		HP_TRY(heapprof__pprof_sample_seek(dec, &it, off));
		uint32_t len = item->len;
		HP_TRY(heapprof__delta_item_values(d, item, nt, outv));
		for (size_t j = 0; j < ns; j++)
			outv[ti[j]] -= (uint64_t)prev[si[j]];
		for (size_t t = 0; t < nt; t++)
			nz |= outv[t];
		if (!nz)
			continue;
		int rc = d->slow_only & DELTA_SLOW_NOOUT
		                 ? 0
		                 : heapprof__delta_out_fast(d, off, len, d->outv);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			HP_TRY(heapprof__pprof_sample_at(dec, off, len, &s));
			HP_TRY(heapprof__delta_out_sample(d, &s, d->outv));
		}
		d->last_out++;
	}
	return 0;
}

/* The current values become the previous ones. Cannot fail on an input
 * in memory; on a stream input a read that fails leaves prev half
 * updated (the caller then starts the stream over). */
static int
commit(heapprof_delta *d)
{
	size_t nt = d->dec.ntypes, nn = d->npcols;
	uint32_t *ti = d->sub, *si = d->sub + nt;
	size_t ns = subtracted(d, ti, si);
	uint64_t *v = (uint64_t *)d->outv;
	size_t lim = 0; /* values up to the last subtracted one */
	for (size_t j = 0; j < ns; j++)
		if (ti[j] + 1 > lim)
			lim = ti[j] + 1;
	if (!ns)
		return 0;
	pprof_sample_iter it;
	heapprof__pprof_samples(&d->dec, &it);
	for (size_t i = 0; i < d->nitems; i++) {
		const delta_item *item = &d->items[i];
		uint32_t kp = d->kpos[item->kid];
		if (!(kp & DELTA_KROW) || (kp & DELTA_KFIRST))
			HP_TRY(heapprof__pprof_sample_seek(&d->dec, &it,
			                                   item->off));
		HP_TRY(heapprof__delta_item_values(d, item, lim, v));
		int64_t *prev = d->prev + (size_t)item->kid * nn;
		for (size_t j = 0; j < ns; j++)
			prev[si[j]] = (int64_t)v[ti[j]];
	}
	return 0;
}

static int
maybe_evict(heapprof_delta *d)
{
	size_t dead = 0;
	if (d->nitems == d->keys.n)
		return 0; /* every key was in this profile */
	for (size_t k = 0; k < d->keys.n; k++)
		dead += d->gen - d->key_call[k] > d->max_age;
	/* Rebuild once a quarter of the keys are dead: memory stays within
	 * 4/3 of the live set, and a stable stream never rebuilds. */
	if (dead == 0 || dead * 4 < d->keys.n)
		return 0;
	return heapprof__delta_compact(d, d->keys.n - dead);
}

/* Gives subtracted name k a column of prev[], zero for every key (a name
 * no profile has matched yet was never subtracted). */
static int
add_column(heapprof_delta *d, size_t k)
{
	size_t nn = d->npcols, rows = d->prev ? d->kcap : 0;
	size_t old = d->prev ? heapprof__delta_prev_bytes(d, rows) : 0;
	d->npcols = nn + 1;
	int64_t *p = d->rf(d->rctx, NULL, 0, heapprof__delta_prev_bytes(d, rows));
	d->npcols = nn;
	if (!p)
		return -ENOMEM;
	for (size_t r = 0; r < rows; r++) {
		memcpy(p + r * (nn + 1), d->prev + r * nn, nn * 8);
		p[r * (nn + 1) + nn] = 0;
	}
	if (d->prev)
		d->rf(d->rctx, d->prev, old, 0);
	d->prev = p;
	d->ncol[k] = (int32_t)nn;
	d->npcols = nn + 1;
	return 0;
}

/* Whether each of a[0, n) is among b[0, n). */
static bool
all_in(const uint32_t *a, const uint32_t *b, size_t n)
{
	for (size_t i = 0, j; i < n; i++) {
		for (j = 0; j < n && b[j] != a[i]; j++)
			;
		if (j == n)
			return false;
	}
	return true;
}

/* Whether the input's sample types (tid) are the last call's (ptid): as
 * many, and the same set both ways (a type twice and another missing is
 * not); more than 64: in the same order. */
static bool
same_types(const heapprof_delta *d)
{
	size_t nt = d->dec.ntypes;
	if (nt != d->pnt)
		return false;
	if (memcmp(d->tid, d->ptid, nt * 4) == 0)
		return true;
	return nt <= 64 && all_in(d->tid, d->ptid, nt) &&
	       all_in(d->ptid, d->tid, nt);
}

/* The checks of flags SUBTRACT and SAME_TYPES. */
static int
check_types(const heapprof_delta *d, unsigned flags)
{
	if ((flags & HEAPPROF_DELTA_SAME_TYPES) && d->have_prev &&
	    !same_types(d))
		return HEAPPROF_ETYPES;
	if (flags & HEAPPROF_DELTA_SUBTRACT) {
		size_t t = 0;
		while (t < d->dec.ntypes && d->slot[t] < 0)
			t++;
		if (t == d->dec.ntypes)
			return HEAPPROF_ENOSUBTRACT;
	}
	return 0;
}

/* Per-call setup: type slots and per-location caches. */
static int
prepare(heapprof_delta *d)
{
	pprof_dec *dec = &d->dec;
	size_t nt = dec->ntypes;
	HP_TRY(heapprof__delta_grow(d, &d->slot, &d->slot_cap, nt + 1, 4));
	HP_TRY(heapprof__delta_grow(d, &d->outv, &d->outv_cap, nt + 1, 8));
	HP_TRY(heapprof__delta_grow(d, &d->sub, &d->sub_cap, 2 * nt + 1, 4));
	/* At most one item per sample: sized once, not doubled. */
	size_t ns = dec->nsamples + 1;
	if (ns > d->items_cap)
		HP_TRY(heapprof__delta_grow(d, &d->items, &d->items_cap,
		                            ns + ns / 8, sizeof(delta_item)));
	d->nacc = 0;
	for (size_t t = 0; t < nt; t++) {
		d->slot[t] = -1;
		for (size_t k = 0; k < d->nnames; k++)
			if (heapprof__pprof_string_eq(dec, dec->types[t].type,
			                              d->names[k])) {
				d->slot[t] = (int32_t)k;
				break;
			}
		/* A type listed twice in one profile is subtracted once. */
		for (size_t u = 0; u < t && d->slot[t] >= 0; u++)
			if (d->slot[u] == d->slot[t])
				d->slot[t] = -1;
		if (d->slot[t] >= 0 && d->ncol[d->slot[t]] < 0)
			HP_TRY(add_column(d, (size_t)d->slot[t]));
	}
	HP_TRY(heapprof__delta_grow(d, &d->tcol, &d->tcol_cap, nt + 1, 4));
	for (size_t t = 0; t < nt; t++)
		d->tcol[t] = d->slot[t] >= 0 ? d->ncol[d->slot[t]] : -1;
	/* Each type's id in `types` (its type, then its unit), and room to
	 * keep them for the next call (commit cannot fail). */
	HP_TRY(heapprof__delta_grow(d, &d->tid, &d->tid_cap, nt + 1, 4));
	HP_TRY(heapprof__delta_grow(d, &d->ptid, &d->ptid_cap, nt + 1, 4));
	for (size_t t = 0; t < nt; t++) {
		size_t a, b;
		const pprof_value_type *vt = &dec->types[t];
		const char *ty = heapprof__pprof_string(dec, vt->type, &a);
		const char *un = heapprof__pprof_string(dec, vt->unit, &b);
		uint32_t l = (uint32_t)a;
		HP_TRY(heapprof__delta_grow(d, &d->bbuf, &d->bbuf_cap,
		                            4 + a + b, 1));
		memcpy(d->bbuf, &l, 4);
		memcpy(d->bbuf + 4, ty, a);
		memcpy(d->bbuf + 4 + a, un, b);
		HP_TRY(heapprof__strtab_intern(&d->types, d->bbuf, 4 + a + b,
		                               &d->tid[t]));
	}
	HP_TRY(heapprof__delta_reserve(d));
	return heapprof__delta_key_prepare(d);
}

/* One call after the decoder's open (rc: its result). */
static int
compute(heapprof_delta *d, int rc, unsigned flags, heapprof_write_fn *write,
        void *arg)
{
	if (rc == 0)
		rc = prepare(d);
	if (rc == 0)
		rc = check_types(d, flags);
	if (rc == 0)
		rc = aggregate(d);
	if (rc == 0)
		rc = heapprof__delta_out_begin(d, flags, write, arg);
	if (rc == 0)
		rc = emit(d);
	if (rc == 0) {
		int64_t t = d->dec.time_nanos, dur = d->dec.duration_nanos;
		if (d->have_prev && t && d->prev_time)
			dur = t - d->prev_time;
		rc = heapprof__delta_out_finish(d, flags, t, dur);
	}
	if (rc < 0)
		return rc;
	rc = commit(d);
	if (rc < 0) {
		heapprof_delta_reset(d);
		return rc;
	}
	memcpy(d->ptid, d->tid, d->dec.ntypes * 4);
	d->pnt = d->dec.ntypes;
	d->prev_time = d->dec.time_nanos;
	d->have_prev = true;
	d->calls++;
	return maybe_evict(d);
}

HP_EXPORT int
heapprof_delta_compute(heapprof_delta *d, const void *profile, size_t len,
                       unsigned flags, heapprof_write_fn *write, void *arg)
{
	if (!d || !write || (!profile && len))
		return -EINVAL;
	d->gen++;
	d->last_in = d->last_out = 0;
	return compute(d, heapprof__pprof_dec_open(&d->dec, profile, len),
	               flags, write, arg);
}

HP_EXPORT int
heapprof_delta_compute_read(heapprof_delta *d, heapprof_read_fn *read,
                            void *rarg, unsigned flags,
                            heapprof_write_fn *write, void *warg)
{
	if (!d || !read || !write)
		return -EINVAL;
	d->gen++;
	d->last_in = d->last_out = 0;
	return compute(d, heapprof__pprof_dec_open_read(&d->dec, read, rarg),
	               flags, write, warg);
}
