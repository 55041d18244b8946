/*
 * otel_procctx.h: the attribute key names of the OpenTelemetry process
 * context (OTEP 4719's OTEL_CTX mapping, read by otel_procctx.c) as the
 * sampled path sees them (otel.c).
 */
#ifndef HEAPPROF_OTEL_PROCCTX_H
#define HEAPPROF_OTEL_PROCCTX_H

#include <stdint.h>

/* The key names of threadlocal.attribute_key_map: name[i] names key index
 * i (NULL: that entry is not a usable string). Made once, never changed
 * nor freed (the arena); published whole by a release store. */
typedef struct hp_keymap {
	uint32_t n; /* entries: indexes 0..n-1 */
	const char *name[256];
} hp_keymap;

/* The table the sampled path reads (acquire), NULL: no names (numeric
 * labels otel.attr.K). Written by otel_procctx.c only. */
extern __attribute__((visibility("hidden"))) _Atomic(const hp_keymap *)
	heapprof__otel_keymap;

/* otel.c found otel_thread_ctx_v1: look for the process context now
 * (/proc/self/maps, once) and from now on at prctl and dump time. Never
 * on the malloc path. */
void heapprof__procctx_enable(void);
/* The program named a mapping (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME,
 * addr, len, name), sandbox.c's interposer, after the call): the OTEP's
 * publication and update both end so. */
void heapprof__procctx_prctl(unsigned long addr, unsigned long name);
/* A dump is starting (snapshot.c): re-read the context if its timestamp
 * changed, or look for it if none is known yet. */
void heapprof__procctx_poll(void);

#endif
