/*
 * profiler_memory.c: the profiler's own memory and the time to write a
 * profile with 65k distinct stacks. Run by bench/profiler_memory.sh, once
 * without and once with libheapprof.so preloaded at HEAPPROF_RATE=1; the
 * script subtracts the first run's figures from the second's.
 *
 *   profiler_memory [-b BITS] [-l LIVE] [-z SIZE] [-o DUMP_PATH]
 *
 * Phases, each printing "name value" lines (memory from /proc/self/status):
 *   start   RssAnon and VmSize at the start of main (fixed cost).
 *   buckets 2^BITS (default 16) distinct stacks, one malloc(SIZE)+free each:
 *           with every allocation sampled that is 2^BITS buckets and no live
 *           samples. A stack is chosen by recursing on the bits of an integer
 *           through two functions, one per bit value (BITS levels).
 *   live    LIVE (default 65536) blocks of SIZE (default 64) bytes from one
 *           call site, kept: LIVE live samples in one bucket.
 *   dump    heapprof_dump_file() timed twice with the 2^BITS buckets plus the
 *           LIVE samples (the first includes symbolizing the mappings).
 *   live2   one live block at each of the 2^BITS stacks, then a third dump
 *           (2^BITS buckets with live samples).
 *   encode  heapprof_encode_heap() alone on 2^BITS synthetic records with
 *           18-frame stacks, gzip on, output discarded.
 * The heapprof API is found with dlsym(RTLD_DEFAULT), so the program runs
 * (and reports glibc's figures) without the library.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "heapprof.h"

static unsigned g_bits = 16;
static size_t g_live = 65536;
static size_t g_size = 64;
static volatile unsigned long g_sink;

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

/* Keeps a call from becoming a tail call (a tail call would drop the
 * caller's frame and merge stacks). */
#define AFTER_CALL() __asm__ volatile("" ::: "memory")

static NOINLINE void *bit1(unsigned x, unsigned level, size_t n);

/* One level of the recursion for a 0 bit. bit0 and bit1 differ (the sink
 * increments) so identical-code folding cannot merge them. */
static NOINLINE void *bit0(unsigned x, unsigned level, size_t n)
{
	void *r;
	if (level == 0)
		r = malloc(n);
	else if ((x >> (level - 1)) & 1u)
		r = bit1(x, level - 1, n);
	else
		r = bit0(x, level - 1, n);
	AFTER_CALL();
	g_sink += 1;
	return r;
}

static NOINLINE void *bit1(unsigned x, unsigned level, size_t n)
{
	void *r;
	if (level == 0)
		r = malloc(n);
	else if ((x >> (level - 1)) & 1u)
		r = bit1(x, level - 1, n);
	else
		r = bit0(x, level - 1, n);
	AFTER_CALL();
	g_sink += 2;
	return r;
}

/* malloc(n) at the stack selected by the low g_bits bits of x. */
static void *alloc_at(unsigned x, size_t n)
{
	unsigned top = g_bits - 1;
	void *r = ((x >> top) & 1u) ? bit1(x, top, n) : bit0(x, top, n);
	AFTER_CALL();
	return r;
}

static NOINLINE void *alloc_live_site(size_t n)
{
	void *r = malloc(n);
	AFTER_CALL();
	return r;
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t klen = strlen(key);
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void report_mem(const char *phase)
{
	printf("%s.rss_anon_kb %ld\n%s.vm_size_kb %ld\n", phase, status_kb("RssAnon"), phase,
	       status_kb("VmSize"));
}

typedef int (*dump_file_fn)(const char *);
typedef int (*encode_fn)(const heapprof_heap_profile *, unsigned, heapprof_write_fn *, void *);
typedef const char *(*strerror_fn)(int);

static void timed_dump(dump_file_fn dump, strerror_fn serr, const char *path, const char *name)
{
	double w0 = now_s(), c0 = cpu_s();
	int rc = dump(path);
	double w1 = now_s(), c1 = cpu_s();
	struct stat st;
	if (rc != 0) {
		printf("%s.error %d %s\n", name, rc, serr ? serr(rc) : "");
		return;
	}
	printf("%s.wall_ms %.2f\n%s.cpu_ms %.2f\n%s.bytes %lld\n", name, (w1 - w0) * 1e3, name,
	       (c1 - c0) * 1e3, name, stat(path, &st) == 0 ? (long long)st.st_size : -1LL);
}

static int count_write(void *arg, const void *buf, size_t len)
{
	(void)buf;
	*(size_t *)arg += len;
	return 0;
}

static void encode_bench(encode_fn encode)
{
	size_t n = (size_t)1 << g_bits;
	const size_t depth = 18;
	heapprof_record *recs = calloc(n, sizeof *recs);
	uint64_t *stacks = calloc(n * depth, sizeof *stacks);
	if (!recs || !stacks) {
		printf("encode.error out of memory\n");
		free(recs);
		free(stacks);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t *s = stacks + i * depth;
		s[0] = 0x401000; /* the malloc call site */
		for (unsigned l = 0; l < g_bits && l + 1 < depth; l++)
			s[l + 1] = 0x402000 + 0x40 * (uint64_t)l + 0x10 * ((i >> l) & 1u);
		s[depth - 1] = 0x403000; /* main */
		recs[i].alloc_objects = 2;
		recs[i].alloc_bytes = 2 * (int64_t)g_size;
		recs[i].free_objects = 1;
		recs[i].free_bytes = (int64_t)g_size;
		recs[i].stack = s;
		recs[i].depth = depth;
	}
	heapprof_mapping m = { 0x400000, 0x500000, 0, "/usr/bin/synthetic", NULL };
	heapprof_heap_profile p;
	memset(&p, 0, sizeof p);
	p.records = recs;
	p.nrecords = n;
	p.rate = 524288;
	p.time_nanos = 1;
	p.mappings = &m;
	p.nmappings = 1;
	size_t bytes = 0;
	double w0 = now_s(), c0 = cpu_s();
	int rc = encode(&p, HEAPPROF_ENCODE_GZIP, count_write, &bytes);
	double w1 = now_s(), c1 = cpu_s();
	if (rc != 0)
		printf("encode.error %d\n", rc);
	else
		printf("encode.records %zu\nencode.wall_ms %.2f\nencode.cpu_ms %.2f\nencode.bytes %zu\n", n,
		       (w1 - w0) * 1e3, (c1 - c0) * 1e3, bytes);
	free(recs);
	free(stacks);
}

int main(int argc, char **argv)
{
	const char *path = "/tmp/heapprof-profiler-memory.pb.gz";
	int opt;

	/* Before anything allocates. */
	report_mem("start");
	while ((opt = getopt(argc, argv, "b:l:z:o:")) != -1) {
		switch (opt) {
		case 'b': g_bits = (unsigned)atoi(optarg); break;
		case 'l': g_live = (size_t)atol(optarg); break;
		case 'z': g_size = (size_t)atol(optarg); break;
		case 'o': path = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-b BITS] [-l LIVE] [-z SIZE] [-o DUMP_PATH]\n",
			        argv[0]);
			return 2;
		}
	}
	if (g_bits < 1 || g_bits > 24 || g_live < 1 || g_size < 1) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	dump_file_fn dump = (dump_file_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "heapprof_dump_file");
	encode_fn encode = (encode_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "heapprof_encode_heap");
	strerror_fn serr = (strerror_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "heapprof_strerror");
	printf("heapprof %s\n", dump ? "loaded" : "absent");
	printf("stacks %u\nlive %zu\nsize %zu\n", 1u << g_bits, g_live, g_size);

	/* Keep the pointer arrays out of the measured deltas: allocate them
	 * now, touched. */
	void **live = calloc(g_live, sizeof *live);
	void **live2 = calloc((size_t)1 << g_bits, sizeof *live2);
	if (!live || !live2) {
		perror("calloc");
		return 1;
	}
	memset(live, 1, g_live * sizeof *live);
	memset(live2, 1, ((size_t)1 << g_bits) * sizeof *live2);
	report_mem("before");

	for (unsigned x = 0; x < (1u << g_bits); x++)
		free(alloc_at(x, g_size));
	report_mem("buckets");

	for (size_t i = 0; i < g_live; i++) {
		live[i] = alloc_live_site(g_size);
		if (!live[i]) {
			perror("malloc");
			return 1;
		}
		memset(live[i], 0, g_size);
	}
	report_mem("live");

	if (dump) {
		timed_dump(dump, serr, path, "dump1");
		timed_dump(dump, serr, path, "dump2");
	}
	report_mem("afterdump");

	for (unsigned x = 0; x < (1u << g_bits); x++) {
		live2[x] = alloc_at(x, g_size);
		if (!live2[x]) {
			perror("malloc");
			return 1;
		}
		memset(live2[x], 0, g_size);
	}
	report_mem("live2");
	if (dump)
		timed_dump(dump, serr, path, "dump3");
	if (encode)
		encode_bench(encode);

	for (size_t i = 0; i < g_live; i++)
		free(live[i]);
	for (unsigned x = 0; x < (1u << g_bits); x++)
		free(live2[x]);
	free(live);
	free(live2);
	printf("sink %lu\n", (unsigned long)g_sink);
	return 0;
}
