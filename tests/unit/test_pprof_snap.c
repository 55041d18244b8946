/*
 * test_pprof_snap.c: a reused decoder (the record snapshot and the
 * keep_records flag are gone: every open indexes its input). Every
 * open on a reused decoder is compared with a fresh decoder opening
 * the same bytes: error code, counts, record ids/offsets/lengths, location
 * addresses, samples. Covered: repeated opens, interleaved layouts (many
 * segments), changed/added/removed/reordered records, another split of the
 * same records, non-minimal varints, invalid inputs and every truncation
 * between valid opens, no mappings/functions, corpus sequences.
 */
#include "heapprof.h"
#include "gz.h"
#include "pb.h"
#include "pprof_dec.h"
#include "pb_build.h"
#include "test.h"

/* ------------------------------------------------------------ model */

typedef struct buf {
	uint8_t *p;
	size_t len;
} buf;

static const char *const STR[] = {"",    "alloc_objects", "count",
                                  "alloc_space", "bytes", "main",
                                  "foo", "bar", "baz", "a.c", "b.c",
                                  "libc.so", "prog", "extra"};
#define NSTR_BASE 13 /* STR[13] "extra" only for the one-more-string case */

typedef struct mloc {
	uint64_t id, addr;
	int map;    /* mapping index, -1: none */
	int nlines;
	int fn[3];  /* function indexes (ids looked up at build time) */
} mloc;

typedef struct mfun { uint64_t id, name, file; } mfun;
typedef struct mmapg { uint64_t id, start, limit, file; } mmapg;

/* A profile: records, and a layout string, one letter per top-level item:
 * H header (sample types, period), S next sample, L/F/M next location/
 * function/mapping, T string table, X time_nanos. Records the layout does
 * not place are appended at the end. */
typedef struct model {
	mloc loc[16];
	int nloc;
	mfun fn[8];
	int nfn;
	mmapg map[4];
	int nmap;
	const char *layout;
	int nstr;          /* strings written: STR[0 .. nstr) */
	int64_t vbase;     /* sample values */
	uint64_t bad_loc;  /* nonzero: sample 0 names this location id */
	int nonmin_loc;    /* location index + 1: length as 0x80|n, 0x00 */
	int nonmin_tag_fn; /* function index + 1: tag as 0xaa, 0x00 */
} model;

/* Go runtime style: samples with locations between them, functions and
 * mappings in two runs each. Location segments: [0-2] [3-6] [7-11]. */
#define INTER "HSSLLLSSLLLLSFFFSLLLLLSMFFFMSXT"
/* The same records split differently: [0-1] [2-6] [7-11], F [0-3] [4-5]. */
#define INTER2 "HSSLLSSLLLLLSFFFFSLLLLLSMFFMSXT"
#define COMPACT "HSSSSSSSSMMLLLLLLLLLLLLFFFFFFXT"
/* Strings first: many prefixes are valid profiles of their own. */
#define STRFIRST "TXHFFFFFFMMLLLLLLLLLLLLSSSSSSSS"

static model
base(const char *layout)
{
	model m;
	memset(&m, 0, sizeof(m));
	m.layout = layout;
	m.nstr = NSTR_BASE;
	m.vbase = 100;
	m.nmap = 2;
	m.map[0] = (mmapg){1, 0x400000, 0x500000, 12};
	m.map[1] = (mmapg){2, 0x7f0000000000, 0x7f0000100000, 11};
	m.nfn = 6;
	for (int i = 0; i < 8; i++)
		m.fn[i] = (mfun){(uint64_t)i + 1, 5 + (uint64_t)i % 4,
		                 9 + (uint64_t)i % 2};
	m.nloc = 12;
	for (int i = 0; i < 16; i++) {
		mloc *l = &m.loc[i];
		l->id = (uint64_t)i + 1;
		l->map = i % 3 == 2 ? 1 : 0;
		l->addr = (l->map ? 0x7f0000001000 : 0x401000) + 0x40 * (uint64_t)i;
		l->nlines = 1 + (i % 4 == 0);
		for (int k = 0; k < 3; k++)
			l->fn[k] = (i + k) % 6;
	}
	return m;
}

static void
put_raw(pb_writer *w, const void *p, size_t n)
{
	uint8_t *q = heapprof__pb_room(w, n);
	if (q) {
		memcpy(q, p, n);
		heapprof__pb_advance(w, n);
	}
}

/* One record, framed by hand (so the framing can be made unusual). */
static void
emit(pb_writer *w, const model *m, char kind, int i)
{
	pb_writer t;
	heapprof__pb_init(&t, NULL, NULL, NULL, NULL);
	uint8_t hdr[16];
	size_t h = 0;
	if (kind == 'M') {
		const mmapg *g = &m->map[i];
		heapprof__pb_uint_opt(&t, 1, g->id);
		heapprof__pb_uint_opt(&t, 2, g->start);
		heapprof__pb_uint_opt(&t, 3, g->limit);
		heapprof__pb_uint_opt(&t, 5, g->file);
		hdr[h++] = 0x1a;
	} else if (kind == 'L') {
		const mloc *l = &m->loc[i];
		heapprof__pb_uint_opt(&t, 1, l->id);
		if (l->map >= 0)
			heapprof__pb_uint_opt(&t, 2, m->map[l->map].id);
		heapprof__pb_uint_opt(&t, 3, l->addr);
		for (int k = 0; k < l->nlines; k++) {
			heapprof__pb_begin(&t, 4);
			heapprof__pb_uint_opt(&t, 1, m->fn[l->fn[k]].id);
			heapprof__pb_uint_opt(&t, 2, 10 + (uint64_t)k);
			heapprof__pb_end(&t);
		}
		hdr[h++] = 0x22;
	} else {
		const mfun *f = &m->fn[i];
		heapprof__pb_uint_opt(&t, 1, f->id);
		heapprof__pb_uint_opt(&t, 2, f->name);
		heapprof__pb_uint_opt(&t, 4, f->file);
		hdr[h++] = 0x2a;
		if (m->nonmin_tag_fn == i + 1) /* field 5, wire 2 in two bytes */
			hdr[0] = 0xaa, hdr[h++] = 0x00;
	}
	if (kind == 'L' && m->nonmin_loc == i + 1 && t.len < 0x80)
		hdr[h++] = (uint8_t)(0x80 | t.len), hdr[h++] = 0x00;
	else
		h += heapprof__pb_put_varint(hdr + h, t.len);
	put_raw(w, hdr, h);
	put_raw(w, t.buf, t.len);
	heapprof__pb_free(&t);
}

static void
sample(pb_writer *w, const model *m, int k)
{
	uint64_t ids[2];
	size_t n = 0;
	if (m->nloc > 0) {
		ids[n++] = m->loc[k % m->nloc].id;
		ids[n++] = m->loc[(k + 3) % m->nloc].id;
	}
	if (k == 0 && m->bad_loc)
		ids[0] = m->bad_loc, n = n ? n : 1;
	int64_t v[2] = {m->vbase + k, 64 * (m->vbase + k)};
	heapprof__pb_begin(w, 2);
	heapprof__pb_packed_u64(w, 1, ids, n);
	heapprof__pb_packed_i64(w, 2, v, 2);
	heapprof__pb_end(w);
}

static buf
build(const model *m)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	int nm = 0, nl = 0, nf = 0, ns = 0;
	for (const char *p = m->layout; *p; p++) {
		switch (*p) {
		case 'H':
			vt(&w, 1, 1, 2);
			vt(&w, 1, 3, 4);
			vt(&w, 11, 3, 4);
			heapprof__pb_varint_field(&w, 12, 524288);
			break;
		case 'S': sample(&w, m, ns++); break;
		case 'X': heapprof__pb_varint_field(&w, 9, 1000); break;
		case 'T':
			for (int i = 0; i < m->nstr; i++)
				heapprof__pb_bytes_field(&w, 6, STR[i], strlen(STR[i]));
			break;
		case 'M': if (nm < m->nmap) emit(&w, m, 'M', nm++); break;
		case 'L': if (nl < m->nloc) emit(&w, m, 'L', nl++); break;
		case 'F': if (nf < m->nfn) emit(&w, m, 'F', nf++); break;
		default: abort();
		}
	}
	while (nm < m->nmap)
		emit(&w, m, 'M', nm++);
	while (nl < m->nloc)
		emit(&w, m, 'L', nl++);
	while (nf < m->nfn)
		emit(&w, m, 'F', nf++);
	if (w.err)
		abort();
	buf b = {w.buf, w.len};
	return b;
}

/* ------------------------------------------------------------ compare */

/* Opens (p, n) on the reused decoder k and on a fresh decoder and
 * compares everything. want_same: whether the records are the last
 * open's (no longer reported). Returns k's result as heapprof__pprof_check would. */
static int
cmp_open(pprof_dec *k, const void *p, size_t n, const char *what,
         int want_same)
{
	pprof_dec f;
	heapprof__pprof_dec_init(&f, NULL, NULL);
	int rk = heapprof__pprof_dec_open(k, p, n);
	int rf = heapprof__pprof_dec_open(&f, p, n);
	if (rk != rf)
		T_FAIL("%s: open %d, fresh open %d", what, rk, rf);
	(void)want_same; /* (what the snapshot found: no longer reported) */
	if (rk < 0 || rf < 0) {
		heapprof__pprof_dec_free(&f);
		return rk;
	}
	if (k->nlocs != f.nlocs || k->nfuncs != f.nfuncs ||
	    k->nmaps != f.nmaps || k->nstrings != f.nstrings ||
	    k->nsamples != f.nsamples || k->ntypes != f.ntypes) {
		T_FAIL("%s: locs/funcs/maps %zu/%zu/%zu, fresh %zu/%zu/%zu (or "
		       "other counts differ)", what, k->nlocs, k->nfuncs,
		       k->nmaps, f.nlocs, f.nfuncs, f.nmaps);
		heapprof__pprof_dec_free(&f);
		return -1000;
	}
	const pprof_rec *kr[3] = {k->maps, k->locs, k->funcs};
	const pprof_rec *fr[3] = {f.maps, f.locs, f.funcs};
	size_t cnt[3] = {k->nmaps, k->nlocs, k->nfuncs};
	static const char *const kind[3] = {"mapping", "location", "function"};
	for (int t = 0; t < 3; t++)
		for (size_t i = 0; i < cnt[t]; i++) {
			const pprof_rec *a = &kr[t][i], *b = &fr[t][i];
			uint64_t ka = t == 1 ? k->loc_addr[i] : 0;
			uint64_t fa = t == 1 ? f.loc_addr[i] : 0;
			if (a->id != b->id || a->off != b->off ||
			    a->len != b->len || ka != fa) {
				T_FAIL("%s: %s %zu: id/off/len/addr %" PRIu64
				       "/%u/%u/%#" PRIx64 ", fresh %" PRIu64
				       "/%u/%u/%#" PRIx64, what, kind[t], i,
				       a->id, a->off, a->len, ka, b->id, b->off,
				       b->len, fa);
				break;
			}
		}
	pprof_sample_iter ik, iff;
	pprof_sample sk, sf;
	heapprof__pprof_samples(k, &ik);
	heapprof__pprof_samples(&f, &iff);
	int rc;
	for (size_t ns = 0;; ns++) {
		int a = heapprof__pprof_sample_next(k, &ik, &sk);
		int b = heapprof__pprof_sample_next(&f, &iff, &sf);
		if (a != b) {
			T_FAIL("%s: sample %zu: next %d, fresh %d", what, ns, a, b);
			rc = a < 0 ? a : -1000;
			break;
		}
		if (a != 0) {
			rc = a == 1 ? 0 : a;
			break;
		}
		bool ok = sk.nlocations == sf.nlocations &&
		          sk.nvalues == sf.nvalues;
		for (size_t j = 0; ok && j < sk.nlocations; j++)
			ok = sk.location_ids[j] == sf.location_ids[j] &&
			     sk.location_index[j] == sf.location_index[j];
		for (size_t j = 0; ok && j < sk.nvalues; j++)
			ok = sk.values[j] == sf.values[j];
		if (!ok) {
			T_FAIL("%s: sample %zu differs from the fresh decoder's",
			       what, ns);
			rc = -1000;
			break;
		}
	}
	heapprof__pprof_dec_free(&f);
	return rc;
}

static void
keep_init(pprof_dec *d)
{
	heapprof__pprof_dec_init(d, NULL, NULL);
}

/* ------------------------------------------------------------ tests */

static int
mem_sink(void *ctx, const uint8_t *p, size_t n)
{
	buf *b = ctx;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

TEST(same_profile_twice)
{
	model m[2] = {base(COMPACT), base(COMPACT)};
	for (int i = 0; i < 16; i++) /* sparse ids: hashed id tables */
		m[1].loc[i].id = ((uint64_t)i + 1) * 0x100000001ull;
	for (int v = 0; v < 2; v++) {
		buf b = build(&m[v]);
		pprof_dec d;
		keep_init(&d);
		CHECK_EQ(cmp_open(&d, b.p, b.len, "first", 0), 0);
		CHECK_EQ(cmp_open(&d, b.p, b.len, "second", 1), 0);
		CHECK_EQ(cmp_open(&d, b.p, b.len, "third", 1), 0);
		/* the same bytes gzipped: byte-identical records after inflate */
		buf z = {NULL, 0};
		gz_writer g;
		heapprof__gz_writer_init(&g, 1, mem_sink, &z, NULL, NULL, NULL);
		heapprof__gz_write(&g, b.p, b.len);
		heapprof__gz_writer_finish(&g);
		CHECK_EQ(cmp_open(&d, z.p, z.len, "gzip", 1), 0);
		CHECK(d.was_gzip);
		CHECK_EQ(cmp_open(&d, b.p, b.len, "raw again", 1), 0);
		heapprof__pprof_dec_free(&d);
		free(z.p);
		free(b.p);
	}
}

TEST(interleaved_twice)
{
	model m = base(INTER);
	buf b = build(&m);
	pprof_dec d;
	keep_init(&d);
	CHECK_EQ(cmp_open(&d, b.p, b.len, "inter 1", 0), 0);
	CHECK_EQ(cmp_open(&d, b.p, b.len, "inter 2", 1), 0);
	/* a copy at another address and with other bytes around it */
	uint8_t *c = malloc(b.len + 7);
	memcpy(c + 7, b.p, b.len);
	CHECK_EQ(cmp_open(&d, c + 7, b.len, "inter copy", 1), 0);
	free(c);
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

/* The variants of INTER: what changes, and whether the records stay the
 * snapshot's (records_same expected). */
enum {
	V_ADDR, V_LEN, V_ID, V_SWAP, V_SPLIT, V_MORE_END, V_MORE_START,
	V_FEWER, V_DROP_MID, V_FNAME, V_SAMPLES, V_STRING, V_COUNT
};

static model
variant(int v, int *same, const char **name)
{
	static const char *const names[] = {
		"addr in middle segment", "length in middle segment",
		"id in middle segment", "swap in middle segment",
		"split differently", "one more location at the end",
		"one more location at the start", "one location fewer",
		"location 2 removed (segment boundary)",
		"function name index", "samples only", "one more string"};
	model m = base(INTER);
	*same = 0;
	*name = names[v];
	switch (v) {
	case V_ADDR: m.loc[4].addr += 8; break;
	case V_LEN: m.loc[5].nlines = 3; break;
	case V_ID: m.loc[4].id = 40; break;
	case V_SWAP: {
		mloc t = m.loc[3];
		m.loc[3] = m.loc[6];
		m.loc[6] = t;
		break;
	}
	case V_SPLIT: m.layout = INTER2; *same = 1; break;
	case V_MORE_END: m.nloc = 13; break;
	case V_MORE_START:
		memmove(&m.loc[1], &m.loc[0], 13 * sizeof(mloc));
		m.loc[0].id = 14;
		m.loc[0].addr = 0x401800;
		m.nloc = 13;
		break;
	case V_FEWER: m.nloc = 11; break;
	case V_DROP_MID: /* locations 0, 1 match one by one, then the
	                  * snapshot's second segment follows: not record 2 */
		memmove(&m.loc[2], &m.loc[3], 13 * sizeof(mloc));
		m.nloc = 11;
		m.layout = "HSSLLSSLLLLSFFFSLLLLLSMFFFMSXT";
		break;
	case V_FNAME: m.fn[4].name = 8; break;
	case V_SAMPLES: m.vbase = 7; *same = 1; break;
	default: m.nstr = NSTR_BASE + 1; break;
	}
	return m;
}

TEST(changed_records)
{
	model mb = base(INTER);
	buf b = build(&mb);
	pprof_dec d;
	keep_init(&d);
	CHECK_EQ(cmp_open(&d, b.p, b.len, "base", 0), 0);
	for (int v = 0; v < V_COUNT; v++) {
		int same;
		const char *name;
		model m = variant(v, &same, &name);
		buf x = build(&m);
		if (v == V_ADDR)
			CHECK_EQ(x.len, b.len); /* same record length */
		/* variant, variant, base, base */
		static const char *const fmt[4] = {"%s", "%s, again",
		        "base after %s", "base after %s, again"};
		for (int st = 0; st < 4; st++) {
			char what[96];
			const buf *o = st < 2 ? &x : &b;
			snprintf(what, sizeof(what), fmt[st], name);
			CHECK_EQ(cmp_open(&d, o->p, o->len, what,
			                  st % 2 ? 1 : same), 0);
		}
		free(x.p);
	}
	/* every variant after every other, no base in between */
	for (int v = 0; v < V_COUNT; v++)
		for (int u = 0; u < V_COUNT; u++) {
			int s1, s2;
			const char *n1, *n2;
			model m1 = variant(v, &s1, &n1), m2 = variant(u, &s2, &n2);
			buf x1 = build(&m1), x2 = build(&m2);
			char what[160];
			snprintf(what, sizeof(what), "%s then %s", n1, n2);
			CHECK_EQ(cmp_open(&d, x1.p, x1.len, n1, -1), 0);
			CHECK_EQ(cmp_open(&d, x2.p, x2.len, what, u == v ? 1 : -1), 0);
			free(x1.p);
			free(x2.p);
		}
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

TEST(nonminimal_varints)
{
	model ms[3] = {base(INTER), base(INTER), base(INTER)};
	ms[0].nonmin_loc = 5;    /* inside the middle location segment */
	ms[1].nonmin_loc = 1;    /* first record of the first segment */
	ms[1].nonmin_tag_fn = 4; /* first of the second function segment */
	ms[2].nonmin_loc = 12;   /* the last location */
	ms[2].nonmin_tag_fn = 2;
	model mb = base(INTER);
	buf b = build(&mb);
	pprof_dec d;
	keep_init(&d);
	for (int i = 0; i < 3; i++) {
		buf n = build(&ms[i]);
		CHECK_EQ(n.len, b.len + 1 + (ms[i].nonmin_tag_fn != 0));
		CHECK_EQ(cmp_open(&d, n.p, n.len, "non-minimal", -1), 0);
		CHECK_EQ(cmp_open(&d, n.p, n.len, "non-minimal again", -1), 0);
		CHECK_EQ(cmp_open(&d, b.p, b.len, "minimal after", -1), 0);
		CHECK_EQ(cmp_open(&d, n.p, n.len, "non-minimal after", -1), 0);
		model mv = ms[i];
		mv.loc[5].addr += 8; /* one record changed, framing unusual */
		buf v = build(&mv);
		CHECK_EQ(cmp_open(&d, v.p, v.len, "non-minimal changed", 0), 0);
		CHECK_EQ(cmp_open(&d, n.p, n.len, "non-minimal back", -1), 0);
		free(v.p);
		free(n.p);
	}
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

TEST(invalid_between_valid)
{
	model mb = base(INTER);
	buf b = build(&mb);
	model bad[8];
	int want[8];
	for (int i = 0; i < 8; i++)
		bad[i] = base(INTER);
	/* a sample names a missing location (open succeeds, samples fail) */
	bad[0].bad_loc = 99, want[0] = HEAPPROF_EID;
	/* same records, fewer strings: mapping file index 12 out of range */
	bad[1].nstr = 11, want[1] = HEAPPROF_EINDEX;
	/* location 5's line names the missing function 6 */
	bad[2].nfn = 5, want[2] = HEAPPROF_EID;
	bad[3].loc[7].id = 4, want[3] = HEAPPROF_EID; /* duplicate id */
	bad[4].layout = &INTER[1], want[4] = HEAPPROF_EVALUES; /* no types */
	bad[5].layout = INTER "X", want[5] = HEAPPROF_ECONCAT;
	bad[6].nstr = 0, want[6] = HEAPPROF_ESTRING0;
	/* other ids and addresses indexed, then the open fails */
	for (int i = 0; i < 16; i++)
		bad[7].loc[i].addr += 8, bad[7].loc[i].id += 100;
	bad[7].nstr = 0, want[7] = HEAPPROF_ESTRING0;
	pprof_dec d;
	keep_init(&d);
	CHECK_EQ(cmp_open(&d, b.p, b.len, "valid", 0), 0);
	for (int i = 0; i < 8; i++) {
		buf x = build(&bad[i]);
		char what[64];
		snprintf(what, sizeof(what), "invalid %d", i);
		CHECK_EQ(cmp_open(&d, x.p, x.len, what, -1), want[i]);
		snprintf(what, sizeof(what), "valid after invalid %d", i);
		/* invalid i = 0 opened fine and has the same records */
		CHECK_EQ(cmp_open(&d, b.p, b.len, what, 1), 0);
		CHECK_EQ(cmp_open(&d, x.p, x.len, "invalid again", -1), want[i]);
		free(x.p);
	}
	/* every truncation, each in an allocation of its exact size, with the
	 * whole profile opened again now and then */
	static const char *const layouts[] = {INTER, STRFIRST};
	for (int li = 0; li < 2; li++) {
		model ml = base(layouts[li]);
		buf full = build(&ml);
		size_t nvalid = 0;
		CHECK_EQ(cmp_open(&d, full.p, full.len, "full", -1), 0);
		for (size_t n = 0; n < full.len; n++) {
			uint8_t *c = malloc(n ? n : 1);
			memcpy(c, full.p, n);
			char what[64];
			snprintf(what, sizeof(what), "%s prefix %zu", layouts[li], n);
			nvalid += cmp_open(&d, c, n, what, -1) == 0;
			free(c);
			if (n % 5 == 0)
				CHECK_EQ(cmp_open(&d, full.p, full.len, "full", -1), 0);
		}
		CHECK_EQ(cmp_open(&d, full.p, full.len, "full at end", -1), 0);
		CHECK_EQ(cmp_open(&d, full.p, full.len, "full twice", 1), 0);
		if (li == 1)
			CHECK(nvalid > 20); /* the snapshot changed many times */
		free(full.p);
	}
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

TEST(no_mappings_no_functions)
{
	model z = base(INTER), zn = base(INTER), zm = base(INTER),
	      mb = base(INTER);
	z.nmap = z.nfn = 0;
	for (int i = 0; i < 16; i++) {
		z.loc[i].map = -1;
		z.loc[i].nlines = 0;
	}
	zn = z;
	zn.nloc = 0;  /* no records at all; samples without locations */
	zm = z;
	zm.nmap = 2;  /* mappings, no functions */
	buf bs[4] = {build(&z), build(&zn), build(&zm), build(&mb)};
	static const struct {
		int b, same;
		const char *what;
	} steps[] = {
		{0, 0, "no maps/funcs"}, {0, 1, "no maps/funcs again"},
		{3, 0, "full after"}, {0, 0, "no maps/funcs after full"},
		{1, 0, "no records"}, {1, 1, "no records again"},
		{2, 0, "mappings only"}, {2, 1, "mappings only again"},
		{0, 0, "no maps/funcs last"}, {3, 0, "full last"},
		{3, 1, "full last again"},
	};
	pprof_dec d;
	keep_init(&d);
	for (size_t i = 0; i < HP_ARRAY_LEN(steps); i++) {
		const buf *o = &bs[steps[i].b];
		CHECK_EQ(cmp_open(&d, o->p, o->len, steps[i].what,
		                  steps[i].same), 0);
		if (steps[i].b < 2) /* no mappings or functions were indexed */
			CHECK_EQ(d.nmaps + d.nfuncs, 0);
		if (steps[i].b == 1)
			CHECK_EQ(d.nlocs, 0);
	}
	heapprof__pprof_dec_free(&d);
	for (int i = 0; i < 4; i++)
		free(bs[i].p);
}

/* ------------------------------------------------------------ corpus */

static const char *const CORPUS[] = {
	"fastdelta/big-heap.pprof", "fastdelta/stress-failure.before.pprof",
	"fastdelta/stress-failure.after.pprof", "go/go_heap_delta_1.pb.gz",
	"go/go_heap_delta_2.pb.gz"};

TEST(corpus_sequences)
{
	buf b[5];
	for (int i = 0; i < 5; i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", t_corpus(), CORPUS[i]);
		REQUIRE(t_read_file(path, &b[i].p, &b[i].len) == 0);
	}
	/* A A B A C C B C D D E D E A E B */
	static const int seq[] = {0, 0, 1, 0, 2, 2, 1, 2, 3, 3,
	                          4, 3, 4, 0, 4, 1};
	pprof_dec d;
	keep_init(&d);
	for (size_t i = 0; i < HP_ARRAY_LEN(seq); i++) {
		int want = i == 0 ? 0 : seq[i] == seq[i - 1] ? 1 : -1;
		char what[128];
		snprintf(what, sizeof(what), "#%zu %s", i, CORPUS[seq[i]]);
		CHECK_EQ(cmp_open(&d, b[seq[i]].p, b[seq[i]].len, what, want), 0);
	}
	heapprof__pprof_dec_free(&d);
	for (int i = 0; i < 5; i++)
		free(b[i].p);
}

int
main(void)
{
	RUN(same_profile_twice);
	RUN(interleaved_twice);
	RUN(changed_records);
	RUN(nonminimal_varints);
	RUN(invalid_between_valid);
	RUN(no_mappings_no_functions);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", t_corpus(), CORPUS[0]);
	FILE *f = fopen(path, "rb");
	if (f) {
		fclose(f);
		RUN(corpus_sequences);
	} else {
		T_SKIP_CORPUS("corpus_sequences",
		              "nor build/corpus: sh tests/corpus/gen.sh");
	}
	TEST_MAIN_END();
}
