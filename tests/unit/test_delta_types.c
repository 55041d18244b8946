/*
 * test_delta_types.c: the delta computer's checks of a profile's sample
 * types, asked for by flag (the CLI sets both): HEAPPROF_DELTA_SUBTRACT
 * (no type of the profile is one to subtract: a --types name that matches
 * nothing, a CPU profile under the default names) and
 * HEAPPROF_DELTA_SAME_TYPES (the profile's types, type and unit in any
 * order, are not the previous call's: a heap profile then a block one).
 * A call that fails a check changes nothing: the next one still subtracts
 * the last good profile.
 */
#include <errno.h>

#include "heapprof.h"
#include "pb_build.h"
#include "test.h"

typedef struct obuf {
	uint8_t *p;
	size_t len;
} obuf;

static int
obuf_write(void *arg, const void *p, size_t n)
{
	obuf *b = arg;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* One sample at address 0x1000 with values v[] over types "name/unit"
 * (strings "type:unit" split at the colon). */
static obuf
profile(const char *const *types, size_t nt, const int64_t *v)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	char buf[80][2][32];
	const char *str[1 + 2 * 80];
	size_t ns = 0;
	if (nt > 80)
		abort();
	str[ns++] = "";
	for (size_t t = 0; t < nt; t++) {
		const char *c = strchr(types[t], ':');
		size_t a = (size_t)(c - types[t]);
		memcpy(buf[t][0], types[t], a);
		buf[t][0][a] = '\0';
		snprintf(buf[t][1], sizeof buf[t][1], "%s", c + 1);
		vt(&w, 1, ns, ns + 1);
		str[ns++] = buf[t][0];
		str[ns++] = buf[t][1];
	}
	uint64_t id = 1;
	heapprof__pb_begin(&w, 2);
	heapprof__pb_packed_u64(&w, 1, &id, 1);
	heapprof__pb_packed_i64(&w, 2, v, nt);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 4);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 3, 0x1000);
	heapprof__pb_end(&w);
	strs(&w, str, ns);
	obuf b = {w.buf, w.len};
	return b;
}

/* The first value of the only sample of a delta output (decoded through
 * heapprof_pprof_check first), or -1 if it has no sample. */
static int64_t
first_value(const obuf *o)
{
	if (heapprof_pprof_check(o->p, o->len, 0) != 0)
		return -2;
	/* the one sample: field 2, its values field 2 (packed) */
	pb_reader r = {o->p, o->p + o->len};
	pb_field f;
	while (heapprof__pb_next(&r, &f) == 0) {
		if (f.num != 2)
			continue;
		pb_reader s = {f.data, f.data + f.len};
		pb_field g;
		while (heapprof__pb_next(&s, &g) == 0)
			if (g.num == 2) {
				pb_packed it;
				uint64_t x;
				if (heapprof__pb_packed_start(&it, &g) != 0 ||
				    heapprof__pb_packed_next(&it, &x) != 0)
					return -3;
				return (int64_t)x;
			}
	}
	return -1;
}

static int
call(heapprof_delta *d, const obuf *in, unsigned flags, obuf *out)
{
	out->p = NULL;
	out->len = 0;
	return heapprof_delta_compute(d, in->p, in->len, flags, obuf_write, out);
}

#define BOTH (HEAPPROF_DELTA_SUBTRACT | HEAPPROF_DELTA_SAME_TYPES)

TEST(subtract_flag)
{
	static const char *const cpu[] = {"samples:count", "cpu:nanoseconds"};
	static const char *const heap[] = {"alloc_space:bytes",
	                                   "inuse_space:bytes"};
	const int64_t v1[] = {10, 20}, v2[] = {15, 20};
	obuf c = profile(cpu, 2, v1), h1 = profile(heap, 2, v1),
	     h2 = profile(heap, 2, v2), o;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	CHECK_EQ(call(d, &c, HEAPPROF_DELTA_SUBTRACT, &o), HEAPPROF_ENOSUBTRACT);
	free(o.p);
	CHECK_EQ(call(d, &c, 0, &o), 0); /* without the flag: passed through */
	CHECK_EQ(first_value(&o), 10);
	free(o.p);
	heapprof_delta_reset(d);
	REQUIRE_OK(call(d, &h1, BOTH, &o));
	free(o.p);
	REQUIRE_OK(call(d, &h2, BOTH, &o));
	CHECK_EQ(first_value(&o), 5);
	free(o.p);
	heapprof_delta_free(d);

	/* --types naming nothing the profile has */
	const char *nope[] = {"nope"};
	heapprof_delta_options opt = {0};
	opt.types = nope;
	opt.ntypes = 1;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	CHECK_EQ(call(d, &h1, HEAPPROF_DELTA_SUBTRACT, &o), HEAPPROF_ENOSUBTRACT);
	free(o.p);
	heapprof_delta_free(d);
	CHECK(strstr(heapprof_strerror(HEAPPROF_ENOSUBTRACT), "subtract"));
	free(c.p);
	free(h1.p);
	free(h2.p);
}

TEST(same_types_flag)
{
	static const char *const heap[] = {"alloc_space:bytes",
	                                   "inuse_space:bytes"};
	static const char *const swapped[] = {"inuse_space:bytes",
	                                      "alloc_space:bytes"};
	static const char *const unit[] = {"alloc_space:count",
	                                   "inuse_space:bytes"};
	static const char *const extra[] = {"alloc_space:bytes",
	                                    "inuse_space:bytes", "x:count"};
	static const char *const twice[] = {"alloc_space:bytes",
	                                    "alloc_space:bytes"};
	static const char *const block[] = {"contentions:count",
	                                    "delay:nanoseconds"};
	const int64_t v1[] = {10, 20}, v2[] = {17, 20}, v3[] = {30, 20, 1},
	              v4[] = {14, 20};
	obuf h1 = profile(heap, 2, v1), hs = profile(swapped, 2, v2),
	     hu = profile(unit, 2, v1), hx = profile(extra, 3, v3),
	     hb = profile(block, 2, v1), h4 = profile(heap, 2, v4),
	     hd = profile(twice, 2, v1), o;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	REQUIRE_OK(call(d, &h1, BOTH, &o)); /* a first call: no check */
	free(o.p);
	/* Reordered: the same types. inuse 20 -> 17 (first value, as is),
	 * alloc 10 -> 20 (delta 10). */
	REQUIRE_OK(call(d, &hs, BOTH, &o));
	CHECK_EQ(first_value(&o), 17);
	free(o.p);
	/* A unit changed, a type more, another kind: refused. */
	CHECK_EQ(call(d, &hu, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	CHECK_EQ(call(d, &hx, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	CHECK_EQ(call(d, &hb, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	/* As many types, one of them twice and the other missing. */
	CHECK_EQ(call(d, &hd, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	/* Without the flag the extra type is taken. */
	CHECK_EQ(call(d, &hx, 0, &o), 0);
	CHECK_EQ(first_value(&o), 10); /* alloc 20 -> 30 */
	free(o.p);
	/* The refused calls changed nothing; the accepted one moved the
	 * types on: heap is now different from the 3-type profile. */
	CHECK_EQ(call(d, &h4, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	REQUIRE_OK(call(d, &h4, HEAPPROF_DELTA_SUBTRACT, &o));
	CHECK_EQ(first_value(&o), -16); /* alloc 30 -> 14 */
	free(o.p);
	heapprof_delta_free(d);
	free(h1.p);
	free(hs.p);
	free(hu.p);
	free(hx.p);
	free(hb.p);
	free(h4.p);
	free(hd.p);
}

/* More than 64 types: accepted in the same order only. */
TEST(same_types_many)
{
	static char names[2][65][24];
	const char *a[65], *b[65];
	int64_t v[65];
	for (int i = 0; i < 65; i++) {
		snprintf(names[0][i], sizeof names[0][i], "t%d:count", i);
		a[i] = names[0][i];
		b[i] = names[0][64 - i];
		v[i] = i;
	}
	snprintf(names[1][0], sizeof names[1][0], "alloc_space:bytes");
	a[0] = b[64] = names[1][0];
	obuf pa = profile(a, 65, v), pb = profile(b, 65, v), o;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	REQUIRE_OK(call(d, &pa, BOTH, &o));
	free(o.p);
	REQUIRE_OK(call(d, &pa, BOTH, &o));
	free(o.p);
	CHECK_EQ(call(d, &pb, BOTH, &o), HEAPPROF_ETYPES);
	free(o.p);
	heapprof_delta_free(d);
	free(pa.p);
	free(pb.p);
}

int
main(void)
{
	RUN(subtract_flag);
	RUN(same_types_flag);
	RUN(same_types_many);
	TEST_MAIN_END();
}
