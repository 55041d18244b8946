/*
 * prof_names.h: the names of a profile's frames, shared by the CLI commands
 * that print stacks (top, collapse, flame). Every location gets one name per
 * Line (innermost first, as pprof's inlined frames are stored), demangled
 * where pprof demangles (name equal to system_name); a Line without a
 * function name, or a location without lines, is named by the ELF symbol of
 * its mapping's file (symbol cache) if the mapping is not marked symbolized,
 * else "[file]" as go tool pprof -top names it, else "<unknown>".
 * Names are interned: equal strings get one id. Also the sample-index rule
 * and the open-error message that those commands share.
 */
#ifndef HEAPPROF_CLI_PROF_NAMES_H
#define HEAPPROF_CLI_PROF_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "heapprof.h"
#include "elffile.h"
#include "pprof_dec.h"

typedef struct cli_name {
	char *s; /* NUL-terminated copy */
	size_t n;
} cli_name;

typedef struct cli_names {
	cli_name *v; /* by id */
	size_t n, cap;
	uint32_t *slots; /* name hash -> id + 1 */
	size_t nslots;
	/* per decoder location i: ids loc_ids[loc_first[i] ..+ loc_count[i]),
	 * innermost line first */
	uint32_t *loc_first, *loc_count, *loc_ids;
	size_t nloc_ids, loc_ids_cap;
	heapprof_mapping *maps; /* per decoder mapping, NUL-terminated strings */
	size_t nmaps;
	uint8_t *map_symbolized; /* per mapping: has_functions/files/lines */
	heapprof_symcache *syms;
} cli_names;

/* Names every location of the opened decoder d. 0 or a negative error
 * (HEAPPROF_E* from the decoder, -ENOMEM). Free with cli_names_free even
 * after an error. */
int cli_names_build(cli_names *nm, pprof_dec *d);
void cli_names_free(cli_names *nm);

/* The id of the name s[0..n), created on first use; -1: no memory. */
long cli_names_intern(cli_names *nm, const char *s, size_t n);

/* The name ids of decoder location li, innermost first. */
static inline const uint32_t *
cli_names_loc(const cli_names *nm, uint32_t li, uint32_t *count)
{
	*count = nm->loc_count[li];
	return nm->loc_ids + nm->loc_first[li];
}

/* pprof's SampleIndexByName: want NULL = default_sample_type, else the last
 * type; a number is an index; "inuse_" may be left off. Returns the index,
 * or -1 after printing "CMD: ..." (with the profile's types). */
long cli_pick_sample_index(const pprof_dec *d, const char *cmd,
                           const char *want);

/* If type vi is an inuse_ type that is 0 in every sample: says so on
 * stderr, naming peak_ (if the profile has it) and alloc_; returns 1. */
int cli_note_empty_inuse(pprof_dec *d, const char *cmd, const char *path,
                         long vi);

/* cli_pick_sample_index, for views that draw one type (collapse, flame):
 * if the type is 0 in every sample and none was asked for (inuse_space of
 * a program that freed everything), the matching peak_ type, else alloc_, else the
 * first type with values, with a note on stderr. -1: bad choice (printed),
 * -2: nothing to show (printed: "the profile is empty"). */
long cli_pick_nonempty_index(pprof_dec *d, const char *cmd, const char *path,
                             const char *want);

/* Prints why decoding (heapprof__pprof_check) failed with rc on
 * buf[0..len) read from path: "CMD: PATH: error: fault" (fault: the
 * decoder's detail, or NULL), or a hint for legacy text profiles. */
void cli_open_error(const char *cmd, const char *path, const uint8_t *buf,
                    size_t len, int rc, const char *fault);

/* Reads path ("-": stdin) as cli_read_file does; a legacy text heap
 * profile (heapprof's --text output, gperftools, Go's debug=1) comes back
 * converted to profile.proto, as go tool pprof reads it. 0 or -errno. */
int cli_read_profile(const char *path, uint8_t **out, size_t *len);

/* A profile read from a file, decoded and named. */
typedef struct cli_prof {
	uint8_t *buf;
	size_t len;
	pprof_dec d;
	cli_names nm;
} cli_prof;

/* Reads path ("-": stdin), opens it and names its locations. Returns 0, or
 * 1 after printing "CMD: PATH: why". Free with cli_prof_free either way. */
int cli_prof_load(cli_prof *p, const char *cmd, const char *path);
void cli_prof_free(cli_prof *p);

#endif
