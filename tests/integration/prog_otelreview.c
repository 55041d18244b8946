/*
 * prog_otelreview.c: the cases of the review of otel_procctx.c and
 * customlabels.c (otel_review.sh). Exports otel_thread_ctx_v1 (OTEP 4947)
 * and custom labels v0 (custom_labels_thread_local_data), -rdynamic.
 *
 *   prog_otelreview tables   a process context (OTEP 4719) whose key map
 *                            alternates between ["http_route", "tenant"]
 *                            and ["tenant", "http_route"] over 301
 *                            updates (a publisher that rewrites its map,
 *                            e.g. every second), the last one the first
 *                            map; then 100 x 300 B at site_rev with the
 *                            thread context's attribute 0 = "/a": its
 *                            label must be http_route=/a
 *   prog_otelreview ranges   custom labels route=/far in a page mapped
 *                            first, then 1500 separate readable mappings
 *                            (a JVM-like or many-dlopen process: more
 *                            than customlabels.c's first table holds),
 *                            all below it; 100 x 300 B at site_rev
 *   prog_otelreview forkread custom labels route=/kid: a thread's sample
 *                            re-reads /proc/self/maps (label memory new
 *                            since the table) and the main thread forks
 *                            while that read is under way (this program's
 *                            read() holds it, exported: heapprof's call
 *                            binds to it); the child puts its labels in
 *                            memory new to it and allocates 100 x 300 B
 *                            at site_rev, writing its own profile
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#define EXPORT __attribute__((visibility("default"), used))
EXPORT __thread void *otel_thread_ctx_v1;

typedef struct {
	size_t len;
	const unsigned char *buf;
} cl_str;
typedef struct {
	cl_str key, value;
} cl_label;
typedef struct {
	cl_label *storage;
	size_t count;
} cl_set;
EXPORT const uint32_t custom_labels_abi_version = 0;
EXPORT __thread cl_set custom_labels_thread_local_data;

/* After a store to a thread-local the profiler reads: malloc and free do
 * not read the program's variables, as far as the compiler knows. */
#define BARRIER __asm__ volatile("" ::: "memory")

static __attribute__((noinline)) void *
site_rev(size_t n)
{
	return malloc(n);
}

static void
blocks(int n, size_t size)
{
	for (int i = 0; i < n; i++)
		free(site_rev(size));
}

/* ------------------------------------------------- the process context */

typedef struct {
	uint8_t b[512];
	size_t n;
} pb;

static void
pb_varint(pb *p, uint64_t v)
{
	do {
		p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void
pb_len(pb *p, unsigned field, const void *s, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	memcpy(p->b + p->n, s, n);
	p->n += n;
}

static void
pb_kv(pb *p, const char *key, const pb *any)
{
	pb kv = {.n = 0};
	pb_len(&kv, 1, key, strlen(key));
	pb_len(&kv, 2, any->b, any->n);
	pb_len(p, 2, kv.b, kv.n);
}

/* ProcessContext: schema tls_v1 and the key map (k0, k1). */
static void
payload(pb *p, const char *k0, const char *k1)
{
	pb any = {.n = 0}, arr = {.n = 0}, s = {.n = 0};
	p->n = 0;
	pb_len(&any, 1, "tls_v1", 6);
	pb_kv(p, "threadlocal.schema_version", &any);
	const char *k[2] = {k0, k1};
	for (int i = 0; i < 2; i++) {
		s.n = 0;
		pb_len(&s, 1, k[i], strlen(k[i]));
		pb_len(&arr, 1, s.b, s.n);
	}
	any.n = 0;
	pb_len(&any, 5, arr.b, arr.n);
	pb_kv(p, "threadlocal.attribute_key_map", &any);
}

typedef struct __attribute__((packed, aligned(8))) {
	char signature[8];
	uint32_t version, payload_size;
	uint64_t ts, payload;
} ctx_header;

static uint64_t
boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
tables(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	ctx_header *h = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE,
	                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return 1;
	static pb pay[2];
	payload(&pay[0], "http_route", "tenant");
	payload(&pay[1], "tenant", "http_route");
	memcpy(h->signature, "OTEL_CTX", 8);
	h->version = 2;
	uint64_t last = 0;
	for (int i = 0; i <= 300; i++) { /* publication, then 300 updates */
		pb *p = &pay[i & 1];
		h->ts = 0;
		atomic_thread_fence(memory_order_seq_cst);
		h->payload = (uint64_t)(uintptr_t)p->b;
		h->payload_size = (uint32_t)p->n;
		atomic_thread_fence(memory_order_seq_cst);
		uint64_t now = boottime_ns();
		h->ts = last = now > last ? now : last + 1;
		(void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)h,
		            (unsigned long)pg, (unsigned long)"OTEL_CTX");
	}
	static uint8_t rec[64];
	rec[24] = 1; /* valid */
	rec[28] = 0;  /* attribute 0 = "/a" */
	rec[29] = 2;
	memcpy(rec + 30, "/a", 2);
	uint16_t size = 4;
	memcpy(rec + 26, &size, 2);
	otel_thread_ctx_v1 = rec;
	BARRIER;
	blocks(100, 300);
	otel_thread_ctx_v1 = NULL;
	return 0;
}

/* ------------------------------------------------------ custom labels */

/* route=VALUE, storage and text in one new page. */
static cl_label *
labels_page(const char *value)
{
	char *pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pg == MAP_FAILED)
		return NULL;
	cl_label *l = (cl_label *)pg;
	memcpy(pg + 256, "route", 5);
	strcpy(pg + 512, value);
	l->key = (cl_str){5, (unsigned char *)pg + 256};
	l->value = (cl_str){strlen(value), (unsigned char *)pg + 512};
	return l;
}

static void
install(cl_label *storage, size_t count)
{
	custom_labels_thread_local_data.count = 0;
	BARRIER;
	custom_labels_thread_local_data.storage = storage;
	BARRIER;
	custom_labels_thread_local_data.count = count;
	BARRIER;
}

static int
ranges(void)
{
	cl_label *l = labels_page("/far");
	if (!l)
		return 1;
	/* 1500 readable pages, each followed by a PROT_NONE one: separate
	 * ranges, all mapped below the labels' page (mmap goes down) */
	for (int i = 0; i < 1500; i++) {
		char *p = mmap(NULL, 8192, PROT_READ,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || mprotect(p + 4096, 4096, PROT_NONE))
			return 1;
	}
	install(l, 1);
	blocks(100, 300);
	install(NULL, 0);
	return 0;
}

/* forkread: read() of this program, which heapprof's calls bind to. While
 * `hold` is set, a read of /proc/self/maps (heapprof's maps_read: a
 * 4096-byte read) tells the main thread and waits until it has forked. */
static atomic_int hold, in_read, forked;

EXPORT ssize_t
read(int fd, void *buf, size_t n)
{
	if (atomic_load(&hold) && n == 4096) {
		char link[64], path[64];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, path, sizeof(path) - 1);
		if (k > 0 && (path[k] = 0, strstr(path, "/maps"))) {
			atomic_store(&hold, 0);
			atomic_store(&in_read, 1);
			while (!atomic_load(&forked))
				;
		}
	}
	return syscall(SYS_read, fd, buf, n);
}

static void *
rereader(void *arg)
{
	install((cl_label *)arg, 1); /* memory new since the table */
	blocks(1, 300);
	return NULL;
}

static int
forkread(void)
{
	cl_label *l = labels_page("/kid");
	install(l, 1);
	blocks(1, 300); /* the table read (if not at start-up) */
	atomic_store(&hold, 1);
	pthread_t t;
	pthread_create(&t, NULL, rereader, labels_page("/parent"));
	while (!atomic_load(&in_read))
		;
	pid_t pid = fork();
	if (pid == 0) {
		install(labels_page("/kid"), 1); /* new to the child's table */
		blocks(100, 300);
		install(NULL, 0);
		exit(0);
	}
	atomic_store(&forked, 1);
	pthread_join(t, NULL);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return 1;
	printf("child %d\n", (int)pid);
	install(NULL, 0);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int rc = !strcmp(m, "tables")     ? tables()
	         : !strcmp(m, "ranges")   ? ranges()
	         : !strcmp(m, "forkread") ? forkread()
	                                  : 2;
	if (!rc)
		printf("done %s\n", m);
	return rc;
}
