/*
 * test_delta_mem.c: the delta computer's compact state. prev[] columns
 * only for the subtracted names profiles have matched (a name first met
 * mid-stream gets its column with every key's previous value 0), stacks
 * as shared node paths and keys as (node, label set) pairs (delta_key.c),
 * the same with and without the fast paths, exact across dictionaries
 * that give the same ids other addresses.
 */
#include "heapprof.h"
#include "delta.h"
#include "pb.h"
#include "pb_build.h"
#include "test.h"

typedef struct sbuf {
	uint8_t *p;
	size_t len;
} sbuf;

static int
sbuf_write(void *arg, const void *p, size_t n)
{
	sbuf *b = arg;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

enum { S_COUNT = 1, S_BYTES, S_TYPES };

/* A heap-like profile, written as Go's runtime writes one: types by name;
 * stack s is location ids (s + 1, n + 1, n + 2) for n stacks, location id
 * i at address base + 16 * i; value of type t: val(s, t); with labels,
 * each sample has Go's numeric label bytes = 64 * (s + 1). `order`
 * shuffles the order the samples are written in (0: stack order). */
typedef int64_t valfn(int s, int t);

static sbuf
mk(const char *const *types, int nt, int n, valfn *val, int labels,
   uint64_t base, int order)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < nt; t++)
		vt(&w, 1, S_TYPES + (uint64_t)t, S_COUNT);
	static const int mul[7] = {1, 7, 11, 13, 17, 19, 23}; /* prime to n */
	for (int i = 0; i < n; i++) {
		int s = (int)(((int64_t)i * mul[order % 7] + order) % n);
		uint64_t ids[3] = {(uint64_t)s + 1, (uint64_t)n + 1,
		                   (uint64_t)n + 2};
		int64_t v[8];
		for (int t = 0; t < nt; t++)
			v[t] = val(s, t);
		heapprof__pb_begin(&w, 2);
		heapprof__pb_packed_u64(&w, 1, ids, 3);
		heapprof__pb_packed_i64(&w, 2, v, (size_t)nt);
		if (labels) {
			heapprof__pb_begin(&w, 3);
			heapprof__pb_uint_opt(&w, 1, S_BYTES);
			heapprof__pb_uint_opt(&w, 3, 64 * ((uint64_t)s + 1));
			heapprof__pb_end(&w);
		}
		heapprof__pb_end(&w);
	}
	for (int i = 1; i <= n + 2; i++) {
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, (uint64_t)i);
		heapprof__pb_uint_opt(&w, 3, base + 16 * (uint64_t)i);
		heapprof__pb_end(&w);
	}
	const char *head[] = {"", "count", "bytes"};
	strs(&w, head, 3);
	strs(&w, types, (size_t)nt);
	sbuf b = {w.buf, w.len};
	return b;
}

/* Output value of type `name` for the sample whose leaf is at `addr`. */
static int64_t
out_value(const sbuf *o, const char *name, uint64_t addr)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int64_t r = -999;
	if (heapprof__pprof_check(&d, o->p, o->len) == 0) {
		pprof_sample_iter it;
		pprof_sample s;
		heapprof__pprof_samples(&d, &it);
		while (heapprof__pprof_sample_next(&d, &it, &s) == 0)
			for (size_t t = 0; t < d.ntypes; t++)
				if (s.nlocations &&
				    d.loc_addr[s.location_index[0]] == addr &&
				    heapprof__pprof_string_eq(&d, d.types[t].type,
				                              name))
					r = s.values[t];
	}
	heapprof__pprof_dec_free(&d);
	return r;
}

static int64_t v_a(int s, int t) { return (s + 1) * (t ? 100 : 10); }
static int64_t v_b(int s, int t) { return (s + 1) * (t ? 300 : 15); }
static int64_t v_c(int s, int t) { return (s + 1) * (t ? 17 : 450); }

/* alloc_objects only, then alloc_space appears, then the two swap
 * places: alloc_space's first delta is its whole value. */
TEST(name_matched_mid_stream)
{
	const char *const t1[] = {"alloc_objects"};
	const char *const t2[] = {"alloc_objects", "alloc_space"};
	const char *const t3[] = {"alloc_space", "alloc_objects"};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf in[3] = {mk(t1, 1, 6, v_a, 0, 0x1000, 0),
	              mk(t2, 2, 6, v_b, 0, 0x1000, 0),
	              mk(t3, 2, 6, v_c, 0, 0x1000, 0)};
	sbuf o[3] = {{0}, {0}, {0}};
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(heapprof_delta_compute(d, in[i].p, in[i].len, 0,
		                                  sbuf_write, &o[i]));
	CHECK_EQ(d->npcols, 2);
	for (int s = 0; s < 6; s++) {
		uint64_t leaf = 0x1000 + 16 * ((uint64_t)s + 1);
		CHECK_EQ(out_value(&o[0], "alloc_objects", leaf), (s + 1) * 10);
		CHECK_EQ(out_value(&o[1], "alloc_objects", leaf), (s + 1) * 5);
		CHECK_EQ(out_value(&o[1], "alloc_space", leaf), (s + 1) * 300);
		/* third profile: alloc_space is its type 0 */
		CHECK_EQ(out_value(&o[2], "alloc_space", leaf),
		         (s + 1) * 450 - (s + 1) * 300);
		CHECK_EQ(out_value(&o[2], "alloc_objects", leaf),
		         (s + 1) * 17 - (s + 1) * 15);
	}
	for (int i = 0; i < 3; i++) {
		free(in[i].p);
		free(o[i].p);
	}
	heapprof_delta_free(d);
}

static void
pair(heapprof_delta **fast, heapprof_delta **slow)
{
	REQUIRE_OK(heapprof_delta_new(fast, NULL));
	REQUIRE_OK(heapprof_delta_new(slow, NULL));
	(*slow)->slow_only = DELTA_SLOW_NOPRED | DELTA_SLOW_NOKEY |
	                     DELTA_SLOW_NOOUT;
}

/* Both computers take `in`; their outputs must be the same bytes. */
static void
same_call(heapprof_delta *fast, heapprof_delta *slow, const sbuf *in, int call)
{
	sbuf of = {0}, os = {0};
	int rf = heapprof_delta_compute(fast, in->p, in->len, 0, sbuf_write, &of);
	int rs = heapprof_delta_compute(slow, in->p, in->len, 0, sbuf_write, &os);
	if (rf != rs || of.len != os.len ||
	    (of.len && memcmp(of.p, os.p, of.len) != 0))
		T_FAIL("call %d: rc %d/%d, %zu/%zu bytes differ", call, rf, rs,
		       of.len, os.len);
	free(of.p);
	free(os.p);
}

static int64_t v_small(int s, int t) { return s + t + 1; }
static int64_t v_big(int s, int t) { return ((int64_t)1 << 40) + s * 7 + t; }
static int g_step;
/* Values 14 bits longer at each step: records outgrow their room. */
static int64_t v_step(int s, int t) { return ((int64_t)1 << (14 * g_step)) + s + t; }

/* 40 stacks (s + 1, n + 1, n + 2) share their two root-side frames: 42
 * nodes, 40 keys, the same pairs with or without the fast paths; the same
 * profile again is known by its id bytes, sample by sample; in another
 * order the predictions miss and the tables find the keys. */
TEST(stacks_share_nodes_and_keys_are_the_exact_keys)
{
	const char *const types[] = {"alloc_objects", "alloc_space",
	                             "inuse_objects", "inuse_space"};
	heapprof_delta *fast, *slow;
	pair(&fast, &slow);
	sbuf in = mk(types, 4, 40, v_small, 1, 0x1000, 0);
	same_call(fast, slow, &in, 0);
	REQUIRE(fast->keys.n == 40 && slow->keys.n == 40);
	CHECK_EQ(fast->nodes.n, 42);
	CHECK_EQ(slow->nodes.n, 42);
	for (uint32_t k = 0; k < 40; k++)
		CHECK_EQ(fast->keys.pairs[k], slow->keys.pairs[k]);
	for (uint32_t k = 0; k < 42; k++)
		CHECK_EQ(fast->nodes.pairs[k], slow->nodes.pairs[k]);
	same_call(fast, slow, &in, 1);
	CHECK_EQ(slow->pred_hits, 0);
	free(in.p);
	in = mk(types, 4, 40, v_big, 1, 0x1000, 17);
	same_call(fast, slow, &in, 2);
	free(in.p);
	CHECK_EQ(fast->keys.n, 40);
	CHECK_EQ(fast->nodes.n, 42);
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
}

/* A stream whose values grow and whose order changes each call, whose
 * dictionary changes (addresses move, so the same id bytes are other
 * frames), and whose keys are evicted: byte for byte the exact path's
 * output at every call. */
TEST(quick_path_across_dictionaries)
{
	const char *const types[] = {"alloc_objects", "alloc_space",
	                             "inuse_objects", "inuse_space"};
	heapprof_delta_options opt = {0};
	opt.max_age = 2;
	heapprof_delta *fast, *slow;
	REQUIRE_OK(heapprof_delta_new(&fast, &opt));
	REQUIRE_OK(heapprof_delta_new(&slow, &opt));
	slow->slow_only = DELTA_SLOW_NOPRED | DELTA_SLOW_NOKEY |
	                  DELTA_SLOW_NOOUT;
	int call = 0;
	for (g_step = 0; g_step < 4; g_step++) {
		sbuf in = mk(types, 4, 3000, v_step, 1, 0x1000, g_step & 1);
		same_call(fast, slow, &in, call++);
		free(in.p);
	}
	/* The same ids in the same order at other addresses: other stacks. */
	for (int i = 0; i < 2; i++) {
		sbuf in = mk(types, 4, 3000, v_small, 1, 0x5000, 1);
		same_call(fast, slow, &in, call++);
		free(in.p);
	}
	/* New addresses: the same ids are other frames; then keys without
	 * labels; the old ones age out. */
	for (int i = 0; i < 5; i++) {
		sbuf in = mk(types, 4, i < 2 ? 3000 : 1500, i & 1 ? v_big : v_small,
		             i < 2, i < 2 ? 0x9000 : 0x1000, 3 + i);
		same_call(fast, slow, &in, call++);
		free(in.p);
	}
	CHECK(fast->evicted > 0 && fast->evicted == slow->evicted);
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
}

int
main(void)
{
	RUN(name_matched_mid_stream);
	RUN(stacks_share_nodes_and_keys_are_the_exact_keys);
	RUN(quick_path_across_dictionaries);
	TEST_MAIN_END();
}
