/*
 * rprog_remap.c: big blocks grown by realloc while others sit after them
 * (rel_remap.sh), so that the profiler moves a block's pages (mremap) and
 * then moves the moved block again, whose run is two mappings by then;
 * then blocks allocated where the failed moves left their runs. Every
 * byte checked; prints "ok".
 *
 * "rprog_remap limit": under an address-space limit, a 100 MiB block
 * moved once (a neighbour in its way) is grown to 150 MiB with 80 MiB of
 * the limit left, which glibc's mremap does in 49; prints "limit ok", or
 * "limit failed" if realloc returned NULL.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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

/* The process's address space (VmSize), read without allocating. */
static size_t
vmsize(void)
{
	static char buf[8192];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	char *s = strstr(buf, "VmSize:");
	return s ? (size_t)strtoul(s + 7, NULL, 10) << 10 : 0;
}

static int
limit(void)
{
	size_t v = vmsize();
	struct rlimit rl = {v + 1024 * M, v + 1024 * M};
	if (!v || setrlimit(RLIMIT_AS, &rl))
		return puts("no limit"), 3;
	unsigned char *a = malloc(100 * M), *b = malloc(M);
	if (!a || !b)
		return puts("no memory"), 3;
	fill(a, 100 * M, 1);
	a = realloc(a, 101 * M); /* b is in the way: moved */
	if (!a)
		return puts("no memory"), 3;
	/* Nothing allocated from here: 80 MiB of the limit left. */
	size_t left = 80 * M, used = vmsize();
	if (used + left < rl.rlim_cur &&
	    mmap(NULL, rl.rlim_cur - used - left, PROT_NONE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
		return puts("no filler"), 3;
	unsigned char *c = realloc(a, 150 * M);
	if (!c)
		return puts("limit failed"), 1;
	if (!check(c, 100 * M, 1))
		return puts("limit lost data"), 1;
	free(b);
	free(c);
	puts("limit ok");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "limit"))
		return limit();
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
