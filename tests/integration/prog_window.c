/*
 * prog_window.c: allocations in three phases, stepped by files the test
 * creates, so that a test can open a profiling window around exactly one
 * of them: site_before (before the window), site_window (inside it), and
 * site_after (after it). usage: prog_window DIR
 *   creates DIR/ready after phase 1, waits for DIR/go, runs phase 2,
 *   creates DIR/done, waits for DIR/go2, runs phase 3, waits for DIR/quit.
 * DIR/done holds "START END": CLOCK_REALTIME nanoseconds before phase 2's
 * first allocation and after its last, for a test to check that its
 * window held all of phase 2.
 * Prints the truth of the window as EXPECT lines (see profsum.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;
static char dir[4096];

static void
touch_with(const char *name, const char *text)
{
	char p[4200], tmp[4300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	FILE *f = fopen(tmp, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
		rename(tmp, p); /* whole or absent to a reader */
	}
}

static void
touch(const char *name)
{
	touch_with(name, "");
}

static long long
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
wait_for(const char *name)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 6000 && access(p, F_OK) != 0; i++)
		nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void
site_before(void)
{
	for (int i = 0; i < 300; i++)
		sink = malloc(10000);
}

__attribute__((noinline)) static void
site_window(void)
{
	for (int i = 0; i < 500; i++) {
		char *p = malloc(3000);
		p[0] = 1;
		if (i % 5 == 0)
			free(p); /* freed inside the window too */
		else
			sink = p;
	}
}

__attribute__((noinline)) static void
site_after(void)
{
	for (int i = 0; i < 700; i++)
		sink = malloc(5000);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	site_before();
	touch("ready");
	wait_for("go");
	long long start = now_ns();
	site_window();
	long long end = now_ns();
	char t[64];
	snprintf(t, sizeof(t), "%lld %lld\n", start, end);
	touch_with("done", t);
	wait_for("go2");
	site_after();
	touch("after");
	wait_for("quit");
	printf("EXPECT site_window 500 1500000 400 1200000\n");
	printf("EXPECT site_before 0 0 0 0\n");
	printf("EXPECT site_after 0 0 0 0\n");
	return 0;
}
