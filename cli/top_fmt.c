/*
 * top_fmt.c: pprof's number formatting for `heapprof top` (unit scaling,
 * output unit selection, percentages, the Time: line), reimplemented to
 * match `go tool pprof -top` (Go 1.19) output byte for byte.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "top_fmt.h"

/* Unit families, as pprof's measurement package knows them: each unit
 * has a printed name, aliases and a factor to the family's base unit. */
typedef struct unit_def {
	const char *name;
	const char *alias[3];
	double factor;
} unit_def;

typedef struct family {
	const unit_def *units;
	size_t n;
	const char *dflt_name;
	double dflt_factor;
} family;

static const unit_def mem_units[] = {
	{"B", {"b", "byte"}, 1},
	{"kB", {"kb", "kbyte", "kilobyte"}, 1024.0},
	{"MB", {"mb", "mbyte", "megabyte"}, 1048576.0},
	{"GB", {"gb", "gbyte", "gigabyte"}, 1073741824.0},
	{"TB", {"tb", "tbyte", "terabyte"}, 1099511627776.0},
	{"PB", {"pb", "pbyte", "petabyte"}, 1125899906842624.0},
};
static const unit_def time_units[] = {
	{"ns", {"ns", "nanosecond"}, 1},
	{"us", {"\xce\xbcs", "us", "microsecond"}, 1e3},
	{"ms", {"ms", "millisecond"}, 1e6},
	{"s", {"s", "sec", "second"}, 1e9},
	{"hrs", {"hour", "hr"}, 3600e9},
};
static const unit_def gcu_units[] = {
	{"n*GCU", {"nanogcu"}, 1e-9}, {"u*GCU", {"microgcu"}, 1e-6},
	{"m*GCU", {"milligcu"}, 1e-3}, {"GCU", {"gcu"}, 1},
	{"k*GCU", {"kilogcu"}, 1e3}, {"M*GCU", {"megagcu"}, 1e6},
	{"G*GCU", {"gigagcu"}, 1e9}, {"T*GCU", {"teragcu"}, 1e12},
	{"P*GCU", {"petagcu"}, 1e15},
};
#define FAMILY(u, dn, df) {u, sizeof(u) / sizeof(u[0]), dn, df}
static const family families[] = {
	FAMILY(mem_units, "B", 1),
	FAMILY(time_units, "s", 1e9),
	FAMILY(gcu_units, "GCU", 1),
};

/* Lowercased, a trailing 's' dropped when longer than 2 characters. */
static const unit_def *
sniff(const family *fam, const char *in)
{
	char u[64];
	size_t n = 0;
	for (; in[n] && n + 1 < sizeof(u); n++)
		u[n] = (char)tolower((unsigned char)in[n]);
	u[n] = '\0';
	if (n > 2 && u[n - 1] == 's')
		u[n - 1] = '\0';
	for (size_t i = 0; i < fam->n; i++)
		for (size_t k = 0; k < 3 && fam->units[i].alias[k]; k++)
			if (!strcmp(u, fam->units[i].alias[k]))
				return &fam->units[i];
	return NULL;
}

static int
is_auto(const char *to)
{
	return !strcmp(to, "minimum") || !strcmp(to, "auto");
}

static int
convert(const family *fam, int64_t value, const char *from, const char *to,
        double *out, const char **name)
{
	const unit_def *fu = sniff(fam, from);
	if (!fu)
		return 0;
	double v = (double)value * fu->factor;
	if (is_auto(to)) {
		const unit_def *best = NULL;
		for (size_t i = 0; i < fam->n; i++)
			if ((!best || fam->units[i].factor >= best->factor) &&
			    v / fam->units[i].factor >= 1.0)
				best = &fam->units[i];
		if (best) {
			*out = v / best->factor;
			*name = best->name;
			return 1;
		}
	} else {
		const unit_def *tu = sniff(fam, to);
		if (tu) {
			*out = v / tu->factor;
			*name = tu->name;
			return 1;
		}
	}
	*out = v / fam->dflt_factor;
	*name = fam->dflt_name;
	return 1;
}

double
cli_top_scale(int64_t value, const char *from, const char *to, char *unit,
              size_t ucap)
{
	if (value < 0 && value != INT64_MIN)
		return -cli_top_scale(-value, from, to, unit, ucap);
	double v;
	const char *name;
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (convert(&families[i], value, from, to, &v, &name)) {
			snprintf(unit, ucap, "%s", name);
			return v;
		}
	if (!strcmp(to, "count") || !strcmp(to, "sample") ||
	    !strcmp(to, "unit") || is_auto(to))
		unit[0] = '\0';
	else
		snprintf(unit, ucap, "%s", to);
	return (double)value;
}

void
cli_top_scaled_label(int64_t value, const char *from, const char *to,
                     char *out, size_t cap)
{
	char unit[64], num[64];
	double v = cli_top_scale(value, from, to, unit, sizeof(unit));
	snprintf(num, sizeof(num), "%.2f", v);
	size_t n = strlen(num);
	if (n > 3 && !strcmp(num + n - 3, ".00"))
		num[n - 3] = '\0';
	if (!strcmp(num, "0") || !strcmp(num, "-0"))
		snprintf(out, cap, "0");
	else
		snprintf(out, cap, "%s%s", num, unit);
}

void
cli_top_percent(int64_t value, int64_t total, char *out, size_t cap)
{
	double r = 0;
	if (total != 0)
		r = fabs((double)value / (double)total) * 100;
	if (r >= 99.95 && r <= 100.05)
		snprintf(out, cap, "  100%%");
	else if (r >= 1.0)
		snprintf(out, cap, "%5.2f%%", r);
	else
		snprintf(out, cap, "%5.2g%%", r);
}

void
cli_top_fmt_init(top_fmt *f, const char *sample_unit, int64_t min_value,
                 int64_t total)
{
	snprintf(f->sample_unit, sizeof(f->sample_unit), "%s", sample_unit);
	int64_t maxv = total;
	if (min_value == 0)
		min_value = maxv;
	char umin[64], umax[64], u[64];
	cli_top_scale(min_value, sample_unit, "minimum", umin, sizeof(umin));
	cli_top_scale(maxv, sample_unit, "minimum", umax, sizeof(umax));
	snprintf(u, sizeof(u), "%s", umin);
	if (strcmp(umin, umax) != 0 && min_value < INT64_MAX / 100 &&
	    min_value * 100 < maxv)
		cli_top_scale(100 * min_value, sample_unit, "minimum", u,
		              sizeof(u));
	snprintf(f->output_unit, sizeof(f->output_unit), "%s",
	         u[0] ? u : sample_unit);
}

void
cli_top_fmt_value(const top_fmt *f, int64_t v, char *out, size_t cap)
{
	cli_top_scaled_label(v, f->sample_unit, f->output_unit, out, cap);
}

void
cli_top_fmt_time(int64_t nanos, char *out, size_t cap)
{
	static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr",
	                                  "May", "Jun", "Jul", "Aug",
	                                  "Sep", "Oct", "Nov", "Dec"};
	time_t sec = (time_t)(nanos / 1000000000);
	if (nanos < 0 && nanos % 1000000000)
		sec--;
	struct tm tm;
	if (!localtime_r(&sec, &tm)) {
		snprintf(out, cap, "?");
		return;
	}
	int h12 = tm.tm_hour % 12 ? tm.tm_hour % 12 : 12;
	snprintf(out, cap, "%s %d, %d at %d:%02d%s (%s)", mon[tm.tm_mon % 12],
	         tm.tm_mday, tm.tm_year + 1900, h12, tm.tm_min,
	         tm.tm_hour < 12 ? "am" : "pm", tm.tm_zone ? tm.tm_zone : "");
}
