/*
 * test_delta_changed.c: heapprof_delta_compute_read on an input that
 * changes between its reads (a file rewritten while `heapprof delta`
 * reads it): more samples than the open counted, fewer, and a sample that
 * keeps its place and length but not its form. Each must be an error
 * (HEAPPROF_ECHANGED where the change shows), never a write past the
 * computer's arrays, a read past a sample, a loop, or an output from a
 * profile other than the one read. Review findings of 2026-11-24.
 */
#include <errno.h>

#include "heapprof.h"
#include "compiler.h"
#include "test.h"

typedef struct bb {
	uint8_t *p;
	size_t n;
} bb;

static void
put(bb *b, const void *p, size_t n)
{
	b->p = realloc(b->p, b->n + n + 1);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void
varint(bb *b, uint64_t v)
{
	uint8_t t[10];
	size_t k = 0;
	for (; v >= 0x80; v >>= 7)
		t[k++] = (uint8_t)(v | 0x80);
	t[k++] = (uint8_t)v;
	put(b, t, k);
}

static void
field(bb *b, unsigned num, const void *p, size_t n)
{
	varint(b, (uint64_t)num << 3 | 2);
	varint(b, n);
	put(b, p, n);
}

static void
str(bb *b, const char *s)
{
	field(b, 6, s, strlen(s));
}

/* One type (alloc_objects/count), locations 1..3, then samples: sample i
 * has stack (i % 3 + 1) and value 10 + i; first, if given, replaces the
 * first sample's body. */
static bb
profile(int nsamples, const uint8_t *first, size_t first_len)
{
	bb b = {NULL, 0}, m = {NULL, 0};
	uint8_t vt[] = {0x08, 1, 0x10, 2};
	field(&b, 1, vt, sizeof(vt));
	for (int i = 0; i < 3; i++) {
		uint8_t loc[] = {0x08, (uint8_t)(i + 1), 0x18, 0x80,
		                 (uint8_t)(0x20 + i)};
		field(&b, 4, loc, sizeof(loc));
	}
	str(&b, "");
	str(&b, "alloc_objects");
	str(&b, "count");
	for (int i = 0; i < nsamples; i++) {
		if (i == 0 && first) {
			field(&b, 2, first, first_len);
			continue;
		}
		uint8_t s[] = {0x0a, 1, (uint8_t)(i % 3 + 1), 0x12, 1,
		               (uint8_t)(10 + i % 100)};
		field(&b, 2, s, sizeof(s));
	}
	free(m.p);
	return b;
}

/* Gives a until it is asked for offset 0 for the k-th time, b from then
 * on. The open asks twice (its first bytes, to tell gzip, then all of
 * it); the aggregate, emit and commit passes once each: k 3, 4, 5. */
typedef struct sw {
	const bb *a, *b;
	int k, zeros;
} sw;

static long
sw_read(void *arg, uint64_t at, void *buf, size_t n)
{
	sw *s = arg;
	if (at == 0)
		s->zeros++;
	const bb *x = s->zeros < s->k ? s->a : s->b;
	if (at >= x->n)
		return 0;
	if (n > x->n - at)
		n = x->n - (size_t)at;
	memcpy(buf, x->p + at, n);
	return (long)n;
}

static int
sink(void *arg, const void *p, size_t n)
{
	put(arg, p, n);
	return 0;
}

/* Read mode on a (changing to b at the k-th read of offset 0): its return
 * code; *out its output. */
static int
read_call(const bb *a, const bb *b, int k, bb *out)
{
	heapprof_delta *d;
	if (heapprof_delta_new(&d, NULL) < 0)
		return -ENOMEM;
	sw s = {a, b, k, 0};
	out->n = 0;
	int rc = heapprof_delta_compute_read(d, sw_read, &s, 0, sink, out);
	heapprof_delta_free(d);
	return rc;
}

/* The buffer path's output for one profile, on a fresh computer. */
static bb
buffer_out(const bb *x)
{
	heapprof_delta *d;
	bb out = {NULL, 0};
	if (heapprof_delta_new(&d, NULL) == 0) {
		if (heapprof_delta_compute(d, x->p, x->n, 0, sink, &out) < 0)
			out.n = (size_t)-1;
		heapprof_delta_free(d);
	}
	return out;
}

static int
same(const bb *x, const bb *y)
{
	return x->n == y->n && (x->n == 0 || memcmp(x->p, y->p, x->n) == 0);
}

/* Every switch point: an error, or the output of a or of b read whole. */
static void
check_switches(const bb *a, const bb *b, const char *what)
{
	bb oa = buffer_out(a), ob = buffer_out(b), out = {NULL, 0};
	for (int k = 1; k <= 6; k++) {
		int rc = read_call(a, b, k, &out);
		if (rc == 0 && !same(&out, &oa) && !same(&out, &ob))
			T_FAIL("%s, switch at %d: rc 0, output from neither "
			       "profile (%zu bytes)",
			       what, k, out.n);
	}
	free(oa.p);
	free(ob.p);
	free(out.p);
}

/* 2 samples when opened, 200 from the aggregate pass on: the computer's
 * items were sized by the open's count (the 3rd item went past them). */
TEST(more_samples_after_open)
{
	bb a = profile(2, NULL, 0), b = profile(200, NULL, 0), out = {NULL, 0};
	CHECK_EQ(read_call(&a, &b, 3, &out), HEAPPROF_ECHANGED);
	check_switches(&a, &b, "more samples");
	free(a.p);
	free(b.p);
	free(out.p);
}

/* 3 samples when opened, 2 from the aggregate pass on: not a silent
 * delta of the other profile. */
TEST(fewer_samples_after_open)
{
	bb a = profile(3, NULL, 0), b = profile(2, NULL, 0), out = {NULL, 0};
	CHECK_EQ(read_call(&a, &b, 3, &out), HEAPPROF_ECHANGED);
	check_switches(&a, &b, "fewer samples");
	free(a.p);
	free(b.p);
	free(out.p);
}

/* The first sample keeps its place and its 16 bytes, but from the emit
 * pass on its first field is an ids field whose length is a 10-byte
 * varint: the values scan must not follow it (it read before the window,
 * or came back to the same tag for ever). */
TEST(sample_changes_form_after_aggregate)
{
	static const uint64_t lens[] = {(uint64_t)0 - 100, (uint64_t)0 - 11,
	                                (uint64_t)1 << 40, 200};
	uint8_t good[16] = {0x0a, 11, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0x12, 1,
	                    5};
	bb a = profile(1, good, sizeof(good)), out = {NULL, 0};
	for (size_t i = 0; i < HP_ARRAY_LEN(lens); i++) {
		uint8_t bad[16] = {0x0a};
		uint64_t v = lens[i];
		size_t k = 1;
		for (; v >= 0x80; v >>= 7)
			bad[k++] = (uint8_t)(v | 0x80);
		bad[k++] = (uint8_t)v;
		bad[k++] = 0x12;
		bad[k++] = 1;
		bad[k++] = 5;
		bb b = profile(1, bad, sizeof(bad));
		for (int sw_at = 4; sw_at <= 5; sw_at++) {
			int rc = read_call(&a, &b, sw_at, &out);
			if (rc != HEAPPROF_ECHANGED)
				T_FAIL("length %llu, switch at %d: rc %d, want "
				       "HEAPPROF_ECHANGED",
				       (unsigned long long)lens[i], sw_at, rc);
		}
		check_switches(&a, &b, "sample form");
		free(b.p);
	}
	free(a.p);
	free(out.p);
}

int
main(void)
{
	RUN(more_samples_after_open);
	RUN(fewer_samples_after_open);
	RUN(sample_changes_form_after_aggregate);
	TEST_MAIN_END();
}
