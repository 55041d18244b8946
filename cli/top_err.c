/*
 * top_err.c: how far to trust a sampled heap profile (`heapprof top
 * --error`): the 95% interval of each value from the profile's own sample
 * counts, and the line that reconciles the in-use estimate with the RSS
 * and allocator figures in the profile's comments (src/collect/allocstats.c
 * writes them).
 *
 * The derivation. heapprof (as Go's runtime, and gperftools) samples a
 * Poisson process over allocated bytes with mean distance R (the profile's
 * period): an allocation of S bytes is sampled when at least one point of
 * the process falls in its S bytes, with probability p = 1 - exp(-S/R),
 * independently of every other allocation (disjoint stretches of a Poisson
 * process are independent). Of N allocations of size S at one site, n ~
 * Binomial(N, p) are sampled, and the profile shows N^ = n/p objects (S n/p
 * bytes): unbiased, with variance N (1-p)/p. Replacing N by its estimate
 * n/p gives the variance estimate
 *
 *     var(objects) = n (1-p) / p^2,   var(bytes) = S^2 n (1-p) / p^2.
 *
 * What the file gives: each sample's values are already unsampled (v =
 * trunc(n/p), truncated as Go's scaleHeapSample does), the period R, and a
 * numeric "bytes" label with S (the object size: heapprof writes each
 * record's; Go its block size). From v and S: trunc(n/p) = v means
 * v p <= n < (v+1) p, an interval of length p <= 1 that holds n and no
 * other integer, so n = ceil(v p); computed with the encoder's own
 * exp (hpmath.h) and checked against trunc(n/p) = v, else v p (Go's math.Exp
 * may differ in the last bit; an age split's parts are differences of
 * truncated values). A sample without the label (heapprof writes none for
 * malloc(0) blocks) has S = space/objects, or 1 byte when it holds no bytes
 * (as the encoder weighs them). Samples are distinct objects, so the
 * variances of the samples that make a row add: a function's flat adds
 * the samples whose leaf it is, its cum those through it, the total all.
 * The interval is the normal approximation, +-1.96 sqrt(var): good for a
 * row of tens of sampled objects or more, optimistic for a handful (a
 * site never sampled shows no row at all, and no interval can say so).
 *
 * At rate 1 every allocation is recorded: the values are exact. Without a
 * period, or for types that are not counts of sampled objects (peak_*, whose
 * moment is chosen from the estimate; CPU profiles), or without bytes
 * labels (profiles from other tools), no interval is given, and top says
 * why. A record sampled at another rate than the profile's period (the
 * rate changed while the program ran) is estimated with the period.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpmath.h"
#include "top_err.h"
#include "top_fmt.h"

/* The type named "<kind>_<what>", or -1. */
static long
find_type(const pprof_dec *d, const char *kind, size_t klen, const char *what)
{
	char name[64];
	snprintf(name, sizeof(name), "%.*s%s", (int)klen, kind, what);
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, name))
			return (long)i;
	return -1;
}

/* The "bytes" label of s: 1 and *v if there is one. */
static int
bytes_label(const pprof_dec *d, const pprof_sample *s, int64_t *v)
{
	for (size_t j = 0; j < s->nlabels; j++)
		if (s->labels[j].str == 0 &&
		    heapprof__pprof_string_eq(d, s->labels[j].key, "bytes")) {
			*v = s->labels[j].num;
			return 1;
		}
	return 0;
}

void
cli_top_err_init(top_err *e, pprof_dec *d, size_t vi)
{
	memset(e, 0, sizeof(*e));
	e->kind = TOP_ERR_NONE;
	e->vi = vi;
	e->space_vi = -1;
	e->rate = d->period;
	size_t n;
	const char *type = heapprof__pprof_string(d, d->types[vi].type, &n);
	size_t klen = n >= 6 && !strncmp(type, "inuse_", 6)   ? 6
	              : n >= 6 && !strncmp(type, "alloc_", 6) ? 6
	                                                      : 0;
	if (!heapprof__pprof_string_eq(d, d->period_type.type, "space") ||
	    !heapprof__pprof_string_eq(d, d->period_type.unit, "bytes")) {
		snprintf(e->why, sizeof(e->why),
		         "not a sampled heap profile (no period of space/bytes)");
		return;
	}
	long cvi = klen ? find_type(d, type, klen, "objects") : -1;
	int objects = n - klen == 7 && !strncmp(type + klen, "objects", 7);
	int space = n - klen == 5 && !strncmp(type + klen, "space", 5);
	if (cvi < 0 || !(objects || space)) {
		snprintf(e->why, sizeof(e->why),
		         "%.*s is not a count of sampled objects (intervals are "
		         "given for inuse_* and alloc_*)",
		         (int)n, type);
		return;
	}
	e->count_vi = (size_t)cvi;
	e->space_vi = find_type(d, type, klen, "space");
	e->bytes = (size_t)cvi != vi;
	if (d->period == 1) {
		e->kind = TOP_ERR_EXACT;
		return;
	}
	if (d->period <= 0) {
		snprintf(e->why, sizeof(e->why),
		         "the profile has no sampling rate (period %lld)",
		         (long long)d->period);
		return;
	}
	/* The object sizes: heapprof's and Go's "bytes" labels. */
	pprof_sample_iter it;
	pprof_sample s;
	int64_t b;
	int found = 0, bytes = 0;
	heapprof__pprof_samples(d, &it);
	while (!found && heapprof__pprof_sample_next(d, &it, &s) == 0) {
		found = bytes_label(d, &s, &b);
		if (e->space_vi >= 0 && s.values[e->space_vi] != 0)
			bytes = 1;
	}
	/* Without labels only zero-byte objects (which heapprof writes
	 * without one) are known to be of size 0, sampled as 1 byte. */
	if (!found && bytes) {
		snprintf(e->why, sizeof(e->why),
		         "its samples carry no \"bytes\" label (the object size "
		         "heapprof and Go write), so the sampled counts are unknown");
		return;
	}
	e->kind = TOP_ERR_SAMPLED;
}

double
cli_top_err_sampled(int64_t v, double size, int64_t rate)
{
	if (v <= 0 || rate <= 1)
		return v > 0 ? (double)v : 0;
	double p = 1.0 - hp_exp_neg(size / (double)rate);
	if (!(p > 0))
		return (double)v;
	double scale = 1.0 / p;
	double guess = ceil((double)v * p);
	for (int k = -1; k <= 1; k++) {
		double c = guess + k;
		if (c >= 1 && (int64_t)(c * scale) == v)
			return c;
	}
	return (double)v * p;
}

double
cli_top_err_var(const top_err *e, const pprof_dec *d, const pprof_sample *s,
                double *n_out, double *size_out)
{
	(void)d;
	*n_out = 0;
	*size_out = 0;
	int64_t v = s->values[e->count_vi];
	if (v <= 0)
		return 0;
	int64_t b;
	double size;
	if (bytes_label(d, s, &b) && b > 0)
		size = (double)b;
	else if (e->space_vi >= 0 && s->values[e->space_vi] > 0)
		size = (double)s->values[e->space_vi] / (double)v;
	else
		size = 1.0; /* malloc(0): sampled as one byte */
	double n = cli_top_err_sampled(v, size, e->rate);
	double p = 1.0 - hp_exp_neg(size / (double)e->rate);
	*n_out = n;
	*size_out = size;
	if (!(p > 0))
		return 0;
	double var = n * (1.0 - p) / (p * p);
	return e->bytes ? var * size * size : var;
}

double
cli_top_err_half(double var)
{
	return var > 0 ? 1.96 * sqrt(var) : 0;
}

void
cli_top_err_inuse(pprof_dec *d, double *heap, double *half, int *exact,
                  double *sampled)
{
	*heap = *sampled = 0;
	*half = -1;
	*exact = 0;
	long vi = -1;
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, "inuse_space"))
			vi = (long)i;
	if (vi < 0)
		return;
	top_err e;
	cli_top_err_init(&e, d, (size_t)vi);
	pprof_sample_iter it;
	pprof_sample s;
	double var = 0;
	heapprof__pprof_samples(d, &it);
	while (heapprof__pprof_sample_next(d, &it, &s) == 0) {
		*heap += (double)s.values[vi];
		if (e.kind == TOP_ERR_SAMPLED) {
			double n, size;
			var += cli_top_err_var(&e, d, &s, &n, &size);
			*sampled += n * size;
		} else if (e.kind == TOP_ERR_EXACT) {
			*sampled += (double)s.values[vi];
		}
	}
	if (e.kind == TOP_ERR_EXACT) {
		*exact = 1;
		*half = 0;
	} else if (e.kind == TOP_ERR_SAMPLED) {
		*half = cli_top_err_half(var);
	}
}

/* ----------------------------------------------------- reconciliation */

/* The value of "key=" in c[0..n) as a number; 0 if absent or not one. */
static int
field(const char *c, size_t n, const char *key, int64_t *out)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i + kl <= n; i++) {
		if ((i == 0 || c[i - 1] == ' ') && !memcmp(c + i, key, kl)) {
			size_t j = i + kl;
			if (j >= n || c[j] < '0' || c[j] > '9')
				return 0;
			int64_t v = 0;
			for (; j < n && c[j] >= '0' && c[j] <= '9'; j++)
				v = v * 10 + (c[j] - '0');
			*out = v;
			return 1;
		}
	}
	return 0;
}

void
cli_top_mem_parse(const pprof_dec *d, top_mem *m)
{
	memset(m, 0, sizeof(*m));
	m->rss = m->records = m->pages = -1;
	static const char mem[] = "heapprof: memory: ";
	static const char prof[] = "heapprof: profiler memory: ";
	for (size_t i = 0; i < d->ncomments; i++) {
		size_t n;
		const char *c = heapprof__pprof_string(d, d->comments[i], &n);
		if (n > sizeof(prof) - 1 && !memcmp(c, prof, sizeof(prof) - 1)) {
			field(c, n, "records=", &m->records);
			field(c, n, "pages=", &m->pages);
			continue;
		}
		if (n <= sizeof(mem) - 1 || memcmp(c, mem, sizeof(mem) - 1))
			continue;
		m->have = 1;
		if (!field(c, n, "rss=", &m->rss))
			m->rss = -1;
		const char *a = memmem(c, n, " allocator=", 11);
		if (!a)
			continue;
		a += 11;
		size_t left = n - (size_t)(a - c), k = 0;
		while (k < left && a[k] != ' ' && a[k] != '(')
			k++;
		snprintf(m->allocator, sizeof(m->allocator), "%.*s", (int)k, a);
		if (k < left && a[k] == '(') {
			const char *e = memchr(a + k, ')', left - k);
			size_t w = e ? (size_t)(e - a) - k - 1 : left - k - 1;
			snprintf(m->skipped, sizeof(m->skipped), "%.*s", (int)w,
			         a + k + 1);
			continue;
		}
		m->have_alloc = field(c, n, "held=", &m->held) &&
		                field(c, n, "in_use=", &m->in_use) &&
		                field(c, n, "free=", &m->free_b);
	}
}

static void
mb(double v, char *out, size_t cap)
{
	cli_top_scaled_label((int64_t)llround(v), "bytes", "auto", out, cap);
}

void
cli_top_mem_line(const top_mem *m, double heap, double half, int exact,
                 double sampled, char *out, size_t cap)
{
	char h[32], est[48], r[32], f[32], p[32], o[32];
	mb(heap, h, sizeof(h));
	if (exact)
		snprintf(est, sizeof(est), "exact");
	else if (half < 0)
		snprintf(est, sizeof(est), "estimate, no interval");
	else if (heap > 0)
		snprintf(est, sizeof(est), "est. \xc2\xb1%.1f%%",
		         100.0 * half / heap);
	else
		snprintf(est, sizeof(est), "est.");
	if (m->rss < 0) {
		snprintf(out, cap, "Memory: RSS unknown; heap in use %s (%s)", h,
		         est);
		return;
	}
	mb((double)m->rss, r, sizeof(r));
	if (!m->have_alloc) {
		snprintf(out, cap,
		         "Memory: RSS %s; heap in use %s (%s); no allocator "
		         "figures (%s)",
		         r, h, est, m->skipped[0] ? m->skipped : m->allocator);
		return;
	}
	/* The program's objects live in the allocator, or (the sampled
	 * ones) in the profiler's pages: what those two hold beyond the
	 * estimate is the allocator's free space and overhead; the
	 * profiler's own is its records and its pages beyond the sampled
	 * objects; the rest of RSS is code, stacks, other mappings. */
	double pages = m->pages > 0 ? (double)m->pages : 0;
	double recs = m->records > 0 ? (double)m->records : 0;
	double fr = (double)m->held + sampled - heap;
	double own = recs + pages - sampled;
	double other = (double)m->rss - (double)m->held - pages - recs;
	mb(fr, f, sizeof(f));
	mb(own, p, sizeof(p));
	mb(other, o, sizeof(o));
	snprintf(out, cap,
	         "Memory: RSS %s = heap in use %s (%s) + %s free and overhead "
	         "%s + heapprof %s + other %s%s%s",
	         r, h, est, m->allocator, f, p, o,
	         fr < 0 && (half < 0 || -fr > half)
	                 ? "; the estimate exceeds, by more than its interval, "
	                   "what the allocator and heapprof hold"
	                 : "",
	         other < 0 ? "; some of what the allocator and heapprof "
	                     "hold is not resident (never touched, or "
	                     "swapped out)"
	                   : "");
}
