/*
 * attach_review_target.c: the program tests/cli/attach_review.sh attaches
 * to. Reads commands on stdin, one a line, answers "ok" (stdout
 * unbuffered):
 *   alloc   keeps 64 blocks of 1000 bytes
 *   exec    runs exec of /bin/sh, which says "execd", reads a line,
 *           says "bye" and exits 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char line[64];
	static void *keep[64];
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "exec", 4)) {
			execl("/bin/sh", "sh", "-c", "echo execd; read x; echo bye", (char *)0);
			return 3;
		}
		if (!strncmp(line, "alloc", 5))
			for (int i = 0; i < 64; i++)
				keep[i] = malloc(1000);
		printf("ok\n");
	}
	return 0;
}
