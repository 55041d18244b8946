/*
 * delta_build.h: what the delta unit tests (test_delta.c, test_delta_fast.c)
 * share: hand-built profiles (stacks of leaf addresses, labels, values
 * over named types) written with the pb writer, an output buffer, and
 * the output decoded back into rows by leaf address and labels.
 */
#ifndef HEAPPROF_TEST_DELTA_BUILD_H
#define HEAPPROF_TEST_DELTA_BUILD_H

#include "heapprof.h"
#include "delta.h"
#include "pb.h"
#include "pprof_dec.h"
#include "test.h"

/* ------------------------------------------------------------ builder */

/* A hand-built profile: types by name, samples of (frames, values,
 * optional label). Frames are addresses; with symbolic = 1 every location
 * has address 0 and one line naming function "fn<addr>". */
typedef struct tsample {
	uint64_t frames[4];
	int nframes;
	int64_t values[4];
	const char *label_val; /* string label "k"=val, or NULL */
	const char *label2;    /* a second label "k2"=label2 */
	int label_swap;        /* write the two labels in reverse order */
} tsample;

typedef struct tprof {
	const char *types[4];
	int ntypes;
	const tsample *samples;
	int nsamples;
	int64_t time;
	int symbolic;
} tprof;

typedef struct sbuf {
	uint8_t *p;
	size_t len;
} sbuf;

static inline int
sbuf_write(void *arg, const void *p, size_t n)
{
	sbuf *b = arg;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* Strings: 0 "", then types, then fixed names, then per-frame names. */
static inline sbuf
build(const tprof *tp)
{
	const char *fixed[] = {"count", "k", "k2", "f.c"};
	enum { S_COUNT = 1, S_K, S_K2, S_FILE, S_TYPES };
	/* label values and frame names are appended after the types */
	const char *extra[64];
	int nextra = 0;
	uint64_t addrs[64];
	int naddr = 0;
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < tp->ntypes; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, S_TYPES + (uint64_t)t);
		heapprof__pb_uint_opt(&w, 2, S_COUNT);
		heapprof__pb_end(&w);
	}
	for (int i = 0; i < tp->nsamples; i++) {
		const tsample *s = &tp->samples[i];
		uint64_t ids[4];
		for (int k = 0; k < s->nframes; k++) {
			int j = 0;
			while (j < naddr && addrs[j] != s->frames[k])
				j++;
			if (j == naddr)
				addrs[naddr++] = s->frames[k];
			ids[k] = (uint64_t)j + 1;
		}
		heapprof__pb_begin(&w, 2);
		heapprof__pb_packed_u64(&w, 1, ids, (size_t)s->nframes);
		heapprof__pb_packed_i64(&w, 2, s->values, (size_t)tp->ntypes);
		for (int pass = 0; pass < 2; pass++) {
			int which = s->label_swap ? 1 - pass : pass;
			const char *v = which ? s->label2 : s->label_val;
			if (!v)
				continue;
			extra[nextra] = v;
			heapprof__pb_begin(&w, 3);
			heapprof__pb_uint_opt(&w, 1, which ? S_K2 : S_K);
			heapprof__pb_uint_opt(&w, 2,
			                      S_TYPES + (uint64_t)tp->ntypes +
			                              (uint64_t)nextra++);
			heapprof__pb_end(&w);
		}
		heapprof__pb_end(&w);
	}
	heapprof__pb_begin(&w, 3);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 5, S_FILE);
	heapprof__pb_end(&w);
	static char names[64][16];
	for (int j = 0; j < naddr; j++) {
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, (uint64_t)j + 1);
		heapprof__pb_uint_opt(&w, 2, 1);
		heapprof__pb_uint_opt(&w, 3, tp->symbolic ? 0 : addrs[j]);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, (uint64_t)j + 1);
		heapprof__pb_uint_opt(&w, 2, 10);
		heapprof__pb_end(&w);
		heapprof__pb_end(&w);
		snprintf(names[j], sizeof(names[j]), "fn%llx",
		         (unsigned long long)addrs[j]);
		extra[nextra] = names[j];
		heapprof__pb_begin(&w, 5);
		heapprof__pb_uint_opt(&w, 1, (uint64_t)j + 1);
		heapprof__pb_uint_opt(&w, 2,
		                      S_TYPES + (uint64_t)tp->ntypes + (uint64_t)nextra++);
		heapprof__pb_uint_opt(&w, 4, S_FILE);
		heapprof__pb_end(&w);
	}
	heapprof__pb_uint_opt(&w, 9, (uint64_t)tp->time);
	heapprof__pb_bytes_field(&w, 6, "", 0);
	for (size_t i = 0; i < HP_ARRAY_LEN(fixed); i++)
		heapprof__pb_bytes_field(&w, 6, fixed[i], strlen(fixed[i]));
	for (int t = 0; t < tp->ntypes; t++)
		heapprof__pb_bytes_field(&w, 6, tp->types[t], strlen(tp->types[t]));
	for (int i = 0; i < nextra; i++)
		heapprof__pb_bytes_field(&w, 6, extra[i], strlen(extra[i]));
	sbuf b = {w.buf, w.len};
	return b;
}

/* The decoded delta: one row per output sample. */
typedef struct row {
	uint64_t frames[4]; /* addresses, or function-name hash if symbolic */
	int nframes;
	int64_t v[4]; /* by the names asked for in collect() */
	char labels[64];
} row;

typedef struct result {
	row rows[32];
	int n;
	size_t nlocs, nfuncs, nstrings;
	int64_t time, duration;
} result;

/* Decodes `b` and lists its samples, values reordered to `names`. */
static inline int
collect(const sbuf *b, const char *const *names, int nnames, result *r)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	memset(r, 0, sizeof(*r));
	int rc = heapprof__pprof_check(&d, b->p, b->len);
	if (rc < 0) {
		heapprof__pprof_dec_free(&d);
		return rc;
	}
	r->nlocs = d.nlocs;
	r->nfuncs = d.nfuncs;
	r->nstrings = d.nstrings;
	r->time = d.time_nanos;
	r->duration = d.duration_nanos;
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&d, &it);
	while (heapprof__pprof_sample_next(&d, &it, &s) == 0 && r->n < 32) {
		row *w = &r->rows[r->n++];
		w->nframes = (int)s.nlocations;
		for (size_t i = 0; i < s.nlocations && i < 4; i++)
			w->frames[i] = d.loc_addr[s.location_index[i]];
		for (int k = 0; k < nnames; k++)
			for (size_t t = 0; t < d.ntypes; t++)
				if (heapprof__pprof_string_eq(&d, d.types[t].type,
				                              names[k]))
					w->v[k] = s.values[t];
		for (size_t i = 0; i < s.nlabels; i++) {
			size_t l;
			const char *v = heapprof__pprof_string(&d, s.labels[i].str, &l);
			size_t at = strlen(w->labels);
			snprintf(w->labels + at, sizeof(w->labels) - at, "%.*s;",
			         (int)l, v);
		}
	}
	heapprof__pprof_dec_free(&d);
	return 0;
}

static inline const row *
find(const result *r, uint64_t leaf, const char *labels)
{
	for (int i = 0; i < r->n; i++)
		if (r->rows[i].frames[0] == leaf &&
		    (!labels || !strcmp(r->rows[i].labels, labels)))
			return &r->rows[i];
	return NULL;
}

static inline int
run(heapprof_delta *d, const tprof *tp, sbuf *out, unsigned flags)
{
	sbuf in = build(tp);
	out->p = NULL;
	out->len = 0;
	int rc = heapprof_delta_compute(d, in.p, in.len, flags, sbuf_write, out);
	free(in.p);
	return rc;
}

static const char *const NAMES[] = {"alloc_objects", "alloc_space",
                                    "inuse_objects", "inuse_space"};

#endif
