/*
 * hp_boot.c: the sanitizer build's bootstrap (tests/sanitize/, see
 * driver.c). bootstrap.c compiled unchanged, but its "next allocator" is
 * the process's malloc family as linked, that is the sanitizer runtime's
 * (dlsym(RTLD_NEXT) from the executable would find glibc's, behind the
 * sanitizer's back): dlsym and dladdr are replaced, in this translation
 * unit only, by a table of the functions themselves and by "not ours".
 */
#define HP_ENTRY_RENAMED 1 /* its malloc is the driver's hp_malloc */
#define dlsym hp_san_dlsym
#define dladdr hp_san_dladdr
#include "../../src/collect/bootstrap.c"
#undef dlsym
#undef dladdr

void *
hp_san_dlsym(void *restrict handle, const char *restrict name)
{
	static const struct {
		const char *name;
		void *f;
	} tab[] = {
		{"malloc", (void *)malloc},
		{"free", (void *)free},
		{"calloc", (void *)calloc},
		{"realloc", (void *)realloc},
		{"posix_memalign", (void *)posix_memalign},
		{"aligned_alloc", (void *)aligned_alloc},
		{"memalign", (void *)memalign},
		{"valloc", (void *)valloc},
		{"pvalloc", (void *)pvalloc},
		{"malloc_usable_size", (void *)malloc_usable_size},
	};
	(void)handle;
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(tab[i].name, name))
			return tab[i].f;
	return NULL;
}

/* Nothing is "ours": the sanitizer's malloc lives in the same executable
 * as the profiler here, which is_self() would otherwise reject. */
int
hp_san_dladdr(const void *addr, Dl_info *info)
{
	(void)addr, (void)info;
	return 0;
}
