/*
 * delta.h: internals of the delta computer (heapprof_delta_* in
 * heapprof.h), shared by delta.c (calls, subtraction, commit, when to
 * evict), delta_key.c (sample identity, its tables and their rebuild) and
 * delta_write.c (pruned, renumbered output).
 */
#ifndef HEAPPROF_DELTA_H
#define HEAPPROF_DELTA_H

#include <stdbool.h>
#include <stdint.h>

#include "heapprof.h"
#include "delta_pairs.h"
#include "strtab.h"
#include "gz.h"
#include "pb.h"
#include "pprof_dec.h"

#define DELTA_NONE UINT32_MAX

/* Frame ids: by address below this, by lines with this bit. */
#define DELTA_LFRAME 0x80000000u

/* One key's samples in this call: the key, and where its first sample
 * is in this profile. Its values are its key's accumulator row if kpos
 * says so, else read again from that sample's bytes (one sample in the
 * usual wire form). */
typedef struct delta_item {
	uint32_t kid, off, len;
} delta_item;

/* kpos[k] of a key seen in this call (key_call[k] == gen): its item's index,
 * or DELTA_KROW | its accumulator row once it has one (several samples,
 * or a form the decoder reads). DELTA_KFIRST, stream input only: the row
 * holds the sums of the later samples, not yet the first one's values
 * (its bytes were gone when the second came); they are added where the
 * first sample is read again (heapprof__delta_item_values). */
#define DELTA_KROW 0x80000000u
#define DELTA_KFIRST 0x40000000u
#define DELTA_KROWS 0x3fffffffu

/* Most sample types the usual-form path decodes inline (more: the
 * decoder). */
#define DELTA_MAXT 16

/* The label cache (delta_key.c): label set ids of one-label samples by
 * the label's string indexes and number, which hold within one call:
 * valid while epoch is the computer's label_epoch (bumped each call). */
#define DELTA_LABEL_CACHE 4096
typedef struct delta_label_cache {
	uint32_t epoch, key, str, unit, id;
	int64_t num;
} delta_label_cache;

/* heapprof_delta.slow_only, for tests: turn fast paths off so that their
 * output can be compared with the exact paths' byte for byte. */
#define DELTA_SLOW_NOPRED 1 /* no predicted keys: every key looked up */
#define DELTA_SLOW_NOKEY 2  /* every sample through the decoder */
#define DELTA_SLOW_NOOUT 4  /* every sample written from the decoder */

/* The computer's state, by lifetime. Each group is an anonymous struct
 * (its fields are named as the computer's own). */
struct heapprof_delta {
	/* --- configuration: set by heapprof_delta_new, never changed */
	struct {
		pb_realloc_fn *rf;
		void *rctx;
		gz_alloc gza;       /* zlib's view of rf (delta_write.c) */
		unsigned slow_only; /* DELTA_SLOW_* (tests); 0 in use */
		char **names;       /* subtracted type names */
		size_t nnames;
		unsigned max_age;   /* calls a key may be absent, then evicted */
	};

	/* --- stream state: what one call leaves to the next. A sample's
	 * identity (delta_key.c): its frames (address, or lines by
	 * content), its stack a path of nodes (parent, frame) from the
	 * root, its key (stack node, label set). */
	struct {
		dp_table addr_frames; /* frames by address (two halves): id f */
		strtab line_frames; /* frames by lines: id DELTA_LFRAME | f */
		strtab labelsets;
		dp_table nodes; /* id + 1 is a node; 0 the empty stack */
		dp_table keys;  /* (node, label set id or DELTA_NONE) */
		/* Per key (kcap rows): the previous profile's values, npcols
		 * columns (ncol[name]: a name's column or -1: a column only
		 * for the names a profile has matched so far); the call in
		 * which it was last seen; its item or row in that call
		 * (kpos: DELTA_KROW); the key that followed it then. */
		int64_t *prev;
		int32_t *ncol;
		size_t npcols;
		uint32_t *key_call, *kpos, *key_next;
		size_t kcap;
		uint32_t first_key; /* the last call's first key */
		uint32_t gen;       /* calls made, the current one included */
		int64_t prev_time;
		bool have_prev;
		uint64_t calls, evicted;
		/* Sample types (a u32 length and the bytes of the type, then
		 * those of its unit) by id, and the ids of the last successful
		 * call's, in input order (SAME_TYPES) */
		strtab types;
		uint32_t *ptid;
		size_t ptid_cap, pnt;
	};

	/* --- caches, exact or checked before use */
	struct {
		/* loc_frame[location index] -> frame id or DELTA_NONE,
		 * filled as samples need it in one call. */
		uint32_t *loc_frame;
		size_t loc_frame_cap;
		delta_label_cache label_cache[DELTA_LABEL_CACHE];
		uint32_t label_epoch;
		/* Prediction: the next sample's key is the one that
		 * followed the previous sample's last time (key_next),
		 * confirmed exactly. */
		uint32_t prev_key;  /* the previous sample's, this call */
		uint64_t pred_hits; /* (tests) */
	};

	/* --- per-call scratch, kept for its capacity */
	struct {
		pprof_dec dec;
		uint32_t *keybuf; /* a sample's frames, leaf first */
		size_t keybuf_cap;
		uint8_t *bbuf; /* canonical bytes of a frame or label set */
		size_t bbuf_cap;
		uint32_t *lorder; /* label sort order */
		size_t lorder_cap;
		delta_item *items;
		size_t nitems, items_cap;
		uint64_t *acc; /* nacc rows of ntypes, summed as unsigned
		                * (wraps): keys with several samples or an
		                * unusual form */
		size_t nacc, acc_cap;
		int32_t *slot; /* per input type: index into names or -1 */
		size_t slot_cap;
		int32_t *tcol; /* per input type: its prev[] column or -1 */
		size_t tcol_cap;
		uint32_t *tid; /* per input type: its id in types */
		size_t tid_cap;
		uint32_t *sub; /* subtracted types: input indexes, then
		                * name slots */
		size_t sub_cap;
		int64_t *outv;
		size_t outv_cap;
		size_t last_in, last_out;
	};

	/* --- output (delta_write.c) */
	struct {
		pb_writer w;
		gz_writer gz;
		bool gz_ready;
		heapprof_write_fn *write;
		void *write_arg;
		uint32_t *str_map; /* input string -> output index (0: none) */
		size_t str_map_cap;
		uint32_t *out_strs; /* output string i = input string
		                     * out_strs[i] */
		size_t nout_strs, out_strs_cap;
		uint8_t *loc_used, *func_used, *map_used;
		size_t loc_used_cap, func_used_cap, map_used_cap;
	};
};

/* Bytes of a prev[] array of cap rows (one spare word: never 0 bytes). */
HP_INLINE size_t
heapprof__delta_prev_bytes(const heapprof_delta *d, size_t cap)
{
	return cap * d->npcols * 8 + 8;
}

/* heapprof__grow and heapprof__release through the computer's allocator. */
HP_INLINE int
heapprof__delta_grow(heapprof_delta *d, void *pp, size_t *cap, size_t need,
                     size_t elem)
{
	return heapprof__grow(d->rf, d->rctx, pp, cap, need, elem);
}
HP_INLINE void
heapprof__delta_release(heapprof_delta *d, void *pp, size_t bytes)
{
	heapprof__release(d->rf, d->rctx, pp, bytes);
}

/* Identity (delta_key.c). prepare readies loc_frame[] for the input;
 * reserve sizes a first fill (no keys yet) for its samples at once;
 * sample takes one sample to its key and adds its values to the key's
 * item. */
int heapprof__delta_key_prepare(heapprof_delta *d);
int heapprof__delta_reserve(heapprof_delta *d);
int heapprof__delta_sample(heapprof_delta *d, uint32_t off, uint32_t len);

/* Key kid follows the previous sample's. */
HP_INLINE void
link_key(heapprof_delta *d, uint32_t kid)
{
	if (d->prev_key == DELTA_NONE)
		d->first_key = kid;
	else
		d->key_next[d->prev_key] = kid;
	d->prev_key = kid;
}


/* Rebuilds the identity tables with the keys seen within max_age calls
 * only (eviction, delta_evict.c); key ids change. */
int heapprof__delta_compact(heapprof_delta *d, size_t live);
/* Frees what delta_key.c owns. */
void heapprof__delta_key_free(heapprof_delta *d);

/* The first n (<= ntypes) values of an item into out (delta_key.c); its
 * first sample's bytes must be at hand (stream input: the iteration at
 * it). */
int heapprof__delta_item_values(heapprof_delta *d, const delta_item *item,
                                size_t n, uint64_t *out);
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
