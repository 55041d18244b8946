/*
 * pprof_stream.c: the decoder's stream input (see pprof_stream in
 * pprof_dec.h): a profile read through a positional reader, gzip'd or
 * not, and never held whole. Open keeps the non-sample top-level fields
 * (header, mappings, locations, functions, strings: a few percent of a
 * heap profile) in the decoder's zbuf, in input order, where pprof_dec.c
 * indexes them as an in-memory profile; every sample pass reads the input
 * again from its start through a window that holds at least the current
 * field, and after its data 8 zero bytes (the decoders' 8-byte loads stay
 * inside). A gzip'd buffer (heapprof__pprof_dec_open) is inflated whole
 * into the same window by the same inflater.
 *
 * Each field is parsed by heapprof__pb_next over the window once the
 * window holds all of it, or all that is left of the input, so an input
 * with one fault (a truncation, a bad field) gets the buffer path's error
 * for it. One with several may get another of them first: a sample's
 * wire type is checked as it comes (the other fields are indexed once
 * the input is read), and nothing is read past the first fault of the
 * framing (the buffer path inflates and measures the whole input before
 * it parses: ETOOBIG or EGZIP first).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <zlib.h>

#include "heapprof.h"
#include "gz.h"
#include "pprof_int.h"
#include "pprof_stream.h"

#define ST_CHUNK ((size_t)64 << 10) /* source bytes per read */
#define ST_PAD 8                    /* zero bytes after the window's data */

/* Input size limit: the decoder's, and offsets must fit 32 bits. */
static size_t
st_limit(const pprof_dec *d)
{
	return d->limit < UINT32_MAX - 1 ? d->limit : UINT32_MAX - 1;
}

/* The decoder's zlib inflate stream, made on first use (zlib's
 * allocations through the decoder's allocator) and reset for a new
 * input; NULL if out of memory. */
static z_stream *
st_zstream(pprof_dec *d)
{
	z_stream *zs = d->zs;
	if (!zs) {
		zs = d->realloc_fn(d->realloc_ctx, NULL, 0, sizeof(*zs));
		if (!zs)
			return NULL;
		memset(zs, 0, sizeof(*zs));
		d->gza.rf = d->realloc_fn;
		d->gza.rctx = d->realloc_ctx;
		zs->zalloc = heapprof__gz_zalloc;
		zs->zfree = heapprof__gz_zfree;
		zs->opaque = &d->gza;
		/* 15 + 32: gzip or zlib, detected. */
		if (inflateInit2(zs, 15 + 32) != Z_OK) {
			d->realloc_fn(d->realloc_ctx, zs, sizeof(*zs), 0);
			return NULL;
		}
		d->zs = zs;
	} else if (inflateReset(zs) != Z_OK) {
		return NULL;
	}
	return zs;
}

/* Up to n source bytes at src_at into buf: *got (0: the end). */
static int
st_src(pprof_dec *d, uint8_t *buf, size_t n, size_t *got)
{
	pprof_stream *st = &d->st;
	long r = st->read(st->arg, st->src_at, buf, n);
	if (r < 0)
		return r < INT_MIN ? -EIO : (int)r;
	if ((unsigned long)r > n)
		return -EIO; /* a reader that claims more than asked */
	st->src_at += (uint64_t)r;
	*got = (size_t)r;
	return 0;
}

/* The next source chunk into zin; zend at the input's end. */
static int
st_refill(pprof_dec *d)
{
	pprof_stream *st = &d->st;
	size_t got;
	HP_TRY(st_src(d, st->zin, st->zcap, &got));
	st->zpos = 0;
	st->zlen = got;
	st->zend = got == 0;
	return 0;
}

/* Inflates into the window's free room; sets eof at the input's end. */
static int
st_inflate(pprof_dec *d)
{
	pprof_stream *st = &d->st;
	z_stream *zs = d->zs;
	for (;;) {
		if (st->zpos == st->zlen && !st->zend)
			HP_TRY(st_refill(d));
		size_t room = st->win_cap - st->win_len, in = st->zlen - st->zpos;
		zs->next_in = st->zin + st->zpos;
		zs->avail_in = in > (1u << 30) ? (1u << 30) : (uInt)in;
		zs->next_out = st->win + st->win_len;
		zs->avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
		uInt out0 = zs->avail_out, in0 = zs->avail_in;
		int z = inflate(zs, Z_NO_FLUSH);
		st->win_len += out0 - zs->avail_out;
		st->zpos += in0 - zs->avail_in;
		if (z == Z_STREAM_END) {
			/* Another member may follow (concatenated .gz), after
			 * zero padding. */
			for (;;) {
				while (st->zpos < st->zlen && st->zin[st->zpos] == 0)
					st->zpos++;
				if (st->zpos < st->zlen || st->zend)
					break;
				HP_TRY(st_refill(d));
			}
			if (st->zpos == st->zlen) {
				st->eof = true;
				return 0;
			}
			if (inflateReset(zs) != Z_OK)
				return HEAPPROF_EGZIP;
		} else if (z == Z_MEM_ERROR) {
			return -ENOMEM;
		} else if (z == Z_BUF_ERROR) {
			if (st->zend && st->zpos == st->zlen)
				return HEAPPROF_EGZIP; /* truncated */
		} else if (z != Z_OK) {
			return HEAPPROF_EGZIP;
		}
		if (out0 != zs->avail_out || st->win_len == st->win_cap)
			return 0;
	}
}

/* Makes the window hold `need` bytes from pos, or all the input has left;
 * it only grows (1.5x, or to `first` bytes at once) when full, so it never
 * holds more than the input gives. */
static int
st_fill(pprof_dec *d, uint64_t need, size_t first)
{
	pprof_stream *st = &d->st;
	size_t lim = st_limit(d);
	if (st->win_len - st->pos >= need || st->eof)
		return 0;
	if (st->pos) {
		memmove(st->win, st->win + st->pos, st->win_len - st->pos);
		st->win_at += (uint32_t)st->pos;
		st->win_len -= st->pos;
		st->pos = 0;
	}
	while (st->win_len < need && !st->eof) {
		if (st->win_len == st->win_cap) {
			size_t c = st->win_cap + st->win_cap / 2;
			if (c < 2 * ST_CHUNK)
				c = 2 * ST_CHUNK;
			if (c < first)
				c = first;
			if (c > lim + 2)
				c = lim + 2; /* one byte past the limit tells */
			if (c <= st->win_cap)
				return HEAPPROF_ETOOBIG;
			size_t old = st->win_cap ? st->win_cap + ST_PAD : 0;
			uint8_t *w = d->realloc_fn(d->realloc_ctx, st->win, old,
			                           c + ST_PAD);
			if (!w)
				return -ENOMEM;
			st->win = w;
			st->win_cap = c;
		}
		if (st->gzip) {
			HP_TRY(st_inflate(d));
		} else {
			size_t got;
			HP_TRY(st_src(d, st->win + st->win_len,
			              st->win_cap - st->win_len, &got));
			st->win_len += got;
			st->eof = got == 0;
		}
		if ((uint64_t)st->win_at + st->win_len > lim)
			return HEAPPROF_ETOOBIG;
	}
	memset(st->win + st->win_len, 0, ST_PAD);
	return 0;
}

/* Starts reading the input again from its start. */
static int
st_rewind(pprof_dec *d)
{
	pprof_stream *st = &d->st;
	st->src_at = 0;
	st->win_at = 0;
	st->win_len = st->pos = 0;
	st->zpos = st->zlen = 0;
	st->eof = st->zend = false;
	if (!st->gzip)
		return 0;
	if (!st->zin) {
		st->zin = d->realloc_fn(d->realloc_ctx, NULL, 0, ST_CHUNK);
		if (!st->zin)
			return -ENOMEM;
		st->zcap = ST_CHUNK;
	}
	return st_zstream(d) ? 0 : -ENOMEM;
}

/* The usual field at pos, at once: a one-byte tag of a length-delimited
 * field (wire type 2, field 1-15) whose length and data the window holds
 * (its 8 zero bytes bound the varint read). true: *f, *start set, pos
 * past it; false: st_next decides. */
HP_INLINE bool
st_quick(pprof_stream *st, pb_field *f, size_t *start)
{
	const uint8_t *p = st->win + st->pos, *end = st->win + st->win_len;
	uint64_t n;
	if (HP_UNLIKELY(end - p < 2 || (*p & 7) != PB_LEN || *p < 8 ||
	                *p >= 0x80))
		return false;
	const uint8_t *q = p + 1;
	if (HP_UNLIKELY(rd_varint(&q, end + ST_PAD, &n) != 0 || q > end ||
	                n > (uint64_t)(end - q)))
		return false;
	f->num = *p >> 3;
	f->wire = PB_LEN;
	f->data = q;
	f->len = (size_t)n;
	*start = st->pos;
	st->pos = (size_t)(q + n - st->win);
	return true;
}

/* The next top-level field, whole in the window from *start: 0, or 1 at
 * the input's end. */
static int
st_next(pprof_dec *d, pb_field *f, size_t *start)
{
	pprof_stream *st = &d->st;
	HP_TRY(st_fill(d, 24, 0)); /* a tag and a length */
	if (st->pos == st->win_len)
		return 1;
	if (st_quick(st, f, start))
		return 0;
	const uint8_t *p = st->win + st->pos;
	const uint8_t *end = st->win + st->win_len;
	uint64_t key, n;
	pb_reader r = {p, end};
	if (heapprof__pb_read_varint(&r, &key) == 0 && (key & 7) == PB_LEN &&
	    heapprof__pb_read_varint(&r, &n) == 0) {
		uint64_t need = (uint64_t)(r.p - p) + n;
		if (need > st->win_len - st->pos) {
			/* Past the limit is either ETOOBIG or ELENGTH at
			 * the input's end: read no further than that. */
			uint64_t cap = (uint64_t)st_limit(d) + 2;
			HP_TRY(st_fill(d, need < cap ? need : cap, 0));
		}
	}
	/* Whatever is wrong with it, heapprof__pb_next says as it does for
	 * the same bytes in memory. */
	r.p = st->win + st->pos;
	r.end = st->win + st->win_len;
	HP_TRY(heapprof__pb_next(&r, f));
	*start = st->pos;
	st->pos = (size_t)(r.p - st->win);
	return 0;
}

/* The next top-level field as st_next gives it: the usual one at once
 * while the window holds 24 bytes more (st_next would not refill it). */
HP_INLINE int
st_field(pprof_dec *d, pb_field *f, size_t *start)
{
	pprof_stream *st = &d->st;
	if (HP_LIKELY(st->win_len - st->pos >= 24 && st_quick(st, f, start)))
		return 0;
	return st_next(d, f, start);
}

int
heapprof__pprof_stream_open(pprof_dec *d, pprof_read_fn *read, void *arg,
                            size_t *dict_len, size_t *nsamples)
{
	pprof_stream *st = &d->st;
	uint8_t magic[2];
	size_t got = 0, n = 0, ns = 0;
	st->read = read;
	st->arg = arg;
	st->src_at = 0;
	/* gzip by its first two bytes, as heapprof__gz_is_gzip. */
	while (got < 2) {
		size_t g;
		HP_TRY(st_src(d, magic + got, 2 - got, &g));
		if (g == 0)
			break;
		got += g;
	}
	if (got == 0)
		return HEAPPROF_EEMPTY;
	st->gzip = heapprof__gz_is_gzip(magic, got);
	HP_TRY(st_rewind(d));
	for (;;) {
		pb_field f;
		size_t start;
		int rc = st_field(d, &f, &start);
		if (rc == 1)
			break;
		HP_TRY(rc);
		if (f.num == PPROF_SAMPLE) {
			HP_TRY(want(&f, PB_LEN));
			ns++;
			continue;
		}
		size_t m = st->pos - start;
		HP_TRY(heapprof__pprof_grow(d, &d->zbuf, &d->zbuf_cap, n + m,
		                            1));
		memcpy(d->zbuf + n, st->win + start, m);
		n += m;
	}
	st->total = (uint64_t)st->win_at + st->win_len;
	if (st->total == 0)
		return HEAPPROF_EEMPTY;
	*dict_len = n;
	*nsamples = ns;
	return 0;
}

int
heapprof__pprof_stream_sample(pprof_dec *d, pprof_sample_iter *it,
                              uint32_t *off, uint32_t *len)
{
	pprof_stream *st = &d->st;
	if (!it->started) {
		HP_TRY(st_rewind(d));
		it->started = true;
	}
	for (;;) {
		pb_field f;
		size_t start;
		int rc = st_field(d, &f, &start);
		if (rc < 0)
			return rc;
		/* At the end: the input open read, as long, with as many
		 * samples (the callers size their arrays by that count). */
		if (rc == 1)
			return it->n == d->nsamples &&
			                       (uint64_t)st->win_at + st->win_len ==
			                               st->total
			               ? 1
			               : HEAPPROF_ECHANGED;
		if (f.num != PPROF_SAMPLE)
			continue;
		if (f.wire != PB_LEN || ++it->n > d->nsamples)
			return HEAPPROF_ECHANGED; /* not what open saw */
		if (HP_UNLIKELY(d->s_win != st->win || d->s_len != st->win_len ||
		                d->s_at != st->win_at)) {
			/* the window moved or grew since the last sample */
			d->s_win = st->win;
			d->s_at = st->win_at;
			d->s_len = st->win_len;
			d->s_hard = st->win + st->win_len + ST_PAD;
		}
		*off = st->win_at + (uint32_t)(f.data - st->win);
		*len = (uint32_t)f.len;
		it->at = *off + 1;
		return 0;
	}
}

int
heapprof__pprof_stream_seek(pprof_dec *d, pprof_sample_iter *it,
                            uint32_t offset)
{
	for (;;) {
		if (it->started && it->at == offset + 1)
			return 0;
		if (it->started && it->at > offset + 1)
			return HEAPPROF_ECHANGED;
		uint32_t o, l;
		int rc = heapprof__pprof_stream_sample(d, it, &o, &l);
		if (rc == 1)
			return HEAPPROF_ECHANGED;
		HP_TRY(rc);
		(void)l;
	}
}

int
heapprof__pprof_inflate(pprof_dec *d, const void *in, size_t n,
                        const uint8_t **out, size_t *out_len)
{
	pprof_stream *st = &d->st;
	st->gzip = false;
	HP_TRY(st_rewind(d)); /* the window emptied */
	if (!st_zstream(d))
		return -ENOMEM;
	/* The source is the buffer itself, read only (no reads, no
	 * copy): all of it at once. */
	uint8_t *zin = st->zin;
	st->gzip = true;
	st->zin = (uint8_t *)(uintptr_t)in;
	st->zlen = n;
	st->zend = true;
	/* All of it, or one byte past the limit (ETOOBIG); room for 4x
	 * the input at once, the usual ratio. */
	int rc = st_fill(d, (uint64_t)st_limit(d) + 2, 4 * n + 4096);
	st->zin = zin;
	HP_TRY(rc);
	*out = st->win;
	*out_len = st->win_len;
	return 0;
}

size_t
heapprof__pprof_stream_memory(const pprof_dec *d)
{
	return (d->st.win_cap ? d->st.win_cap + ST_PAD : 0) + d->st.zcap;
}

void
heapprof__pprof_stream_free(pprof_dec *d)
{
	pprof_stream *st = &d->st;
	if (st->win)
		d->realloc_fn(d->realloc_ctx, st->win, st->win_cap + ST_PAD, 0);
	if (st->zin)
		d->realloc_fn(d->realloc_ctx, st->zin, st->zcap, 0);
	st->win = st->zin = NULL;
	st->win_cap = st->zcap = 0;
	if (d->zs) {
		inflateEnd(d->zs);
		d->realloc_fn(d->realloc_ctx, d->zs, sizeof(z_stream), 0);
		d->zs = NULL;
	}
	heapprof__pprof_release(d, &d->zbuf, d->zbuf_cap);
	d->zbuf_cap = 0;
}
