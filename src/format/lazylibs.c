/*
 * lazylibs.c: the default heapprof__lazy_libs (see lazylibs.h): nothing to
 * do where libz and libm are linked (the tool, libheapprof.a). The shared
 * profiler overrides it (src/so/libs.c).
 */
#include "lazylibs.h"

__attribute__((weak)) int
heapprof__lazy_libs(void)
{
	return 0;
}
