/*
 * demangle.h: C++ linkage names -> display names (see demangle.c).
 */
#ifndef HEAPPROF_DEMANGLE_H
#define HEAPPROF_DEMANGLE_H

/*! heapprof__demangle() :
 *  `mangled` (an Itanium C++ ABI name, "_Z...") demangled: in full if
 *  `full`, else simplified as pprof shows names by default (no parameters,
 *  template arguments or return type: "ns::Class::method").
 *  @return : a malloc'd string, or NULL (not mangled, no demangler, no
 *  memory). */
char *heapprof__demangle(const char *mangled, int full);

#endif
