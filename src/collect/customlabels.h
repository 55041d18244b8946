/*
 * customlabels.h: labels from Polar Signals' custom labels (customlabels.c),
 * as the sampled path (labels.c) and the start-up (init.c, attach.c) see
 * them.
 */
#ifndef HEAPPROF_CUSTOMLABELS_H
#define HEAPPROF_CUSTOMLABELS_H

#include "heapprof.h"

/* The set of this thread's custom labels now, interned; NULL when the
 * process publishes none, the thread has none, or the record is invalid,
 * unreadable or rewritten while read. Sampled path only. */
const heapprof_labels *heapprof__customlabels_labels(void);
/* Finds custom_labels_current_set (ABI v1) or
 * custom_labels_thread_local_data (v0) and reads the process's readable
 * mappings. Outside malloc only; startup as heapprof__otel_resolve's. */
void heapprof__customlabels_resolve(int startup);
/* In a fork child (init.c); outside: it did not fork from inside the
 * profiler. */
void heapprof__customlabels_atfork_child(int outside);

#endif
