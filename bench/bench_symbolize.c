/*
 * bench_symbolize.c: what DWARF symbolization costs a dump (BENCHMARKS.md
 * "## Symbolization"). Reads a profile, and for every location whose mapping
 * file is present asks the DWARF symbolizer (dwarf_sym.c) for its frames,
 * twice with the same cache: the first pass is a process's first dump (files
 * opened, line tables and DIEs read), the second a later dump (all cached).
 * Then the same with the ELF symbol-table symbolizer (symcache.c), which is
 * what HEAPPROF_SYMBOLIZE=symtab does.
 *
 * usage: bench_symbolize PROFILE
 * prints: locations, frames, and the time of each pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dwarf_sym.h"
#include "elffile.h"
#include "heapprof.h"
#include "pprof_dec.h"
#include "bench_profile.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_symbolize PROFILE\n");
		return 2;
	}
	pprof_dec d;
	uint8_t *buf;
	heapprof_mapping *ms;
	if (bench_load_profile("bench_symbolize", argv[1], &d, &buf, &ms) != 0)
		return 1;
	uint64_t *addr = calloc(d.nlocs + 1, sizeof(*addr));
	long *mi = calloc(d.nlocs + 1, sizeof(*mi));
	for (size_t i = 0; i < d.nlocs; i++) {
		pprof_location l;
		heapprof__pprof_location(&d, i, &l);
		addr[i] = l.address;
		mi[i] = heapprof__pprof_find_mapping(&d, l.mapping_id);
	}
	heapprof_dwsym *s = heapprof__dwsym_new(NULL);
	heapprof_frame fr[64];
	size_t frames = 0, named = 0;
	double t[3];
	for (int pass = 0; pass < 2; pass++) {
		double t0 = now();
		frames = named = 0;
		for (size_t i = 0; i < d.nlocs; i++) {
			if (mi[i] < 0)
				continue;
			size_t n = heapprof__dwsym_frames(s, &ms[mi[i]], NULL,
			                                  addr[i], fr, 64);
			frames += n;
			named += n > 0;
		}
		t[pass] = now() - t0;
	}
	heapprof_symcache *c = heapprof__symcache_new();
	size_t snamed = 0;
	double t0 = now();
	for (size_t i = 0; i < d.nlocs; i++)
		if (mi[i] >= 0)
			snamed += heapprof__symcache_symbolize(c, addr[i],
			                                       &ms[mi[i]]) != NULL;
	t[2] = now() - t0;
	printf("locations %zu, named %zu, frames %zu; dwarf first pass %.1f ms, "
	       "second pass %.1f ms; symtab first pass %.1f ms (named %zu)\n",
	       d.nlocs, named, frames, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, snamed);
	heapprof__symcache_free(c);
	heapprof__dwsym_free(s);
	for (size_t i = 0; i < d.nmaps; i++) {
		free((char *)ms[i].file);
		free((char *)ms[i].build_id);
	}
	free(ms);
	free(addr);
	free(mi);
	heapprof__pprof_dec_free(&d);
	free(buf);
	return 0;
}
