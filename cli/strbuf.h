/*
 * strbuf.h: a growable byte buffer for CLI output that is built whole and
 * then written at once (collapse, flame). Appends after a failed allocation
 * do nothing and leave err set, so callers check once at the end.
 */
#ifndef HEAPPROF_CLI_STRBUF_H
#define HEAPPROF_CLI_STRBUF_H

#include <stddef.h>

typedef struct cli_strbuf {
	char *p;
	size_t n, cap;
	int err; /* -ENOMEM after a failed append */
} cli_strbuf;

void cli_sb_add(cli_strbuf *b, const void *s, size_t n);
void cli_sb_str(cli_strbuf *b, const char *s);
void cli_sb_printf(cli_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void cli_sb_free(cli_strbuf *b);
/* heapprof_write_fn over a cli_strbuf (arg): 0 or -ENOMEM. */
int cli_sb_write(void *arg, const void *p, size_t n);

#endif
