/*
 * canonplt.c: built -fno-pie -no-pie by rel_allocators.sh. The program takes the
 * addresses of malloc, free, calloc and realloc, so the executable gets
 * canonical PLT entries for them: dlsym(RTLD_DEFAULT, "malloc") answers
 * with the executable's PLT entry, an undefined symbol with a value (as
 * Debian's /usr/bin/python3 does). The profiler took that entry for the
 * program's own allocator and its malloc called itself for ever.
 * Prints "canonplt N 0 bad" (the shape rel_allocators.sh's one() reads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Assigned in code (not initialised in data, which takes a dynamic
 * relocation instead): built -fno-pie, that takes the addresses directly,
 * and the linker makes the PLT entries canonical. */
void *(*volatile p_malloc)(size_t);
void (*volatile p_free)(void *);
void *(*volatile p_calloc)(size_t, size_t);
void *(*volatile p_realloc)(void *, size_t);

__attribute__((noinline)) static void *
site_canon(size_t n)
{
	return p_malloc(n);
}

int
main(void)
{
	p_malloc = malloc;
	p_free = free;
	p_calloc = calloc;
	p_realloc = realloc;
	unsigned long bad = 0, n = 0;
	void *keep[256];
	for (int r = 0; r < 200; r++) {
		for (int i = 0; i < 256; i++) {
			size_t sz = 16 + (size_t)((i * 37 + r) % 4000);
			char *p = site_canon(sz);
			memset(p, i & 0xff, sz);
			p = p_realloc(p, sz + 100);
			if ((unsigned char)p[sz - 1] != (i & 0xff))
				bad++;
			keep[i] = p;
			n++;
		}
		for (int i = 0; i < 256; i++)
			p_free(keep[i]);
		char *z = p_calloc(64, 64);
		for (int i = 0; i < 64 * 64; i++)
			bad += z[i] != 0;
		p_free(z);
	}
	printf("canonplt %lu %lu bad\n", n, bad);
	return 0;
}
