/*
 * otel.c: labels from the OpenTelemetry thread context (OTEP 4947).
 */
#include "collect.h"
#include "labels.h"

const heapprof_labels *
heapprof__otel_labels(void)
{
	return NULL;
}
