/*
 * dwarf_dl.c: binds libdw (and __cxa_demangle) at run time; see dwarf_dl.h.
 * The handles are loaded once per process and never closed.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>

#include "compiler.h"
#include "dwarf_dl.h"

static heapprof_libdw libdw HP_BIG_BSS;
static const heapprof_libdw *libdw_ok;
static const char *libdw_why;
static pthread_once_t libdw_once = PTHREAD_ONCE_INIT;

static heapprof_demangle_fn *demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;
static heapprof_demangle_fn *demangle_loaded;
static pthread_once_t demangle_loaded_once = PTHREAD_ONCE_INIT;
static _Atomic int demangle_looked; /* load_demangler_loaded has run */

static void
load_libdw(void)
{
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		libdw_why = "libdw.so.1 not found (Debian package libdw1)";
		return;
	}
	int missing = 0;
	/* dlsym returns void *; going through memcpy keeps -Wpedantic quiet
	 * about object-to-function pointer conversion. */
#define LOAD(name)                                                        \
	{                                                                 \
		void *sym = dlsym(h, #name);                              \
		if (!sym)                                                 \
			missing = 1;                                      \
		__builtin_memcpy(&libdw.name, &sym, sizeof(sym));         \
	}
	HEAPPROF_LIBDW_FUNCS(LOAD)
#undef LOAD
	if (missing) {
		libdw_why = "libdw.so.1 lacks a needed function (elfutils too old)";
		return;
	}
	libdw_ok = &libdw;
}

const heapprof_libdw *
heapprof__libdw(const char **why)
{
	pthread_once(&libdw_once, load_libdw);
	if (!libdw_ok && why)
		*why = libdw_why;
	return libdw_ok;
}

/* __cxa_demangle from a C++ runtime the process already has: global, or
 * loaded RTLD_LOCAL (as Python loads extensions); RTLD_NOLOAD never loads. */
static void *
find_loaded_demangler(void)
{
	static const char *const runtimes[] = {"libstdc++.so.6", "libc++abi.so.1",
	                                       "libc++.so.1"};
	void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	for (size_t i = 0; !sym && i < sizeof(runtimes) / sizeof(*runtimes); i++) {
		void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h) /* kept: the reference pins the library we call */
			sym = dlsym(h, "__cxa_demangle");
	}
	return sym;
}

static void
load_demangler_loaded(void)
{
	void *sym = find_loaded_demangler();
	__builtin_memcpy(&demangle_loaded, &sym, sizeof(sym));
	demangle_looked = 1;
}

int
heapprof__loader_changing(void)
{
	return *(volatile int *)&_r_debug.r_state != RT_CONSISTENT;
}

heapprof_demangle_fn *
heapprof__demangler_loaded(void)
{
	/* Not inside an interrupted dlopen or dlclose: the look's
	 * dlopen(RTLD_NOLOAD) ends by asserting that the list is consistent
	 * (status 127). That profile's C++ names stay mangled; a later dump
	 * looks. */
	if (!demangle_looked && heapprof__loader_changing())
		return NULL;
	pthread_once(&demangle_loaded_once, load_demangler_loaded);
	return demangle_loaded;
}

static void
load_demangler(void)
{
	void *sym = find_loaded_demangler();
	if (!sym) {
		void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
		if (h)
			sym = dlsym(h, "__cxa_demangle");
	}
	__builtin_memcpy(&demangle, &sym, sizeof(sym));
}

heapprof_demangle_fn *
heapprof__demangler(void)
{
	pthread_once(&demangle_once, load_demangler);
	return demangle;
}
