/*
 * age_opt.h: `--min-age DURATION` of the CLI (cli/age_opt.c): the age_s
 * labels heapprof writes on in-use samples (format/heap_age.c).
 */
#ifndef HEAPPROF_CLI_AGE_OPT_H
#define HEAPPROF_CLI_AGE_OPT_H

#include <stdint.h>

#include "pprof_dec.h"

/* "600", "600s", "10m", "1h", "2d", "1w" -> seconds. 0 or -1 (bad). */
int cli_parse_age(const char *s, int64_t *secs);
/* The sample's age_s label (seconds), if it has one: 1, else 0. */
int cli_sample_age(const pprof_dec *d, const pprof_sample *s, int64_t *secs);

#endif
