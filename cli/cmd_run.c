/* cmd_run.c: `heapprof run` (placeholder until its issue lands). */
#include "cli.h"

int
cli_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_err("run: not implemented yet");
	return 2;
}
