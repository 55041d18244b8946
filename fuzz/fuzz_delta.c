/*
 * fuzz_delta.c: libFuzzer target for the delta computer. DEPENDS ON HELPER
 * A's PUBLIC API (heapprof_delta_new / _compute / _reset / _free in
 * include/heapprof.h, implemented in src/ops/delta*.c): if that API
 * changes, this file changes with it.
 *
 * The input is split into two profiles (fuzz_util.h; unsplittable inputs
 * are a profile against itself) and fed as a stream: a, b, b again, then
 * after a reset a again. Every successful call's output must be a valid
 * profile; a failed call must leave the computer usable. The repeat asks
 * for the type checks (SAME_TYPES, SUBTRACT): b after b has b's types.
 * The allocator fails once, at an allocation the input picks (or never):
 * every call after it runs on a computer that saw an -ENOMEM.
 * Then the same stream goes to two more computers, one reading the input
 * from memory and one through heapprof_delta_compute_read (a reader giving
 * a number of bytes a read the input picks): both must succeed or both
 * fail, with the same output bytes.
 */
#include "heapprof.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long n_alloc, fail_at;

static void *
fuzz_realloc(void *ctx, void *p, size_t old_size, size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (new_size == 0) {
		free(p);
		return NULL;
	}
	if (++n_alloc == fail_at)
		return NULL;
	return realloc(p, new_size);
}

static int
step(heapprof_delta *d, const uint8_t *p, size_t n, unsigned flags,
     const char *what)
{
	fuzz_buf o = {0};
	int rc = heapprof_delta_compute(d, p, n, flags, fuzz_buf_write, &o);
	if (rc == 0) {
		int crc = heapprof_pprof_check(o.p, o.n, 0);
		FUZZ_ASSERT(crc == 0, "%s: delta output invalid: %d %s", what,
		            crc, heapprof_strerror(crc));
	}
	fuzz_buf_free(&o);
	return rc;
}

typedef struct fuzz_src {
	const uint8_t *p;
	size_t n, chunk;
} fuzz_src;

static long
fuzz_read(void *arg, uint64_t at, void *buf, size_t n)
{
	const fuzz_src *s = arg;
	if (at >= s->n)
		return 0;
	size_t k = s->n - (size_t)at;
	if (k > n)
		k = n;
	if (k > s->chunk)
		k = s->chunk;
	memcpy(buf, s->p + at, k);
	return (long)k;
}

static void
same_step(heapprof_delta *mem, heapprof_delta *rd, const uint8_t *p, size_t n,
          unsigned flags, size_t chunk, const char *what)
{
	fuzz_buf o1 = {0}, o2 = {0};
	fuzz_src s = {p, n, chunk};
	int r1 = heapprof_delta_compute(mem, p, n, flags, fuzz_buf_write, &o1);
	int r2 = heapprof_delta_compute_read(rd, fuzz_read, &s, flags,
	                                     fuzz_buf_write, &o2);
	FUZZ_ASSERT((r1 == 0) == (r2 == 0), "%s: memory %d, read %d", what, r1,
	            r2);
	FUZZ_ASSERT(r1 != 0 || (o1.n == o2.n && memcmp(o1.p, o2.p, o1.n) == 0),
	            "%s: read output differs (%zu vs %zu bytes)", what, o2.n,
	            o1.n);
	fuzz_buf_free(&o1);
	fuzz_buf_free(&o2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *a, *b;
	size_t na, nb;
	fuzz_split(data, size, &a, &na, &b, &nb);
	heapprof_delta_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.max_input = FUZZ_LIMIT;
	opt.max_age = 2;
	opt.realloc_fn = fuzz_realloc;
	n_alloc = 0;
	/* From the input's last byte: half the inputs never fail. */
	fail_at = size && (data[size - 1] & 1) ? data[size - 1] / 2 + 1 : 0;
	heapprof_delta *d = NULL;
	if (heapprof_delta_new(&d, &opt) != 0)
		return 0;
	step(d, a, na, 0, "first");
	int rc = step(d, b, nb, 0, "second");
	int rc2 = step(d, b, nb,
	               HEAPPROF_DELTA_SAME_TYPES | HEAPPROF_DELTA_SUBTRACT,
	               "repeat");
	FUZZ_ASSERT(rc != 0 || rc2 != HEAPPROF_ETYPES,
	            "repeat: the same profile's types called different");
	heapprof_delta_reset(d);
	step(d, a, na, 0, "after reset");
	heapprof_delta_free(d);

	heapprof_delta *mem = NULL, *rd = NULL;
	opt.realloc_fn = NULL;
	if (heapprof_delta_new(&mem, &opt) == 0 &&
	    heapprof_delta_new(&rd, &opt) == 0) {
		size_t chunk = size ? 1 + data[0] % 16 : 1;
		if (size && (data[0] & 0x80))
			chunk = (size_t)-1; /* whole reads */
		same_step(mem, rd, a, na, 0, chunk, "read first");
		same_step(mem, rd, b, nb, 0, chunk, "read second");
		same_step(mem, rd, b, nb, HEAPPROF_DELTA_SAME_TYPES, chunk,
		          "read repeat");
		same_step(mem, rd, a, na, HEAPPROF_DELTA_GZIP, chunk,
		          "read back");
	}
	heapprof_delta_free(mem);
	heapprof_delta_free(rd);
	return 0;
}
