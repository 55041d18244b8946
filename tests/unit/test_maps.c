/*
 * test_maps.c: the /proc/PID/maps parser (crafted text: deleted files,
 * anonymous and [vdso] entries, paths with spaces, malformed lines) and the
 * /proc/self/maps reader on this very process.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "maps.h"
#include "test.h"

static const char crafted[] =
	"55a4c1a00000-55a4c1a02000 r--p 00000000 fe:01 1312 /usr/bin/my prog\n"
	"55a4c1a02000-55a4c1a07000 r-xp 00002000 fe:01 1312 /usr/bin/my prog\n"
	"55a4c1a07000-55a4c1a09000 rw-p 00007000 fe:01 1312 /usr/bin/my prog\n"
	"55a4c2d8e000-55a4c2daf000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 \n"
	"7f1e2c400000-7f1e2c428000 r--p 00000000 fe:01 2883 /tmp/libgone.so (deleted)\n"
	"7f1e2c428000-7f1e2c5bd000 r-xs 00028000 fe:01 2883 /tmp/libgone.so (deleted)\n"
	"\n"
	"7ffd3f1f0000-7ffd3f1f2000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

TEST(parse_crafted)
{
	heapprof_maps m;
	REQUIRE_OK(heapprof__maps_parse(crafted, strlen(crafted), &m));
	CHECK_EQ(m.n, 9);
	REQUIRE(m.n == 9);
	const heapprof_maps_entry *e = &m.v[1];
	CHECK_EQ(e->start, 0x55a4c1a02000ull);
	CHECK_EQ(e->limit, 0x55a4c1a07000ull);
	CHECK_EQ(e->offset, 0x2000);
	CHECK_EQ(e->perms, HEAPPROF_MAP_R | HEAPPROF_MAP_X | HEAPPROF_MAP_P);
	CHECK_EQ(e->dev_major, 0xfe);
	CHECK_EQ(e->dev_minor, 1);
	CHECK_EQ(e->inode, 1312);
	CHECK_EQ(e->deleted, 0);
	CHECK_STR(e->path, "/usr/bin/my prog");
	CHECK_STR(m.v[3].path, "[heap]");
	CHECK_EQ(m.v[3].perms, HEAPPROF_MAP_R | HEAPPROF_MAP_W | HEAPPROF_MAP_P);
	CHECK_STR(m.v[4].path, "");
	CHECK_STR(m.v[5].path, "/tmp/libgone.so");
	CHECK_EQ(m.v[5].deleted, 1);
	CHECK_EQ(m.v[6].perms, HEAPPROF_MAP_R | HEAPPROF_MAP_X); /* shared */
	CHECK_EQ(m.v[6].offset, 0x28000);
	CHECK_STR(m.v[7].path, "[vdso]");
	CHECK_EQ(m.v[8].start, 0xffffffffff600000ull);
	CHECK_EQ(m.v[8].perms, HEAPPROF_MAP_X | HEAPPROF_MAP_P);
	CHECK_STR(m.v[8].path, "[vsyscall]");

	CHECK(heapprof__maps_find(&m, 0x55a4c1a02000ull) == &m.v[1]);
	CHECK(heapprof__maps_find(&m, 0x55a4c1a06fffull) == &m.v[1]);
	CHECK(heapprof__maps_find(&m, 0x55a4c1a07000ull) == &m.v[2]);
	CHECK(heapprof__maps_find(&m, 0x55a4c1a00000ull - 1) == NULL);
	CHECK(heapprof__maps_find(&m, 0x55a4c2daf000ull) == NULL);
	CHECK(heapprof__maps_find(&m, 0x7ffd3f1f1234ull) == &m.v[7]);

	CHECK_EQ(heapprof__maps_keep_exec(&m), 4);
	CHECK_STR(m.v[0].path, "/usr/bin/my prog");
	CHECK_STR(m.v[1].path, "/tmp/libgone.so");
	CHECK_STR(m.v[2].path, "[vdso]");
	CHECK_STR(m.v[3].path, "[vsyscall]");
	CHECK(heapprof__maps_find(&m, 0x55a4c1a07000ull) == NULL);
	CHECK(heapprof__maps_find(&m, 0x7f1e2c428001ull) == &m.v[1]);
	heapprof__maps_free(&m);
	heapprof__maps_free(&m); /* twice is harmless */
}

TEST(parse_unsorted_and_empty)
{
	static const char t[] = "3000-4000 r-xp 0 00:00 0 /c\n"
	                        "1000-2000 r-xp 0 00:00 0 /a\r\n"
	                        "2000-3000 r-xp 0 00:00 0 /b";
	heapprof_maps m;
	REQUIRE_OK(heapprof__maps_parse(t, strlen(t), &m));
	REQUIRE(m.n == 3);
	CHECK_STR(m.v[0].path, "/a");
	CHECK_STR(m.v[1].path, "/b");
	CHECK_STR(m.v[2].path, "/c");
	CHECK(heapprof__maps_find(&m, 0x2fff) == &m.v[1]);
	CHECK(heapprof__maps_find(&m, 0x4000) == NULL);
	heapprof__maps_free(&m);

	REQUIRE_OK(heapprof__maps_parse("", 0, &m));
	CHECK_EQ(m.n, 0);
	CHECK(heapprof__maps_find(&m, 0) == NULL);
	heapprof__maps_free(&m);
}

TEST(parse_malformed)
{
	static const char *const bad[] = {
		"zz-2000 r-xp 0 00:00 0 /a",
		"1000 r-xp 0 00:00 0 /a",
		"2000-1000 r-xp 0 00:00 0 /a",           /* limit < start */
		"1000-2000 rwzp 0 00:00 0 /a",
		"1000-2000 r-x 0 00:00 0 /a",
		"1000-2000 r-xp 0 0000 0 /a",            /* no dev colon */
		"1000-2000 r-xp 0 00:00 x /a",           /* inode not decimal */
		"1000-2000 r-xp 0 00:00",                /* truncated */
		"1000-2000 r-xp 0 00:00 12x /a",
		"11112222333344445-2000 r-xp 0 00:00 0", /* 17 hex digits */
		"1000-2000 r-xp 0 00:00 0 /ok\ngarbage",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		heapprof_maps m;
		int rc = heapprof__maps_parse(bad[i], strlen(bad[i]), &m);
		if (rc != HEAPPROF_EFORMAT)
			T_FAIL("accepted bad line %zu: \"%s\" (rc %d)", i,
			       bad[i], rc);
		CHECK(m.v == NULL && m.n == 0);
		heapprof__maps_free(&m);
	}
}

static int
this_function(void)
{
	return 42;
}

TEST(read_self)
{
	heapprof_maps m;
	REQUIRE_OK(heapprof__maps_read_self(&m));
	CHECK(m.n > 3);
	for (size_t i = 1; i < m.n; i++)
		CHECK(m.v[i - 1].start <= m.v[i].start);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	REQUIRE(n > 0);
	exe[n] = '\0';
	int stack_var;
	const heapprof_maps_entry *e =
		heapprof__maps_find(&m, (uint64_t)(uintptr_t)&this_function);
	REQUIRE(e != NULL);
	CHECK_STR(e->path, exe);
	CHECK(e->perms & HEAPPROF_MAP_X);
	CHECK(e->inode != 0);
	e = heapprof__maps_find(&m, (uint64_t)(uintptr_t)&stack_var);
	REQUIRE(e != NULL);
	CHECK_STR(e->path, "[stack]");
	e = heapprof__maps_find(&m, (uint64_t)(uintptr_t)&getpid);
	REQUIRE(e != NULL);
	CHECK(strstr(e->path, "libc") != NULL);

	size_t nx = heapprof__maps_keep_exec(&m);
	CHECK(nx >= 2);
	for (size_t i = 0; i < m.n; i++)
		CHECK(m.v[i].perms & HEAPPROF_MAP_X);
	e = heapprof__maps_find(&m, (uint64_t)(uintptr_t)&this_function);
	CHECK(e != NULL && strcmp(e->path, exe) == 0);
	CHECK(heapprof__maps_find(&m, (uint64_t)(uintptr_t)&stack_var) == NULL);
	CHECK_EQ(this_function(), 42);
	heapprof__maps_free(&m);
}

TEST(read_fd_errors)
{
	heapprof_maps m;
	CHECK_EQ(heapprof__maps_read_fd(-1, &m), -EBADF);
	CHECK(m.v == NULL);
}

int
main(void)
{
	RUN(parse_crafted);
	RUN(parse_unsorted_and_empty);
	RUN(parse_malformed);
	RUN(read_self);
	RUN(read_fd_errors);
	TEST_MAIN_END();
}
