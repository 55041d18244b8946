/*
 * fuzz_legacy.c: libFuzzer target for the legacy heap readers
 * (src/format/legacy_*.c): the input is parsed as legacy heap text or a
 * jemalloc dump (gzip'd inputs inflated, capped at FUZZ_LIMIT). Any error
 * code is fine; a crash, leak or UB is not, and neither is a parse that
 * succeeds but yields an inconsistent profile (location or mapping index
 * out of range), a proto that our own decoder rejects, or legacy text
 * written back from it that does not parse.
 */
#include "heapprof.h"
#include "legacy_parse.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hp_legacy p;
	hp_legacy_err e;
	int rc = heapprof__legacy_parse((const char *)data, size, &p, &e);
	if (rc == 0) {
		FUZZ_ASSERT(p.ntypes == 2 || p.ntypes == 4, "ntypes %d", p.ntypes);
		for (size_t i = 0; i < p.nstack; i++)
			FUZZ_ASSERT(p.stack[i] < p.nlocs, "stack entry %zu", i);
		for (size_t i = 0; i < p.nlocs; i++)
			FUZZ_ASSERT(p.loc_map[i] <= p.nmaps, "location %zu", i);
		if (p.nsamples)
			FUZZ_ASSERT(p.stack_at[p.nsamples] == p.nstack, "stack_at");
		heapprof__legacy_free(&p);
	}
	/* The public path: gzip'd input too, proto written and checked. */
	fuzz_buf pb = {0}, txt = {0};
	size_t line;
	rc = heapprof_legacy_to_pprof(data, size, 0, fuzz_buf_write, &pb, &line);
	if (rc == 0) {
		int crc = heapprof_pprof_check(pb.p, pb.n, FUZZ_LIMIT);
		FUZZ_ASSERT(crc == 0, "own proto rejected: %d", crc);
		rc = heapprof_pprof_to_legacy(pb.p, pb.n, fuzz_buf_write, &txt);
		if (rc == 0) {
			hp_legacy q;
			rc = heapprof__legacy_parse((const char *)txt.p, txt.n, &q, &e);
			FUZZ_ASSERT(rc == 0, "own text rejected: %d line %zu", rc,
			            e.line);
			heapprof__legacy_free(&q);
		}
	}
	fuzz_buf_free(&pb);
	fuzz_buf_free(&txt);
	return 0;
}
