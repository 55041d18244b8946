/*
 * hide.c: `--hide` and the default list of allocation wrappers for top,
 * collapse and flame (see hide.h). Owns the process's hide setting, its
 * option parsing, and its application to a names table: pprof's -hide
 * (FilterSamplesByName) removes the matching lines from each location,
 * so a stack loses its matching frames and the caller of a hidden leaf
 * becomes the leaf. Names are matched as displayed (pprof also tries the
 * function's source file name; heapprof does not).
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hide.h"

/* Functions that only forward to malloc and friends (and report, abort or
 * account): git and gnulib's x*, redis's z*, SQLite's, CPython's, glibc's
 * strdup family, GLib's g_*, OpenSSL's CRYPTO_*, FFmpeg's av_*, Ruby's
 * ruby_x*, Rust's global allocator shims. Anchored: whole names only. */
const char cli_hide_default_re[] =
	"^("
	"x(malloc|mallocz|mallocz_gently|calloc|zalloc|realloc|reallocarray|"
	"memdup|memdupz|strdup|strndup|nmalloc|nrealloc|charalloc|"
	"2nrealloc|2realloc|icalloc|imalloc|irealloc)|do_xmalloc|do_xmallocz|"
	"z(malloc|calloc|realloc|strdup|malloc_usable|calloc_usable|"
	"realloc_usable|trymalloc|trycalloc|tryrealloc|trymalloc_usable|"
	"trycalloc_usable|tryrealloc_usable|trymalloc_usable_internal|"
	"trycalloc_usable_internal|tryrealloc_usable_internal|"
	"malloc_no_tcache|calloc_num)|"
	"sqlite3(Malloc|MallocZero|Realloc|_malloc|_malloc64|_realloc|"
	"_realloc64|DbMallocRaw|DbMallocRawNN|DbMallocZero|DbRealloc|"
	"DbReallocOrFree|DbStrDup|DbStrNDup|MemMalloc|MemRealloc)|"
	"mallocWithAlarm|dbMallocRawFinish|dbReallocFinish|"
	"_?Py(Object_|Mem_|Mem_Raw)(Malloc|Calloc|Realloc)|"
	"_PyMem_Debug(Raw)?(Alloc|Malloc|Calloc|Realloc)|"
	"pymalloc_(alloc|realloc)|"
	"(__)?strn?dup|(__)?wcsdup|"
	"g_(malloc|malloc0|malloc_n|malloc0_n|realloc|realloc_n|try_malloc|"
	"try_malloc0|try_malloc_n|try_malloc0_n|try_realloc|try_realloc_n|"
	"strdup|strndup|memdup|memdup2|slice_alloc|slice_alloc0)|"
	"CRYPTO_(malloc|zalloc|realloc|clear_realloc|strdup|strndup|memdup)|"
	"av_(malloc|mallocz|calloc|realloc|strdup|strndup|memdup)|"
	"ruby_x(malloc|malloc2|calloc|realloc|realloc2)|"
	"__rust_(alloc|alloc_zeroed|realloc)|__rdl_(alloc|alloc_zeroed|realloc)"
	")$";

static const char *user_text; /* --hide, or NULL */
static int no_default;       /* --no-default-hide */
static int compiled;         /* user_re / def_re hold compiled expressions */
static regex_t user_re, def_re;
static int def_matched;       /* the default list hid a frame */
static char *active;          /* cli_hide_active's answer, malloc'd */

int
cli_hide_option(const char *cmd, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v = NULL;
	if (!strcmp(a, "--no-default-hide")) {
		no_default = 1;
		return 1;
	}
	if (!strcmp(a, "--hide") || !strcmp(a, "-hide")) {
		if (*i + 1 >= argc) {
			cli_err("%s: %s needs a regular expression", cmd, a);
			return -1;
		}
		v = argv[++*i];
	} else if (!strncmp(a, "--hide=", 7)) {
		v = a + 7;
	} else if (!strncmp(a, "-hide=", 6)) {
		v = a + 6;
	} else {
		return 0;
	}
	regex_t re;
	int e = regcomp(&re, v, REG_EXTENDED | REG_NOSUB);
	if (e) {
		char msg[256];
		regerror(e, &re, msg, sizeof(msg));
		cli_err("%s: --hide '%s': %s", cmd, v, msg);
		return -1;
	}
	regfree(&re);
	user_text = v; /* the last one wins, as pprof's flag */
	return 1;
}

static int
compile(void)
{
	if (compiled)
		return 0;
	if (user_text &&
	    regcomp(&user_re, user_text, REG_EXTENDED | REG_NOSUB))
		return -EINVAL; /* checked when parsed */
	if (!no_default &&
	    regcomp(&def_re, cli_hide_default_re, REG_EXTENDED | REG_NOSUB)) {
		if (user_text)
			regfree(&user_re);
		return -EINVAL;
	}
	compiled = 1;
	return 0;
}

int
cli_hide_names(cli_names *nm, size_t nlocs)
{
	if (!user_text && no_default)
		return 0;
	int rc = compile();
	if (rc)
		return rc;
	/* hidden[id]: 0 kept, 1 by --hide, 2 by the default list */
	uint8_t *hidden = calloc(nm->n ? nm->n : 1, 1);
	if (!hidden)
		return -ENOMEM;
	for (size_t id = 0; id < nm->n; id++) {
		const char *s = nm->v[id].s; /* NUL-terminated */
		if (user_text && !regexec(&user_re, s, 0, NULL, 0))
			hidden[id] = 1;
		else if (!no_default && !regexec(&def_re, s, 0, NULL, 0))
			hidden[id] = 2;
	}
	/* Compact each location's list in place (lists are disjoint and in
	 * location order, so writing never overtakes reading). */
	size_t out = 0;
	for (size_t i = 0; i < nlocs; i++) {
		uint32_t first = nm->loc_first[i], cnt = nm->loc_count[i];
		nm->loc_first[i] = (uint32_t)out;
		uint32_t kept = 0;
		for (uint32_t k = 0; k < cnt; k++) {
			uint32_t id = nm->loc_ids[first + k];
			if (hidden[id]) {
				if (hidden[id] == 2)
					def_matched = 1;
				continue;
			}
			nm->loc_ids[out++] = id;
			kept++;
		}
		nm->loc_count[i] = kept;
	}
	nm->nloc_ids = out;
	free(hidden);
	return 0;
}

const char *
cli_hide_active(void)
{
	if (!user_text && !def_matched)
		return NULL;
	free(active);
	active = NULL;
	if (!def_matched)
		return user_text;
	if (!user_text)
		return cli_hide_default_re;
	size_t n = strlen(user_text) + sizeof(cli_hide_default_re) + 2;
	if (!(active = malloc(n)))
		return user_text;
	snprintf(active, n, "%s|%s", user_text, cli_hide_default_re);
	return active;
}

void
cli_hide_print_filter(const char *key, const char *value)
{
	size_t k = strlen(key), v = strlen(value);
	if (k + 1 + v <= 80)
		printf("   %s=%s\n", key, value);
	else if (k + 1 >= 80)
		printf("   %.80s\xe2\x80\xa6\n", key);
	else
		printf("   %s=%.*s\xe2\x80\xa6\n", key, (int)(80 - k - 1), value);
}
