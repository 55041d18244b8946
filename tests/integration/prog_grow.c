/* prog_grow: grows by MB MiB in 256 KiB blocks at grow_step(), freeing
 * nothing, then exits. With MODE "limit" it grows (8 MiB at a time, each
 * touched) until malloc fails, then kills itself with SIGKILL, as the
 * OOM killer would: no exit handler runs.
 * Usage: prog_grow MB | prog_grow limit */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *
grow_step(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 3, n);
	return p;
}

static void
grow_until_oom(void)
{
	for (;;) {
		void *p = grow_step((size_t)8 << 20);
		if (!p) {
			printf("oom\n");
			fflush(stdout);
			raise(SIGKILL);
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "limit")) {
		grow_until_oom();
		return 1;
	}
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 15;
	for (size_t i = 0; i < mb * 4; i++)
		grow_step(256 << 10);
	printf("done\n");
	return 0;
}
