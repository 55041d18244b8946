/*
 * pb_build.h: small builders the unit tests share for writing profiles by
 * hand with the pb writer (src/format/pb.h).
 */
#ifndef HEAPPROF_TEST_PB_BUILD_H
#define HEAPPROF_TEST_PB_BUILD_H

#include <string.h>

#include "pb.h"

/* A ValueType message (type, unit string indexes) as field `field`. */
static inline void
vt(pb_writer *w, uint32_t field, uint64_t type, uint64_t unit)
{
	heapprof__pb_begin(w, field);
	heapprof__pb_uint_opt(w, 1, type);
	heapprof__pb_uint_opt(w, 2, unit);
	heapprof__pb_end(w);
}

/* n string-table entries. */
static inline void
strs(pb_writer *w, const char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		heapprof__pb_bytes_field(w, 6, s[i], strlen(s[i]));
}

#endif
