/*
 * prog_api.c: drives the C API of a preloaded (or linked) heapprof: makes
 * allocations, then writes the same heap state as pprof and as legacy text
 * through heapprof_dump(), and a file through heapprof_dump_file().
 * usage: prog_api OUT_PREFIX   (writes OUT_PREFIX.pb.gz, .heap, .file.pb.gz)
 * Exit 3 when heapprof is not loaded.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"

static int
to_file(void *arg, const void *p, size_t n)
{
	return fwrite(p, 1, n, arg) == n ? 0 : -5;
}

__attribute__((noinline)) static void
site_keep(void **keep, int n)
{
	for (int i = 0; i < n; i++)
		keep[i] = malloc(100 + (size_t)(i % 7) * 1000);
}

__attribute__((noinline)) static void
site_churn(void)
{
	for (int i = 0; i < 20000; i++) {
		/* volatile: the compiler may delete an unused malloc+free pair */
		char *volatile p = malloc(3000 + (size_t)(i % 5) * 10000);
		p[0] = 1;
		free(p);
	}
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int (*dump)(heapprof_write_fn *, void *, int) =
		(int (*)(heapprof_write_fn *, void *, int))dlsym(RTLD_DEFAULT, "heapprof_dump");
	int (*dump_file)(const char *) =
		(int (*)(const char *))dlsym(RTLD_DEFAULT, "heapprof_dump_file");
	int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "heapprof_active");
	int (*dump_profile)(heapprof_write_fn *, void *, int) =
		(int (*)(heapprof_write_fn *, void *, int))dlsym(RTLD_DEFAULT,
	                                                         "heapprof_dump_profile");
	if (!dump || !dump_file || !active || !dump_profile || !active())
		return 3;
	static void *keep[5000];
	site_keep(keep, 5000);
	site_churn();
	char path[4096];
	snprintf(path, sizeof(path), "%s.pb.gz", argv[1]);
	FILE *f = fopen(path, "wb");
	snprintf(path, sizeof(path), "%s.heap", argv[1]);
	FILE *g = fopen(path, "wb");
	if (!f || !g)
		return 4;
	/* The two dumps must describe the same state: allocate nothing in
	 * between (stdio buffers were allocated by fopen already? force). */
	setvbuf(f, NULL, _IONBF, 0);
	setvbuf(g, NULL, _IONBF, 0);
	snprintf(path, sizeof(path), "%s.inuse.pb.gz", argv[1]);
	FILE *h = fopen(path, "wb");
	if (!h)
		return 4;
	setvbuf(h, NULL, _IONBF, 0);
	int rc1 = dump(to_file, f, 0);
	int rc2 = dump(to_file, g, 1);
	int rc4 = dump_profile(to_file, h, HEAPPROF_PROFILE_INUSE);
	int rc5 = dump_profile(to_file, h, 7); /* unknown kind: -EINVAL */
	fclose(f);
	fclose(g);
	fclose(h);
	if (rc4 || rc5 != -22) {
		fprintf(stderr, "dump_profile: %d %d\n", rc4, rc5);
		return 1;
	}
	snprintf(path, sizeof(path), "%s.file.pb.gz", argv[1]);
	int rc3 = dump_file(path);
	if (rc1 || rc2 || rc3) {
		fprintf(stderr, "dump failed: %d %d %d\n", rc1, rc2, rc3);
		return 1;
	}
	return 0;
}
