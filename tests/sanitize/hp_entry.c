/*
 * hp_entry.c: the sanitizer build's entry points (tests/sanitize/, see
 * driver.c). interpose.c compiled unchanged, with its functions renamed
 * hp_malloc, hp_free, ...: ASan, TSan and UBSan keep their own malloc (the
 * process's), and the driver calls the profiler through these names. The
 * renames apply to this translation unit only, so hp_next's member names
 * change too, which leaves its layout as in bootstrap.c.
 */
#define HP_ENTRY_RENAMED 1 /* the profiler's own calls do not reach these */
#define malloc hp_malloc
#define free hp_free
#define calloc hp_calloc
#define realloc hp_realloc
#define reallocarray hp_reallocarray
#define posix_memalign hp_posix_memalign
#define aligned_alloc hp_aligned_alloc
#define memalign hp_memalign
#define valloc hp_valloc
#define pvalloc hp_pvalloc
#define malloc_usable_size hp_malloc_usable_size
#include "../../src/collect/interpose.c"
