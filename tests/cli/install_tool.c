/*
 * install_tool.c: a program of the tool API alone, built by
 * tests/cli/install.sh against the installed heapprof-tools (pkg-config):
 * encodes a small heap profile in memory and computes two deltas of it
 * with heapprof_delta_*. Prints "tool ok profiler=N" where N is 1 if a
 * heapprof_active function is reachable in the process (the profiler is
 * in it), else 0. It allocates enough for a profiler to have samples.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <heapprof.h>

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static int
put(void *arg, const void *data, size_t len)
{
	struct buf *b = arg;
	if (b->n + len > b->cap) {
		size_t cap = (b->n + len) * 2;
		unsigned char *np = realloc(b->p, cap);
		if (!np)
			return -12;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	return 0;
}

int
main(void)
{
	void *keep[64];
	for (int i = 0; i < 64; i++) /* 64 MiB: a profiler would sample it */
		memset(keep[i] = malloc(1 << 20), 1, 1 << 20);

	uint64_t stack[2] = {0x401000, 0x402000};
	heapprof_record rec = {.alloc_objects = 3, .alloc_bytes = 3000,
	                       .stack = stack, .depth = 2};
	heapprof_heap_profile prof = {.records = &rec, .nrecords = 1,
	                              .rate = 1, .time_nanos = 1};
	struct buf in = {0}, out = {0};
	int rc = heapprof_encode_heap(&prof, 0, put, &in);
	heapprof_delta *d = NULL;
	if (rc == 0)
		rc = heapprof_delta_new(&d, NULL);
	if (rc == 0)
		rc = heapprof_delta_compute(d, in.p, in.n, 0, put, &out);
	size_t first = out.n;
	if (rc == 0)
		rc = heapprof_delta_compute(d, in.p, in.n, HEAPPROF_DELTA_GZIP, put,
		                            &out);
	if (rc != 0 || first == 0 || out.n <= first) {
		fprintf(stderr, "install_tool: %s\n", heapprof_strerror(rc));
		return 1;
	}
	heapprof_delta_free(d);
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	free(in.p);
	free(out.p);
	printf("tool ok profiler=%d\n",
	       dlsym(RTLD_DEFAULT, "heapprof_active") != NULL);
	return 0;
}
