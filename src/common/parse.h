/*
 * parse.h: option value parsing shared by the library and the CLI.
 */
#ifndef HEAPPROF_PARSE_H
#define HEAPPROF_PARSE_H

#include <stdint.h>

/* A non-negative integer with an optional k/m/g suffix (powers of 1024)
 * and optional trailing "b". 0 or -EINVAL. */
int heapprof__parse_size(const char *s, int64_t *out);
/* A catchable signal: a number, or a name with or without "SIG" (USR1,
 * USR2, PROF, HUP, URG, WINCH, TERM, INT, RTMIN+N). 0 or -EINVAL. */
int heapprof__parse_signal(const char *s, int *out);

#endif
