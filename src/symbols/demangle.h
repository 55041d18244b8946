/*
 * demangle.h: C++ linkage names -> display names (see demangle.c).
 */
#ifndef HEAPPROF_DEMANGLE_H
#define HEAPPROF_DEMANGLE_H

#include <stddef.h>

#include "dwarf_dl.h"

/*! heapprof__demangle() :
 *  `mangled` (an Itanium C++ ABI name, "_Z...") demangled: in full if
 *  `full`, else simplified as pprof shows names by default (no parameters,
 *  template arguments or return type: "ns::Class::method").
 *  @return : a malloc'd string, or NULL (not mangled, no demangler, no
 *  memory). */
char *heapprof__demangle(const char *mangled, int full);

/* The same with a given demangler (NULL: none, returns NULL). */
char *heapprof__demangle_with(heapprof_demangle_fn *dm, const char *mangled,
                              int full);

/* The length of a symbol name without its version suffix ("@@GLIBC_2.34",
 * "@GLIBC_2.2.5"), as .symtab spells versioned definitions. */
size_t heapprof__sym_unversioned_len(const char *name);

/* Whether name[0..n) (a linkage name) is an allocator entry point of C++:
 * operator new / new[] in their plain, nothrow and aligned forms. Stacks
 * of a profile start below these frames, at the code that allocates. */
int heapprof__is_alloc_entry(const char *name, size_t n);

#endif
