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
 * attribute is a label named as the process context's
 * threadlocal.attribute_key_map names its key index (OTEP 4719,
 * otel_procctx.c: one pointer loaded here), else otel.attr.K (K: its key
 * index). HEAPPROF_OTEL_IDS=1
 * adds trace_id and span_id (hex) labels: one set per span, which the cap
 * on sets (labels.c) bounds.
 *
 * Where the variable is comes from the loaded objects' own symbol tables
 * (their .gnu.hash, walked with dl_iterate_phdr by tlssym.c, shared with
 * customlabels.c: the variable's offset in
 * its object's TLS block plus that block's address in this thread), once,
 * by the constructor (or heapprof_attach_start's dlsym), never on the
 * sampled path. At start-up a failing dlsym cost every process 8 page
 * faults (its code and dlerror's in libc and the loader) and ~5 k
 * instructions; the walk reads hash pages the loader's relocation already
 * read. dlsym takes the loader's lock, and a sample may be taken where
 * the thread holds the loader's dl_iterate_phdr lock (a callback that
 * allocates): against a dlopen in another thread (the loader's lock, then
 * that one) the two threads deadlocked (rel.otel.dlpi_dlopen). It also
 * cleared a pending dlerror() of the program's. The variable must be in
 * static TLS (a library loaded with the program, or given static TLS):
 * then it lies at the same offset from the thread pointer in every
 * thread, which is all the sampled path computes (`off`). An SDK that is
 * dlopen'd later is not read (its TLS is per-thread memory that only
 * __tls_get_addr finds, which may allocate).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "collect.h"
#include "labels.h"
#include "otel_procctx.h"
#include "tlssym.h"

#define REC_MAX 640
#define HDR 28
#define MAX_ATTRS 32

/* otel_thread_ctx_v1's offset from the thread pointer, valid when
 * `found` (set once, before sampling begins or with a release store). */
static intptr_t off;
static _Atomic int found;

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
	const hp_keymap *km =
		atomic_load_explicit(&heapprof__otel_keymap, memory_order_acquire);
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
		if (km && key < km->n && km->name[key]) {
			kv[2 * n] = km->name[key]; /* the arena's: never freed */
		} else {
			kv[2 * n] = text + at;
			memcpy(text + at, "otel.attr.", 10); /* no snprintf: ~1,500 */
			at += 10;                   /* instructions a sample */
			if (key >= 100)
				text[at++] = (char)('0' + key / 100);
			if (key >= 10)
				text[at++] = (char)('0' + key / 10 % 10);
			text[at++] = (char)('0' + key % 10);
			text[at++] = 0;
		}
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
	if (!atomic_load_explicit(&found, memory_order_acquire))
		return NULL;
	const uint8_t *rec;
	memcpy(&rec, (const void *)(heapprof__thread_pointer() + (uintptr_t)off), sizeof(rec));
	return from_record(rec);
}

HP_RARE void
heapprof__otel_resolve(int startup)
{
	if (!atomic_load_explicit(&found, memory_order_relaxed) &&
	    heapprof__tls_static_off("otel_thread_ctx_v1", startup, NULL, &off)) {
		atomic_store_explicit(&found, 1, memory_order_release);
		heapprof__procctx_enable(); /* the key names (otel_procctx.c) */
	}
}
