/*
 * lazylibs.h: libz and libm for the format code, through a table of
 * function pointers. The tool and libheapprof.a link both libraries (the
 * table is their functions: libfns.c); the shared profiler (libheapprof.so) is not
 * linked with them and fills the table only when a dump, an endpoint or an
 * API call first needs it (src/so/libs.c; issue 15: loading them cost
 * every process ~35 k instructions at start-up). A pointer table, not
 * lazily bound calls: those fail under LD_BIND_NOW or dlopen(RTLD_NOW).
 *
 * Include after <zlib.h> and <math.h>; call heapprof__lazy_libs() before
 * the first zlib or libm call of a path (0: the table is filled).
 */
#ifndef HEAPPROF_LAZYLIBS_H
#define HEAPPROF_LAZYLIBS_H

#include <math.h>
#include <zlib.h>

typedef struct hp_libfns {
	int (*deflateInit2_)(z_streamp, int, int, int, int, int, const char *,
	                     int);
	int (*deflate)(z_streamp, int);
	int (*deflateEnd)(z_streamp);
	int (*deflateReset)(z_streamp);
	int (*inflateInit2_)(z_streamp, int, const char *, int);
	int (*inflate)(z_streamp, int);
	int (*inflateEnd)(z_streamp);
	int (*inflateReset)(z_streamp);
	double (*exp)(double);
	double (*round)(double);
} hp_libfns;

/* Written before use: statically (linked), or once by heapprof__lazy_libs
 * (libheapprof.so), whose caller then reads it. */
extern hp_libfns heapprof__libfns;

int heapprof__lazy_libs(void);

#undef deflateInit2
#undef inflateInit2
#define deflateInit2(s, l, m, w, ml, st)                                       \
	heapprof__libfns.deflateInit2_((s), (l), (m), (w), (ml), (st),         \
	                               ZLIB_VERSION, (int)sizeof(z_stream))
#define inflateInit2(s, w)                                                     \
	heapprof__libfns.inflateInit2_((s), (w), ZLIB_VERSION,                 \
	                               (int)sizeof(z_stream))
#define deflate(s, f) heapprof__libfns.deflate((s), (f))
#define deflateEnd(s) heapprof__libfns.deflateEnd(s)
#define deflateReset(s) heapprof__libfns.deflateReset(s)
#define inflate(s, f) heapprof__libfns.inflate((s), (f))
#define inflateEnd(s) heapprof__libfns.inflateEnd(s)
#define inflateReset(s) heapprof__libfns.inflateReset(s)
#define exp(x) heapprof__libfns.exp(x)
#define round(x) heapprof__libfns.round(x)

#endif
