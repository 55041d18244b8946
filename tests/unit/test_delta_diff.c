/*
 * test_delta_diff.c: the delta computer's fast paths (keys by id bytes,
 * unchanged values, keys and samples read straight from the bytes) against
 * its exact paths (heapprof_delta.slow_only), byte for byte, on random
 * streams of small profiles that vary what the fast paths key on: wire
 * forms (packed, unpacked and split ids and values, values before ids),
 * labels (none, one, two, with unknown fields), duplicates, dictionaries
 * (renumbered and swapped locations, a changed function), sample-type
 * layouts, small max_age, truncated inputs and failing writers. Seeded, so
 * a failure names the stream and call that reproduce it.
 */
#include "delta_pair.h"
#include "pb.h"

/* form 0: one packed field; 1: one unpacked field per element; 2: the
 * first element packed alone, the rest packed. */
static void
put_u64s(pb_writer *w, uint32_t field, const uint64_t *v, size_t n, int form)
{
	if (form == 0) {
		heapprof__pb_packed_u64(w, field, v, n);
	} else if (form == 1) {
		for (size_t i = 0; i < n; i++)
			heapprof__pb_varint_field(w, field, v[i]);
	} else {
		heapprof__pb_packed_u64(w, field, v, 1);
		heapprof__pb_packed_u64(w, field, v + 1, n - 1);
	}
}

static void
put_label(pb_writer *w, uint64_t key, uint64_t str, int unknown)
{
	heapprof__pb_begin(w, 3);
	heapprof__pb_uint_opt(w, 1, key);
	heapprof__pb_uint_opt(w, 2, str);
	if (unknown)
		heapprof__pb_varint_field(w, 6, 9); /* skipped by readers */
	heapprof__pb_end(w);
}

/* One profile: ntypes of alloc_objects/alloc_space/inuse_space (rotated by
 * `variant`), up to 12 samples over 6 stacks, and a dictionary chosen by
 * `dict` (location ids renumbered, two addresses swapped, a function
 * name changed, one string more). */
static obuf
profile(int ntypes, int variant, int dict)
{
	static const uint64_t type_str[3] = {1, 3, 4};
	static const char *const str[] = {"",      "alloc_objects", "count",
	                                  "alloc_space", "inuse_space", "k",
	                                  "a",     "b",  "x", "y"};
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < ntypes; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, type_str[(t + variant) % 3]);
		heapprof__pb_uint_opt(&w, 2, 2);
		heapprof__pb_end(&w);
	}
	int ns = 1 + (int)rnd(12);
	for (int i = 0; i < ns; i++) {
		int stk = (int)rnd(6);
		uint64_t ids[3] = {1 + (uint64_t)stk % 6, 1 + (uint64_t)(stk + 1) % 6,
		                   1 + (uint64_t)(stk + 2) % 6};
		size_t nf = 2 + (size_t)(stk & 1);
		uint64_t v[3];
		for (int t = 0; t < 3; t++)
			v[t] = rnd(3);
		int idform = rnd(4) == 0 ? 1 + (int)rnd(2) : 0;
		int vform = rnd(6) == 0 ? 1 + (int)rnd(2) : 0;
		if (ntypes < 2 && vform == 2)
			vform = 0;
		int values_first = rnd(5) == 0;
		heapprof__pb_begin(&w, 2);
		if (values_first)
			put_u64s(&w, 2, v, (size_t)ntypes, vform);
		put_u64s(&w, 1, ids, nf, idform);
		if (!values_first)
			put_u64s(&w, 2, v, (size_t)ntypes, vform);
		if (stk % 3 >= 1)
			put_label(&w, 5, 6, rnd(8) == 0);
		if (stk % 3 == 2)
			put_label(&w, 5 + rnd(2), 7, 0);
		heapprof__pb_end(&w);
	}
	for (uint64_t k = 1; k <= 6; k++) {
		uint64_t id = dict % 4 == 2 ? 7 - k : k;
		uint64_t addr = 0x1000 * id;
		if (dict % 3 == 1 && id <= 2)
			addr = 0x1000 * (3 - id);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, id);
		heapprof__pb_uint_opt(&w, 2, 1 + (id & 1));
		heapprof__pb_uint_opt(&w, 3, addr);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, id);
		heapprof__pb_uint_opt(&w, 2, id);
		heapprof__pb_end(&w);
		heapprof__pb_end(&w);
	}
	for (uint64_t m = 1; m <= 2; m++) {
		heapprof__pb_begin(&w, 3);
		heapprof__pb_uint_opt(&w, 1, m);
		heapprof__pb_uint_opt(&w, 2, 0x400000 * m);
		heapprof__pb_end(&w);
	}
	for (uint64_t f = 1; f <= 6; f++) {
		heapprof__pb_begin(&w, 5);
		heapprof__pb_uint_opt(&w, 1, f);
		heapprof__pb_uint_opt(&w, 2, f == 1 ? 8 + (dict % 7 == 0) : 6);
		heapprof__pb_end(&w);
	}
	for (int i = 0; i < 9 + (dict & 1); i++)
		heapprof__pb_bytes_field(&w, 6, str[i], strlen(str[i]));
	obuf b = {w.buf, w.len, 0};
	return b;
}

/* Found by review of an earlier design: a sample in a form the fast
 * path does not record (unpacked values) left the key's stored values
 * from an earlier call in place, so the next packed sample with those
 * values was taken as unchanged. Packed 10, unpacked 20, packed 10 must give 10, 10, -10. */
TEST(values_stored_before_an_unrecorded_form)
{
	heapprof_delta *fast, *slow;
	pair(&fast, &slow, 16, 0);
	REQUIRE(fast && slow);
	const int form[3] = {0, 1, 0};
	const uint64_t val[3] = {10, 20, 10};
	for (int i = 0; i < 3; i++) {
		static const char *const str[] = {"", "alloc_objects", "count"};
		pb_writer w;
		uint64_t id = 1;
		heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, 1);
		heapprof__pb_uint_opt(&w, 2, 2);
		heapprof__pb_end(&w);
		heapprof__pb_begin(&w, 2);
		heapprof__pb_packed_u64(&w, 1, &id, 1);
		put_u64s(&w, 2, &val[i], 1, form[i]);
		heapprof__pb_end(&w);
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, 1);
		heapprof__pb_uint_opt(&w, 3, 0x1000);
		heapprof__pb_end(&w);
		for (size_t k = 0; k < HP_ARRAY_LEN(str); k++)
			heapprof__pb_bytes_field(&w, 6, str[k], strlen(str[k]));
		obuf in = {w.buf, w.len, 0};
		same_call(fast, slow, in.p, in.len, 0, "forms", 0, i);
		free(in.p);
	}
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
}

static void
random_streams_run(const char *what)
{
	rng = 0x9e3779b97f4a7c15ULL; /* the streams this test has run */
	for (int stream = 0; stream < 3000; stream++) {
		heapprof_delta *fast, *slow;
		pair(&fast, &slow, 1 + rnd(4), 0);
		REQUIRE(fast && slow);
		int nt = 1 + (int)rnd(3), variant = 0, dict = (int)rnd(100);
		int ok = 1;
		for (int call = 0; call < 30 && ok; call++) {
			if (rnd(15) == 0)
				nt = 1 + (int)rnd(3);
			if (rnd(15) == 0)
				variant = (int)rnd(3);
			if (rnd(6) == 0)
				dict++;
			obuf in = profile(nt, variant, dict);
			int fail = rnd(12) == 0;
			if (rnd(20) == 0)
				in.len -= 1 + rnd(3); /* truncated */
			/* (read mode: short reads now and then, apart from
			 * rnd so the streams stay those of buffer mode) */
			pair_chunk = call % 4 == 1 ? 1 + (size_t)(stream + call) % 9
			                           : 0;
			ok = same_call(fast, slow, in.p, in.len, fail, what, stream,
			               call);
			free(in.p);
		}
		heapprof_delta_free(fast);
		heapprof_delta_free(slow);
		if (!ok)
			return;
	}
}

TEST(random_streams)
{
	random_streams_run("random");
}

/* The same streams with the fast computer reading its input through a
 * reader (heapprof_delta_compute_read), against the exact paths on the
 * buffer. */
TEST(random_streams_read)
{
	pair_read = 1;
	random_streams_run("random read");
	pair_read = 0;
}

int
main(void)
{
	rng = 0x9e3779b97f4a7c15ULL;
	RUN(values_stored_before_an_unrecorded_form);
	RUN(random_streams);
	RUN(random_streams_read);
	TEST_MAIN_END();
}
