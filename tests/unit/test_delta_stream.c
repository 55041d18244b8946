/*
 * test_delta_stream.c: heapprof_delta_compute_read (input through a
 * positional reader, src/format/pprof_stream.c) against
 * heapprof_delta_compute on a second computer fed the same bytes: corpus
 * streams at several read sizes, raw and gzip'd; duplicate samples in many
 * wire forms (their first sample read again); every truncation; readers
 * failing or claiming too much at every read (stream kept, or started over
 * after a failure in the last pass); input changing between passes; no
 * allocation in the steady state; the input limit; the memory held.
 */
#include "heapprof.h"
#include "delta.h"
#include "pb.h"
#include "pb_build.h"
#include "alloc_hook.h"
#include "test.h"

#include <errno.h>
#include <zlib.h>

/* ------------------------------------------------------------ helpers */

typedef struct bytes {
	uint8_t *p;
	size_t len;
} bytes;

/* Reads made so far (all readers), and how many were made at the last
 * write of any output (the reads after it: the commit pass); counts the
 * tests report. */
static long g_reads, g_reads_at_write;
static long g_first, g_changed, g_calls_changed, g_ok_changed;

static int
bytes_write(void *arg, const void *p, size_t n)
{
	bytes *b = arg;
	g_reads_at_write = g_reads;
	if (!(b->p = realloc(b->p, b->len + n + 1)))
		return -ENOMEM;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int
same(const bytes *a, const bytes *b)
{
	return a->len == b->len && (a->len == 0 || !memcmp(a->p, b->p, a->len));
}

static void
drop(bytes *b)
{
	free(b->p);
	*b = (bytes){NULL, 0};
}

#define DROP(...)                                                              \
	do {                                                                   \
		bytes *l_[] = {__VA_ARGS__};                                   \
		for (size_t i_ = 0; i_ < HP_ARRAY_LEN(l_); i_++)               \
			drop(l_[i_]);                                          \
	} while (0)

/* A positional reader over p (alt once more than switch_after reads at
 * offset 0 were made), at most chunk bytes a read (0: as asked); its
 * fail_at-th call returns -EIO, its over_at-th claims n + 1 bytes. */
typedef struct rsrc {
	const uint8_t *p, *alt;
	size_t len, chunk, alt_len;
	int switch_after, passes;
	long calls, fail_at, over_at;
} rsrc;

#define SRC(b, ch) ((rsrc){.p = (b)->p, .len = (b)->len, .chunk = (ch)})

static long
rd_fn(void *arg, uint64_t at, void *buf, size_t n)
{
	rsrc *s = arg;
	const uint8_t *p = s->p;
	size_t len = s->len;
	g_reads++;
	s->passes += at == 0;
	if (++s->calls == s->fail_at)
		return -EIO;
	if (s->calls == s->over_at)
		return (long)n + 1; /* nothing written past n */
	if (s->switch_after && s->passes > s->switch_after)
		p = s->alt, len = s->alt_len;
	size_t k = at >= len ? 0 : len - (size_t)at;
	k = k > n ? n : k;
	k = s->chunk && k > s->chunk ? s->chunk : k;
	memcpy(buf, p + (at < len ? at : 0), k);
	return (long)k;
}

/* One call, output into a fresh *out (the caller frees it). */
static int
cbuf(heapprof_delta *d, const bytes *in, unsigned flags, bytes *out)
{
	*out = (bytes){NULL, 0};
	return heapprof_delta_compute(d, in->p, in->len, flags, bytes_write, out);
}

static int
cread(heapprof_delta *d, rsrc *s, unsigned flags, bytes *out)
{
	*out = (bytes){NULL, 0};
	return heapprof_delta_compute_read(d, rd_fn, s, flags, bytes_write, out);
}

#define cread_b(d, in, ch, fl, out) cread(d, &SRC(in, ch), fl, out)

/* One call on a buffer computer and one on a read computer: their rc's
 * agree and, on success, their bytes (ok); the read output in *keep. */
typedef struct res {
	int rb, rr, ok; /* rc buffer, rc read, same rc and bytes */
} res;

static res
both(heapprof_delta *db, heapprof_delta *dr, const bytes *in, size_t chunk,
     unsigned flags, bytes *keep)
{
	bytes ob, orr;
	res r;
	r.rb = cbuf(db, in, flags, &ob);
	r.rr = cread_b(dr, in, chunk, flags, &orr);
	r.ok = r.rb == r.rr && (r.rb != 0 || same(&ob, &orr));
	drop(&ob);
	if (keep)
		*keep = orr;
	else
		drop(&orr);
	return r;
}

static heapprof_delta *
mk(size_t max_input)
{
	heapprof_delta_options o = {.max_input = max_input};
	heapprof_delta *d = NULL;
	return heapprof_delta_new(&d, &o) < 0 ? NULL : d;
}

/* A new computer that has read hist (through the reader), or NULL. */
static heapprof_delta *
fed(const bytes *hist)
{
	heapprof_delta *d = mk(0);
	bytes o;
	if (d && hist)
		cread_b(d, hist, 0, 0, &o), drop(&o);
	return d;
}

/* The buffer computer's output for `in` after hist (NULL: a first call). */
static bytes
ref_out(const bytes *hist, const bytes *in)
{
	heapprof_delta *d = mk(0);
	bytes o;
	if (hist)
		cbuf(d, hist, 0, &o), drop(&o);
	CHECK_EQ(cbuf(d, in, 0, &o), 0);
	heapprof_delta_free(d);
	return o;
}

/* gzip (windowBits 31) of in, or with z = 0 the inflated form of it. */
static bytes
zlib(const bytes *in, int z)
{
	z_stream s;
	memset(&s, 0, sizeof(s));
	int r = z ? deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY)
	          : inflateInit2(&s, 31);
	size_t cap = z ? deflateBound(&s, (uLong)in->len) + 64
	               : in->len * 64 + 65536;
	bytes o = {malloc(cap), 0};
	s.next_in = in->p;
	s.avail_in = (uInt)in->len;
	s.next_out = o.p;
	s.avail_out = (uInt)cap;
	if (r == Z_OK)
		r = z ? deflate(&s, Z_FINISH) : inflate(&s, Z_FINISH);
	if (r != Z_STREAM_END)
		T_FAIL("zlib %d: %d", z, r);
	o.len = s.total_out;
	z ? deflateEnd(&s) : inflateEnd(&s);
	return o;
}

/* Two gzip members (the profile split in the middle), pad zero bytes
 * between them. */
static bytes
gz2(const bytes *in, size_t pad)
{
	bytes h1 = {in->p, in->len / 2}, h2 = {in->p + h1.len, in->len - h1.len};
	bytes a = zlib(&h1, 1), b = zlib(&h2, 1);
	bytes o = {malloc(a.len + pad + b.len), a.len + pad + b.len};
	memcpy(o.p, a.p, a.len);
	memset(o.p + a.len, 0, pad);
	memcpy(o.p + a.len + pad, b.p, b.len);
	DROP(&a, &b);
	return o;
}

/* A corpus file as raw and gzip'd bytes (a .gz file as it is). */
static int
load2(const char *rel, bytes *raw, bytes *z)
{
	char path[512];
	bytes f;
	snprintf(path, sizeof(path), "%s/%s", t_corpus(), rel);
	if (t_read_file(path, &f.p, &f.len) < 0) {
		free(f.p);
		T_FAIL("cannot read %s", path);
		return -1;
	}
	int is_gz = f.len >= 2 && f.p[0] == 0x1f && f.p[1] == 0x8b;
	*raw = is_gz ? zlib(&f, 0) : f;
	*z = is_gz ? f : zlib(&f, 1);
	return 0;
}

/* ------------------------------------------------------------ generator */

/* Profiles by hand: types alloc_objects, alloc_space, inuse_objects,
 * inuse_space (count); locations 1..nloc at 0x1000 + 16 id, each a line
 * of function id named "f<id>"; labels none, k=v1 or k=v2. Strings: 0 "",
 * 1-4 the types, 5 count, 6 k, 7 v1, 8 v2, 9 f.c, 9 + i function i. */
static void
g_begin(pb_writer *w)
{
	heapprof__pb_init(w, NULL, NULL, NULL, NULL);
	for (uint64_t t = 1; t <= 4; t++)
		vt(w, 1, t, 5);
}

/* Label k=v1 (label 1) or k=v2 (2), its two fields swapped if swap. */
static void
g_label(pb_writer *w, int label, int swap)
{
	uint64_t f[2] = {6, 6 + (uint64_t)label};
	heapprof__pb_begin(w, 3);
	heapprof__pb_varint_field(w, 1 + (uint64_t)swap, f[swap]);
	heapprof__pb_varint_field(w, 2 - (uint64_t)swap, f[!swap]);
	heapprof__pb_end(w);
}

/* One sample in wire form `form` (of 8): 0 the usual (packed ids, packed values,
 * label); 1 ids unpacked; 2 values first; 3 values unpacked; 4 label
 * first; 5 ids as 2-byte (non-minimal) varints; 6 ids in two packed
 * fields; 7 the label's fields swapped. */
static void
g_sample(pb_writer *w, const uint64_t *ids, int n, const int64_t *v,
         int label, int form)
{
	uint8_t nb[32];
	heapprof__pb_begin(w, 2);
	if (form == 4 && label)
		g_label(w, label, 0);
	if (form == 2)
		heapprof__pb_packed_i64(w, 2, v, 4);
	if (form == 1) {
		for (int i = 0; i < n; i++)
			heapprof__pb_varint_field(w, 1, ids[i]);
	} else if (form == 5) {
		for (int i = 0; i < n; i++) {
			nb[2 * i] = (uint8_t)(ids[i] | 0x80);
			nb[2 * i + 1] = (uint8_t)(ids[i] >> 7);
		}
		heapprof__pb_bytes_field(w, 1, nb, 2 * (size_t)n);
	} else if (form == 6 && n > 1) {
		heapprof__pb_packed_u64(w, 1, ids, 1);
		heapprof__pb_packed_u64(w, 1, ids + 1, (size_t)n - 1);
	} else {
		heapprof__pb_packed_u64(w, 1, ids, (size_t)n);
	}
	if (form == 3)
		for (int t = 0; t < 4; t++)
			heapprof__pb_varint_field(w, 2, (uint64_t)v[t]);
	else if (form != 2)
		heapprof__pb_packed_i64(w, 2, v, 4);
	if (form != 4 && label)
		g_label(w, label, form == 7);
	heapprof__pb_end(w);
}

static bytes
g_end(pb_writer *w, int nloc, int64_t time)
{
	static const char *const s[] = {"", "alloc_objects", "alloc_space",
	                                "inuse_objects", "inuse_space", "count",
	                                "k", "v1", "v2", "f.c"};
	char name[16];
	for (uint64_t j = 1; j <= (uint64_t)nloc; j++) {
		heapprof__pb_begin(w, 4);
		heapprof__pb_uint_opt(w, 1, j);
		heapprof__pb_uint_opt(w, 3, 0x1000 + 16 * j);
		heapprof__pb_begin(w, 4);
		heapprof__pb_uint_opt(w, 1, j);
		heapprof__pb_uint_opt(w, 2, j);
		heapprof__pb_end(w);
		heapprof__pb_end(w);
		heapprof__pb_begin(w, 5);
		heapprof__pb_uint_opt(w, 1, j);
		heapprof__pb_uint_opt(w, 2, 9 + j);
		heapprof__pb_uint_opt(w, 4, 9);
		heapprof__pb_end(w);
	}
	strs(w, s, HP_ARRAY_LEN(s));
	for (int j = 1; j <= nloc; j++) {
		int l = snprintf(name, sizeof(name), "f%d", j);
		heapprof__pb_bytes_field(w, 6, name, (size_t)l);
	}
	heapprof__pb_uint_opt(w, 9, (uint64_t)time);
	return (bytes){w->buf, w->len};
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

#define NKEYS 10

/* Values of each pool key in the last profile that had it (for a first
 * sample that repeats them: the quick path's "no change" form). */
static int64_t g_prev[NKEYS][2];

/* A random profile over NKEYS keys (key j: 3 or 4 frames, label j % 3;
 * keys 0, 3, 6, 9 share a stack), each 0-3 times (often 2), shuffled,
 * random wire forms (half the usual one), a first sample that now and
 * then repeats the key's last values; `filler` distinct depth-2 stacks
 * between its halves (duplicates farther apart than the stream window).
 * Updates g_prev. */
static bytes
g_random(int filler, int64_t time)
{
	int order[NKEYS * 3], n = 0, seen[NKEYS] = {0};
	int64_t sums[NKEYS][2] = {{0}};
	for (int j = 0; j < NKEYS; j++)
		for (int m = (int)rnd(5), k = 0; k < (m == 4 ? 2 : m); k++)
			order[n++] = j;
	for (int i = n - 1; i > 0; i--) {
		int k = (int)rnd((unsigned)i + 1), t = order[i];
		order[i] = order[k], order[k] = t;
	}
	pb_writer w;
	g_begin(&w);
	for (int i = 0; i < n; i++) {
		for (int f = 0; filler && i == n / 2 && f < filler; f++) {
			uint64_t fi[2] = {1 + (uint64_t)f % 110, 1 + (uint64_t)f / 110};
			int64_t fv[4] = {1 + rnd(3), 64, 0, 0};
			g_sample(&w, fi, 2, fv, 0, 0);
		}
		int j = order[i], s = j % 3 ? j : 0;
		uint64_t ids[4] = {1 + (uint64_t)s % 7, 20 + (uint64_t)s % 5,
		                   40 + (uint64_t)s, 60};
		int64_t v[4] = {rnd(5), 16 * (int64_t)rnd(9), rnd(3), rnd(2)};
		if (!seen[j]++ && rnd(3) == 0)
			v[0] = g_prev[j][0], v[1] = g_prev[j][1], v[2] = v[3] = 0;
		if (rnd(17) == 0)
			v[0] = -v[0] - 1;
		sums[j][0] += v[0];
		sums[j][1] += v[1];
		g_sample(&w, ids, 3 + s % 2, v, j % 3,
		         rnd(2) ? 0 : (int)rnd(8));
	}
	for (int j = 0; j < NKEYS; j++)
		if (seen[j])
			memcpy(g_prev[j], sums[j], sizeof(sums[j]));
	return g_end(&w, 120 + filler / 110, time);
}

/* ------------------------------------------------------------ 1 corpus */

static const char *const SEQS[][3] = { /* two files, the calls' order */
	{"fastdelta/heap.before.pprof", "fastdelta/heap.after.pprof", "01011"},
	{"fastdelta/big-heap.pprof", "fastdelta/heap.before.pprof", "00100"},
	{"fastdelta/stress-failure.before.pprof",
	 "fastdelta/stress-failure.after.pprof", "01011"},
	{"fastdelta/stress-failure.2.before.pprof",
	 "fastdelta/stress-failure.2.after.pprof", "01011"},
	{"go/go_heap_delta_1.pb.gz", "go/go_heap_delta_2.pb.gz", "01011"},
	/* legacy text (an error from both), gzip'd proto, a block profile */
	{"pprof_testdata/profile/gobench.heap",
	 "pprof_testdata/profile/cppbench.heap", "010"},
	/* legacy text the generated corpus has too: errors from both */
	{"go/go_heap_basic.txt", "gperftools/gperf_api.0001.heap", "010"},
	{"pprof_testdata/profile/java.heap",
	 "pprof_testdata/internal_driver/go.nomappings.crash", "0110"},
	{"pprof_testdata/internal_driver/cppbench.cpu_no_samples_type",
	 "fastdelta/block.before.pprof", "0110"},
};

/* Each sequence raw, gzip'd and as two gzip members; read 1, 7, 4096 or
 * as many bytes as asked at a time; output plain and gzip'd. */
TEST(corpus_streams_same_bytes)
{
	static const size_t chunks[] = {1, 7, 4096, 0};
	int ok = 0, failed = 0;
	for (size_t q = 0; q < HP_ARRAY_LEN(SEQS); q++) {
		bytes raw[2], z[2], m[2];
		if (t_corpus_generated() &&
		    (strncmp(SEQS[q][0], "pprof_testdata/", 15) == 0 ||
		     strncmp(SEQS[q][1], "pprof_testdata/", 15) == 0)) {
			T_SKIP_CORPUS("corpus_streams_same_bytes.pprof_testdata",
			              SEQS[q][0]);
			continue;
		}
		if (load2(SEQS[q][0], &raw[0], &z[0]) < 0 ||
		    load2(SEQS[q][1], &raw[1], &z[1]) < 0)
			return;
		m[0] = gz2(&raw[0], q * 3);
		m[1] = gz2(&raw[1], q * 3);
		const bytes *forms[3] = {raw, z, m};
		/* form (3) x read size (4) x output flags (2) */
		for (int v = 0; v < 24; v++) {
			size_t ch = chunks[v / 2 % 4];
			heapprof_delta *db = mk(0), *dr = mk(0);
			for (int i = 0; SEQS[q][2][i]; i++) {
				res r = both(db, dr, &forms[v / 8][SEQS[q][2][i] - '0'],
				             ch, (unsigned)v & 1, NULL);
				if (!r.ok)
					T_FAIL("%s form %d chunk %zu flags %d call %d: "
					       "rc %d/%d", SEQS[q][0], v / 8, ch,
					       v & 1, i, r.rb, r.rr);
				ok += r.rb == 0;
				failed += r.rb != 0;
			}
			heapprof_delta_free(db);
			heapprof_delta_free(dr);
		}
		DROP(&raw[0], &raw[1], &z[0], &z[1], &m[0], &m[1]);
	}
	fprintf(stderr, "  corpus: %d calls succeeded, %d failed (same rc)\n",
	        ok, failed);
	CHECK(ok > 500);
	CHECK(failed > 0); /* the legacy text files */
}

/* ------------------------------------------------------------ 2 dups */

/* Items of d's last call whose key's first sample is read again (the
 * stream path for duplicates: DELTA_KFIRST on the key's row). */
static long
first_items(const heapprof_delta *d)
{
	long n = 0;
	for (size_t i = 0; i < d->nitems; i++)
		n += (d->kpos[d->items[i].kid] & DELTA_KFIRST) != 0;
	return n;
}

/* A stream of ncalls random profiles (gzip'd if gzip_in) through both
 * computers, output plain and gzip'd. */
static void
dup_stream(int filler, int ncalls, size_t chunk, int gzip_in, int stream)
{
	heapprof_delta *db = mk(0), *dr = mk(0);
	memset(g_prev, 0, sizeof(g_prev));
	for (int c = 0; db && dr && c < ncalls; c++) {
		bytes p = g_random(filler, 1000 + c), zp = zlib(&p, 1);
		res r = both(db, dr, gzip_in ? &zp : &p, chunk,
		             c & 1 ? HEAPPROF_DELTA_GZIP : 0, NULL);
		g_first += first_items(dr);
		if (r.rb != 0 || !r.ok)
			T_FAIL("dups %d/%zu/%d stream %d call %d: rc %d/%d", filler,
			       chunk, gzip_in, stream, c, r.rb, r.rr);
		DROP(&p, &zp);
	}
	heapprof_delta_free(db);
	heapprof_delta_free(dr);
}

TEST(duplicates)
{
	static const size_t small[] = {1, 7, 0};
	for (int s = 0; s < 60; s++)
		dup_stream(0, 8, small[s % 3], s % 4 == 3, s);
	long near = g_first;
	for (int s = 0; s < 4; s++)
		dup_stream(9000, 5, s & 1 ? 4096 : 0, s >= 2, s);
	fprintf(stderr, "  duplicates: %ld items read their first sample "
	        "again (%ld far apart)\n", g_first, g_first - near);
	CHECK(near > 0);
	CHECK(g_first > near);
}

/* ------------------------------------------------------------ 3 trunc */

/* The heap pair of fastdelta, raw and gzip'd (loaded by main). */
static bytes hb, hbz, ha, haz;

/* After hist, every prefix of full, then next: the same rc (and bytes)
 * both ways; after a failure, next as if the failed call never came. */
static void
trunc_sweep(const bytes *full, const bytes *hist, const bytes *next,
            const char *what)
{
	static const size_t ch[3] = {1, 7, 0};
	bytes ref = ref_out(hist, next), o;
	int diff = 0, errs = 0;
	for (size_t len = 0; len <= full->len; len++)
		for (size_t c = 0; c < 3; c++) {
			bytes pre = {full->p, len};
			heapprof_delta *db = mk(0), *dr = mk(0);
			both(db, dr, hist, 0, 0, NULL);
			res r = both(db, dr, &pre, ch[c], 0, NULL);
			if (!r.ok && diff++ < 10)
				T_FAIL("%s prefix %zu chunk %zu: rc %d/%d", what, len,
				       ch[c], r.rb, r.rr);
			errs += r.rr < 0;
			int failed = r.rr < 0 || r.rb < 0;
			r = both(db, dr, next, ch[c], 0, &o);
			if ((r.rb != 0 || !r.ok || (failed && !same(&o, &ref))) &&
			    diff++ < 10)
				T_FAIL("%s prefix %zu chunk %zu: next call rc %d/%d, "
				       "same: %d, as if unseen: %d", what, len, ch[c],
				       r.rb, r.rr, r.ok, same(&o, &ref));
			drop(&o);
			heapprof_delta_free(db);
			heapprof_delta_free(dr);
		}
	fprintf(stderr, "  %s: %zu prefixes x 3 read sizes, %d failed calls, "
	        "%d differences\n", what, full->len + 1, errs, diff);
	drop(&ref);
}

TEST(truncation_sweep)
{
	bytes m = gz2(&hb, 5);
	trunc_sweep(&hb, &ha, &hb, "raw");
	trunc_sweep(&hbz, &haz, &hbz, "gzip");
	trunc_sweep(&m, &haz, &hbz, "2 gzip members");
	drop(&m);
}

/* ------------------------------------------------------------ 4 errors */

/* After A, B with its k-th read failing (over: claiming n + 1 bytes),
 * for every k of the good call, then C: a failure in a read after the
 * output's last write (the commit pass) starts the stream over (C as on
 * a fresh computer), any other keeps it (C as if B never came). */
static void
fail_sweep(const bytes *A, const bytes *B, const bytes *C, size_t chunk,
           int over, const char *what)
{
	bytes ra = ref_out(A, C), rfresh = ref_out(NULL, C), o;
	CHECK(!same(&ra, &rfresh)); /* else the two cases cannot be told */
	heapprof_delta *d = fed(A);
	rsrc s = SRC(B, chunk);
	g_reads = 0;
	CHECK_EQ(cread(d, &s, 0, &o), 0);
	drop(&o);
	heapprof_delta_free(d);
	long n = s.calls, w = g_reads_at_write, na = 0, nb = 0;
	for (long k = 1; k <= n; k++) {
		d = fed(A);
		s = SRC(B, chunk);
		*(over ? &s.over_at : &s.fail_at) = k;
		int rc = cread(d, &s, 0, &o);
		drop(&o);
		int r2 = cread_b(d, C, chunk, 0, &o);
		int fresh = k > w, ok = r2 == 0 && same(&o, fresh ? &rfresh : &ra);
		if ((over ? rc >= 0 : rc != -EIO) || !ok)
			T_FAIL("%s over %d: read %ld of %ld (last write after %ld): "
			       "rc %d, next rc %d, kept %d, fresh %d (want %s)", what,
			       over, k, n, w, rc, r2, same(&o, &ra),
			       same(&o, &rfresh), fresh ? "fresh" : "kept");
		na += !fresh;
		nb += fresh;
		drop(&o);
		heapprof_delta_free(d);
	}
	fprintf(stderr, "  %s over %d: %ld reads, %ld kept the stream, %ld "
	        "started it over\n", what, over, n, na, nb);
	CHECK(na > 0);
	CHECK(nb > 0);
	DROP(&ra, &rfresh);
}

TEST(reader_errors)
{
	bytes g[3];
	rng = 12345;
	memset(g_prev, 0, sizeof(g_prev));
	for (int i = 0; i < 3; i++)
		g[i] = g_random(0, 10 + i);
	for (int over = 0; over < 2; over++) {
		fail_sweep(&hb, &ha, &ha, over ? 64 : 7, over, "raw heap");
		fail_sweep(&hbz, &haz, &haz, over ? 64 : 16, over, "gzip heap");
		fail_sweep(&g[0], &g[1], &g[2], 7, over, "dups");
	}
	DROP(&g[0], &g[1], &g[2]);
}

/* ------------------------------------------------------------ 5 changed */

/* After H, A read with B served from the (m+1)-th read at offset 0 on,
 * m = 1..5; then C, which after an error must give C after H (ra) or C
 * on a fresh computer (rf). */
static void
change_run(const bytes *H, const bytes *A, const bytes *B, const bytes *C,
           const bytes *ra, const bytes *rf, size_t chunk, const char *what,
           long pos)
{
	for (int m = 1; m <= 5; m++) {
		heapprof_delta *d = fed(H);
		bytes o;
		rsrc s = {.p = A->p, .len = A->len, .chunk = chunk, .alt = B->p,
		          .alt_len = B->len, .switch_after = m};
		int rc = cread(d, &s, m & 1 ? HEAPPROF_DELTA_GZIP : 0, &o);
		drop(&o);
		g_calls_changed++;
		g_changed += rc == HEAPPROF_ECHANGED;
		g_ok_changed += rc == 0;
		if (rc < 0) {
			int r2 = cread_b(d, C, chunk, 0, &o);
			if (r2 != 0 || (!same(&o, ra) && !same(&o, rf)))
				T_FAIL("%s byte %ld after pass %d: rc %d, next rc %d "
				       "and neither kept nor fresh", what, pos, m, rc,
				       r2);
			drop(&o);
		}
		heapprof_delta_free(d);
	}
}

/* A and B swapped, then A with each byte flipped, after B. */
static void
change_all(const bytes *A, const bytes *B, const char *what)
{
	bytes ra = ref_out(B, A), rf = ref_out(NULL, A);
	bytes x = {malloc(A->len + 1), A->len};
	change_run(B, A, B, A, &ra, &rf, 7, what, -1);
	change_run(B, B, A, A, &ra, &rf, 0, what, -2);
	for (size_t i = 0; i < A->len; i++) {
		memcpy(x.p, A->p, A->len);
		x.p[i] ^= i & 1 ? 0xff : 0x01;
		change_run(B, A, &x, A, &ra, &rf, 0, what, (long)i);
	}
	DROP(&x, &ra, &rf);
}

TEST(changed_input)
{
	change_all(&hb, &ha, "raw");
	change_all(&hbz, &haz, "gzip");
	fprintf(stderr, "  changed: %ld calls, %ld HEAPPROF_ECHANGED, %ld "
	        "succeeded\n", g_calls_changed, g_changed, g_ok_changed);
	CHECK(g_changed > 0);
}

/* ------------------------------------------------------------ 6 steady */

/* 6 warm-up calls (p0, p1, ..., output plain and gzip'd), then 6 more
 * that must allocate nothing. */
static void
steady(const bytes *p0, const bytes *p1, size_t chunk, const char *what)
{
	heapprof_delta_options opt = {.realloc_fn = hook_realloc};
	heapprof_delta *d;
	const bytes *in[2] = {p0, p1};
	hook_live = 0;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	for (int i = 0; i < 12; i++) {
		rsrc s = SRC(in[i & 1], chunk);
		hook_allocs = i == 6 ? 0 : hook_allocs; /* warm from call 6 on */
		CHECK_EQ(heapprof_delta_compute_read(d, rd_fn, &s,
		                                     i & 2 ? HEAPPROF_DELTA_GZIP : 0,
		                                     null_write, NULL), 0);
	}
	if (hook_allocs)
		T_FAIL("%s chunk %zu: %ld allocations after warm-up", what, chunk,
		       hook_allocs);
	heapprof_delta_free(d);
	CHECK_EQ(hook_live, 0);
}

TEST(steady_state_allocates_nothing)
{
	static const char *const f[][2] = {
		{"fastdelta/big-heap.pprof", "fastdelta/big-heap.pprof"},
		{"fastdelta/stress-failure.before.pprof",
		 "fastdelta/stress-failure.after.pprof"},
		{"go/go_heap_delta_1.pb.gz", "go/go_heap_delta_2.pb.gz"}};
	for (size_t i = 0; i < HP_ARRAY_LEN(f); i++) {
		bytes r0, z0, r1, z1;
		if (load2(f[i][0], &r0, &z0) < 0 || load2(f[i][1], &r1, &z1) < 0)
			return;
		for (size_t c = 0; c < 2; c++) {
			steady(&r0, &r1, c ? 4096 : 0, f[i][1]);
			steady(&z0, &z1, c ? 4096 : 0, f[i][1]);
		}
		DROP(&r0, &z0, &r1, &z1);
	}
}

/* ------------------------------------------------------------ 7 limit */

/* max_input = lim on both computers: ETOOBIG below the inflated size,
 * else the same bytes. */
static void
limit_at(const bytes *in, size_t size, size_t lim, const char *what, int *bad)
{
	heapprof_delta *db = mk(lim), *dr = mk(lim);
	int want = lim < size ? HEAPPROF_ETOOBIG : 0;
	res r = both(db, dr, in, lim % 5 ? 0 : 7, 0, NULL);
	if ((r.rb != want || r.rr != want || !r.ok) && (*bad)++ < 10)
		T_FAIL("%s (%zu bytes inflated), limit %zu: rc %d/%d, want %d",
		       what, size, lim, r.rb, r.rr, want);
	heapprof_delta_free(db);
	heapprof_delta_free(dr);
}

TEST(limit)
{
	bytes r, z;
	int bad = 0;
	for (size_t lim = 1; lim <= ha.len + 1; lim++) {
		limit_at(&ha, ha.len, lim, "raw", &bad);
		limit_at(&haz, ha.len, lim, "gzip", &bad);
	}
	REQUIRE(load2("fastdelta/big-heap.pprof", &r, &z) == 0);
	size_t lims[] = {100, 70000, r.len / 2, r.len - 1, r.len, r.len + 1};
	for (size_t i = 0; i < HP_ARRAY_LEN(lims); i++) {
		limit_at(&r, r.len, lims[i], "raw big-heap", &bad);
		limit_at(&z, r.len, lims[i], "gzip big-heap", &bad);
	}
	DROP(&r, &z);
}

/* ------------------------------------------------------------ 8 memory */

/* state_bytes after compute_read on raw, then compute on its gzip'd copy
 * (inflated whole), and on a computer that saw only that copy. */
static size_t
state_after(heapprof_delta *d, const bytes *in, int read)
{
	heapprof_delta_stats st;
	bytes o;
	CHECK_EQ(read ? cread_b(d, in, 0, 0, &o) : cbuf(d, in, 0, &o), 0);
	drop(&o);
	heapprof_delta_get_stats(d, &st);
	return st.state_bytes;
}

static void
holds(const bytes *raw, const char *what)
{
	bytes z = zlib(raw, 1);
	heapprof_delta *d = mk(0), *f = mk(0);
	REQUIRE(d && f);
	size_t s_read = state_after(d, raw, 1), s_buf = state_after(d, &z, 0);
	size_t s_only = state_after(f, &z, 0);
	fprintf(stderr, "  %s (%zu bytes, %zu gzip'd): state %zu bytes after "
	        "compute_read, %zu after compute on the gzip'd copy (%zu on a "
	        "computer that saw only that)\n", what, raw->len, z.len, s_read,
	        s_buf, s_only);
	/* what read mode does not hold: at least half the input */
	CHECK(s_read + raw->len / 2 < s_buf);
	CHECK(s_read + raw->len / 2 < s_only);
	heapprof_delta_free(d);
	heapprof_delta_free(f);
	drop(&z);
}

TEST(holds_less_than_input)
{
	bytes r, z;
	if (t_corpus_generated()) {
		/* measured on Datadog's big-heap.pprof; the generated file's
		 * shape differs (deep stacks shared by many samples) */
		T_SKIP_CORPUS("holds_less_than_input.big_heap",
		              "fastdelta/big-heap.pprof");
	} else {
		REQUIRE(load2("fastdelta/big-heap.pprof", &r, &z) == 0);
		holds(&r, "big-heap");
		DROP(&r, &z);
	}
	r = g_random(60000, 1);
	holds(&r, "generated, 60000 stacks");
	drop(&r);
}

int
main(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/fastdelta/heap.before.pprof", t_corpus());
	FILE *f = fopen(p, "rb");
	if (!f) {
		/* Every case but the generated duplicates reads the corpus. */
		T_SKIP_CORPUS("delta_stream_corpus",
		              "nor build/corpus: sh tests/corpus/gen.sh");
		RUN(duplicates);
		TEST_MAIN_END();
	}
	fclose(f);
	if (load2("fastdelta/heap.before.pprof", &hb, &hbz) < 0 ||
	    load2("fastdelta/heap.after.pprof", &ha, &haz) < 0)
		return 1;
	RUN(corpus_streams_same_bytes);
	RUN(duplicates);
	RUN(truncation_sweep);
	RUN(reader_errors);
	RUN(changed_input);
	RUN(steady_state_allocates_nothing);
	RUN(limit);
	RUN(holds_less_than_input);
	DROP(&hb, &hbz, &ha, &haz);
	TEST_MAIN_END();
}
