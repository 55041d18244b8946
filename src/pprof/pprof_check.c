/*
 * pprof_check.c: heapprof_pprof_check(), the public validate-only entry
 * point over the pprof decoder.
 */
#include "heapprof.h"
#include "pprof_dec.h"

HP_EXPORT int
heapprof_pprof_check(const void *data, size_t len, size_t limit)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	if (limit)
		d.limit = limit;
	int rc = heapprof__pprof_check(&d, data, len);
	heapprof__pprof_dec_free(&d);
	return rc;
}
