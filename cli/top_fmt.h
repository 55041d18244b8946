/*
 * top_fmt.h: number formatting of `heapprof top`, as pprof's report and
 * measurement packages do it: unit scaling (B/kB/MB..., ns/us/ms/s...),
 * the report's output unit choice, percentages and the Time: line.
 */
#ifndef HEAPPROF_CLI_TOP_FMT_H
#define HEAPPROF_CLI_TOP_FMT_H

#include <stddef.h>
#include <stdint.h>

/* pprof's measurement.Scale: `value` in `from` units expressed in `to`
 * ("minimum"/"auto": the unit that fits). *unit gets the printed unit
 * ("kB", "ms", "" for counts). */
double cli_top_scale(int64_t value, const char *from, const char *to,
                     char *unit, size_t ucap);

/* pprof's measurement.ScaledLabel: "%.2f" without ".00", then the unit. */
void cli_top_scaled_label(int64_t value, const char *from, const char *to,
                          char *out, size_t cap);

/* pprof's Percentage: "  100%", "%5.2f%%" or "%5.2g%%". */
void cli_top_percent(int64_t value, int64_t total, char *out, size_t cap);

/* The unit every value of a report is printed in (selectOutputUnit):
 * from the smallest node value and the total. */
typedef struct top_fmt {
	char sample_unit[64];
	char output_unit[64];
} top_fmt;
void cli_top_fmt_init(top_fmt *f, const char *sample_unit, int64_t min_value,
                      int64_t total);
void cli_top_fmt_value(const top_fmt *f, int64_t v, char *out, size_t cap);

/* Go's "Jan 2, 2006 at 3:04pm (MST)" in local time. */
void cli_top_fmt_time(int64_t nanos, char *out, size_t cap);

#endif
