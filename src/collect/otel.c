/*
 * otel.c: labels from the OpenTelemetry thread context (OTEP 4947), with
 * no code in the program: where the process publishes the thread-local
 * pointer otel_thread_ctx_v1 (exported in a .dynsym), a sample copies the
 * record it points to into a label set.
 *
 * The record, packed: trace_id[16], span_id[8], valid (u8), trace_flags
 * (u8), attrs_data_size (u16, host order): a 28-byte header, then
 * attrs_data_size bytes of {key u8, len u8, value[len]} entries; 640
 * bytes at most in all. Everything read is checked: a NULL or low pointer,
 * valid != 1 (before or after the copy: a torn record), a size past 612,
 * an entry running past the size, a NUL in a value: no labels. An
 * attribute is a label otel.attr.K (K: its key index; the key names of
 * the process context, OTEP 4719, are not read yet). HEAPPROF_OTEL_IDS=1
 * adds trace_id and span_id (hex) labels: one set per span, which the cap
 * on sets (labels.c) bounds.
 *
 * The variable's address in a thread comes from dlsym (which resolves a
 * TLS symbol for the calling thread, static or dynamic TLS), once per
 * thread, at its first sample; while no object defines it, the lookup is
 * repeated at most once a second in the process (`absent_until`, a
 * relaxed atomic). Runs on the sampled path only, the thread busy.
 */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "collect.h"
#include "labels.h"

#define REC_MAX 640
#define HDR 28
#define MAX_ATTRS 32

static _Atomic int64_t absent_until; /* monotonic seconds; 0: look now */
/* This thread's otel_thread_ctx_v1, once found. */
static __thread void *const *slot __attribute__((tls_model("initial-exec")));

static int64_t
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no system call */
	return ts.tv_sec;
}

static void
hex(char *out, const uint8_t *b, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = 0;
}

/* The label set of the record at rec, or NULL. */
static const heapprof_labels *
from_record(const uint8_t *rec)
{
	if ((uintptr_t)rec < 4096)
		return NULL;
	uint8_t b[REC_MAX];
	memcpy(b, rec, HDR);
	uint16_t size;
	memcpy(&size, b + 26, 2);
	if (b[24] != 1 || size > REC_MAX - HDR)
		return NULL;
	memcpy(b + HDR, rec + HDR, size);
	/* valid still 1 after the copy: not rewritten while we read */
	atomic_signal_fence(memory_order_seq_cst);
	if (*(const volatile uint8_t *)(rec + 24) != 1)
		return NULL;
	const char *kv[2 * (MAX_ATTRS + 2)];
	char text[MAX_ATTRS * 16 + REC_MAX + 64];
	size_t n = 0, at = 0;
	for (size_t p = HDR; p < (size_t)HDR + size;) {
		if (p + 2 > (size_t)HDR + size)
			return NULL;
		uint8_t key = b[p], len = b[p + 1];
		if (p + 2 + len > (size_t)HDR + size || n == MAX_ATTRS)
			return NULL;
		for (size_t i = 0; i < len; i++) /* (no memchr: a symbol
		                                  * bound in every process) */
			if (!b[p + 2 + i])
				return NULL;
		kv[2 * n] = text + at;
		memcpy(text + at, "otel.attr.", 10); /* no snprintf: ~1,500 */
		at += 10;                            /* instructions a sample */
		if (key >= 100)
			text[at++] = (char)('0' + key / 100);
		if (key >= 10)
			text[at++] = (char)('0' + key / 10 % 10);
		text[at++] = (char)('0' + key % 10);
		text[at++] = 0;
		kv[2 * n + 1] = text + at;
		memcpy(text + at, b + p + 2, len);
		text[at + len] = 0;
		at += len + 1u;
		n++;
		p += 2u + len;
	}
	if (heapprof__cfg.otel_ids) {
		static const uint8_t zero[16];
		if (memcmp(b, zero, 16)) {
			kv[2 * n] = "trace_id";
			kv[2 * n + 1] = text + at;
			hex(text + at, b, 16);
			at += 33;
			n++;
		}
		if (memcmp(b + 16, zero, 8)) {
			kv[2 * n] = "span_id";
			kv[2 * n + 1] = text + at;
			hex(text + at, b + 16, 8);
			n++;
		}
	}
	int rc;
	return n ? heapprof__labels_intern(kv, n, &rc) : NULL;
}

const heapprof_labels *
heapprof__otel_labels(void)
{
	if (HP_UNLIKELY(!slot)) {
		int64_t until = atomic_load_explicit(&absent_until,
		                                     memory_order_relaxed);
		if (until && now_s() < until)
			return NULL;
		void *a = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
		if (!a) {
			(void)dlerror(); /* our miss is not the program's error */
			atomic_store_explicit(&absent_until, now_s() + 1,
			                      memory_order_relaxed);
			return NULL;
		}
		slot = a;
	}
	const uint8_t *rec;
	memcpy(&rec, (const void *)slot, sizeof(rec));
	return from_record(rec);
}
