/*
 * test_collect_loaded_ids.c: build ids read in memory (src/collect/
 * loaded_ids.c) against the file reader's (heapprof__elf_build_id, the
 * oracle): every executable file mapping of this process that belongs to
 * a loaded object (the test program, ld.so, libc, libz, libm, ...) and a
 * library dlopen'd at run time get the file's id, by both walks (the
 * loader's, and the one from each file's first mapping, without the
 * loader); a file this process maps PROT_EXEC itself is left to the file
 * reader by the first, read in memory by the second.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect.h"
#include "loaded_ids.h"
#include "test.h"

__thread hp_tls heapprof__tls __attribute__((tls_model("initial-exec")));
hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH};
void
heapprof__warn(const char *msg)
{
	(void)msg;
}

typedef struct ids {
	heapprof_maps maps;
	hp_loaded_id *v;
	size_t n, found;
} ids;

static int
read_ids(ids *x, int unlocked)
{
	memset(x, 0, sizeof(*x));
	int rc = heapprof__maps_read_self(&x->maps);
	if (rc)
		return rc;
	x->v = calloc(x->maps.n + 1, sizeof(*x->v));
	if (!x->v)
		return -1;
	for (size_t i = 0; i < x->maps.n; i++)
		if (x->maps.v[i].perms & HEAPPROF_MAP_X)
			x->v[x->n++].map = &x->maps.v[i];
	x->found = unlocked ? heapprof__loaded_ids_unlocked(&x->maps, x->v, x->n)
	                    : heapprof__loaded_ids(&x->maps, x->v, x->n);
	return 0;
}

static void
free_ids(ids *x)
{
	free(x->v);
	heapprof__maps_free(&x->maps);
}

/* The id found in memory for the executable mapping of `path` (a
 * substring) at `start` (0: any), or NULL if there is no such mapping. */
static const char *
id_of(const ids *x, const char *path, uint64_t start)
{
	for (size_t i = 0; i < x->n; i++)
		if (strstr(x->v[i].map->path, path) &&
		    (!start || x->v[i].map->start == start))
			return x->v[i].hex;
	return NULL;
}

/* Every mapping found in memory has the file's id; every file mapping of
 * a file that has an id was found. `expect` more mappings are left to the
 * file reader on purpose. */
static void
check_all(const ids *x, size_t expect_left)
{
	size_t files = 0, left = 0;
	for (size_t i = 0; i < x->n; i++) {
		const heapprof_maps_entry *e = x->v[i].map;
		if (e->path[0] != '/')
			continue;
		char hex[2 * HEAPPROF_BUILD_ID_MAX + 1];
		if (heapprof__elf_build_id(e->path, hex, sizeof(hex)) <= 0)
			continue;
		files++;
		if (!x->v[i].hex[0]) {
			left++;
			continue;
		}
		if (strcmp(x->v[i].hex, hex) != 0)
			T_FAIL("%s: %s in memory, %s in the file", e->path,
			       x->v[i].hex, hex);
	}
	CHECK(files >= 3); /* this program, libc, ld.so */
	CHECK_EQ(left, expect_left);
	CHECK_EQ(x->found, files - left);
}

static void
every_loaded_object(int unlocked)
{
	ids x;
	REQUIRE_OK(read_ids(&x, unlocked));
	check_all(&x, 0);
	/* The main program (its name in the loader's list is ""), ld.so (a
	 * symlinked path) and libc. */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	REQUIRE(n > 0);
	exe[n] = 0;
	const char *m = id_of(&x, exe, 0), *l = id_of(&x, "/ld-linux", 0),
		   *c = id_of(&x, "/libc.so", 0);
	CHECK(m && m[0]);
	CHECK(l && l[0]);
	CHECK(c && c[0]);
	free_ids(&x);
}

TEST(every_loaded_object_has_its_files_id)
{
	every_loaded_object(0);
}

TEST(every_loaded_object_has_its_files_id_unlocked)
{
	every_loaded_object(1);
}

static void
dlopened(int unlocked)
{
	void *h = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
	REQUIRE(h);
	ids x;
	REQUIRE_OK(read_ids(&x, unlocked));
	check_all(&x, 0);
	const char *r = id_of(&x, "/libresolv.so", 0);
	CHECK(r && r[0]);
	free_ids(&x);
	dlclose(h);
}

TEST(a_library_dlopened_at_run_time)
{
	dlopened(0);
}

TEST(a_library_dlopened_at_run_time_unlocked)
{
	dlopened(1);
}

/* libc's file mapped PROT_EXEC by the program: the same file (device and
 * inode) as a loaded object, at another address. Not a loaded object's
 * mapping: the loader's walk leaves it to the file reader; the walk from
 * each file's first mapping reads its header there, the file's id. */
static void
mapped_by_the_program(int unlocked)
{
	ids x;
	REQUIRE_OK(read_ids(&x, unlocked));
	const char *libc = NULL;
	for (size_t i = 0; i < x.n; i++)
		if (strstr(x.v[i].map->path, "/libc.so"))
			libc = x.v[i].map->path;
	REQUIRE(libc);
	int fd = open(libc, O_RDONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	size_t len = 2 * (size_t)getpagesize();
	void *p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	free_ids(&x);
	REQUIRE(p != MAP_FAILED);
	REQUIRE_OK(read_ids(&x, unlocked));
	const char *mine = id_of(&x, "/libc.so", (uint64_t)(uintptr_t)p),
		   *loaded = id_of(&x, "/libc.so", 0);
	CHECK(mine && loaded);
	if (mine && loaded && unlocked)
		CHECK_STR(mine, loaded);
	else if (mine)
		CHECK(!mine[0]);
	check_all(&x, unlocked ? 0 : 1);
	free_ids(&x);
	munmap(p, len);
}

TEST(a_file_the_program_maps_itself_is_left_to_the_file)
{
	mapped_by_the_program(0);
}

TEST(a_file_the_program_maps_itself_unlocked)
{
	mapped_by_the_program(1);
}

int
main(void)
{
	RUN(every_loaded_object_has_its_files_id);
	RUN(every_loaded_object_has_its_files_id_unlocked);
	RUN(a_library_dlopened_at_run_time);
	RUN(a_library_dlopened_at_run_time_unlocked);
	RUN(a_file_the_program_maps_itself_is_left_to_the_file);
	RUN(a_file_the_program_maps_itself_unlocked);
	TEST_MAIN_END();
}
