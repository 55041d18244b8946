/*
 * dwarf_sym.h: code address -> source frames (function, file, line, inlined
 * callees as extra frames, innermost first) with elfutils' libdwfl, loaded
 * by dlopen (dwarf_dl.h). Separate debug info is found by build id
 * (ROOT/.build-id/xx/yyyy.debug) and by .gnu_debuglink (next to the file,
 * in its .debug/ directory, and ROOT/<the file's directory>/), for every
 * debug root given (default /usr/lib/debug). Files without DWARF fall back
 * to their symbol tables (names only).
 *
 * Each file is opened once per cache. A file whose GNU build id differs
 * from the mapping's (or that has none when the mapping has one) is
 * refused: no frames, and one warning through the caller's hook. Strings
 * returned stay valid until the cache is freed. Not thread-safe: one user
 * at a time per cache.
 */
#ifndef HEAPPROF_DWARF_SYM_H
#define HEAPPROF_DWARF_SYM_H

#include <stddef.h>
#include <stdint.h>

#include "heapprof.h"

typedef struct heapprof_dwsym heapprof_dwsym;

/* Called once per refused or unreadable file: `file` and a message. */
typedef void(heapprof_dwsym_warn_fn)(void *arg, const char *file,
                                     const char *msg);

typedef struct heapprof_dwsym_options {
	/* Debug roots (each searched by build id and by debuglink). NULL:
	 * {"/usr/lib/debug"}. An empty list (ndebug_dirs 0, debug_dirs not
	 * NULL) searches only next to the file. */
	const char *const *debug_dirs;
	size_t ndebug_dirs;
	int demangle; /* HEAPPROF_DEMANGLE_*: how C++ names are shown */
	heapprof_dwsym_warn_fn *warn; /* may be NULL */
	void *warn_arg;
} heapprof_dwsym_options;

/* Display forms of C++ names (the system name stays the linkage name). */
enum {
	HEAPPROF_DEMANGLE_SIMPLE = 0, /* as pprof shows them: "ns::C::f" */
	HEAPPROF_DEMANGLE_FULL = 1,   /* with parameters and templates */
	HEAPPROF_DEMANGLE_NONE = 2,   /* the linkage name */
};

/* File states (heapprof__dwsym_file_status). */
enum {
	HEAPPROF_DWSYM_OK = 0,      /* opened; frames available */
	HEAPPROF_DWSYM_NOFILE = 1,  /* cannot be opened */
	HEAPPROF_DWSYM_NOTELF = 2,  /* not an ELF file we can read */
	HEAPPROF_DWSYM_BUILDID = 3, /* build id differs from the mapping's */
	HEAPPROF_DWSYM_NOLIBDW = 4, /* libdw unavailable */
};

/*! heapprof__dwsym_new() :
 *  @opt may be NULL. @return : a cache, or NULL (no memory). Works without
 *  libdw too: every file then reports HEAPPROF_DWSYM_NOLIBDW. */
heapprof_dwsym *heapprof__dwsym_new(const heapprof_dwsym_options *opt);
void heapprof__dwsym_free(heapprof_dwsym *s);

/* NULL if libdw can be used, else why not (static text). */
const char *heapprof__dwsym_unavailable(void);

/*! heapprof__dwsym_file_status() :
 *  Opens `path` (once) and checks it against `build_id` (hex; NULL or ""
 *  accepts any). @return : HEAPPROF_DWSYM_*. *has_dwarf (if not NULL):
 *  1 if line information (the file's or a separate debug file's) exists. */
int heapprof__dwsym_file_status(heapprof_dwsym *s, const char *path,
                                const char *build_id, int *has_dwarf);

/*! heapprof__dwsym_frames() :
 *  The frames of runtime address `addr` in mapping `m`, read from the file
 *  `path` (NULL: m->file), innermost first, at most `cap`.
 *  @return : the number written (0: nothing known, or the file refused). */
size_t heapprof__dwsym_frames(heapprof_dwsym *s, const heapprof_mapping *m,
                              const char *path, uint64_t addr,
                              heapprof_frame *out, size_t cap);

/* heapprof_symbolize_frames_fn over m->file (arg: the cache). */
size_t heapprof__dwsym_symbolize_frames(void *arg, uint64_t addr,
                                        const heapprof_mapping *m,
                                        heapprof_frame *out, size_t cap);

/* heapprof_symbolize_fn (arg: the cache): the name of the function the
 * code at `addr` was compiled into (the outermost frame). */
const char *heapprof__dwsym_symbolize(void *arg, uint64_t addr,
                                      const heapprof_mapping *m);

#endif
