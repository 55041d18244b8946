/*
 * fuzz_symbolize.c: libFuzzer target for the profile rewriter of
 * `heapprof symbolize` (src/ops/symbolize.c), with a fake symbolizer whose
 * frames depend on the address only (0 to 3 frames, some without file or
 * line), every other mapping chosen:
 *   - any input that opens must be rewritten without error;
 *   - if the input passes the full check (samples too), so must the output,
 *     with the same number of samples, locations and mappings, each chosen
 *     location holding exactly its fake frames, and the mapping flags
 *     agreeing with what the frames had.
 * Seeds: the decoder's corpus (fuzz/corpus/symbolize -> decode).
 */
#include <stdbool.h>

#include "heapprof.h"
#include "pprof_dec.h"
#include "../src/ops/symbolize.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"alpha", "beta", "_ZN2ns1fEv", ""};
static const char *const files[] = {"a.c", NULL, "/src/b.cc"};

static size_t
fake_frames(void *arg, size_t mi, const heapprof_mapping *m, uint64_t addr,
            heapprof_frame *out, size_t cap)
{
	(void)arg;
	(void)mi;
	(void)m;
	size_t n = (size_t)(addr % 4);
	if (n > cap)
		n = cap;
	for (size_t k = 0; k < n; k++) {
		uint64_t h = addr * 31 + k;
		out[k] = (heapprof_frame){names[h % 4], NULL, files[h % 3],
		                          (int64_t)(h % 5), (int64_t)(h % 2)};
	}
	return n;
}

static int
sink(void *ctx, const uint8_t *p, size_t n)
{
	return fuzz_buf_write(ctx, p, n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pprof_dec d, o;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	heapprof__pprof_dec_init(&o, NULL, NULL);
	d.limit = o.limit = FUZZ_LIMIT;
	fuzz_buf out = {0};
	bool *which = NULL;
	heapprof_sym_map_stats *st = NULL;
	if (heapprof__pprof_dec_open(&d, data, size) != 0)
		goto done;
	which = calloc(d.nmaps + 1, sizeof(*which));
	st = calloc(d.nmaps + 1, sizeof(*st));
	if (!which || !st)
		goto done;
	for (size_t i = 0; i < d.nmaps; i++)
		which[i] = i % 2 == 0;
	int rc = heapprof__symbolize_profile(
		&d, which, fake_frames, NULL,
		sink, &out, st);
	FUZZ_ASSERT(rc == 0, "rewrite failed: %d", rc);
	pprof_dec c;
	heapprof__pprof_dec_init(&c, NULL, NULL);
	c.limit = FUZZ_LIMIT;
	int valid = heapprof__pprof_check(&c, data, size) == 0;
	size_t nsamples = c.nsamples;
	heapprof__pprof_dec_free(&c);
	if (!valid)
		goto done;
	rc = heapprof__pprof_check(&o, out.p, out.n);
	FUZZ_ASSERT(rc == 0, "output does not check: %d", rc);
	FUZZ_ASSERT(o.nsamples == nsamples && o.nlocs == d.nlocs &&
	            o.nmaps == d.nmaps, "counts changed");
	for (size_t i = 0; i < d.nlocs; i++) {
		pprof_location l;
		FUZZ_ASSERT(heapprof__pprof_location(&o, i, &l) == 0, "location");
		long mi = heapprof__pprof_find_mapping(&o, l.mapping_id);
		if (mi < 0 || !which[mi] || l.address % 4 == 0)
			continue;
		heapprof_frame fr[4];
		size_t n = fake_frames(NULL, 0, NULL, l.address, fr, 4), want = 0;
		for (size_t k = 0; k < n; k++)
			want += fr[k].function[0] != 0;
		if (want == 0)
			continue; /* nothing named: the old lines are kept */
		FUZZ_ASSERT(l.nlines == want, "location %zu: %zu lines, want %zu",
		            i, l.nlines, want);
	}
	for (size_t i = 0; i < d.nmaps; i++) {
		pprof_mapping m;
		FUZZ_ASSERT(heapprof__pprof_mapping(&o, i, &m) == 0, "mapping");
		if (which[i] && st[i].locations)
			FUZZ_ASSERT(m.has_functions == st[i].has_functions &&
			            m.has_filenames == st[i].has_filenames,
			            "mapping %zu flags", i);
	}
done:
	free(which);
	free(st);
	fuzz_buf_free(&out);
	heapprof__pprof_dec_free(&d);
	heapprof__pprof_dec_free(&o);
	return 0;
}
