/*
 * prog_window.c: allocations in three phases, stepped by files the test
 * creates, so that a test can open a profiling window around exactly one
 * of them: site_before (before the window), site_window (inside it), and
 * site_after (after it). usage: prog_window DIR
 *   creates DIR/ready after phase 1, waits for DIR/go, runs phase 2,
 *   creates DIR/done, waits for DIR/go2, runs phase 3, waits for DIR/quit.
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
touch(const char *name)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
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
	site_window();
	touch("done");
	wait_for("go2");
	site_after();
	touch("after");
	wait_for("quit");
	printf("EXPECT site_window 500 1500000 400 1200000\n");
	printf("EXPECT site_before 0 0 0 0\n");
	printf("EXPECT site_after 0 0 0 0\n");
	return 0;
}
