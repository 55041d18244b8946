/*
 * test_delta.c: unit tests of the delta computer (src/ops/delta*.c): exact
 * values on hand-built profiles, duplicate aggregation, type reordering,
 * labels, address-0 identity, pruning, eviction and error recovery. The
 * fast paths (keys by id bytes, unchanged values) and the steady-state
 * allocation count are in test_delta_fast.c.
 */
#include "delta_build.h"

/* ------------------------------------------------------------ tests */

TEST(exact_values)
{
	const tsample s1[] = {
		{{0xa1, 0xa2}, 2, {10, 100, 5, 50}, NULL, NULL, 0},
		{{0xb1, 0xa2}, 2, {1, 1, 1, 1}, NULL, NULL, 0},
		{{0xc1}, 1, {7, 70, 0, 0}, NULL, NULL, 0},
	};
	const tsample s2[] = {
		{{0xc1}, 1, {7, 70, 0, 0}, NULL, NULL, 0}, /* unchanged: dropped */
		{{0xa1, 0xa2}, 2, {15, 150, 3, 30}, NULL, NULL, 0},
		{{0xb1, 0xa2}, 2, {1, 1, 1, 1}, NULL, NULL, 0},
		{{0xd1, 0xa2}, 2, {2, 20, 2, 20}, NULL, NULL, 0},
	};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 3, 1000, 0};
	tprof p2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s2, 4, 61000, 0};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	/* first call: against an empty previous profile */
	REQUIRE_OK(run(d, &p1, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.time, 1000);
	const row *a = find(&r, 0xa1, NULL);
	REQUIRE(a);
	CHECK_EQ(a->v[0], 10);
	CHECK_EQ(a->v[3], 50);
	REQUIRE_OK(run(d, &p2, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.time, 61000);
	CHECK_EQ(r.duration, 60000);
	a = find(&r, 0xa1, NULL);
	REQUIRE(a);
	CHECK_EQ(a->nframes, 2);
	CHECK_EQ(a->frames[1], 0xa2);
	CHECK_EQ(a->v[0], 5);
	CHECK_EQ(a->v[1], 50);
	CHECK_EQ(a->v[2], 3); /* inuse: absolute */
	CHECK_EQ(a->v[3], 30);
	const row *b = find(&r, 0xb1, NULL);
	REQUIRE(b); /* alloc delta 0, inuse nonzero: kept */
	CHECK_EQ(b->v[0], 0);
	CHECK_EQ(b->v[2], 1);
	const row *c = find(&r, 0xd1, NULL);
	REQUIRE(c);
	CHECK_EQ(c->v[1], 20);
	CHECK(!find(&r, 0xc1, NULL));
	/* pruning: 0xc1's location and function are gone */
	CHECK_EQ(r.nlocs, 4);
	CHECK_EQ(r.nfuncs, 4);
	/* strings: "", 4 types, count, f.c, 4 function names */
	CHECK_EQ(r.nstrings, 11);
	heapprof_delta_free(d);
}

TEST(duplicates_aggregated)
{
	const tsample s1[] = {
		{{0xa1}, 1, {3, 30, 1, 10}, "x", NULL, 0},
		{{0xa1}, 1, {4, 40, 2, 20}, "x", NULL, 0},
		{{0xa1}, 1, {1, 1, 1, 1}, "y", NULL, 0}, /* other label */
	};
	const tsample s2[] = {
		{{0xa1}, 1, {5, 50, 1, 10}, "x", NULL, 0},
		{{0xa1}, 1, {5, 50, 2, 20}, "x", NULL, 0},
		{{0xa1}, 1, {1, 1, 1, 1}, "y", NULL, 0},
	};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 3, 1, 0};
	tprof p2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s2, 3, 2, 0};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &p1, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK_EQ(r.n, 2);
	const row *x = find(&r, 0xa1, "x;");
	REQUIRE(x);
	CHECK_EQ(x->v[0], 7);
	CHECK_EQ(x->v[3], 30);
	REQUIRE_OK(run(d, &p2, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	x = find(&r, 0xa1, "x;");
	REQUIRE(x);
	CHECK_EQ(x->v[0], 3);  /* 10 - 7 */
	CHECK_EQ(x->v[1], 30); /* 100 - 70 */
	CHECK_EQ(x->v[3], 30); /* inuse summed, absolute */
	const row *y = find(&r, 0xa1, "y;");
	REQUIRE(y);
	CHECK_EQ(y->v[0], 0);
	CHECK_EQ(y->v[2], 1);
	CHECK_EQ(r.n, 2);
	heapprof_delta_free(d);
}

TEST(type_reordering)
{
	const tsample s1[] = {{{0xa1}, 1, {10, 5, 100, 0}, NULL, NULL, 0}};
	/* same stack, types in another order: alloc_space, inuse_space,
	 * alloc_objects */
	const tsample s2[] = {{{0xa1}, 1, {130, 6, 12, 0}, NULL, NULL, 0}};
	tprof p1 = {{"alloc_objects", "inuse_space", "alloc_space"}, 3, s1, 1, 1, 0};
	tprof p2 = {{"alloc_space", "inuse_space", "alloc_objects"}, 3, s2, 1, 2, 0};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &p1, &o, 0));
	free(o.p);
	REQUIRE_OK(run(d, &p2, &o, 0));
	const char *const names[] = {"alloc_objects", "alloc_space",
	                             "inuse_space"};
	REQUIRE_OK(collect(&o, names, 3, &r));
	free(o.p);
	REQUIRE(r.n == 1);
	CHECK_EQ(r.rows[0].v[0], 2);  /* 12 - 10 */
	CHECK_EQ(r.rows[0].v[1], 30); /* 130 - 100 */
	CHECK_EQ(r.rows[0].v[2], 6);  /* absolute */
	heapprof_delta_free(d);
}

TEST(custom_types_and_label_order)
{
	/* subtract only "delay"; two labels in either order are one key */
	const tsample s1[] = {{{0xa1}, 1, {3, 100}, "x", "z", 0}};
	const tsample s2[] = {{{0xa1}, 1, {2, 150}, "x", "z", 1},
	                      {{0xa1}, 1, {1, 10}, "x", "z", 0}};
	tprof p1 = {{"contentions", "delay"}, 2, s1, 1, 1, 0};
	tprof p2 = {{"contentions", "delay"}, 2, s2, 2, 2, 0};
	const char *const only[] = {"delay"};
	heapprof_delta_options opt = {0};
	opt.types = only;
	opt.ntypes = 1;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &p1, &o, 0));
	free(o.p);
	REQUIRE_OK(run(d, &p2, &o, 0));
	const char *const names[] = {"contentions", "delay"};
	REQUIRE_OK(collect(&o, names, 2, &r));
	free(o.p);
	REQUIRE(r.n == 1);
	CHECK_EQ(r.rows[0].v[0], 3);  /* not subtracted: 2 + 1 */
	CHECK_EQ(r.rows[0].v[1], 60); /* 160 - 100 */
	heapprof_delta_free(d);
}

TEST(address_zero_identity)
{
	/* all addresses 0: stacks differ only by function; fastdelta merges
	 * these, we must not */
	const tsample s1[] = {{{0xa1}, 1, {1, 0, 0, 0}, NULL, NULL, 0},
	                      {{0xb1}, 1, {2, 0, 0, 0}, NULL, NULL, 0}};
	const tsample s2[] = {{{0xa1}, 1, {11, 0, 0, 0}, NULL, NULL, 0},
	                      {{0xb1}, 1, {22, 0, 0, 0}, NULL, NULL, 0}};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 2, 1, 1};
	tprof p2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s2, 2, 2, 1};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &p1, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK_EQ(r.n, 2);
	REQUIRE_OK(run(d, &p2, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	REQUIRE(r.n == 2);
	int64_t a = r.rows[0].v[0], b = r.rows[1].v[0];
	CHECK((a == 10 && b == 20) || (a == 20 && b == 10));
	heapprof_delta_stats st;
	heapprof_delta_get_stats(d, &st);
	CHECK_EQ(st.keys, 2);
	heapprof_delta_free(d);
}

TEST(eviction)
{
	const tsample sa[] = {{{0xa1}, 1, {10, 100, 0, 0}, NULL, NULL, 0},
	                      {{0xb1}, 1, {1, 1, 0, 0}, NULL, NULL, 0}};
	const tsample sb[] = {{{0xb1}, 1, {2, 2, 0, 0}, NULL, NULL, 0}};
	tprof pa = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, sa, 2, 1, 0};
	tprof pb = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, sb, 1, 1, 0};
	heapprof_delta_options opt = {0};
	opt.max_age = 2;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	sbuf o;
	result r;
	heapprof_delta_stats st;
	REQUIRE_OK(run(d, &pa, &o, 0));
	free(o.p);
	/* absent once: remembered, a comeback subtracts the old value */
	REQUIRE_OK(run(d, &pb, &o, 0));
	free(o.p);
	heapprof_delta_get_stats(d, &st);
	CHECK_EQ(st.keys, 2);
	REQUIRE_OK(run(d, &pa, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	CHECK(!find(&r, 0xa1, NULL)); /* 10 - 10 = 0: dropped */
	/* absent for 3 calls (> max_age 2): forgotten */
	for (int i = 0; i < 3; i++) {
		REQUIRE_OK(run(d, &pb, &o, 0));
		free(o.p);
	}
	heapprof_delta_get_stats(d, &st);
	CHECK_EQ(st.keys, 1);
	CHECK_EQ(st.evicted, 1);
	CHECK_EQ(st.frames, 1);
	REQUIRE_OK(run(d, &pa, &o, 0));
	REQUIRE_OK(collect(&o, NAMES, 4, &r));
	free(o.p);
	const row *a = find(&r, 0xa1, NULL);
	REQUIRE(a);
	CHECK_EQ(a->v[0], 10); /* counted from zero again */
	/* b survived eviction with its previous value (2 -> 1: -1) */
	const row *b = find(&r, 0xb1, NULL);
	REQUIRE(b);
	CHECK_EQ(b->v[0], -1);
	heapprof_delta_free(d);
}

TEST(error_keeps_state)
{
	const tsample s1[] = {{{0xa1}, 1, {10, 100, 0, 0}, NULL, NULL, 0}};
	const tsample s2[] = {{{0xa1}, 1, {15, 150, 0, 0}, NULL, NULL, 0}};
	tprof p1 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s1, 1, 1, 0};
	tprof p2 = {{NAMES[0], NAMES[1], NAMES[2], NAMES[3]}, 4, s2, 1, 2, 0};
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, NULL));
	sbuf o;
	result r;
	REQUIRE_OK(run(d, &p1, &o, 0));
	free(o.p);
	sbuf in = build(&p2);
	o.p = NULL;
	o.len = 0;
	CHECK(heapprof_delta_compute(d, in.p, in.len - 3, 0, sbuf_write, &o) < 0);
	free(o.p);
	free(in.p);
	REQUIRE_OK(run(d, &p2, &o, HEAPPROF_DELTA_GZIP));
	REQUIRE_OK(collect(&o, NAMES, 4, &r)); /* gzip output decodes */
	free(o.p);
	REQUIRE(r.n == 1);
	CHECK_EQ(r.rows[0].v[0], 5);
	heapprof_delta_free(d);
}

int
main(void)
{
	RUN(exact_values);
	RUN(duplicates_aggregated);
	RUN(type_reordering);
	RUN(custom_types_and_label_order);
	RUN(address_zero_identity);
	RUN(eviction);
	RUN(error_keeps_state);
	TEST_MAIN_END();
}
