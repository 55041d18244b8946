/*
 * test_delta_review.c: random review streams for the delta computer's
 * compact state (prev[] columns by matched name, stacks as shared node
 * paths, first-fill reservation, accumulator rows only for keys with
 * several samples). A fast computer (slow_only 0, or some fast paths
 * on) runs against the exact one (delta_pair.h) and must give the same
 * return codes and output bytes at every call: random streams of many
 * keys, labels, duplicates, shuffled orders,
 * renumbered/moved/renamed dictionaries, type layouts, small max_age,
 * failing writers, truncated inputs and bad samples (also against an
 * exact computer that never saw the failed calls). Seeded
 * (DELTA_REVIEW_SEED).
 *
 * Found by review of an earlier design, kept: random_empty_id_fields (an
 * empty packed location-id field).
 * Targeted cases: test_delta_cases.c; allocation cases (steady state,
 * free, a failing allocator): test_delta_alloc.c.
 */
#include "delta_pair.h"
#include "pb.h"

/* ------------------------------------------------------------ generator */

static const char *const TNAMES[6] = {"alloc_objects", "alloc_space",
                                      "inuse_objects", "inuse_space",
                                      "contentions",   "delay"};

/* String table: fixed part, then function names. */
enum {
	S_EMPTY,
	S_COUNT,
	S_BYTES,
	S_K,
	S_A,
	S_B,
	S_T0, /* 6 type names */
	S_F0 = S_T0 + 6, /* NFUNC function names */
};
#define NFUNC 8

typedef struct gen {
	int nstk, nloc;
	int nt, types[18]; /* indexes into TNAMES */
	int idmode;       /* 0: ids 1..n in order; 1: records shuffled; 2:
	                   * ids + 1; 3: reversed ids */
	uint64_t base;    /* address of location ordinal i: base + 16 i */
	int zero_addr;    /* one location at address 0 */
	int collide;      /* locations 2k and 2k + 1 at one address */
	int interleave;   /* a mapping between samples */
	int fname_var;    /* function 3's name variant */
	int extra_str;    /* one string more */
	int order;        /* 0 stack order, 1 shuffled, 2 reversed */
	int incl;         /* percent of stacks included */
	int dup;          /* percent duplicated */
	int forms;        /* odd wire forms on */
	int empty_field;  /* empty packed location fields on */
	int bad_at;       /* the sample written with a value too many, or -1 */
	int nput;         /* samples written so far */
	int64_t (*cur)[6];/* per stack, per type name */
	int *perm;        /* location record order (idmode 1) */
} gen;

static uint64_t
loc_id(const gen *g, int ord)
{
	switch (g->idmode) {
	case 2: return (uint64_t)ord + 2;
	case 3: return (uint64_t)(g->nloc - ord);
	default: return (uint64_t)ord + 1;
	}
}

/* Stack s: 1 + s % 4 location ordinals. */
static size_t
stack_of(const gen *g, int s, uint64_t *ids)
{
	size_t n = s % 11 == 10 ? 0 : 1 + (size_t)(s % 4);
	for (size_t j = 0; j < n; j++)
		ids[j] = loc_id(g, (int)(((uint64_t)s * 7 + j * 13 + j * j * s) %
		                         (uint64_t)g->nloc));
	return n;
}

static void
put_ids(pb_writer *w, const uint64_t *ids, size_t n, int form)
{
	if (form == 1) {
		for (size_t i = 0; i < n; i++)
			heapprof__pb_varint_field(w, 1, ids[i]);
	} else if (form == 2 && n > 1) {
		heapprof__pb_packed_u64(w, 1, ids, 1);
		heapprof__pb_packed_u64(w, 1, ids + 1, n - 1);
	} else {
		heapprof__pb_packed_u64(w, 1, ids, n);
	}
}

static void
put_labels(pb_writer *w, int s, int swap)
{
	int kind = s % 6;
	if (kind == 0)
		return;
	if (kind == 2 || kind == 5) { /* numeric, Go's bytes label */
		heapprof__pb_begin(w, 3);
		heapprof__pb_uint_opt(w, 1, S_BYTES);
		heapprof__pb_uint_opt(w, 3, 64 * (uint64_t)(s % 7 + 1));
		if (kind == 5)
			heapprof__pb_uint_opt(w, 4, S_BYTES);
		heapprof__pb_end(w);
		return;
	}
	int two = kind == 3;
	for (int i = 0; i < 1 + two; i++) {
		int which = swap ? 1 - i : i;
		heapprof__pb_begin(w, 3);
		heapprof__pb_uint_opt(w, 1, which ? S_B : S_K);
		heapprof__pb_uint_opt(w, 2, S_A + (uint64_t)(s % 2));
		if (kind == 4)
			heapprof__pb_varint_field(w, 6, 9); /* unknown field */
		heapprof__pb_end(w);
	}
}

static void
put_sample(gen *g, pb_writer *w, int s, const int64_t *v, int form)
{
	uint64_t ids[4];
	size_t n = stack_of(g, s, ids);
	int idform = 0, vfirst = 0, empty = 0, swap = 0;
	if (g->forms && form) {
		idform = (int)rnd(3);
		vfirst = rnd(4) == 0;
		swap = rnd(2);
	}
	if (g->empty_field && rnd(3) == 0)
		empty = 1;
	int64_t vb[19];
	size_t nv = (size_t)g->nt;
	if (g->nput++ == g->bad_at) {
		memcpy(vb, v, nv * 8);
		vb[nv++] = 1;
		v = vb;
	}
	heapprof__pb_begin(w, 2);
	if (vfirst)
		heapprof__pb_packed_i64(w, 2, v, nv);
	if (empty)
		heapprof__pb_bytes_field(w, 1, "", 0);
	put_ids(w, ids, n, idform);
	if (!vfirst)
		heapprof__pb_packed_i64(w, 2, v, nv);
	put_labels(w, s, swap);
	heapprof__pb_end(w);
}

/* One profile of the generator's current state. */
static obuf
build(gen *g)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	g->nput = 0;
	for (int t = 0; t < g->nt; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, S_T0 + (uint64_t)g->types[t]);
		heapprof__pb_uint_opt(&w, 2, t & 1 ? S_BYTES : S_COUNT);
		heapprof__pb_end(&w);
	}
	int *order = malloc(sizeof(int) * (size_t)g->nstk);
	for (int i = 0; i < g->nstk; i++)
		order[i] = g->order == 2 ? g->nstk - 1 - i : i;
	if (g->order == 1)
		for (int i = g->nstk - 1; i > 0; i--) {
			int j = (int)rnd((unsigned)i + 1), x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
	if (g->order == 3) /* a few samples moved: hits and misses */
		for (int k = 0; k < 1 + g->nstk / 20; k++) {
			int i = (int)rnd((unsigned)g->nstk);
			int j = (int)rnd((unsigned)g->nstk), x = order[i];
			order[i] = order[j];
			order[j] = x;
		}
	for (int i = 0; i < g->nstk; i++) {
		int s = order[i];
		if ((int)rnd(100) >= g->incl)
			continue;
		int64_t v[18];
		for (int t = 0; t < g->nt; t++)
			v[t] = g->cur[s][g->types[t]];
		if ((int)rnd(100) < g->dup) {
			/* two samples summing to v, maybe apart */
			int64_t a[18], b[18];
			for (int t = 0; t < g->nt; t++) {
				a[t] = rnd(2) ? v[t] / 2 : v[t];
				b[t] = v[t] - a[t];
			}
			put_sample(g, &w, s, a, rnd(2));
			if (rnd(2) && i + 1 < g->nstk) {
				int s2 = order[i + 1];
				int64_t v2[18];
				for (int t = 0; t < g->nt; t++)
					v2[t] = g->cur[s2][g->types[t]];
				put_sample(g, &w, s2, v2, rnd(2));
				i++;
			}
			put_sample(g, &w, s, b, rnd(2));
		} else {
			put_sample(g, &w, s, v, rnd(4) == 0);
		}
		if (g->interleave && i == g->nstk / 3) {
			heapprof__pb_begin(&w, 3);
			heapprof__pb_uint_opt(&w, 1, 2);
			heapprof__pb_uint_opt(&w, 2, 0x800000);
			heapprof__pb_uint_opt(&w, 3, 0x900000);
			heapprof__pb_end(&w);
		}
	}
	free(order);
	/* one mapping */
	heapprof__pb_begin(&w, 3);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 2, 0x400000);
	heapprof__pb_uint_opt(&w, 3, 0x40000000);
	heapprof__pb_end(&w);
	for (int k = 0; k < g->nloc; k++) {
		int ord = g->idmode == 1 ? g->perm[k] : k;
		uint64_t addr = g->base + 16 * (uint64_t)(g->collide ? ord & ~1 : ord);
		if (g->zero_addr && ord == 1)
			addr = 0;
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, loc_id(g, ord));
		heapprof__pb_uint_opt(&w, 2, 1);
		heapprof__pb_uint_opt(&w, 3, addr);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, 1 + (uint64_t)(ord % NFUNC));
		heapprof__pb_uint_opt(&w, 2, 10 + (uint64_t)ord);
		heapprof__pb_end(&w);
		heapprof__pb_end(&w);
	}
	for (int f = 0; f < NFUNC; f++) {
		heapprof__pb_begin(&w, 5);
		heapprof__pb_uint_opt(&w, 1, 1 + (uint64_t)f);
		heapprof__pb_uint_opt(&w, 2, S_F0 + (uint64_t)f);
		heapprof__pb_end(&w);
	}
	const char *fixed[S_T0] = {"", "count", "bytes", "k", "a", "b"};
	for (int i = 0; i < S_T0; i++)
		heapprof__pb_bytes_field(&w, 6, fixed[i], strlen(fixed[i]));
	for (int i = 0; i < 6; i++)
		heapprof__pb_bytes_field(&w, 6, TNAMES[i], strlen(TNAMES[i]));
	for (int f = 0; f < NFUNC; f++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "%s%d", f == 3 && g->fname_var ? "g" : "f",
		         f);
		heapprof__pb_bytes_field(&w, 6, nm, strlen(nm));
	}
	if (g->extra_str)
		heapprof__pb_bytes_field(&w, 6, "extra", 5);
	obuf b = {w.buf, w.len, 0};
	return b;
}

static void
pick_types(gen *g)
{
	int pool[6] = {0, 1, 2, 3, 4, 5};
	for (int i = 5; i > 0; i--) {
		int j = (int)rnd((unsigned)i + 1), x = pool[i];
		pool[i] = pool[j];
		pool[j] = x;
	}
	g->nt = 1 + (int)rnd(4);
	if (rnd(8) == 0) /* names listed twice; more than DELTA_RAW_MAXT */
		g->nt = rnd(2) ? 7 + (int)rnd(4) : 17 + (int)rnd(2);
	for (int t = 0; t < g->nt; t++)
		g->types[t] = pool[t % 6];
}

/* New values: most unchanged, some small steps, some growing in size
 * (the record's value room overflows), some zero or negative. */
static void
step_values(gen *g, int churn)
{
	for (int s = 0; s < g->nstk; s++) {
		if ((int)rnd(100) >= churn)
			continue;
		for (int t = 0; t < 6; t++) {
			int64_t *v = &g->cur[s][t];
			switch (rnd(8)) {
			case 0: *v = (int64_t)((uint64_t)*v + 1 + rnd(5)); break;
			case 1: /* grows a byte or two */
				*v = (int64_t)((uint64_t)*v * 200 + 7);
				break;
			case 2: *v = 0; break;
			case 3: *v = -(int64_t)rnd(100); break; /* 10 bytes */
			case 4: *v = (int64_t)rnd(3); break;
			case 5: *v = (int64_t)1 << (rnd(50)); break;
			default: break;
			}
		}
	}
}

static void
gen_init(gen *g, int nstk)
{
	memset(g, 0, sizeof(*g));
	g->nstk = nstk;
	g->nloc = 3 + nstk / 2;
	g->cur = calloc((size_t)nstk, sizeof(*g->cur));
	g->perm = malloc(sizeof(int) * (size_t)g->nloc);
	for (int i = 0; i < g->nloc; i++)
		g->perm[i] = i;
	g->base = 0x10000;
	g->incl = 100;
	g->bad_at = -1;
	for (int s = 0; s < nstk; s++)
		for (int t = 0; t < 6; t++)
			g->cur[s][t] = (int64_t)rnd(1000);
	pick_types(g);
}

static void
gen_free(gen *g)
{
	free(g->cur);
	free(g->perm);
}

static void
shuffle_perm(gen *g)
{
	for (int i = g->nloc - 1; i > 0; i--) {
		int j = (int)rnd((unsigned)i + 1), x = g->perm[i];
		g->perm[i] = g->perm[j];
		g->perm[j] = x;
	}
}

/* Dictionary changes (ids renumbered or reordered, addresses moved or
 * shared, an address 0, strings changed) and type layouts; dr divides
 * their rates. */
static void
mutate(gen *g, unsigned dr)
{
	if (rnd(10 * dr) == 0)
		g->idmode = rnd(3) ? 0 : 1 + (int)rnd(3);
	if (g->idmode == 1 && rnd(3) == 0)
		shuffle_perm(g);
	if (rnd(12 * dr) == 0)
		g->base += 0x100000 * (1 + rnd(4));
	if (rnd(15 * dr) == 0)
		g->zero_addr = !g->zero_addr && rnd(3) == 0;
	if (rnd(12 * dr) == 0)
		g->fname_var = !g->fname_var;
	if (rnd(12 * dr) == 0)
		g->extra_str = !g->extra_str;
	if (rnd(15 * dr) == 0)
		g->collide = !g->collide;
	if (rnd(10 * dr) == 0)
		g->interleave = !g->interleave;
	if (rnd(12) == 0)
		pick_types(g);
}

/* A random stream: returns 1 if every call agreed. */
static int
run_stream(int stream, int nstk, int ncalls, unsigned max_age,
           unsigned fast_flags, int forms, int empty_field, int churn_max,
           int shuffle_pct, unsigned dr)
{
	heapprof_delta *fast, *slow;
	if (pair(&fast, &slow, max_age, fast_flags) < 0) {
		T_FAIL("new");
		return 0;
	}
	gen g;
	gen_init(&g, nstk);
	g.forms = forms;
	g.empty_field = empty_field;
	int ok = 1;
	char what[64];
	snprintf(what, sizeof(what), "flags %u nstk %d age %u", fast_flags,
	         nstk, max_age);
	for (int call = 0; call < ncalls && ok; call++) {
		mutate(&g, dr);
		if (rnd(40) == 0) {
			heapprof_delta_reset(fast);
			heapprof_delta_reset(slow);
		}
		/* sample order and subset */
		int r = (int)rnd(100);
		g.order = r < shuffle_pct ? 1 : r < shuffle_pct + 5 ? 2 :
		          r < shuffle_pct + 30 ? 3 : 0;
		r = (int)rnd(10);
		g.incl = r < 6 ? 100 : r < 8 ? 50 + (int)rnd(50) : 5 + (int)rnd(30);
		g.dup = rnd(3) == 0 ? (int)rnd(20) : 0;
		step_values(&g, (int)rnd((unsigned)churn_max + 1));
		obuf in = build(&g);
		size_t len = in.len;
		if (rnd(25 * dr) == 0)
			len -= 1 + rnd(3);
		int fail = rnd(12 * dr) == 0;
		ok = same_call(fast, slow, in.p, len, fail, what, stream, call);
		free(in.p);
	}
	st_pred += fast->pred_hits;
	gen_free(&g);
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
	return ok;
}

/* "On error nothing of the stream state changes": computer a (fast
 * paths on) takes every call, some of which fail (a failing writer, a
 * truncated input, a sample with a value too many somewhere in the
 * middle); computer b (exact paths) takes only the calls a succeeded on.
 * Their outputs must agree at every call a succeeded on. Calls < 16: no
 * eviction at the default max_age, whose ages count failed calls. */
static int
run_skip_stream(int stream, int nstk, int ncalls, unsigned fast_flags,
                int churn_max, int shuffle_pct, unsigned dr)
{
	heapprof_delta *fast, *slow;
	if (pair(&fast, &slow, 0, fast_flags) < 0) {
		T_FAIL("new");
		return 0;
	}
	gen g;
	gen_init(&g, nstk);
	g.forms = 1;
	int ok = 1;
	for (int call = 0; call < ncalls && ok; call++) {
		mutate(&g, dr);
		if (rnd(40) == 0) {
			heapprof_delta_reset(fast);
			heapprof_delta_reset(slow);
		}
		int r = (int)rnd(100);
		g.order = r < shuffle_pct ? 1 : r < shuffle_pct + 5 ? 2 :
		          r < shuffle_pct + 30 ? 3 : 0;
		r = (int)rnd(10);
		g.incl = r < 6 ? 100 : r < 8 ? 50 + (int)rnd(50) : 5 + (int)rnd(30);
		g.dup = rnd(3) == 0 ? (int)rnd(20) : 0;
		step_values(&g, (int)rnd((unsigned)churn_max + 1));
		int kind = (int)rnd(5); /* 0 writer, 1 truncated, 2 bad sample */
		if (kind > 2)
			kind = -1;
		g.bad_at = kind == 2 ? (int)rnd((unsigned)nstk) : -1;
		obuf in = build(&g);
		g.bad_at = -1;
		size_t len = in.len - (kind == 1 ? 1 + rnd(3) : 0);
		obuf of = {NULL, 0, kind == 0}, os = {NULL, 0, 0};
		int rf = heapprof_delta_compute(fast, in.p, len, 0, obuf_write,
		                                &of);
		if (rf == 0 || kind < 0) {
			int rs = heapprof_delta_compute(slow, in.p, len, 0,
			                                obuf_write, &os);
			ok = rf == rs && of.len == os.len &&
			     (of.len == 0 || memcmp(of.p, os.p, of.len) == 0);
			if (!ok)
				T_FAIL("skip model flags %u stream %d call %d "
				       "(after a failure: %d): rc %d/%d, %zu/%zu "
				       "bytes",
				       fast_flags, stream, call, kind, rf, rs,
				       of.len, os.len);
		}
		free(of.p);
		free(os.p);
		free(in.p);
		st_calls++;
		st_fail += rf < 0;
	}
	st_pred += fast->pred_hits;
	gen_free(&g);
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
	return ok;
}

/* ------------------------------------------------------------ cases */

TEST(failed_calls_change_nothing)
{
	static const unsigned fl[4] = {0, DELTA_SLOW_NOKEY, DELTA_SLOW_NOOUT,
	                               DELTA_SLOW_NOKEY | DELTA_SLOW_NOOUT};
	for (int stream = 0; stream < 1500; stream++)
		if (!run_skip_stream(40000 + stream, 5 + (int)rnd(60), 15,
		                     fl[stream % 4], 60, 30, 1))
			return;
	for (int stream = 0; stream < 40; stream++)
		if (!run_skip_stream(50000 + stream, 1500 + (int)rnd(3000), 15,
		                     stream % 3 == 2 ? DELTA_SLOW_NOOUT : 0, 100,
		                     80, 4))
			return;
}

/* Small streams, all wire forms, every fast-path mix. */
TEST(random_small_streams)
{
	static const unsigned fl[4] = {0, DELTA_SLOW_NOKEY, DELTA_SLOW_NOOUT,
	                               DELTA_SLOW_NOKEY | DELTA_SLOW_NOOUT};
	for (int stream = 0; stream < 1500; stream++) {
		unsigned age = rnd(3) ? 1 + rnd(4) : 0;
		if (!run_stream(stream, 5 + (int)rnd(60), 25, age, fl[stream % 4],
		                1, 0, 60, 30, 1))
			return;
	}
}

/* Many keys, with eviction. */
TEST(random_large_streams)
{
	for (int stream = 0; stream < 40; stream++) {
		unsigned age = rnd(2) ? 1 + rnd(3) : 0;
		if (!run_stream(10000 + stream, 2000 + (int)rnd(4000), 14, age,
		                stream % 3 == 2 ? DELTA_SLOW_NOOUT : 0,
		                stream & 1, 0, 100, 30, 1))
			return;
	}
}

/* Shuffled orders (predictions miss, keys looked up), values and wire
 * forms that change from call to call. */
TEST(random_restarts)
{
	for (int stream = 0; stream < 60; stream++) {
		unsigned age = rnd(2) ? 1 + rnd(3) : 0;
		if (stream % 4 == 3)
			age = 0;
		if (!run_stream(20000 + stream, 1500 + (int)rnd(3000), 30, age,
		                stream % 3 == 2 ? DELTA_SLOW_NOOUT : 0, 1, 0,
		                100, 90, stream % 4 == 3 ? 100 : stream % 2 ? 20 : 4))
			return;
	}
}

/* An empty packed location-id field (legal protobuf: the decoder and the
 * exact path take it). */
TEST(random_empty_id_fields)
{
	for (int stream = 0; stream < 300; stream++) {
		if (!run_stream(30000 + stream, 5 + (int)rnd(60), 20, 0, 0, 1, 1,
		                60, 30, 1))
			return;
	}
}

int
main(void)
{
	const char *seed = getenv("DELTA_REVIEW_SEED");
	if (seed && *seed)
		rng ^= strtoull(seed, NULL, 0) * 0x9e3779b97f4a7c15ULL;
	RUN(random_small_streams);
	stats("small");
	RUN(random_large_streams);
	stats("large");
	RUN(random_restarts);
	stats("restarts");
	RUN(failed_calls_change_nothing);
	stats("skip");
	RUN(random_empty_id_fields);
	stats("empty");
	TEST_MAIN_END();
}
