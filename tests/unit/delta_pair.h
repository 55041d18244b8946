/*
 * delta_pair.h: helpers the fast-against-exact delta tests share
 * (test_delta_review.c, test_delta_cases.c, test_delta_diff.c): an output buffer that can fail, a seeded xorshift,
 * a fast computer paired with the exact one (DELTA_SLOW_NOPRED | NOKEY |
 * NOOUT), and one call on both that wants the same return code, output
 * bytes, key count and evictions. Static inline: each test includes what
 * it uses.
 */
#ifndef HEAPPROF_TEST_DELTA_PAIR_H
#define HEAPPROF_TEST_DELTA_PAIR_H

#include "heapprof.h"
#include "delta.h"
#include "test.h"

typedef struct obuf {
	uint8_t *p;
	size_t len;
	int fail;
} obuf;

static inline int
obuf_write(void *arg, const void *p, size_t n)
{
	obuf *b = arg;
	if (b->fail)
		return -5;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static inline unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

#define ALL_SLOW (DELTA_SLOW_NOPRED | DELTA_SLOW_NOKEY | DELTA_SLOW_NOOUT)

static inline int
pair(heapprof_delta **fast, heapprof_delta **slow, unsigned max_age,
     unsigned fast_flags)
{
	heapprof_delta_options o = {0};
	o.max_age = max_age;
	*fast = *slow = NULL;
	if (heapprof_delta_new(fast, &o) < 0 || heapprof_delta_new(slow, &o) < 0)
		return -1;
	(*fast)->slow_only = fast_flags;
	(*slow)->slow_only = ALL_SLOW;
	return 0;
}

/* What the fast computer's streams did: its predicted keys. */
static uint64_t st_pred, st_calls, st_fail;

static inline void
stats(const char *name)
{
	fprintf(stderr, "  %s: %llu calls (%llu failed), predicted %llu\n",
	        name, (unsigned long long)st_calls,
	        (unsigned long long)st_fail, (unsigned long long)st_pred);
	st_pred = st_calls = st_fail = 0;
}

/* pair_read: the fast computer reads its input through
 * heapprof_delta_compute_read, pair_chunk bytes a read at most (0: all
 * asked), from pair_mread. */
static int pair_read;
static size_t pair_chunk;

typedef struct pair_src {
	const uint8_t *p;
	size_t len;
} pair_src;

static inline long
pair_mread(void *arg, uint64_t at, void *buf, size_t n)
{
	const pair_src *s = arg;
	if (at >= s->len)
		return 0;
	size_t k = s->len - (size_t)at;
	if (k > n)
		k = n;
	if (pair_chunk && k > pair_chunk)
		k = pair_chunk;
	memcpy(buf, s->p + at, k);
	return (long)k;
}

/* One call on both; 1 if rc and bytes agree. */
static inline int
same_call(heapprof_delta *fast, heapprof_delta *slow, const uint8_t *p,
          size_t len, int fail, const char *what, int stream, int call)
{
	obuf of = {NULL, 0, fail}, os = {NULL, 0, fail};
	pair_src src = {p, len};
	int rf = pair_read ? heapprof_delta_compute_read(fast, pair_mread, &src,
	                                                 0, obuf_write, &of)
	                   : heapprof_delta_compute(fast, p, len, 0, obuf_write,
	                                            &of);
	int rs = heapprof_delta_compute(slow, p, len, 0, obuf_write, &os);
	int ok = rf == rs && of.len == os.len &&
	         (of.len == 0 || memcmp(of.p, os.p, of.len) == 0);
	if (ok && (fast->keys.n != slow->keys.n ||
	           fast->evicted != slow->evicted))
		ok = 0;
	if (!ok)
		T_FAIL("%s stream %d call %d: rc %d/%d, %zu/%zu bytes, keys "
		       "%zu/%zu, evicted %llu/%llu",
		       what, stream, call, rf, rs, of.len, os.len, fast->keys.n,
		       slow->keys.n, (unsigned long long)fast->evicted,
		       (unsigned long long)slow->evicted);
	free(of.p);
	free(os.p);
	st_calls++;
	st_fail += rf < 0;
	return ok;
}

#endif
