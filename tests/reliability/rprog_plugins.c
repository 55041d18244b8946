/*
 * rprog_plugins.c: a plugin unloaded while its allocation stays live
 * (issue 29 item 8). usage: rprog_plugins LIBA LIBB DIR MODE
 *   same   dlopen LIBA, 64 MiB from a_alloc_site (held), dlclose LIBA,
 *          dlopen LIBB, which must land where LIBA was (dladdr's base of
 *          the two functions; else "moved A B" and status 3), 1 MiB + 1
 *          from innocent_libb_function (held), then the profile as
 *          DIR/same.pb.gz and DIR/same.txt (heapprof_dump).
 *   base   dlopen LIBA, 64 MiB from a_alloc_site (held), DIR/before.*,
 *          dlclose LIBA, DIR/after.*: nothing allocated in between.
 *   twice  dlopen LIBA twice, 64 MiB from a_alloc_site (held), dlclose
 *          one handle (LIBA stays), DIR/open1.*, the other, DIR/open0.*.
 * Then prints "ready" and waits for its stdin to close (the script reads
 * the /debug/pprof endpoint meanwhile). Run under LD_PRELOAD.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int dump_fn(int (*)(void *, const void *, size_t), void *, int);
static dump_fn *dump;

static int
put(void *arg, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, arg) == len ? 0 : -5;
}

static void
dump_to(const char *dir, const char *name)
{
	char path[4096];
	for (int text = 0; text < 2; text++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dir, name,
		         text ? "txt" : "pb.gz");
		FILE *f = fopen(path, "wb");
		if (!f || dump(put, f, text) != 0) {
			printf("BAD dump %s\n", path);
			exit(2);
		}
		fclose(f);
	}
}

static void *
open_fn(const char *lib, const char *fn, void **h, void **base)
{
	*h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	void *f = *h ? dlsym(*h, fn) : NULL;
	Dl_info di;
	if (!f || !dladdr(f, &di)) {
		printf("BAD %s %s: %s\n", lib, fn, dlerror());
		exit(2);
	}
	*base = di.dli_fbase;
	return f;
}

int
main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	dump = (dump_fn *)dlsym(RTLD_DEFAULT, "heapprof_dump");
	if (!dump) {
		puts("no heapprof_dump (not profiled)");
		return 2;
	}
	void *ha, *hb, *base_a, *base_b;
	void *(*fa)(size_t) = (void *(*)(size_t))open_fn(argv[1], "a_alloc_site",
	                                                 &ha, &base_a);
	void *held = fa(64u << 20);
	if (!held)
		return 2;
	if (!strcmp(argv[4], "twice")) {
		void *h2 = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		dlclose(ha);
		dump_to(argv[3], "open1");
		dlclose(h2);
		dump_to(argv[3], "open0");
	} else if (!strcmp(argv[4], "base")) {
		dump_to(argv[3], "before");
		dlclose(ha);
		dump_to(argv[3], "after");
	} else {
		long off_a = (char *)(void *)fa - (char *)base_a;
		dlclose(ha);
		void *(*fb)(size_t) = (void *(*)(size_t))open_fn(
			argv[2], "innocent_libb_function", &hb, &base_b);
		if (base_a != base_b) {
			printf("moved %p %p\n", base_a, base_b);
			return 3;
		}
		printf("landed %p same_offset %d\n", base_b,
		       off_a == (char *)(void *)fb - (char *)base_b);
		void *b = fb((1u << 20) + 1);
		dump_to(argv[3], "same");
		(void)b; /* held */
	}
	puts("ready");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	free(held);
	return 0;
}
