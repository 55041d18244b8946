/*
 * rprog_slack.c: a program that grows its blocks into the slack that
 * malloc_usable_size reports, and calls realloc only when that runs out,
 * as redis's sds strings and listpacks do (issue 30, item 1).
 *
 *   rprog_slack BLOCKS APPENDS ENTRY
 *
 * BLOCKS buffers, each appended APPENDS entries of ENTRY bytes, round
 * robin. An append that does not fit in the usable size reallocs to exactly
 * what is needed. At the end every buffer is held and the program prints
 * "EXPECT site_slack AO AB IO IB" with IO the number of buffers and IB the
 * bytes they hold (what a profile's inuse must say), then "usable_sum N",
 * the sum of malloc_usable_size over the buffers, and "reallocs N".
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t used;
};

__attribute__((noinline)) static void *
site_slack(void *p, size_t n)
{
	void *q = realloc(p, n);
	__asm__ volatile("" ::: "memory");
	return q;
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: rprog_slack BLOCKS APPENDS ENTRY\n");
		return 2;
	}
	size_t nb = strtoul(argv[1], NULL, 10), na = strtoul(argv[2], NULL, 10);
	size_t entry = strtoul(argv[3], NULL, 10);
	struct buf *b = calloc(nb, sizeof(*b));
	char *chunk = malloc(entry);
	if (!b || !chunk)
		return 1;
	memset(chunk, 'x', entry);
	unsigned long reallocs = 0;
	for (size_t a = 0; a < na; a++) {
		for (size_t i = 0; i < nb; i++) {
			size_t need = b[i].used + entry;
			if (!b[i].p || malloc_usable_size(b[i].p) < need) {
				char *q = site_slack(b[i].p, need);
				if (!q)
					return 1;
				b[i].p = q;
				reallocs++;
			}
			memcpy(b[i].p + b[i].used, chunk, entry);
			b[i].used = need;
		}
	}
	size_t held = 0, usable = 0;
	for (size_t i = 0; i < nb; i++) {
		held += b[i].used;
		usable += malloc_usable_size(b[i].p);
		if (b[i].p[b[i].used - 1] != 'x')
			return 3;
	}
	/* alloc values depend on how often the allocator let it grow in
	 * place: only inuse is checked (-1: not compared). */
	printf("EXPECT site_slack -1 -1 %zu %zu\n", nb, held);
	printf("usable_sum %zu\n", usable);
	printf("reallocs %lu\n", reallocs);
	return 0;
}
