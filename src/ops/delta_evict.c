/*
 * delta_evict.c: eviction for the delta computer: its identity tables
 * (frames, label sets, stack nodes, keys) and per-key rows rebuilt with
 * only the keys seen within max_age calls, into new blocks, so that a
 * failure leaves the old ones whole. Key, node, frame and label set ids
 * change; caches keyed by them are dropped.
 */
#include <errno.h>
#include <string.h>

#include "heapprof.h"
#include "delta.h"

/* The new tables compact builds, and old id -> new id maps. */
typedef struct rebuilt {
	dp_table addr_frames;
	strtab line_frames, labelsets;
	dp_table nodes, keys;
	/* DELTA_NONE: not carried over */
	uint32_t *afmap, *fmap, *lmap, *nmap;
	int64_t *prev;
	uint32_t *key_call, *kpos, *key_next;
	size_t cap;
} rebuilt;

/* An entry of strtab src carried into dst (through map). */
static int
carry(const strtab *src, strtab *dst, uint32_t *map, uint32_t id,
      uint32_t *out)
{
	if (map[id] == DELTA_NONE) {
		size_t bl;
		const uint8_t *b = heapprof__strtab_get(src, id, &bl);
		int rc = heapprof__strtab_add(dst, b, bl, src->ents[id].hash,
		                              &map[id]);
		if (rc < 0)
			return rc;
	}
	*out = map[id];
	return 0;
}

/* Frame id f carried into the new tables. */
static int
carry_frame(heapprof_delta *d, rebuilt *r, uint32_t f, uint32_t *out)
{
	if (f & DELTA_LFRAME) {
		HP_TRY(carry(&d->line_frames, &r->line_frames, r->fmap,
		             f & ~DELTA_LFRAME, out));
		*out |= DELTA_LFRAME;
		return 0;
	}
	if (r->afmap[f] == DELTA_NONE) {
		int rc = heapprof__dp_intern(&r->addr_frames,
		                             heapprof__dp_a(&d->addr_frames, f),
		                             heapprof__dp_b(&d->addr_frames, f),
		                             &r->afmap[f]);
		if (rc < 0)
			return rc;
	}
	*out = r->afmap[f];
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
		HP_TRY(carry_frame(d, r, heapprof__dp_b(&d->nodes, x - 1), &f));
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
		heapprof__dp_free(&r->addr_frames);
		heapprof__strtab_free(&r->line_frames);
		heapprof__strtab_free(&r->labelsets);
		heapprof__dp_free(&r->nodes);
		heapprof__dp_free(&r->keys);
		heapprof__delta_release(d, &r->prev,
		                        heapprof__delta_prev_bytes(d, r->cap));
		heapprof__delta_release(d, &r->key_call, r->cap * 4);
		heapprof__delta_release(d, &r->kpos, r->cap * 4);
		heapprof__delta_release(d, &r->key_next, r->cap * 4);
	}
	heapprof__delta_release(d, &r->afmap, (d->addr_frames.n + 1) * 4);
	heapprof__delta_release(d, &r->fmap, (d->line_frames.n + 1) * 4);
	heapprof__delta_release(d, &r->lmap, (d->labelsets.n + 1) * 4);
	heapprof__delta_release(d, &r->nmap, (d->nodes.n + 1) * 4);
}

static int
rebuild(heapprof_delta *d, rebuilt *r)
{
	size_t nn = d->npcols;
	uint32_t **maps[4] = {&r->afmap, &r->fmap, &r->lmap, &r->nmap};
	size_t counts[4] = {d->addr_frames.n, d->line_frames.n, d->labelsets.n,
	                    d->nodes.n};
	for (int i = 0; i < 4; i++) {
		*maps[i] = d->rf(d->rctx, NULL, 0, (counts[i] + 1) * 4);
		if (!*maps[i])
			return -ENOMEM;
		memset(*maps[i], 0xff, (counts[i] + 1) * 4);
	}
	r->prev = d->rf(d->rctx, NULL, 0, heapprof__delta_prev_bytes(d, r->cap));
	r->key_call = d->rf(d->rctx, NULL, 0, r->cap * 4);
	r->kpos = d->rf(d->rctx, NULL, 0, r->cap * 4);
	r->key_next = d->rf(d->rctx, NULL, 0, r->cap * 4);
	if (!r->prev || !r->key_call || !r->kpos || !r->key_next)
		return -ENOMEM;
	for (uint32_t k = 0; k < d->keys.n; k++) {
		if (d->gen - d->key_call[k] > d->max_age)
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
		r->key_call[id] = d->key_call[k];
		r->key_next[id] = DELTA_NONE;
	}
	return 0;
}

int
heapprof__delta_compact(heapprof_delta *d, size_t live)
{
	rebuilt r;
	memset(&r, 0, sizeof(r));
	heapprof__dp_init(&r.addr_frames, d->rf, d->rctx);
	heapprof__strtab_init(&r.line_frames, d->rf, d->rctx);
	heapprof__strtab_init(&r.labelsets, d->rf, d->rctx);
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
	d->addr_frames = r.addr_frames;
	d->line_frames = r.line_frames;
	d->labelsets = r.labelsets;
	d->nodes = r.nodes;
	d->keys = r.keys;
	d->prev = r.prev;
	d->key_call = r.key_call;
	d->kpos = r.kpos;
	d->key_next = r.key_next;
	d->kcap = r.cap;
	/* Key ids changed: no prediction from the last order (the frame
	 * and label caches last one call). */
	d->first_key = DELTA_NONE;
	return 0;
}
