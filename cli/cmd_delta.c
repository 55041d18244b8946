/* cmd_delta.c: `heapprof delta` (placeholder until its issue lands). */
#include "cli.h"

int
cli_delta(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("delta: not implemented yet");
	return 2;
}
