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
	return 0;
}
