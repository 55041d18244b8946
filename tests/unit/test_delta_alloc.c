/*
 * test_delta_alloc.c: the delta computer and its allocator hook. Once the
 * key set stops growing a call allocates nothing: not when every value
 * changes, not when the dictionary changes under the same stacks (ids
 * renumbered, a function renamed), and not when it changes at every call.
 * heapprof_delta_free gives back every block. An allocator that fails at
 * its n-th call,
 * for every n a short stream reaches: the call fails with -ENOMEM, the
 * computer stays whole (every key has its rows: a key was left without
 * them, and the next call wrote past the per-key arrays) and then gives
 * the bytes of a computer that never saw the failed calls.
 */
#include "delta_pair.h"
#include "pb.h"
#include "alloc_hook.h"

#include <errno.h>

/* n samples over stacks (s + 1, n + 1) of ids 1..n+1 at address
 * 0x1000 + 16 s; alloc_objects/alloc_space = (s + 1) * mul; with renum,
 * ids run the other way (the same addresses); with fname, function 1 is
 * named "g" instead of "f". */
static obuf
steady_profile(int n, int64_t mul, int renum, int fname)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < 2; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, 1 + (uint64_t)t);
		heapprof__pb_uint_opt(&w, 2, 3);
		heapprof__pb_end(&w);
	}
	for (int s = 0; s < n; s++) {
		uint64_t ids[2] = {renum ? (uint64_t)(n + 1 - s) : (uint64_t)s + 1,
		                   renum ? 1 : (uint64_t)n + 1};
		int64_t v[2] = {(s + 1) * mul, (s + 1) * mul * 16};
		heapprof__pb_begin(&w, 2);
		heapprof__pb_packed_u64(&w, 1, ids, 2);
		heapprof__pb_packed_i64(&w, 2, v, 2);
		heapprof__pb_end(&w);
	}
	for (int k = 0; k <= n; k++) {
		uint64_t id = renum ? (uint64_t)(n + 1 - k) : (uint64_t)k + 1;
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, id);
		heapprof__pb_uint_opt(&w, 3, 0x1000 + 16 * (uint64_t)k);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, 1);
		heapprof__pb_end(&w);
		heapprof__pb_end(&w);
	}
	heapprof__pb_begin(&w, 5);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 2, 4);
	heapprof__pb_end(&w);
	static const char *const str[] = {"", "alloc_objects", "alloc_space",
	                                  "count"};
	for (size_t k = 0; k < HP_ARRAY_LEN(str); k++)
		heapprof__pb_bytes_field(&w, 6, str[k], strlen(str[k]));
	heapprof__pb_bytes_field(&w, 6, fname ? "g" : "f", 1);
	obuf b = {w.buf, w.len, 0};
	return b;
}

/* delta.c: "once the key set stops growing a call allocates nothing (all
 * scratch keeps its capacity)". The same 2000 stacks at every call: the
 * key set never grows after call 1. After 6 calls of unchanged values, a
 * call whose values all changed (the accumulator, now sized by changed
 * samples, grows 12 times). */
TEST(steady_state_values_all_changed)
{
	heapprof_delta_options opt = {0};
	opt.realloc_fn = hook_realloc;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	obuf a = steady_profile(2000, 1, 0, 0);
	obuf b = steady_profile(2000, 3, 0, 0);
	for (int i = 0; i < 6; i++)
		REQUIRE_OK(heapprof_delta_compute(d, a.p, a.len, 0, null_write,
		                                  NULL));
	size_t keys = d->keys.n;
	long before = hook_allocs;
	REQUIRE_OK(heapprof_delta_compute(d, b.p, b.len, 0, null_write, NULL));
	CHECK_EQ(d->keys.n, keys);
	if (hook_allocs != before)
		T_FAIL("all values changed: %ld allocations, keys %zu -> %zu",
		       hook_allocs - before, keys, d->keys.n);
	free(a.p);
	free(b.p);
	heapprof_delta_free(d);
}

/* The same, after warm-up on calls whose values all change: a call whose
 * dictionary changed but not its stacks (a function renamed; frames are
 * by address, so every key stays), then, after one call that sizes the
 * decoder for it, a dictionary that changes at every call (ids
 * renumbered): nothing allocated. */
TEST(steady_state_new_dictionary_same_stacks)
{
	heapprof_delta_options opt = {0};
	opt.realloc_fn = hook_realloc;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	obuf a = steady_profile(2000, 1, 0, 0);
	obuf b = steady_profile(2000, 3, 0, 0);
	obuf c = steady_profile(2000, 3, 0, 1);
	obuf e = steady_profile(2000, 5, 0, 0);
	for (int i = 0; i < 6; i++) {
		REQUIRE_OK(heapprof_delta_compute(d, a.p, a.len, 0, null_write,
		                                  NULL));
		REQUIRE_OK(heapprof_delta_compute(d, b.p, b.len, 0, null_write,
		                                  NULL));
	}
	size_t keys = d->keys.n;
	long before = hook_allocs;
	REQUIRE_OK(heapprof_delta_compute(d, c.p, c.len, 0, null_write, NULL));
	CHECK_EQ(d->keys.n, keys);
	if (hook_allocs != before)
		T_FAIL("first new dictionary (a function renamed), same "
		       "stacks: %ld allocations, keys %zu -> %zu",
		       hook_allocs - before, keys, d->keys.n);
	/* A dictionary that changes at every call (ids renumbered), now and
	 * then settled. The decoder's first such call grows its record
	 * snapshot's undo log, once; after it, nothing. */
	obuf r = steady_profile(2000, 7, 1, 0);
	REQUIRE_OK(heapprof_delta_compute(d, r.p, r.len, 0, null_write, NULL));
	REQUIRE_OK(heapprof_delta_compute(d, e.p, e.len, 0, null_write, NULL));
	before = hook_allocs;
	for (int i = 0; i < 20; i++) {
		obuf *x = i % 2 ? &r : &e;
		REQUIRE_OK(heapprof_delta_compute(d, x->p, x->len, 0,
		                                  null_write, NULL));
		if (i == 9) { /* and back to a settled dictionary */
			REQUIRE_OK(heapprof_delta_compute(
				d, x->p, x->len, 0, null_write, NULL));
		}
	}
	CHECK_EQ(d->keys.n, keys);
	if (hook_allocs != before)
		T_FAIL("later new dictionaries, same stacks: %ld allocations",
		       hook_allocs - before);
	free(a.p);
	free(b.p);
	free(c.p);
	free(e.p);
	free(r.p);
	heapprof_delta_free(d);
}

/* heapprof_delta_free gives back every block the computer took: here
 * after a new dictionary and after eviction rebuilt the tables. */
TEST(free_releases_everything)
{
	heapprof_delta_options opt = {0};
	opt.realloc_fn = hook_realloc;
	hook_live = 0;
	heapprof_delta *d;
	opt.max_age = 1;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	obuf a = steady_profile(50, 1, 0, 0);
	obuf b = steady_profile(50, 2, 1, 1);
	obuf c = steady_profile(20, 2, 0, 0);
	for (int i = 0; i < 2; i++)
		REQUIRE_OK(heapprof_delta_compute(d, a.p, a.len, 0, null_write,
		                                  NULL));
	REQUIRE_OK(heapprof_delta_compute(d, b.p, b.len, 0, null_write, NULL));
	for (int i = 0; i < 3; i++)
		REQUIRE_OK(heapprof_delta_compute(d, c.p, c.len, 0, null_write,
		                                  NULL));
	CHECK(d->evicted > 0);
	heapprof_delta_free(d);
	CHECK_EQ(hook_live, 0);
	free(a.p);
	free(b.p);
	free(c.p);
}

/* A stream that grows its key set, changes its dictionary and is known
 * by its id bytes: each call on a computer whose allocator fails once, and on a
 * reference that only sees the calls that succeeded there. */
TEST(failing_allocator_keeps_state)
{
	obuf in[6] = {
		steady_profile(100, 1, 0, 0),  steady_profile(1500, 2, 0, 0),
		steady_profile(1500, 3, 1, 0), steady_profile(1500, 3, 1, 1),
		steady_profile(3000, 4, 0, 0), steady_profile(3000, 5, 0, 0),
	};
	long failed = 0, reached = 0;
	for (hook_fail_at = 1;; hook_fail_at++) {
		heapprof_delta_options opt = {0};
		opt.realloc_fn = hook_realloc;
		heapprof_delta *d, *ref;
		hook_calls = 0;
		if (heapprof_delta_new(&d, &opt) < 0) {
			failed++;
			continue;
		}
		REQUIRE_OK(heapprof_delta_new(&ref, NULL));
		int ok = 1;
		for (int i = 0; i < 6 && ok; i++) {
			obuf o = {NULL, 0, 0}, r = {NULL, 0, 0};
			int rc = heapprof_delta_compute(d, in[i].p, in[i].len, 0,
			                                obuf_write, &o);
			if (d->keys.n > d->kcap) {
				T_FAIL("fail at %ld, call %d: %zu keys, rows for "
				       "%zu",
				       hook_fail_at, i, d->keys.n, d->kcap);
				ok = 0;
			} else if (rc < 0 && rc != -ENOMEM) {
				T_FAIL("fail at %ld, call %d: rc %d", hook_fail_at, i,
				       rc);
				ok = 0;
			} else if (rc < 0) {
				failed++;
			} else {
				REQUIRE_OK(heapprof_delta_compute(
					ref, in[i].p, in[i].len, 0, obuf_write,
					&r));
				if (o.len != r.len ||
				    memcmp(o.p, r.p, o.len) != 0) {
					T_FAIL("fail at %ld, call %d: %zu bytes, "
					       "reference %zu",
					       hook_fail_at, i, o.len, r.len);
					ok = 0;
				}
			}
			free(o.p);
			free(r.p);
		}
		heapprof_delta_free(d);
		heapprof_delta_free(ref);
		if (!ok)
			break;
		if (hook_calls < hook_fail_at) {
			reached = hook_fail_at - 1; /* no call failed: all covered */
			break;
		}
	}
	hook_fail_at = 0;
	/* Every allocation of the stream was made to fail once. */
	CHECK(reached > 20);
	CHECK(failed >= reached);
	fprintf(stderr, "  %ld allocations in the stream, each failed once\n",
	        reached);
	for (int i = 0; i < 6; i++)
		free(in[i].p);
}

/* b with a time_nanos field appended. */
static obuf
with_time(obuf b, uint64_t t)
{
	uint8_t *p = malloc(b.len + 11);
	memcpy(p, b.p, b.len);
	size_t n = b.len;
	p[n++] = 0x48; /* field 9, varint */
	for (; t >= 0x80; t >>= 7)
		p[n++] = (uint8_t)(t | 0x80);
	p[n++] = (uint8_t)t;
	free(b.p);
	obuf o = {p, n, 0};
	return o;
}

static long
mem_read(void *arg, uint64_t at, void *buf, size_t n)
{
	const obuf *b = arg;
	if (at >= b->len)
		return 0;
	if (n > b->len - at)
		n = b->len - (size_t)at;
	memcpy(buf, b->p + at, n);
	return (long)n;
}

/* Read mode reads the dictionary again at each call (no second copy of
 * it is kept): a profile whose values and time changed, over the same
 * records, finds every sample by its predicted key and gets its own
 * header, and once warm, calls over the same, a changed (a function
 * renamed) and again the same dictionary allocate nothing. */
TEST(read_mode_steady_state)
{
	heapprof_delta_options opt = {0};
	opt.realloc_fn = hook_realloc;
	heapprof_delta *d;
	REQUIRE_OK(heapprof_delta_new(&d, &opt));
	obuf a = with_time(steady_profile(500, 1, 0, 0), 1700000000000000000u);
	obuf b = with_time(steady_profile(500, 3, 0, 0), 1700000060000000000u);
	obuf c = with_time(steady_profile(500, 3, 0, 1), 1700000120000000000u);
	REQUIRE_OK(heapprof_delta_compute_read(d, mem_read, &a, 0, null_write,
	                                       NULL));
	uint64_t q = d->pred_hits;
	REQUIRE_OK(heapprof_delta_compute_read(d, mem_read, &b, 0, null_write,
	                                       NULL));
	CHECK_EQ(d->pred_hits - q, 500);
	CHECK_EQ(d->dec.time_nanos, 1700000060000000000);
	REQUIRE_OK(heapprof_delta_compute_read(d, mem_read, &c, 0, null_write,
	                                       NULL));
	CHECK_EQ(d->dec.time_nanos, 1700000120000000000);
	/* One round of the sequence sizes the output (negative deltas are
	 * longer), then the same round again allocates nothing. */
	obuf *seq[] = {&a, &b, &c, &b, &a, &c};
	size_t keys = d->keys.n;
	long before = hook_allocs;
	for (size_t i = 0; i < 2 * HP_ARRAY_LEN(seq); i++) {
		if (i == HP_ARRAY_LEN(seq))
			before = hook_allocs;
		REQUIRE_OK(heapprof_delta_compute_read(
			d, mem_read, seq[i % HP_ARRAY_LEN(seq)], 0, null_write,
			NULL));
	}
	CHECK_EQ(d->keys.n, keys);
	if (hook_allocs != before)
		T_FAIL("read mode, same stacks: %ld allocations",
		       hook_allocs - before);
	free(a.p);
	free(b.p);
	free(c.p);
	heapprof_delta_free(d);
}

int
main(void)
{
	RUN(steady_state_values_all_changed);
	RUN(steady_state_new_dictionary_same_stacks);
	RUN(free_releases_everything);
	RUN(failing_allocator_keeps_state);
	RUN(read_mode_steady_state);
	TEST_MAIN_END();
}
