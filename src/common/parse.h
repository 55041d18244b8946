/*
 * parse.h: option value parsing shared by the library and the CLI, and
 * the text of a command line.
 */
#ifndef HEAPPROF_PARSE_H
#define HEAPPROF_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A non-negative integer with an optional k/m/g suffix (powers of 1024)
 * and optional trailing "b". 0 or -EINVAL. */
int heapprof__parse_size(const char *s, int64_t *out);
/* A catchable signal: a number, or a name with or without "SIG" (USR1,
 * USR2, PROF, HUP, URG, WINCH, TERM, INT, RTMIN+N). 0 or -EINVAL. */
int heapprof__parse_signal(const char *s, int *out);

/* Can a process write more than one profile file: periodic dumps, a dump
 * signal other than TERM and INT (which end the program), or growth or
 * limit dumps (other_dumps: --dump-growth or --dump-limit is on), each of
 * which comes before the exit profile? */
int heapprof__many_files(int64_t interval, int sig, int other_dumps);
/* An output template without %n (or gperftools' %N), for a process that
 * may write several files, gets ".%n" before its extension (.pb.gz, .heap,
 * .pb, .gz, else the last '.' of the base name, else at the end):
 * "out.pb.gz" -> "out.%n.pb.gz", "h.%p.pb.gz" -> "h.%p.%n.pb.gz", so the
 * files do not overwrite one another. 1 if inserted, 0 if already there
 * or t names a stream (heapprof__out_stream), or -ENAMETOOLONG (t
 * unchanged). */
int heapprof__tmpl_add_seq(char *t, size_t cap);
/* Does an output path name a stream, written as given (no ".PID" or ".N"
 * inserted, no temporary file renamed over it)? N for /dev/stdin,
 * /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N (0, 1, 2, N:
 * written to that descriptor); HP_OUT_STREAM_PATH for an existing
 * character device, FIFO or socket (not through a symbolic link: a link
 * planted where a profile goes is replaced, never followed);
 * HP_OUT_FILE (-1) otherwise (outpath.c). */
#define HP_OUT_FILE (-1)
#define HP_OUT_STREAM_PATH (-2)
int heapprof__out_stream(const char *path);
/* argv as /proc/self/cmdline shows it, NULs and newlines as spaces: the
 * arguments joined by one space, ending at the last non-empty one, cut to
 * cap - 1 bytes and NUL-terminated. */
void heapprof__join_args(char *buf, size_t cap, int argc, char *const *argv);

#endif
