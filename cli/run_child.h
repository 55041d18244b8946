/*
 * run_child.h: `heapprof run` around the program (see run_child.c).
 */
#ifndef HEAPPROF_CLI_RUN_CHILD_H
#define HEAPPROF_CLI_RUN_CHILD_H

/* Sets HEAPPROF_OUT to an absolute template (the given one, else the
 * library's default for the format) from the current directory. 0 or
 * -errno. */
int cli_run_absolute_output(void);

/* A message on stderr if LD_PRELOAD cannot profile cmd (statically linked
 * or a Go program). The program still runs. */
void cli_run_check_program(const char *cmd);

/* Runs argv as a child, forwards signals, waits, prints the line naming
 * the profiles written ("no profile was written" if none and exit_dump).
 * Returns the exit status for heapprof (or dies of the child's signal). */
int cli_run_child(char **argv, int exit_dump);

#endif
