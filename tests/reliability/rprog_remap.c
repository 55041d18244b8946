/*
 * rprog_remap.c: big blocks grown by realloc while others sit after them
 * (rel_remap.sh), so that the profiler moves a block's pages (mremap) and
 * then moves the moved block again, whose run is two mappings by then;
 * then blocks allocated where the failed moves left their runs. Every
 * byte checked; prints "ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M ((size_t)1 << 20)

static void
fill(unsigned char *p, size_t n, unsigned s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + s);
}

static int
check(const unsigned char *p, size_t n, unsigned s)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 7 + s))
			return 0;
	return 1;
}

int
main(void)
{
	unsigned char *keep[8];
	for (int r = 0; r < 4; r++) {
		unsigned char *a = malloc(M), *b = malloc(M);
		fill(a, M, 1);
		fill(b, M, 2);
		a = realloc(a, 2 * M); /* b is in the way: moved */
		if (!a || !check(a, M, 1))
			return puts("realloc 1 lost data"), 1;
		fill(a, 2 * M, 3);
		unsigned char *c = malloc(M), *d = malloc(M); /* a's old place, after a */
		fill(c, M, 4);
		fill(d, M, 5);
		a = realloc(a, 4 * M); /* moved again: two mappings */
		if (!a || !check(a, 2 * M, 3))
			return puts("realloc 2 lost data"), 1;
		fill(a, 4 * M, 6);
		unsigned char *e = malloc(4 * M), *f = calloc(1, 6 * M);
		if (!e || !f)
			return puts("no memory"), 1;
		fill(e, 4 * M, 7);
		for (size_t i = 0; i < 6 * M; i++)
			if (f[i])
				return puts("calloc not zeroed"), 1;
		if (!check(a, 4 * M, 6) || !check(b, M, 2) || !check(c, M, 4) ||
		    !check(d, M, 5) || !check(e, 4 * M, 7))
			return puts("a block changed"), 1;
		free(b);
		free(c);
		free(d);
		free(e);
		free(f);
		keep[r] = a;
	}
	for (int r = 0; r < 4; r++)
		free(keep[r]);
	puts("ok");
	return 0;
}
