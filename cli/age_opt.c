/*
 * age_opt.c: the CLI's view of allocation age: parsing `--min-age` and
 * reading a sample's age_s label. heapprof labels the in-use samples of
 * its profiles with age_s = the lower bound, in seconds, of the age class
 * of their objects (num_unit "seconds"; format/heap_age.c), so "at least
 * N seconds old" is a sample whose label is >= N, exactly what
 * `go tool pprof -tagfocus age_s=Ns:` selects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "age_opt.h"

int
cli_parse_age(const char *s, int64_t *secs)
{
	char *end;
	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	long long v = strtoll(s, &end, 10);
	if (errno || v < 0)
		return -1;
	int64_t mul;
	if (!*end || !strcmp(end, "s"))
		mul = 1;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mul = 60;
	else if (!strcmp(end, "h"))
		mul = 3600;
	else if (!strcmp(end, "d"))
		mul = 86400;
	else if (!strcmp(end, "w"))
		mul = 7 * 86400;
	else
		return -1;
	if (v > INT64_MAX / mul)
		return -1;
	*secs = (int64_t)v * mul;
	return 0;
}

int
cli_sample_age(const pprof_dec *d, const pprof_sample *s, int64_t *secs)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		const pprof_label *l = &s->labels[i];
		if (l->str == 0 && heapprof__pprof_string_eq(d, l->key, "age_s") &&
		    (l->num_unit == 0 ||
		     heapprof__pprof_string_eq(d, l->num_unit, "seconds") ||
		     heapprof__pprof_string_eq(d, l->num_unit, "s"))) {
			*secs = l->num;
			return 1;
		}
	}
	return 0;
}
