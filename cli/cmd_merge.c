/* cmd_merge.c: `heapprof merge` (placeholder until its issue lands). */
#include "cli.h"

int
cli_merge(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("merge: not implemented yet");
	return 2;
}
