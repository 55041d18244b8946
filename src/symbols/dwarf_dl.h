/*
 * dwarf_dl.h: elfutils' libdw (libdw.so.1, which carries libdwfl) and the
 * C++ demangler, bound at run time with dlopen(RTLD_LOCAL) instead of linked.
 * Neither libheapprof.so nor the CLI gets a NEEDED entry for them: a process
 * that never asks for DWARF symbolization never loads them, and a machine
 * without libdw1 still runs everything else (the symbolizer reports why it
 * is unavailable). Compiling needs the headers only (Debian libdw-dev).
 */
#ifndef HEAPPROF_DWARF_DL_H
#define HEAPPROF_DWARF_DL_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

/* Every libdw entry point the symbolizer uses. */
#define HEAPPROF_LIBDW_FUNCS(X)                                               \
	X(dwfl_begin) X(dwfl_end) X(dwfl_errno) X(dwfl_errmsg)                \
	X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end)            \
	X(dwfl_standard_find_debuginfo) X(dwfl_build_id_find_elf)            \
	X(dwfl_offline_section_address) X(dwfl_module_getelf)                 \
	X(dwfl_module_getdwarf) X(dwfl_module_addrdie) X(dwfl_module_addrinfo) \
	X(dwarf_getsrc_die) X(dwarf_linesrc) X(dwarf_lineno)                  \
	X(dwarf_nextcu) X(dwarf_ranges)                                       \
	X(dwarf_child) X(dwarf_siblingof) X(dwarf_offdie)                     \
	X(dwarf_dieoffset) X(dwarf_tag) X(dwarf_attr) X(dwarf_attr_integrate) \
	X(dwarf_formstring) X(dwarf_formudata) X(dwarf_diename)               \
	X(dwarf_getsrcfiles) X(dwarf_filesrc) X(dwarf_decl_line)

#define HEAPPROF_LIBDW_FIELD(name) __typeof__(name) *name;

typedef struct heapprof_libdw {
	HEAPPROF_LIBDW_FUNCS(HEAPPROF_LIBDW_FIELD)
} heapprof_libdw;

/*! heapprof__libdw() :
 *  Loads libdw.so.1 on the first call (thread-safe) and returns its entry
 *  points, or NULL with *why (if not NULL) set to a static explanation. */
const heapprof_libdw *heapprof__libdw(const char **why);

/* The C++ ABI demangler (__cxa_demangle), from the process if it has one,
 * else from libstdc++.so.6; NULL if neither is available. */
typedef char *(heapprof_demangle_fn)(const char *mangled, char *buf,
                                     size_t *len, int *status);
heapprof_demangle_fn *heapprof__demangler(void);
/* The same, from a C++ runtime already in the process only: never loads a
 * library (for the in-process writer); NULL if there is none. */
heapprof_demangle_fn *heapprof__demangler_loaded(void);

/* Whether dlopen or dlclose is in the middle of changing the list of
 * loaded objects (_r_debug's state, the debuggers' interface): a dump in
 * a signal handler that interrupted one (the exit dump of a handler's
 * exit() included) must not call the loader, which would nest in the
 * interrupted call's half-made state. */
int heapprof__loader_changing(void);

#endif
