/*
 * lazylibs.h: libz and libm for the format code. The tool links them; the
 * shared profiler (libheapprof.so) loads them only when a dump, an
 * endpoint or an API call first needs them (issue 15: loading them cost
 * every process ~35 k instructions at start-up). Call heapprof__lazy_libs()
 * before the first zlib or libm call of a path; 0 once they are there.
 */
#ifndef HEAPPROF_LAZYLIBS_H
#define HEAPPROF_LAZYLIBS_H

int heapprof__lazy_libs(void);

#endif
