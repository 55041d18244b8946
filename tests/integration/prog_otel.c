/*
 * prog_otel.c: a program that publishes the OpenTelemetry thread context
 * (OTEP 4947) as a tracer would: the exported thread-local pointer
 * otel_thread_ctx_v1 (built with -rdynamic, so it is in .dynsym) to a
 * packed record (trace_id[16], span_id[8], valid, trace_flags,
 * attrs_data_size u16, then {key u8, len u8, value} entries).
 *
 *   prog_otel MODE   valid: attributes 0="/a" 1="tenant-7", 100 blocks
 *                    of 300 bytes at site_otel; torn: the same record
 *                    with valid 0; bogus: an entry longer than the size;
 *                    big: attrs_data_size past the 640-byte limit;
 *                    null: no record
 *
 * With a process context (OTEP 4719, published as its Publication and
 * Updating Protocols say, the payload a ProcessContext whose attributes
 * carry threadlocal.schema_version "tls_v1" and
 * threadlocal.attribute_key_map ["http_route", "tenant"]), the valid
 * record's 100 blocks, then (after an update) 100 more at site_otel2:
 *   ctx          published before the blocks
 *   ctx_short    a key map of one name (index 1 is past it)
 *   ctx_late     published with no prctl (a kernel or SDK that names no
 *                mapping: /memfd:OTEL_CTX), heapprof_dump() between the
 *                two halves
 *   ctx_BAD      the first half under a broken context (BAD: zero, the
 *                timestamp 0 of an update in progress; sig; version 3;
 *                ptr, a payload pointer to unmapped memory; size, 1 GiB;
 *                proto, the payload cut short; schema, go_pprof_labels_v1),
 *                the second after a valid update
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

static __attribute__((noinline)) void *
site_otel(size_t n)
{
	return malloc(n);
}

static __attribute__((noinline)) void *
site_otel2(size_t n)
{
	return malloc(n);
}

static uint8_t rec[640];

/* ------------------------------------------------- the process context */

typedef struct {
	uint8_t b[1024];
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

/* A LEN field (every field here is one): tag, length, bytes. */
static void
pb_len(pb *p, unsigned field, const void *s, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	memcpy(p->b + p->n, s, n);
	p->n += n;
}

static void
pb_msg(pb *p, unsigned field, const pb *m)
{
	pb_len(p, field, m->b, m->n);
}

/* A KeyValue: key (1), AnyValue (2) whose string_value (1) is s. */
static void
pb_kv_str(pb *p, unsigned field, const char *key, const char *s)
{
	pb any = {.n = 0}, kv = {.n = 0};
	pb_len(&any, 1, s, strlen(s));
	pb_len(&kv, 1, key, strlen(key));
	pb_msg(&kv, 2, &any);
	pb_msg(p, field, &kv);
}

/* The payload: ProcessContext{resource (1): Resource{attributes (1):
 * service.name}, attributes (2): schema version, key map}. */
static void
payload(pb *p, const char *schema, int nkeys)
{
	static const char *const keys[] = {"http_route", "tenant"};
	pb res = {.n = 0}, arr = {.n = 0}, any = {.n = 0}, kv = {.n = 0};
	p->n = 0;
	pb_kv_str(&res, 1, "service.name", "prog_otel");
	pb_msg(p, 1, &res);
	pb_kv_str(p, 2, "threadlocal.schema_version", schema);
	for (int i = 0; i < nkeys; i++) {
		pb s = {.n = 0};
		pb_len(&s, 1, keys[i], strlen(keys[i]));
		pb_msg(&arr, 1, &s); /* ArrayValue.values: AnyValue */
	}
	pb_msg(&any, 5, &arr); /* AnyValue.array_value */
	const char *k = "threadlocal.attribute_key_map";
	pb_len(&kv, 1, k, strlen(k));
	pb_msg(&kv, 2, &any);
	pb_msg(p, 2, &kv);
}

typedef struct __attribute__((packed, aligned(8))) {
	char signature[8];
	uint32_t version, payload_size;
	uint64_t monotonic_published_at_ns, payload;
} ctx_header;

static ctx_header *hdr;
static pb pay[2];

static uint64_t
boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
name_it(void)
{
	(void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)hdr,
	            (unsigned long)sysconf(_SC_PAGESIZE), (unsigned long)"OTEL_CTX");
}

/* Publication Protocol, steps 2-10 (bad: how to break it). */
static int
ctx_publish(const char *bad, int nkeys, int name)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0)
		fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, pg))
		return -1;
	hdr = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED || madvise(hdr, (size_t)pg, MADV_DONTFORK))
		return -1;
	pb *p = &pay[0];
	payload(p, !strcmp(bad, "schema") ? "go_pprof_labels_v1" : "tls_v1", nkeys);
	memcpy(hdr->signature, !strcmp(bad, "sig") ? "OTEL_CTY" : "OTEL_CTX", 8);
	hdr->version = !strcmp(bad, "version") ? 3 : 2;
	hdr->payload_size = (uint32_t)p->n;
	hdr->payload = (uint64_t)(uintptr_t)p->b;
	if (!strcmp(bad, "size"))
		hdr->payload_size = 1u << 30;
	if (!strcmp(bad, "proto"))
		hdr->payload_size -= 5; /* inside the key map's last name */
	if (!strcmp(bad, "ptr")) {
		void *gone = mmap(NULL, (size_t)pg, PROT_READ,
		                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		munmap(gone, (size_t)pg);
		hdr->payload = (uint64_t)(uintptr_t)gone;
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (strcmp(bad, "zero"))
		hdr->monotonic_published_at_ns = boottime_ns();
	if (name)
		name_it();
	return 0;
}

/* Updating Protocol: a valid payload, the signature and version restored
 * (a fresh publication's, for the sig and version cases). */
static void
ctx_update(void)
{
	uint64_t old = hdr->monotonic_published_at_ns;
	pb *p = &pay[1];
	payload(p, "tls_v1", 2);
	hdr->monotonic_published_at_ns = 0;
	atomic_thread_fence(memory_order_seq_cst);
	memcpy(hdr->signature, "OTEL_CTX", 8);
	hdr->version = 2;
	hdr->payload = (uint64_t)(uintptr_t)p->b;
	hdr->payload_size = (uint32_t)p->n;
	atomic_thread_fence(memory_order_seq_cst);
	uint64_t now = boottime_ns();
	hdr->monotonic_published_at_ns = now > old ? now : old + 1;
	name_it();
}

static int
discard(void *arg, const void *buf, size_t len)
{
	(void)arg, (void)buf, (void)len;
	return 0;
}

static void
publish(int valid, uint16_t claimed_extra, int bogus)
{
	memset(rec, 0, sizeof(rec));
	for (int i = 0; i < 16; i++)
		rec[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < 8; i++)
		rec[16 + i] = (uint8_t)(0xb0 + i);
	rec[25] = 1; /* sampled */
	size_t p = 28;
	rec[p++] = 0;
	rec[p++] = 2;
	memcpy(rec + p, "/a", 2);
	p += 2;
	rec[p++] = 1;
	rec[p++] = bogus ? 200 : 8; /* bogus: runs past the size */
	memcpy(rec + p, "tenant-7", 8);
	p += 8;
	uint16_t size = (uint16_t)(p - 28 + claimed_extra);
	memcpy(rec + 26, &size, 2);
	rec[24] = (uint8_t)valid;
	otel_thread_ctx_v1 = rec;
}

int
main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "valid";
	if (!strncmp(m, "ctx", 3)) {
		const char *bad = m[3] == '_' ? m + 4 : "";
		int late = !strcmp(bad, "late");
		if (ctx_publish(bad, !strcmp(bad, "short") ? 1 : 2, !late)) {
			perror("process context");
			return 1;
		}
		publish(1, 0, 0);
		for (int i = 0; i < 100; i++)
			free(site_otel(300));
		if (late) {
			int (*dump)(int (*)(void *, const void *, size_t), void *, int);
			void *f = dlsym(RTLD_DEFAULT, "heapprof_dump");
			memcpy(&dump, &f, sizeof(dump));
			if (!dump || dump(discard, NULL, 0))
				return 3;
		} else if (strcmp(bad, "short") && *bad) {
			ctx_update();
		}
		for (int i = 0; i < 100; i++)
			free(site_otel2(300));
		otel_thread_ctx_v1 = NULL;
		printf("done %s\n", m);
		return 0;
	}
	if (!strcmp(m, "valid"))
		publish(1, 0, 0);
	else if (!strcmp(m, "torn"))
		publish(0, 0, 0);
	else if (!strcmp(m, "bogus"))
		publish(1, 0, 1);
	else if (!strcmp(m, "big"))
		publish(1, 1000, 0);
	else if (strcmp(m, "null"))
		return 2;
	for (int i = 0; i < 100; i++)
		free(site_otel(300));
	otel_thread_ctx_v1 = NULL;
	printf("done %s\n", m);
	return 0;
}
