/*
 * labels.h: label sets (labels.c) and the OpenTelemetry thread context
 * (otel.c), as the sampled path and the snapshot see them.
 */
#ifndef HEAPPROF_LABELS_H
#define HEAPPROF_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "heapprof.h"

/* The thread's set (heapprof_labels_use), NULL: none. Initial-exec TLS,
 * written by its own thread only, read by its sampled path only. */
extern __attribute__((visibility("hidden"))) __thread const heapprof_labels
	*heapprof__labels_cur __attribute__((tls_model("initial-exec")));

/* Interns the n pairs kv[2i] = kv[2i+1]. *rc: 0 (NULL: the empty set),
 * 1 (capped: the overflow set is returned), -EINVAL, -ENOMEM. No lock, no
 * allocation but the arena's; usable on the sampled path. */
const heapprof_labels *heapprof__labels_intern(const char *const *kv,
                                               size_t n, int *rc);
/* Whether s holds exactly the m sorted pairs k[i] = v[i]. */
int heapprof__labels_equal(const heapprof_labels *s, const char *const *k,
                           const char *const *v, size_t m);
/* The set's pairs as a writer wants them (s NULL: none). */
void heapprof__labels_view(const heapprof_labels *s, heapprof_record_labels *out);
/* Sets made, the cap, and interning refused by the cap so far. */
void heapprof__labels_stats(uint64_t *sets, uint64_t *cap, uint64_t *refused);

/* The set a sample taken now in this thread is recorded under: the
 * thread's own (heapprof_labels_use), else the one its OpenTelemetry
 * thread context gives (otel.c), else NULL. Sampled path only. */
const heapprof_labels *heapprof__labels_sample(void);

/* otel.c: the set of this thread's OpenTelemetry thread context
 * (otel_thread_ctx_v1) now, interned; NULL when there is none, it is
 * invalid or torn, or it has no attributes. Sampled path only. */
const heapprof_labels *heapprof__otel_labels(void);
/* otel.c: finds otel_thread_ctx_v1 (dlsym: never on the malloc path).
 * startup: called by the constructor of a library loaded with the
 * program (every object's TLS static); else (attach) checked to be in
 * static TLS. */
void heapprof__otel_resolve(int startup);

#endif
