/* prog_peakx: exact peaks at rate 1 (every allocation sampled, so the
 * in-use estimate is the bytes in use). Phase 1: site_a 10 x 1000 B,
 * site_b 5 x 2000 B (in use 20000: the peak), free site_a's, site_c
 * 3 x 1000 B (13000). With "more": free site_b's, site_c 20 x 1000 B more
 * (23000 in use: a new peak, all site_c's). Prints the expected
 * "peak_space" of each site. Usage: prog_peakx [more] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *
site_a(void)
{
	return malloc(1000);
}

static void *
site_b(void)
{
	return malloc(2000);
}

static void *
site_c(void)
{
	return malloc(1000);
}

int
main(int argc, char **argv)
{
	void *a[10], *b[5], *c[23];
	setvbuf(stdout, NULL, _IONBF, 0); /* no stdio buffer in the totals */
	for (int i = 0; i < 10; i++)
		a[i] = site_a();
	for (int i = 0; i < 5; i++)
		b[i] = site_b();
	for (int i = 0; i < 10; i++)
		free(a[i]);
	for (int i = 0; i < 3; i++)
		c[i] = site_c();
	if (argc > 1 && !strcmp(argv[1], "more")) {
		for (int i = 0; i < 5; i++)
			free(b[i]);
		for (int i = 3; i < 23; i++)
			c[i] = site_c();
		printf("site_a 0 site_b 0 site_c 23000\n");
	} else {
		printf("site_a 10000 site_b 10000 site_c 0\n");
	}
	return 0;
}
