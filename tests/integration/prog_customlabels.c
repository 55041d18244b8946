/*
 * prog_customlabels.c: a program that publishes Polar Signals' custom
 * labels as their library does, written here from the ABI documents
 * (custom-labels-v0.md; -DCL_V1: custom-labels-v1.md): custom_labels_abi_version
 * (4 bytes) and the thread-local custom_labels_thread_local_data
 * ({storage, count}; v1: custom_labels_current_set, a pointer to
 * {storage, count, capacity}), exported with -rdynamic. Each label is
 * {key, value}, each a {len, buf} byte string, copied to the heap. It also
 * exports otel_thread_ctx_v1 (NULL unless MODE is both).
 *
 *   prog_customlabels MODE
 *     valid:   main: route=/a tenant=t7 (plus an absent key and a second
 *              route, both ignored by the ABI), 100 x 300 B; then two
 *              threads, one after the other: route=/w1, /w2, 50 x 200 B
 *              each; then main with no labels, 10 x 100 B
 *     garbage: route=/ok 50 x 300 B, then six bad records of 50 x 300 B
 *              each: storage unmapped, a key unmapped, a NULL value, a
 *              huge count, a misaligned storage, a NUL inside a value
 *     both:    custom route=/c and the OpenTelemetry attribute 0=/o:
 *              100 x 300 B; then the OpenTelemetry record invalid
 *              (valid 0): 50 x 300 B
 * All blocks are allocated at site_cl and freed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
	size_t len;
	const unsigned char *buf;
} cl_str;
typedef struct {
	cl_str key, value;
} cl_label;

#define EXPORT __attribute__((visibility("default"), used))
#ifdef CL_V1
typedef struct {
	cl_label *storage;
	size_t count, capacity;
} cl_set;
EXPORT const uint32_t custom_labels_abi_version = 1;
EXPORT __thread cl_set *custom_labels_current_set;
#else
typedef struct {
	cl_label *storage;
	size_t count;
} cl_set;
EXPORT const uint32_t custom_labels_abi_version = 0;
EXPORT __thread cl_set custom_labels_thread_local_data;
#endif
EXPORT __thread void *otel_thread_ctx_v1;

#define BARRIER __asm__ volatile("" ::: "memory")

static __attribute__((noinline)) void *
site_cl(size_t n)
{
	return malloc(n);
}

static void
blocks(int n, size_t size)
{
	for (int i = 0; i < n; i++)
		free(site_cl(size));
}

/* This thread's set: storage and count, published in the order a reader
 * interrupting at any instruction may rely on. */
static void
install(cl_label *storage, size_t count)
{
#ifdef CL_V1
	cl_set *s = malloc(sizeof(*s));
	s->storage = storage;
	s->count = count;
	s->capacity = count;
	BARRIER;
	custom_labels_current_set = s; /* (the old set is leaked: a test) */
#else
	custom_labels_thread_local_data.count = 0;
	BARRIER;
	custom_labels_thread_local_data.storage = storage;
	BARRIER;
	custom_labels_thread_local_data.count = count;
#endif
}

static cl_str
heap_str(const char *s, size_t len)
{
	unsigned char *b = malloc(len ? len : 1);
	memcpy(b, s, len);
	return (cl_str){len, b};
}

/* Labels from "k", "v" pairs (k NULL: an absent key), copied to the heap. */
static void
publish(const char *const *kv, size_t n)
{
	cl_label *st = malloc(n * sizeof(*st));
	for (size_t i = 0; i < n; i++) {
		st[i].key = kv[2 * i] ? heap_str(kv[2 * i], strlen(kv[2 * i]))
		                      : (cl_str){3, NULL};
		st[i].value = heap_str(kv[2 * i + 1], strlen(kv[2 * i + 1]));
	}
	install(st, n);
}

static void *
worker(void *arg)
{
	const char *kv[] = {"route", arg};
	publish(kv, 1);
	blocks(50, 200);
	return NULL;
}

static void *
unmapped_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static uint8_t rec[64];

static void
otel_publish(int valid)
{
	memset(rec, 0, sizeof(rec));
	rec[28] = 0; /* attribute 0 = "/o" */
	rec[29] = 2;
	memcpy(rec + 30, "/o", 2);
	uint16_t size = 4;
	memcpy(rec + 26, &size, 2);
	rec[24] = (uint8_t)valid;
	otel_thread_ctx_v1 = rec;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "valid";
	if (!strcmp(m, "valid")) {
		const char *kv[] = {"route", "/a", NULL, "x", "tenant", "t7",
		                    "route", "/dup"};
		publish(kv, 4);
		blocks(100, 300);
		/* one thread after the other: each reads its own set */
		static char *routes[] = {"/w1", "/w2"};
		for (int i = 0; i < 2; i++) {
			pthread_t t;
			pthread_create(&t, NULL, worker, routes[i]);
			pthread_join(t, NULL);
		}
		install(NULL, 0);
		blocks(10, 100);
	} else if (!strcmp(m, "garbage")) {
		const char *kv[] = {"route", "/ok"};
		publish(kv, 1);
		blocks(50, 300);
		cl_label *good = malloc(2 * sizeof(*good));
		good[0].key = heap_str("route", 5);
		good[0].value = heap_str("/bad", 4);
		good[1] = good[0];
		install(unmapped_page(), 2); /* storage unmapped */
		blocks(50, 300);
		cl_label *st = malloc(2 * sizeof(*st));
		memcpy(st, good, 2 * sizeof(*st));
		st[1].key.buf = unmapped_page(); /* a key unmapped */
		st[1].key.len = 3;
		install(st, 2);
		blocks(50, 300);
		st = malloc(sizeof(*st));
		st[0] = good[0];
		st[0].value.buf = NULL; /* a NULL value */
		install(st, 1);
		blocks(50, 300);
		install(good, (size_t)1 << 40); /* a huge count */
		blocks(50, 300);
		install((cl_label *)((char *)good + 1), 1); /* misaligned */
		blocks(50, 300);
		st = malloc(sizeof(*st));
		st[0] = good[0];
		st[0].value = heap_str("a\0b", 3); /* a NUL inside */
		install(st, 1);
		blocks(50, 300);
		install(NULL, 0);
	} else if (!strcmp(m, "both")) {
		const char *kv[] = {"route", "/c"};
		publish(kv, 1);
		otel_publish(1);
		blocks(100, 300);
		otel_publish(0);
		blocks(50, 300);
		otel_thread_ctx_v1 = NULL;
	} else {
		return 2;
	}
	printf("done %s\n", m);
	return 0;
}
