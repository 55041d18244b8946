/*
 * hide.h: pprof's -hide for top, collapse and flame: frames whose function
 * name matches a regular expression are removed from every stack (the
 * caller of a hidden leaf gets its flat), plus a default list of
 * well-known allocation wrappers (xmalloc, zmalloc, sqlite3Malloc,
 * _PyObject_Malloc, __strdup, g_malloc, ...) hidden unless
 * --no-default-hide. One setting per process (the CLI runs one
 * subcommand); cli_names_build applies it to every profile it names.
 */
#ifndef HEAPPROF_CLI_HIDE_H
#define HEAPPROF_CLI_HIDE_H

#include "prof_names.h"

/* The default list: one anchored POSIX extended (and RE2) expression. */
extern const char cli_hide_default_re[];

/* If argv[*i] is a hide option (--hide RE, --hide=RE, -hide RE, -hide=RE,
 * --no-default-hide), consumes it (and its argument) and returns 1; 0 if
 * it is not one; -1 after printing "CMD: why" (missing or bad regex). */
int cli_hide_option(const char *cmd, int argc, char **argv, int *i);

/* Removes the hidden names from the lists of nm's nlocs locations (they
 * shrink; a location may be left with none). 0 or -ENOMEM. */
int cli_hide_names(cli_names *nm, size_t nlocs);

/* The expression to give `go tool pprof -hide=` for the same result, or
 * NULL when nothing is hidden (no --hide, and the default list matched no
 * frame): what `heapprof top` prints as "hide=" under "Active filters:". */
const char *cli_hide_active(void);

/* Prints "   KEY=VALUE" as pprof prints an active filter: cut after 80
 * bytes, with "…". */
void cli_hide_print_filter(const char *key, const char *value);

/* The usage lines for the options, for each command's --help. */
#define CLI_HIDE_USAGE                                                        \
	"  --hide REGEX         remove the frames whose function name\n"       \
	"                       matches REGEX (POSIX extended) from every\n"   \
	"                       stack, as pprof's -hide\n"                      \
	"  --no-default-hide    keep the well-known allocation wrappers\n"     \
	"                       (xmalloc, zmalloc, sqlite3Malloc, g_malloc,\n" \
	"                       _PyObject_Malloc, __strdup, ...: heapprof(1))\n" \
	"                       hidden by default\n"

#endif
