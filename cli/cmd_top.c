/* cmd_top.c: `heapprof top` (placeholder until its issue lands). */
#include "cli.h"

int
cli_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("top: not implemented yet");
	return 2;
}
