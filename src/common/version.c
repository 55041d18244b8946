/*
 * version.c: owns the build's version string. The Makefile writes
 * build/gen/hp_version.h (HP_BUILD_COMMIT: `git rev-parse` in a clone, else
 * tools/commit.txt as `git archive` filled it in); a build without it (the
 * fuzz targets compile this file directly) says "unknown".
 */
#include "heapprof.h"
#include "version.h"

#if defined(__has_include)
#if __has_include("hp_version.h")
#include "hp_version.h"
#endif
#endif
#ifndef HP_BUILD_COMMIT
#define HP_BUILD_COMMIT "unknown"
#endif

#define HP_STR_(x) #x
#define HP_STR(x) HP_STR_(x)

const char *
heapprof__version_string(void)
{
	return "heapprof " HP_STR(HEAPPROF_VERSION_MAJOR) "." HP_STR(
	        HEAPPROF_VERSION_MINOR) " (commit " HP_BUILD_COMMIT ")";
}
