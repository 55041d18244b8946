/*
 * fuzz_decode.c: libFuzzer target for the streaming pprof decoder
 * (src/format/pprof_dec.h, helper A's API): open (gzip or raw, inflate
 * capped at FUZZ_LIMIT), then every string, location, function, mapping and
 * sample. Any error code is fine; a crash, leak, UB or a decoder that
 * accepts a profile and then fails on an element it indexed is not.
 */
#include "heapprof.h"
#include "pprof_dec.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	d.limit = FUZZ_LIMIT;
	int rc = heapprof__pprof_dec_open(&d, data, size);
	if (rc == 0) {
		size_t total = 0, n;
		for (size_t i = 0; i < d.nstrings; i++) {
			const char *s = heapprof__pprof_string(&d, i, &n);
			if (n)
				total += (unsigned char)s[0] + (unsigned char)s[n - 1];
		}
		for (size_t i = 0; i < d.nlocs; i++) {
			pprof_location l;
			rc = heapprof__pprof_location(&d, i, &l);
			FUZZ_ASSERT(rc == 0, "location %zu: %d", i, rc);
			FUZZ_ASSERT(heapprof__pprof_find_location(&d, l.id) == (long)i,
			            "location id %llu", (unsigned long long)l.id);
			for (size_t j = 0; j < l.nlines; j++)
				total += (size_t)l.lines[j].line;
		}
		for (size_t i = 0; i < d.nfuncs; i++) {
			pprof_function f;
			rc = heapprof__pprof_function(&d, i, &f);
			FUZZ_ASSERT(rc == 0, "function %zu: %d", i, rc);
			FUZZ_ASSERT(f.name < d.nstrings && f.filename < d.nstrings,
			            "function %zu string out of range", i);
		}
		for (size_t i = 0; i < d.nmaps; i++) {
			pprof_mapping m;
			rc = heapprof__pprof_mapping(&d, i, &m);
			FUZZ_ASSERT(rc == 0, "mapping %zu: %d", i, rc);
		}
		pprof_sample_iter it;
		pprof_sample s;
		heapprof__pprof_samples(&d, &it);
		size_t ns = 0;
		while ((rc = heapprof__pprof_sample_next(&d, &it, &s)) == 0) {
			FUZZ_ASSERT(s.nvalues == d.ntypes, "values %zu types %zu",
			            s.nvalues, d.ntypes);
			for (size_t j = 0; j < s.nlocations; j++)
				FUZZ_ASSERT(heapprof__pprof_find_location(
				                    &d, s.location_ids[j]) >= 0,
				            "sample location unresolved");
			for (size_t j = 0; j < s.nlabels; j++)
				FUZZ_ASSERT(s.labels[j].key < d.nstrings,
				            "label key out of range");
			ns++;
		}
		FUZZ_ASSERT(rc == 1 || rc < 0, "sample_next returned %d", rc);
		/* The full check agrees with what we just saw. */
		int crc = heapprof__pprof_check(&d, data, size);
		FUZZ_ASSERT((crc == 0) == (rc == 1), "check %d vs samples %d", crc, rc);
		(void)total;
		(void)ns;
	}
	heapprof__pprof_dec_free(&d);
	/* The public wrapper must agree with open + samples. */
	(void)heapprof_pprof_check(data, size, FUZZ_LIMIT);
	return 0;
}
