/*
 * delta.h: internals of the delta computer (heapprof_delta_* in
 * heapprof.h), shared by delta.c (state, aggregation, subtraction,
 * eviction) and delta_write.c (pruned, renumbered output).
 */
#ifndef HEAPPROF_DELTA_H
#define HEAPPROF_DELTA_H

#include <stdbool.h>
#include <stdint.h>

#include "heapprof.h"
#include "delta_table.h"
#include "gz.h"
#include "pb.h"
#include "pprof_dec.h"

#define DELTA_NONE UINT32_MAX

/* One key's samples in this call. Its values: with DELTA_ITEM_SAME, its
 * key's stored values (the last call's); else its accumulator row arow;
 * else (DELTA_NONE: one sample, recorded by the raw cache) its key's
 * stored values, which are this call's. */
typedef struct delta_item {
	uint32_t kid;      /* key id */
	uint32_t off, len; /* first sample with that key in this profile */
	uint32_t arow;     /* accumulator row, or DELTA_NONE */
} delta_item;

/* Per key: its raw identity bytes in the raw arena (the sample's bytes
 * before its values field, `la` of them, then those after; len
 * DELTA_RAW_NONE: none), then room for vcap bytes holding its values field
 * as it was (vl bytes; valid with DELTA_KRAW_VALS), and the key that
 * followed it in the last call (delta_raw.c). */
typedef struct delta_kraw {
	uint32_t off;
	uint16_t len, la;
	uint32_t next;
	uint8_t vl, vcap, flags, pad_;
} delta_kraw;

/* kraw flags. VALS: the stored values field is this key's one sample in
 * the last successful call (so equal to its committed values), or, for a
 * key seen in this call, its one sample in this call. NZ0: those values
 * are zero for every type not subtracted. */
#define DELTA_KRAW_VALS 1
#define DELTA_KRAW_NZ0 2

/* delta_item.len flag: the sample's values field is byte for byte the
 * last call's (deltas of subtracted types 0; no accumulator row). */
#define DELTA_ITEM_SAME 0x80000000u

#define DELTA_RAW_NONE UINT16_MAX

/* Most sample types the raw fast path decodes inline (more: slow path). */
#define DELTA_RAW_MAXT 16

/* Per-call cache of one-label label sets (delta.c). */
#define DELTA_LCACHE 512
typedef struct delta_lcache {
	uint32_t gen, key, str, unit, id;
	int64_t num;
} delta_lcache;

/* heapprof_delta.slow_only, for tests: turn fast paths off so that their
 * output can be compared with the exact paths' byte for byte. */
#define DELTA_SLOW_NORAW 1 /* no raw-sample cache (delta_raw.c) */
#define DELTA_SLOW_NOKEY 2 /* every key through the decoder (delta_key.c) */
#define DELTA_SLOW_NOOUT 4 /* every sample written from the decoder */

struct heapprof_delta {
	pb_realloc_fn *rf;
	unsigned slow_only; /* DELTA_SLOW_* (tests); 0 in use */
	void *rctx;
	gz_alloc gza; /* zlib's view of rf (delta_write.c) */

	/* configuration */
	char **names; /* subtracted type names */
	size_t nnames;
	/* prev[] holds a column only for the names a profile has matched so
	 * far (a heap stream matches 2 of the 4 default names): ncol[name]
	 * is its column or -1, npcols columns in all. */
	int32_t *ncol;
	size_t npcols;
	unsigned max_age;

	/* stream state */
	dt_table frames, labelsets, keys;
	int64_t *prev;   /* keys.n x npcols: values of the previous profile */
	uint32_t *kgen;  /* call in which each key was last seen */
	uint32_t *kpos;  /* its item index in that call */
	size_t kcap;
	uint32_t gen;
	int64_t prev_time;
	bool have_prev;
	uint64_t calls, evicted;

	/* raw-sample cache (delta_raw.c) */
	delta_kraw *kraw; /* kcap rows */
	uint8_t *raw;     /* arena of raw identity bytes */
	size_t raw_len, raw_cap, raw_garbage;
	uint32_t khead, klast; /* first key of the last call; previous key */
	bool raw_ok, have_dict;
	uint64_t dict_gen; /* decoder snapshot the raw records belong to */
	/* The raw dictionary's location ids are 1..dict_nlocs in order, so
	 * keys may be raw-only (delta_key.c); nrawonly of them are. */
	bool dict_seq;
	size_t dict_nlocs, nrawonly;
	unsigned dict_changes; /* consecutive calls with a new dictionary */
	/* the last dictionary's strings: its string-table fields as they
	 * were (ps_region), else the strings concatenated (ps_lens) */
	uint8_t *ps;
	bool ps_region;
	size_t ps_len, ps_cap;
	uint32_t *ps_lens;
	size_t ps_n, ps_lcap;
	uint64_t raw_hits;
	uint64_t raw_restarts; /* raw arena started over (tests) */

	delta_lcache lcache[DELTA_LCACHE];

	/* per-call scratch, kept for its capacity */
	pprof_dec dec;
	uint32_t *loc_frame;
	size_t loc_frame_cap;
	uint32_t *keybuf;
	size_t keybuf_cap;
	uint32_t *rwbuf; /* a raw-only key's content (delta_key.c) */
	size_t rwbuf_cap;
	uint8_t *bbuf;
	size_t bbuf_cap;
	uint32_t *lorder; /* label sort order */
	size_t lorder_cap;
	delta_item *items;
	size_t nitems, items_cap;
	uint64_t *acc; /* nacc rows of ntypes, summed as unsigned (wraps):
	                * items whose values the raw cache does not hold */
	size_t nacc, acc_cap;
	int32_t *slot; /* per input type: index into names or -1 */
	size_t slot_cap;
	int64_t *outv;
	size_t outv_cap;
	uint32_t *sub; /* subtracted types: input indexes, then name slots */
	size_t sub_cap;
	int32_t *last_slot; /* the last successful call's slot[] (VALS) */
	size_t last_nt, last_slot_cap;
	/* the last successful call's sample types, for SAME_TYPES: per type
	 * a u32 length and the bytes of its type, then of its unit */
	uint8_t *ptypes;
	size_t ptypes_cap, pnt;
	uint32_t *str_map; /* input string index -> output index (0: none) */
	size_t str_map_cap;
	uint32_t *out_strs; /* output string i = input string out_strs[i] */
	size_t nout_strs, out_strs_cap;
	uint8_t *loc_used, *func_used, *map_used;
	size_t loc_used_cap, func_used_cap, map_used_cap;
	size_t last_in, last_out;

	/* output */
	pb_writer w;
	gz_writer gz;
	bool gz_ready;
	heapprof_write_fn *write;
	void *write_arg;
};

/* Bytes of a prev[] array of cap rows (one spare word: never 0 bytes). */
HP_INLINE size_t
heapprof__delta_prev_bytes(const heapprof_delta *d, size_t cap)
{
	return cap * d->npcols * 8 + 8;
}

/* Grows a scratch array to hold `need` elements (doubling). */
int heapprof__delta_grow(heapprof_delta *d, void *pp, size_t *cap, size_t need,
                         size_t elem);
void heapprof__delta_release(heapprof_delta *d, void *pp, size_t bytes);

/* Raw-sample cache (delta_raw.c). prepare checks the input's dictionary
 * (location ids and addresses, strings) against the last one and drops
 * every raw record if it changed; lookup predicts the sample's key from
 * the last call's order and confirms it by comparing the sample's bytes
 * minus its values (1: hit, *kid and vals[ntypes] set; 0: miss); record
 * stores a slow-path sample's raw bytes for its key; link chains the keys
 * in call order for the next prediction. */
int heapprof__delta_raw_prepare(heapprof_delta *d);
int heapprof__delta_raw_record(heapprof_delta *d, uint32_t kid, uint32_t off,
                               uint32_t len, const int64_t *values);
/* The values of the validated sample at (off, len), nt of them. */
int heapprof__delta_values_of(const heapprof_delta *d, uint32_t off,
                              uint32_t len, uint64_t *out);
void heapprof__delta_raw_invalidate(heapprof_delta *d);
void heapprof__delta_raw_free(heapprof_delta *d);

static inline void
heapprof__delta_raw_link(heapprof_delta *d, uint32_t kid)
{
	if (d->klast == DELTA_NONE)
		d->khead = kid;
	else
		d->kraw[d->klast].next = kid;
	d->klast = kid;
}

/* A first fill (no keys yet) of a profile of known size: the key tables,
 * per-key arrays and raw arena sized once for its samples, so that they
 * are not grown (and copied) sample by sample. */
int heapprof__delta_reserve(heapprof_delta *d);

/* Raw-only keys (delta_key.c). The table's eq hook; and materialize,
 * which gives every raw-only key its content bytes: called while the raw
 * records and loc_frame[] are still those of the raw dictionary, before
 * they go. */
int heapprof__delta_key_eq(void *ctx, uint32_t kid, const void *key,
                           size_t len);
int heapprof__delta_materialize(heapprof_delta *d);

/* The slow path for one sample (delta.c): full decode, key by content,
 * raw record for the next call, values added. */
int heapprof__delta_slow_sample(heapprof_delta *d, uint32_t off, uint32_t len);
/* Pass A over the samples with the raw cache on (delta_raw.c): predicted
 * keys confirmed by their bytes, misses through the slow path. */
int heapprof__delta_raw_pass(heapprof_delta *d);

/* Room for one more item. */
HP_INLINE int
heapprof__delta_item_room(heapprof_delta *d)
{
	if (HP_UNLIKELY(d->nitems >= d->items_cap))
		HP_TRY(heapprof__delta_grow(d, &d->items, &d->items_cap,
		                            d->nitems + 1, sizeof(delta_item)));
	return 0;
}

/* A new accumulator row: *row set (its values to be filled). */
HP_INLINE int
heapprof__delta_acc_row(heapprof_delta *d, uint32_t *row)
{
	size_t nt = d->dec.ntypes;
	if (HP_UNLIKELY((d->nacc + 1) * nt > d->acc_cap))
		HP_TRY(heapprof__delta_grow(d, &d->acc, &d->acc_cap,
		                            (d->nacc + 1) * nt, 8));
	*row = (uint32_t)d->nacc++;
	return 0;
}

/* Makes key kid's item, first seen at (off, len), the next one, with
 * accumulator row arow (DELTA_NONE: its values are its key's stored
 * ones); item_room first. */
HP_INLINE void
heapprof__delta_item_new(heapprof_delta *d, uint32_t kid, uint32_t off,
                         uint32_t len, uint32_t arow)
{
	d->kgen[kid] = d->gen;
	d->kpos[kid] = (uint32_t)d->nitems;
	delta_item *item = &d->items[d->nitems++];
	item->kid = kid;
	item->off = off;
	item->len = len;
	item->arow = arow;
}

/* Key kid's stored values field decoded into out (ntypes of them). */
int heapprof__delta_stored_values(const heapprof_delta *d, uint32_t kid,
                                  uint64_t *out);
/* The first n of them (n <= ntypes), for commit: no check (emit read the
 * whole field first). */
void heapprof__delta_stored_prefix(const heapprof_delta *d, uint32_t kid,
                                   size_t n, uint64_t *out);

/* A second sample of key kid in this call: its item gets an accumulator
 * row holding the values so far (from its stored values), and its stored
 * values stand for nothing any more (delta_raw.c). Before the key's raw
 * record is touched. */
int heapprof__delta_unsame(heapprof_delta *d, uint32_t kid);
/* Clears every key's VALS flag (a failed call, a new type layout). */
void heapprof__delta_raw_novals(heapprof_delta *d);
/* True if the values of types not subtracted are all zero in row v. */
HP_INLINE bool
heapprof__delta_nonsub_zero(const heapprof_delta *d, const uint64_t *v)
{
	for (size_t t = 0; t < d->dec.ntypes; t++)
		if (d->slot[t] < 0 && v[t] != 0)
			return false;
	return true;
}

/* Adds one sample's values to its key's item (first occurrence: a new
 * item, whose values are its stored ones if the raw cache just recorded
 * them; a second one: after unsame). */
HP_INLINE int
heapprof__delta_add_values(heapprof_delta *d, uint32_t kid, uint32_t off,
                           uint32_t len, const int64_t *values)
{
	size_t nt = d->dec.ntypes;
	uint64_t *acc;
	if (d->kgen[kid] != d->gen) {
		uint32_t row = DELTA_NONE;
		HP_TRY(heapprof__delta_item_room(d));
		if (!(d->kraw[kid].flags & DELTA_KRAW_VALS)) {
			HP_TRY(heapprof__delta_acc_row(d, &row));
			acc = d->acc + (size_t)row * nt;
			for (size_t t = 0; t < nt; t++)
				acc[t] = (uint64_t)values[t];
		}
		heapprof__delta_item_new(d, kid, off, len, row);
	} else {
		acc = d->acc + (size_t)d->items[d->kpos[kid]].arow * nt;
		for (size_t t = 0; t < nt; t++)
			acc[t] += (uint64_t)values[t];
	}
	return 0;
}

/* Output (delta_write.c). begin resets the writer and writes the sample
 * types; sample writes one sample; finish writes the mappings, locations,
 * functions and strings the samples need, the header, and flushes. */
int heapprof__delta_out_begin(heapprof_delta *d, unsigned flags,
                              heapprof_write_fn *write, void *arg);
int heapprof__delta_out_sample(heapprof_delta *d, const pprof_sample *s,
                               const int64_t *values);
/* Writes the validated sample whose body is at (off, len) with `values`
 * without the full decoder (ids, indexes and labels read directly).
 * Returns 1 if written, 0 if its form needs the decoder, or an error. */
int heapprof__delta_out_fast(heapprof_delta *d, uint32_t off, uint32_t len,
                             const int64_t *values);
int heapprof__delta_out_finish(heapprof_delta *d, unsigned flags,
                               int64_t time_nanos, int64_t duration_nanos);
void heapprof__delta_out_free(heapprof_delta *d);

#endif
