/*
 * cli.h: the subcommands of the heapprof CLI. Each cmd_*.c file owns one
 * subcommand; main.c dispatches by name. The CLI links the tool half only
 * (common, format, ops): it never includes capture code.
 */
#ifndef HEAPPROF_CLI_H
#define HEAPPROF_CLI_H

#include <stddef.h>
#include <stdint.h>

/* Each returns the process exit status. argv[0] is the subcommand name. */
int cli_run(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_delta(int argc, char **argv);
int cli_merge(int argc, char **argv);
int cli_collapse(int argc, char **argv);
int cli_flame(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_symbolize(int argc, char **argv);
int cli_attach(int argc, char **argv);
int cli_detach(int argc, char **argv); /* attach_session.c */

/* libheapprof.so as heapprof run finds it (cmd_run.c): 0 or -errno. */
int cli_find_library(char *buf, size_t cap);

/* Prints "heapprof: <fmt>" to stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads a whole file ("-": stdin) into a malloc'd buffer. 0 or -errno. */
int cli_read_file(const char *path, uint8_t **out, size_t *len);

/* Output that never leaves a partial file: bytes go to PATH.tmp.PID and
 * are renamed over PATH on commit; "-" means stdout. A stream (/dev/null,
 * a FIFO, /dev/stdout: heapprof__out_stream) is written as it is, never
 * through a temporary file renamed over it. */
typedef struct cli_out {
	int fd;
	char *path, *tmp;
	int err;
	int close_fd; /* a stream opened here: closed on commit */
} cli_out;
int cli_out_open(cli_out *o, const char *path);
int cli_out_write(void *ctx, const void *p, size_t n); /* heapprof_write_fn */
int cli_out_commit(cli_out *o);                        /* 0 or -errno */
void cli_out_abort(cli_out *o);                        /* unlinks the temp */

#endif
