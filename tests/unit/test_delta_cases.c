/*
 * test_delta_cases.c: targeted review cases for the delta computer's
 * compact state, each a fast computer against the exact one (delta_pair.h)
 * on hand-built profiles: an empty packed location-id field (in an
 * earlier design it could not be read back: -EFAULT from every later
 * lookup), duplicates of a key in every combination of paths, and a call
 * mixing unchanged, predicted and looked-up samples with duplicates.
 * The random streams are in test_delta_review.c.
 */
#include "delta_pair.h"
#include "pb.h"

/* One alloc_objects sample on location 1 (address addr), value val; with
 * `empty`, an empty packed location-id field before the ids. */
static obuf
one_sample(uint64_t addr, int64_t val, int empty)
{
	static const char *const str[] = {"", "alloc_objects", "count"};
	pb_writer w;
	uint64_t id = 1;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	heapprof__pb_begin(&w, 1);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 2, 2);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 2);
	if (empty)
		heapprof__pb_bytes_field(&w, 1, "", 0);
	heapprof__pb_packed_u64(&w, 1, &id, 1);
	heapprof__pb_packed_i64(&w, 2, &val, 1);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 4);
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 3, addr);
	heapprof__pb_end(&w);
	for (size_t k = 0; k < HP_ARRAY_LEN(str); k++)
		heapprof__pb_bytes_field(&w, 6, str[k], strlen(str[k]));
	obuf b = {w.buf, w.len, 0};
	return b;
}

/* Found by review of an earlier design: a sample with an empty packed
 * location-id field ("0a 00", which the decoder and the exact path
 * accept) next to its ids. (a) the same stack written without the empty
 * field is the same key; (b) the same after a new dictionary. */
TEST(empty_packed_id_field)
{
	heapprof_delta *fast, *slow;
	REQUIRE(pair(&fast, &slow, 0, 0) == 0);
	/* (a) same dictionary, the field gone */
	const struct {
		uint64_t addr;
		int64_t val;
		int empty;
	} call[5] = {{0x1000, 5, 1},
	             {0x1000, 7, 0},
	             {0x2000, 9, 1},
	             {0x3000, 11, 0},
	             {0x3000, 12, 0}};
	for (int i = 0; i < 5; i++) {
		obuf in = one_sample(call[i].addr, call[i].val, call[i].empty);
		same_call(fast, slow, in.p, in.len, 0, "empty field", 0, i);
		free(in.p);
	}
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
	/* (b) a new dictionary right after the key was made */
	REQUIRE(pair(&fast, &slow, 0, 0) == 0);
	for (int i = 0; i < 4; i++) {
		obuf in = one_sample(i ? 0x5000 : 0x1000, 5 + i, i == 0);
		same_call(fast, slow, in.p, in.len, 0, "empty field, new dict",
		          1, i);
		free(in.p);
	}
	heapprof_delta_free(fast);
	heapprof_delta_free(slow);
}

/* ------------------------------------------------------------ duplicates */

/* Key K (ids 1, 2; a label) and key J (id 3) in the patterns below; K's
 * value pattern: same as the last call, changed, grown past its room.
 * Every sequence of 3 calls, fast against exact. */
static const char *const dup_pat[] = {"K", "KK", "KJK", "JK", "kK", "Kk",
                                      "KJk", "JKK", "kJ"};

static obuf
dup_profile(const char *pat, int64_t vk, int64_t vj)
{
	static const char *const str[] = {"", "alloc_objects", "count",
	                                  "alloc_space", "k", "a"};
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < 2; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, t ? 3 : 1);
		heapprof__pb_uint_opt(&w, 2, 2);
		heapprof__pb_end(&w);
	}
	int nk = 0;
	for (const char *c = pat; *c; c++)
		nk += *c == 'K' || *c == 'k';
	int ik = 0;
	for (const char *c = pat; *c; c++) {
		heapprof__pb_begin(&w, 2);
		if (*c == 'J') {
			uint64_t id = 3;
			int64_t v[2] = {vj, vj * 3};
			heapprof__pb_packed_u64(&w, 1, &id, 1);
			heapprof__pb_packed_i64(&w, 2, v, 2);
		} else {
			uint64_t ids[2] = {1, 2};
			/* the K samples of a call sum to vk */
			int64_t x = ik + 1 < nk ? vk / nk : vk - (vk / nk) * (nk - 1);
			int64_t v[2] = {x, 2 * x};
			ik++;
			if (*c == 'k') { /* unpacked ids, values first */
				heapprof__pb_packed_i64(&w, 2, v, 2);
				heapprof__pb_varint_field(&w, 1, 1);
				heapprof__pb_varint_field(&w, 1, 2);
			} else {
				heapprof__pb_packed_u64(&w, 1, ids, 2);
				heapprof__pb_packed_i64(&w, 2, v, 2);
			}
			heapprof__pb_begin(&w, 3);
			heapprof__pb_uint_opt(&w, 1, 4);
			heapprof__pb_uint_opt(&w, 2, 5);
			heapprof__pb_end(&w);
		}
		heapprof__pb_end(&w);
	}
	for (uint64_t id = 1; id <= 3; id++) {
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, id);
		heapprof__pb_uint_opt(&w, 3, 0x1000 * id);
		heapprof__pb_end(&w);
	}
	for (size_t k = 0; k < HP_ARRAY_LEN(str); k++)
		heapprof__pb_bytes_field(&w, 6, str[k], strlen(str[k]));
	obuf b = {w.buf, w.len, 0};
	return b;
}

TEST(duplicates_every_combination)
{
	const int np = (int)HP_ARRAY_LEN(dup_pat), nv = 3;
	int total = np * nv, streams = 0;
	for (int a = 0; a < total; a++)
		for (int b = 0; b < total; b++)
			for (int c = 0; c < total; c++)
				for (unsigned fl = 0; fl < 2; fl++) {
					heapprof_delta *fast, *slow;
					REQUIRE(pair(&fast, &slow, 0,
					             fl ? DELTA_SLOW_NOKEY : 0) == 0);
					int seq[3] = {a, b, c}, ok = 1;
					int64_t vk = 40;
					for (int i = 0; i < 3 && ok; i++) {
						int vm = seq[i] % nv;
						if (vm == 1)
							vk += 6;
						else if (vm == 2)
							vk *= 100000;
						obuf in = dup_profile(
							dup_pat[seq[i] / nv], vk, 7 + i);
						ok = same_call(fast, slow, in.p, in.len,
						               0, dup_pat[seq[i] / nv],
						               streams, i);
						free(in.p);
					}
					heapprof_delta_free(fast);
					heapprof_delta_free(slow);
					streams++;
					if (!ok)
						return;
				}
}

/* ------------------------------------------------------------ restart */

/* Samples (stack order[i], value val[order[i]]), stacks of ids (s + 1,
 * n + 1) (1..n+1 in order), a numeric label on odd stacks. */
static obuf
list_profile(int n, const int *order, int cnt, const int64_t *val)
{
	static const char *const str[] = {"", "alloc_objects", "count",
	                                  "alloc_space", "bytes"};
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int t = 0; t < 2; t++) {
		heapprof__pb_begin(&w, 1);
		heapprof__pb_uint_opt(&w, 1, t ? 3 : 1);
		heapprof__pb_uint_opt(&w, 2, 2);
		heapprof__pb_end(&w);
	}
	for (int i = 0; i < cnt; i++) {
		int s = order[i];
		uint64_t ids[2] = {(uint64_t)s + 1, (uint64_t)n + 1};
		int64_t v[2] = {val[s], val[s] * 3};
		heapprof__pb_begin(&w, 2);
		heapprof__pb_packed_u64(&w, 1, ids, 2);
		heapprof__pb_packed_i64(&w, 2, v, 2);
		if (s & 1) {
			heapprof__pb_begin(&w, 3);
			heapprof__pb_uint_opt(&w, 1, 4);
			heapprof__pb_uint_opt(&w, 3, 64 * (uint64_t)(s % 5 + 1));
			heapprof__pb_end(&w);
		}
		heapprof__pb_end(&w);
	}
	for (int k = 1; k <= n + 1; k++) {
		heapprof__pb_begin(&w, 4);
		heapprof__pb_uint_opt(&w, 1, (uint64_t)k);
		heapprof__pb_uint_opt(&w, 3, 0x1000 + 16 * (uint64_t)k);
		heapprof__pb_end(&w);
	}
	for (size_t k = 0; k < HP_ARRAY_LEN(str); k++)
		heapprof__pb_bytes_field(&w, 6, str[k], strlen(str[k]));
	obuf b = {w.buf, w.len, 0};
	return b;
}

/* A call that has unchanged (SAME) items, predicted items and rows, then
 * a reversed half (predictions miss) with grown values, and duplicates of
 * all of those after it; with a failing writer in that call or not. */
TEST(restart_between_duplicates)
{
	enum { N = 6000 };
	for (int variant = 0; variant < 4; variant++) {
		heapprof_delta *fast, *slow;
		REQUIRE(pair(&fast, &slow, 0, variant & 2 ? DELTA_SLOW_NOOUT : 0) ==
		        0);
		int *order = malloc(sizeof(int) * 3 * N);
		int64_t *val = malloc(sizeof(int64_t) * N);
		for (int s = 0; s < N; s++) {
			order[s] = s;
			val[s] = 1 + s % 7;
		}
		int call = 0, ok = 1;
		obuf in = list_profile(N, order, N, val);
		ok &= same_call(fast, slow, in.p, in.len, 0, "restart", variant,
		                call++);
		free(in.p);
		/* call 2: every stack shuffled (slow path), values grown: every
		 * record moves */
		for (int s = 0; s < N; s++) {
			int j = (int)rnd((unsigned)s + 1), x = order[s];
			order[s] = order[j];
			order[j] = x;
			val[s] *= 1000;
		}
		in = list_profile(N, order, N, val);
		ok &= same_call(fast, slow, in.p, in.len, 0, "restart", variant,
		                call++);
		free(in.p);
		/* call 3: the same order (hits) for the first half, a few
		 * changed (known by their id bytes); the second half reversed
		 * with values grown (predictions miss); then duplicates of
		 * stacks of both halves */
		for (int s = 0; s < N; s += 97)
			val[order[s]] += 5;
		for (int i = N / 2; i < N; i++)
			val[order[i]] *= 1000;
		for (int i = 0; i < (N - N / 2) / 2; i++) {
			int x = order[N / 2 + i];
			order[N / 2 + i] = order[N - 1 - i];
			order[N - 1 - i] = x;
		}
		int cnt = N;
		for (int i = 0; i < N; i += 13)
			order[cnt++] = order[(i * 7) % N];
		in = list_profile(N, order, cnt, val);
		ok &= same_call(fast, slow, in.p, in.len, variant & 1, "restart",
		                variant, call++);
		free(in.p);
		/* calls 4, 5: the same stacks, values unchanged, then changed */
		for (int k = 0; k < 2; k++) {
			for (int s = 0; s < N; s += 3)
				val[s] += k;
			in = list_profile(N, order, cnt, val);
			ok &= same_call(fast, slow, in.p, in.len, 0, "restart",
			                variant, call++);
			free(in.p);
		}
		free(order);
		free(val);
		heapprof_delta_free(fast);
		heapprof_delta_free(slow);
		if (!ok)
			return;
	}
}

int
main(void)
{
	RUN(empty_packed_id_field);
	RUN(duplicates_every_combination);
	RUN(restart_between_duplicates);
	TEST_MAIN_END();
}
