/*
 * test_delta_tables.c: the delta computer's interning tables against a
 * reference built by sorting. dp_table: 200k pairs in insertion order,
 * load 3/8..3/4, drop_last around rehashes, reserve and clear without
 * allocating, an allocator failing at each of its calls. strtab: lengths
 * around the hash's 8/16-byte steps, prefixes, one-byte variants, forced
 * collisions, dt_bytes, reserve and clear without allocating.
 */
#include "heapprof.h"
#include "delta_pairs.h"
#include "strtab.h"
#include "test.h"
#include "alloc_hook.h"

#include <errno.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
xs(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	return rng ^= rng << 17;
}

/* splitmix64's finalizer, a bijection: distinct i give distinct pairs. */
static uint64_t
scramble(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#define hook_reset(f) (hook_live = hook_calls = 0, hook_fail_at = (f))

/* The reference, over keys kp[i], kl[i] (byte strings; a pair is its 8
 * bytes): first[i] when key i is its first occurrence, idof[i] the id it
 * must have (distinct keys first seen before it). ref_ids(n) returns the
 * number of distinct keys among the first n. */
enum { MAXK = 300000 };
static const uint8_t *kp[MAXK];
static size_t kl[MAXK];
static uint32_t ord[MAXK], idof[MAXK];
static uint8_t first[MAXK];

static int
cmp_key(const void *x, const void *y)
{
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	int c = kl[i] != kl[j] ? (kl[i] > kl[j]) - (kl[i] < kl[j])
	                       : memcmp(kp[i], kp[j], kl[i]);
	return c ? c : (i > j) - (i < j);
}

static size_t
ref_ids(size_t n)
{
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	qsort(ord, n, sizeof(*ord), cmp_key);
	for (size_t k = 0, f = 0; k < n; k++) { /* idof: the group's first */
		uint32_t i = ord[k], p = ord[k - (k > 0)];
		if (k == 0 || kl[i] != kl[p] || memcmp(kp[i], kp[p], kl[i]))
			f = i;
		idof[i] = (uint32_t)f;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) { /* idof[idof[i]] already an id */
		first[i] = idof[i] == i;
		idof[i] = first[i] ? (uint32_t)m++ : idof[idof[i]];
	}
	return m;
}

static int
dpi(dp_table *t, uint64_t v, uint32_t *id)
{
	return heapprof__dp_intern(t, (uint32_t)v, (uint32_t)(v >> 32), id);
}

/* 0 when t is whole: nslots a power of two, load <= 3/4, ids 1..n each in
 * one slot, and vals[0..m) found as their index and given back. */
static size_t
dp_check(dp_table *t, const uint64_t *vals, size_t m)
{
	uint8_t *seen = calloc(t->n + 1, 1);
	size_t used = 0, bad = (t->nslots & (t->nslots - 1)) ||
	                       t->n * 4 > t->nslots * 3;
	for (size_t h = 0; h < t->nslots; h++) {
		uint32_t s = t->slots[h];
		used += s != 0;
		bad += s && (s > t->n || seen[s]++);
	}
	free(seen);
	for (uint32_t j = 0, id; j < m; j++)
		bad += dpi(t, vals[j], &id) != 0 || id != j ||
		       heapprof__dp_a(t, j) != (uint32_t)vals[j] ||
		       heapprof__dp_b(t, j) != (uint32_t)(vals[j] >> 32);
	return bad + (used != t->n);
}

static uint64_t
draw_pair(void)
{
	uint32_t a, b, j = (uint32_t)(xs() % 20000);
	switch (xs() % 8) {
	case 0: a = 7; b = (uint32_t)(xs() % 50000); break;
	case 1: a = (uint32_t)(xs() % 50000); b = 7; break;
	case 2: a = (uint32_t)(xs() % 300); b = (uint32_t)(xs() % 300); break;
	case 3: a = UINT32_MAX - 1; b = (uint32_t)xs(); break;
	case 4: a = (uint32_t)xs(); b = UINT32_MAX - 1; break;
	case 5: a = j; b = j + 1; break;
	case 6: a = j + 1; b = j; break;
	default: a = (uint32_t)xs(); b = (uint32_t)(xs() >> 32); break;
	}
	return a | (uint64_t)b << 32;
}

/* NDRAW draws with repeats, interned in order; then NABS more go only to
 * the reference: those first seen there are absent from the table. */
TEST(dp_many_pairs)
{
	enum { NDRAW = 280000, NABS = 4000 };
	static const uint64_t special[] = {
		0, UINT32_MAX - 1, (uint64_t)(UINT32_MAX - 1) << 32, UINT64_MAX,
		(uint64_t)UINT32_MAX << 32, UINT32_MAX, 0, UINT64_MAX};
	uint64_t *draw = malloc((NDRAW + NABS) * 8), *dist = malloc(NDRAW * 8);
	for (uint32_t i = 0; i < NDRAW + NABS; i++) {
		draw[i] = i < HP_ARRAY_LEN(special) ? special[i]
		          : i < NDRAW || i % 2 ? draw_pair() : xs();
		kp[i] = (const uint8_t *)&draw[i];
		kl[i] = 8;
	}
	size_t m = ref_ids(NDRAW + NABS), k = 0, bad = 0, lf = 0, absent = 0;
	dp_table t;
	heapprof__dp_init(&t, NULL, NULL);
	for (uint32_t i = 0; i < NDRAW; i++) {
		uint32_t id = UINT32_MAX;
		bad += dpi(&t, draw[i], &id) != first[i] || id != idof[i];
		if (first[i])
			dist[k++] = draw[i];
		lf += (t.nslots & (t.nslots - 1)) || t.n * 4 > t.nslots * 3 ||
		      (t.nslots > 64 && t.n * 8 <= t.nslots * 3);
	}
	CHECK(lf == 0 && k >= 200000 && t.n == k);
	CHECK_EQ(dp_check(&t, dist, k), 0);
	for (uint32_t i = 0, id; i < NDRAW; i++)
		bad += dpi(&t, draw[i], &id) != 0 || id != idof[i];
	for (uint32_t i = NDRAW, id; i < NDRAW + NABS; absent += first[i++]) {
		if (!first[i])
			continue;
		bad += dpi(&t, draw[i], &id) != 1 || id != k ||
		       heapprof__dp_a(&t, id) != (uint32_t)draw[i] ||
		       heapprof__dp_b(&t, id) != (uint32_t)(draw[i] >> 32);
		heapprof__dp_drop_last(&t);
	}
	CHECK(bad == 0 && absent > NABS / 4 && m == k + absent && t.n == k);
	CHECK_EQ(dp_check(&t, dist, k), 0);
	heapprof__dp_free(&t);
	free(draw), free(dist);
}

/* Drops at random points, of the insert that rehashed, and of the one
 * right after a rehash; then the same pair again gets the same id. */
TEST(dp_drop_last)
{
	enum { N = 30000 };
	uint64_t *vals = malloc(2 * N * sizeof(*vals));
	dp_table t;
	heapprof__dp_init(&t, NULL, NULL);
	size_t m = 0, at_rehash = 0, bad = 0, ns, rehashed = 0;
	uint32_t id;
	for (uint64_t i = 0; i < N; i++) {
		int will_rehash = t.n + 1 > t.nslots / 4 * 3;
		if (will_rehash || rehashed || xs() % 16 == 0) {
			uint64_t x = scramble((1ULL << 40) + i);
			ns = t.nslots;
			bad += dpi(&t, x, &id) != 1 || id != m;
			at_rehash += will_rehash && t.nslots > ns;
			heapprof__dp_drop_last(&t);
			int full = will_rehash || rehashed || xs() % 8 == 0;
			bad += t.n != m || dp_check(&t, vals, full ? m : 0);
			bad += dpi(&t, x, &id) != 1 || id != m;
			if (xs() & 1)
				heapprof__dp_drop_last(&t);
			else
				vals[m++] = x;
		}
		ns = t.nslots;
		vals[m] = scramble(i);
		bad += dpi(&t, vals[m], &id) != 1 || id != m;
		m++;
		rehashed = t.nslots != ns;
	}
	CHECK(bad == 0 && at_rehash >= 8 && t.n == m);
	CHECK_EQ(dp_check(&t, vals, m), 0);
	heapprof__dp_free(&t);
	free(vals);
}

/* reserve(n) then the inserts up to n (from empty, or a third already
 * in): no call to the allocator. Then clear: the same memory, nothing
 * found, ids from 0 again (the pairs the other way round), no call. */
TEST(dp_reserve_clear)
{
	static const size_t ns[] = {1, 47, 48, 49, 96, 97, 1000, 100000};
	for (size_t c = 0; c < 2 * HP_ARRAY_LEN(ns); c++) {
		size_t n = ns[c / 2], m0 = c % 2 ? n / 3 : 0, bad = 0;
		dp_table t;
		uint32_t id;
		hook_reset(0);
		heapprof__dp_init(&t, hook_realloc, NULL);
		heapprof__dp_clear(&t);
		for (size_t i = 0; i < m0; i++)
			bad += dpi(&t, scramble(i), &id) != 1;
		REQUIRE_OK(heapprof__dp_reserve(&t, n));
		long calls = hook_calls;
		size_t mem = heapprof__dp_memory(&t);
		for (size_t i = m0; i < n; i++)
			bad += dpi(&t, scramble(i), &id) != 1 || id != i;
		CHECK(dp_check(&t, NULL, 0) == 0 && t.n == n);
		heapprof__dp_clear(&t);
		CHECK(heapprof__dp_memory(&t) == mem && t.n == 0);
		for (size_t i = 0, j = n; i < n; i++)
			bad += dpi(&t, scramble(--j), &id) != 1 || id != i;
		CHECK(bad == 0 && hook_calls == calls);
		CHECK(heapprof__dp_memory(&t) == mem && !dp_check(&t, NULL, 0));
		heapprof__dp_free(&t);
		CHECK_EQ(hook_live, 0);
	}
}

/* Fails the f-th allocation, for f = 1, 2, ... until a fill of 5000
 * pairs no longer reaches it: -ENOMEM at that call only, the table whole
 * without the pair, then it and the rest go in with the ids of a clean
 * fill; free gives back every block. */
TEST(dp_failing_allocator)
{
	enum { N = 5000 };
	uint64_t vals[N];
	for (size_t i = 0; i < N; i++)
		vals[i] = i % 3 ? scramble(i) : (uint64_t)(i / 3) << 32 | 5;
	long f;
	for (f = 1; !t_case_failed; f++) {
		dp_table t;
		uint32_t id;
		size_t fails = 0, bad = 0;
		hook_reset(f);
		heapprof__dp_init(&t, hook_realloc, NULL);
		for (size_t i = 0; i < N; i++) {
			int r = dpi(&t, vals[i], &id);
			if (r == -ENOMEM) {
				fails++;
				bad += hook_calls != f || t.n != i ||
				       dp_check(&t, vals, i);
				r = dpi(&t, vals[i], &id);
			}
			bad += r != 1 || id != i;
		}
		bad += dp_check(&t, vals, N);
		heapprof__dp_free(&t);
		if (bad || fails > 1 || hook_live != 0)
			T_FAIL("fail_at %ld: %zu bad, %zu failures, %ld live",
			       f, bad, fails, hook_live);
		if (!fails)
			break;
	}
	CHECK(f > 10);
}

static uint8_t pool[1 << 20];
static size_t plen, nstr;

static void
add_str(const uint8_t *p, size_t len)
{
	memcpy(pool + plen, p, len);
	kp[nstr] = pool + plen;
	kl[nstr++] = len;
	plen += len;
}

static void
build_strings(void)
{
	static const size_t lens[] = {1, 7, 8, 9, 15, 16, 17, 100};
	static const uint8_t flips[] = {1, 0x80, 0xff};
	uint8_t s[100], b[100] = {0};
	for (size_t len = 0; len <= 40; len++)
		add_str(b, len);                /* zeros: the length differs */
	for (size_t q = 0; q < 100; q++)
		s[q] = (uint8_t)xs();
	for (size_t len = 0; len <= 100; len++)
		add_str(s, len);                /* a prefix chain */
	for (size_t c = 0; c < HP_ARRAY_LEN(lens); c++) {
		size_t len = lens[c];
		for (size_t p = len < 17 ? 0 : len - 17; p < len; p++)
			for (size_t d = 0; d < 4; d++) { /* one byte differs */
				memcpy(b, s, len);      /* (the last 17) */
				b[p] = d < 3 ? b[p] ^ flips[d] : 0;
				add_str(b, len);
			}
		for (int r = 0; r < 300; r++) { /* a two-letter alphabet */
			for (size_t q = 0; q < len; q++)
				b[q] = (uint8_t)(xs() & 1);
			add_str(b, len);
		}
	}
}

/* With the real hash, then with one hash for every key (every key a
 * collision: identity by the bytes alone). Twice: in, then found. */
TEST(dt_strings)
{
	build_strings();
	size_t m = ref_ids(nstr);
	CHECK(m > 1500 && m < nstr);
	for (int collide = 0; collide < 2; collide++) {
		strtab t;
		size_t bad = 0;
		uint32_t id;
		hook_reset(0);
		heapprof__strtab_init(&t, hook_realloc, NULL);
		for (uint32_t i = 0; i < 2 * nstr; i++) {
			uint32_t s = i % nstr;
			uint64_t h = collide ? 0x5a5a5a5a5a5a5a5aULL
			                     : heapprof__strtab_hash(kp[s], kl[s]);
			id = UINT32_MAX;
			int r = heapprof__strtab_add(&t, kp[s], kl[s], h, &id);
			bad += r != (i < nstr && first[s]) || id != idof[s] ||
			       t.n * 2 > t.nslots || t.nslots & (t.nslots - 1);
		}
		for (uint32_t i = 0; i < nstr; i++) {
			size_t l = SIZE_MAX;
			const uint8_t *p = heapprof__strtab_get(&t, idof[i], &l);
			bad += l != kl[i] || (l && memcmp(p, kp[i], l));
		}
		CHECK(bad == 0 && t.n == m);
		heapprof__strtab_free(&t);
		CHECK_EQ(hook_live, 0);
	}
}

/* reserve(n, bytes) then n distinct interns of `bytes` in all: no call to
 * the allocator; clear keeps the memory, and the same fill again starts at
 * id 0 and allocates nothing either. 3 keys of 40000 bytes: an exact
 * reservation. */
TEST(dt_reserve)
{
	static const size_t ns[] = {1, 31, 32, 33, 64, 1000, 20000, 3};
	for (size_t c = 0; c < HP_ARRAY_LEN(ns) && !t_case_failed; c++) {
		size_t n = ns[c], total = 0, bad = 0;
		for (size_t i = 0; i < n; total += kl[i++]) {
			kl[i] = n == 3 ? 40000 : 4 + xs() % 37;
			kp[i] = pool + total;
			for (size_t q = 0; q < kl[i]; q++)
				pool[total + q] = (uint8_t)xs();
			memcpy(pool + total, &i, 4); /* distinct */
		}
		strtab t;
		uint32_t id;
		hook_reset(0);
		heapprof__strtab_init(&t, hook_realloc, NULL);
		REQUIRE_OK(heapprof__strtab_reserve(&t, n, total));
		long calls = hook_calls;
		size_t mem = heapprof__strtab_memory(&t);
		for (size_t j = 0; j < 2 * n; j++) { /* clear after each fill */
			size_t i = j % n, l;
			uint64_t h = heapprof__strtab_hash(kp[i], kl[i]);
			int r = heapprof__strtab_add(&t, kp[i], kl[i], h, &id);
			const uint8_t *q = heapprof__strtab_get(&t, id, &l);
			bad += r != 1 || id != i || l != kl[i] ||
			       memcmp(q, kp[i], l) != 0;
			if (i == n - 1)
				heapprof__strtab_clear(&t);
			bad += heapprof__strtab_memory(&t) != mem;
		}
		CHECK(bad == 0 && hook_calls == calls && t.n == 0);
		heapprof__strtab_free(&t);
		CHECK_EQ(hook_live, 0);
		if (t_case_failed)
			T_FAIL("at n %zu, %zu bytes", n, total);
	}
}

/* A table reserved for one entry grows past it (1.5x of a capacity of 1
 * was 1: the second pair went past the array; the delta computer reserves
 * its frames by address for a profile's locations, one location
 * possible). */
TEST(grows_past_a_reservation_of_one)
{
	dp_table t;
	strtab u;
	uint32_t id;
	size_t bad = 0;
	hook_reset(0);
	heapprof__dp_init(&t, hook_realloc, NULL);
	heapprof__strtab_init(&u, hook_realloc, NULL);
	REQUIRE_OK(heapprof__dp_reserve(&t, 1));
	REQUIRE_OK(heapprof__strtab_reserve(&u, 1, 8));
	for (size_t i = 0; i < 200; i++) {
		uint8_t key[8];
		memcpy(key, &i, sizeof(key));
		bad += dpi(&t, scramble(i), &id) != 1 || id != i || t.cap < t.n;
		bad += heapprof__strtab_add(&u, key, sizeof(key),
		                            heapprof__strtab_hash(key, sizeof(key)),
		                            &id) != 1 ||
		       id != i || u.cap < u.n;
	}
	CHECK_EQ(bad, 0);
	CHECK(dp_check(&t, NULL, 0) == 0 && t.n == 200);
	heapprof__dp_free(&t);
	heapprof__strtab_free(&u);
	CHECK_EQ(hook_live, 0);
}

int
main(void)
{
	RUN(grows_past_a_reservation_of_one);
	RUN(dp_many_pairs);
	RUN(dp_drop_last);
	RUN(dp_reserve_clear);
	RUN(dp_failing_allocator);
	RUN(dt_strings);
	RUN(dt_reserve);
	TEST_MAIN_END();
}
