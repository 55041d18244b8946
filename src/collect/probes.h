/*
 * probes.h: the OpenTelemetry memory-profiling USDT probes (issue 33),
 * as opentelemetry-ebpf-profiler's design doc 00003 (memory profiling,
 * the RFC as merged) defines them, provider otel_memory:
 *   alloc(void *user, uint64_t size, uint64_t weight): a sampled
 *     allocation: its pointer, the bytes asked for, and the unbiased byte
 *     weight the sample stands for (what the agent adds to alloc_space);
 *   free(void *ptr): a sampled pointer is freed.
 * Fired only on the sampled path and on the free of a sampled pointer
 * (slowpath.c), each behind its USDT semaphore: the counter a tracer
 * (bpftrace, the eBPF agent) raises when it attaches, so with nothing
 * attached a probe costs one load and a branch, on the sampled path only.
 * <sys/sdt.h> is Debian's systemtap-sdt-dev (a build dependency).
 */
#ifndef HEAPPROF_PROBES_H
#define HEAPPROF_PROBES_H

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* The semaphores (slowpath.c defines them, in .probes as sdt.h wants):
 * written by the tracer through /proc/PID/mem or ptrace, read here. */
extern __attribute__((visibility("hidden"))) volatile unsigned short
	otel_memory_alloc_semaphore, otel_memory_free_semaphore;

#define HP_PROBE_ALLOC_ON() __builtin_expect(otel_memory_alloc_semaphore != 0, 0)
#define HP_PROBE_FREE_ON() __builtin_expect(otel_memory_free_semaphore != 0, 0)
#define HP_PROBE_ALLOC(p, size, weight)                                        \
	STAP_PROBE3(otel_memory, alloc, (p), (uint64_t)(size), (uint64_t)(weight))
#define HP_PROBE_FREE(p) STAP_PROBE1(otel_memory, free, (p))

#endif
