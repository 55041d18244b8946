/*
 * test_parse.c: option values shared by the library and the CLI
 * (src/common/parse.c): signal names, and the %n a template gets when a
 * process may write several files; the command line's text (argv joined
 * as /proc/self/cmdline shows it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Streams are written as named (issue 29 item 6): no ".N" for them. */
TEST(streams)
{
	CHECK_EQ(heapprof__out_stream("/dev/stdout"), 1);
	CHECK_EQ(heapprof__out_stream("/dev/stderr"), 2);
	CHECK_EQ(heapprof__out_stream("/dev/fd/7"), 7);
	CHECK_EQ(heapprof__out_stream("/proc/self/fd/12"), 12);
	CHECK_EQ(heapprof__out_stream("/dev/fd/7x"), HP_OUT_FILE);
	CHECK_EQ(heapprof__out_stream("/dev/fd/"), HP_OUT_FILE);
	CHECK_EQ(heapprof__out_stream("/dev/null"), HP_OUT_STREAM_PATH);
	CHECK_EQ(heapprof__out_stream("/nonexistent/x.pb.gz"), HP_OUT_FILE);
	seq("/dev/null", "/dev/null", 0);
	seq("/dev/stdout", "/dev/stdout", 0);
	seq("/dev/fd/3", "/dev/fd/3", 0);
}

TEST(many_files)
{
	CHECK_EQ(heapprof__many_files(0, 0, 0), 0);
	CHECK_EQ(heapprof__many_files(5, 0, 0), 1);
	CHECK_EQ(heapprof__many_files(0, SIGUSR2, 0), 1);
	CHECK_EQ(heapprof__many_files(0, SIGTERM, 0), 0);
	CHECK_EQ(heapprof__many_files(0, SIGINT, 0), 0);
	CHECK_EQ(heapprof__many_files(0, SIGTERM, 1), 1); /* growth or limit dumps */
	CHECK_EQ(heapprof__many_files(0, 0, 1), 1);
}

static int main_argc;
static char **main_argv;

/* What the kernel shows for this process, NULs as spaces, trailing NULs
 * dropped: the reference heapprof__join_args must equal. */
static void
proc_cmdline(char *buf, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : 0;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
}

TEST(join_args)
{
	char a[512], b[512];
	heapprof__join_args(a, sizeof(a), main_argc, main_argv);
	proc_cmdline(b, sizeof(b));
	CHECK(a[0] != 0);
	CHECK_STR(a, b);
	char *const odd[] = {"prog", "", "two\nlines", "x y", "", "", NULL};
	heapprof__join_args(a, sizeof(a), 6, odd);
	CHECK_STR(a, "prog  two lines x y");
	heapprof__join_args(a, 8, 6, odd);
	CHECK_STR(a, "prog  t");
	char *const empty[] = {"", NULL};
	heapprof__join_args(a, sizeof(a), 1, empty);
	CHECK_STR(a, "");
	/* The same comparison in a child run with odd arguments: empty ones
	 * inside and at the end, a newline, spaces. */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char *const args[] = {main_argv[0], "", "b\nc", "d e", "", "", NULL};
		setenv("TEST_PARSE_JOIN_CHILD", "1", 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	int st = 0;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int
main(int argc, char **argv)
{
	main_argc = argc;
	main_argv = argv;
	if (getenv("TEST_PARSE_JOIN_CHILD")) {
		char a[512], b[512];
		heapprof__join_args(a, sizeof(a), argc, argv);
		proc_cmdline(b, sizeof(b));
		return strcmp(a, b) != 0 || !strstr(a, "  b c d e");
	}
	RUN(signals);
	RUN(add_seq);
	RUN(streams);
	RUN(many_files);
	RUN(join_args);
	TEST_MAIN_END();
}
