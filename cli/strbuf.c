/*
 * strbuf.c: growable output buffer (see strbuf.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static int
grow(cli_strbuf *b, size_t need)
{
	if (b->err)
		return -1;
	if (b->n + need < b->n) {
		b->err = -ENOMEM;
		return -1;
	}
	if (b->n + need <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 4096;
	while (nc < b->n + need) {
		if (nc > (size_t)-1 / 2) {
			b->err = -ENOMEM;
			return -1;
		}
		nc *= 2;
	}
	char *np = realloc(b->p, nc);
	if (!np) {
		b->err = -ENOMEM;
		return -1;
	}
	b->p = np;
	b->cap = nc;
	return 0;
}

void
cli_sb_add(cli_strbuf *b, const void *s, size_t n)
{
	if (n && grow(b, n) == 0) {
		memcpy(b->p + b->n, s, n);
		b->n += n;
	}
}

void
cli_sb_str(cli_strbuf *b, const char *s)
{
	cli_sb_add(b, s, strlen(s));
}

void
cli_sb_printf(cli_strbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		cli_sb_add(b, tmp, (size_t)n);
		return;
	}
	if (grow(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)n;
}

void
cli_sb_free(cli_strbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
	b->err = 0;
}

int
cli_sb_write(void *arg, const void *p, size_t n)
{
	cli_strbuf *b = arg;
	cli_sb_add(b, p, n);
	return b->err;
}
