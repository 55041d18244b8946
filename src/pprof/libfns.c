/*
 * libfns.c: the table of lazylibs.h where libz and libm are linked (the
 * tool, libheapprof.a): their functions from the start. Not linked into
 * libheapprof.so, whose src/so/libs.c fills the table on first use.
 */
#include "lazylibs.h"

hp_libfns heapprof__libfns = {
	deflateInit2_, deflate, deflateEnd, deflateReset, inflateInit2_,
	inflate, inflateEnd, inflateReset, exp, round,
};

int
heapprof__lazy_libs(void)
{
	return 0;
}
