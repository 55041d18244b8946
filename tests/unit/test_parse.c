/*
 * test_parse.c: option values shared by the library and the CLI
 * (src/common/parse.c): signal names, and the %n a template gets when a
 * process may write several files.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "test.h"

TEST(signals)
{
	int s = 0;
	CHECK_EQ(heapprof__parse_signal("TERM", &s), 0);
	CHECK_EQ(s, SIGTERM);
	CHECK_EQ(heapprof__parse_signal("sigint", &s), 0);
	CHECK_EQ(s, SIGINT);
	CHECK_EQ(heapprof__parse_signal("USR2", &s), 0);
	CHECK_EQ(s, SIGUSR2);
	CHECK_EQ(heapprof__parse_signal("KILL", &s), -EINVAL);
	CHECK_EQ(heapprof__parse_signal("9", &s), -EINVAL);
}

static void
seq(const char *in, const char *out, int rc)
{
	char t[64];
	snprintf(t, sizeof(t), "%s", in);
	CHECK_EQ(heapprof__tmpl_add_seq(t, sizeof(t)), rc);
	CHECK_STR(t, out);
}

TEST(add_seq)
{
	seq("out.pb.gz", "out.%n.pb.gz", 1);
	seq("/tmp/a.b/heap.%p.pb.gz", "/tmp/a.b/heap.%p.%n.pb.gz", 1);
	seq("g.%p.heap", "g.%p.%n.heap", 1);
	seq("x.y.prof", "x.y.%n.prof", 1);
	seq("prof", "prof.%n", 1);
	seq("dir/.hidden", "dir/.hidden.%n", 1);
	seq("x.%n.pb.gz", "x.%n.pb.gz", 0);
	seq("x.%p.%N.heap", "x.%p.%N.heap", 0);
	seq("100%%n.pb.gz", "100%%n.%n.pb.gz", 1); /* %%n is a literal "%n" */
	char small[8] = "abc.def";
	CHECK_EQ(heapprof__tmpl_add_seq(small, sizeof(small)), -ENAMETOOLONG);
	CHECK_STR(small, "abc.def");
}

TEST(many_files)
{
	CHECK_EQ(heapprof__many_files(0, 0), 0);
	CHECK_EQ(heapprof__many_files(5, 0), 1);
	CHECK_EQ(heapprof__many_files(0, SIGUSR2), 1);
	CHECK_EQ(heapprof__many_files(0, SIGTERM), 0);
	CHECK_EQ(heapprof__many_files(0, SIGINT), 0);
}

int
main(void)
{
	RUN(signals);
	RUN(add_seq);
	RUN(many_files);
	TEST_MAIN_END();
}
