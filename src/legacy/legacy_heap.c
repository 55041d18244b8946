/*
 * legacy_heap.c: pprof's legacy heap text (Go `debug=1`, gperftools
 * `heapprofile`, tcmalloc `heap_v2/N` / `heapz_v2/N`, old `heap/N`,
 * `growthz`, `fragmentationz`), read with the rules of pprof's legacy heap
 * parser (google/pprof profile/legacy_profile.go; see
 * ../shared/notes/formats.md section 3):
 *
 *   - only the first line is tested for the header, with an unanchored
 *     pattern; `heap_v2/N` and `heapz_v2/N` mean period N with Poisson
 *     unsampling, `heap/N` period N/2 (Go writes twice its rate there) with
 *     the same unsampling, `heapprofile` period 1 and raw values, `growthz`
 *     and `fragmentationz` period 1 and raw values; any other sampler name
 *     is not a heap profile;
 *   - the header decides the sample types: four (alloc_objects,
 *     alloc_space, inuse_objects, inuse_space) when its allocation pair
 *     differs from its in-use pair as text and is not "0", else two
 *     (objects, space) holding the in-use pair;
 *   - every later line that is not blank, a '#' comment or a memory-map
 *     sentinel must be a sample "inuse_n: inuse_b [alloc_n: alloc_b] @
 *     0xaddr ..." (the pattern is unanchored, so text around it is
 *     ignored); each pair is unsampled on its own and truncated, a zero
 *     count with nonzero bytes is an error, and the numeric label "bytes"
 *     is bytes/count of the in-use pair (the allocation pair when the in-use
 *     count is 0);
 *   - addresses are the lower-case hex numbers after '@', each decremented
 *     by one (return address -> call site), shared by address.
 *
 * Difference from pprof: Go's line scanner fails on a line of 64 KiB or
 * more ("token too long"); such lines are read here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_parse.h"
#include "legacy_re.h"

static const char header_re[] =
	"heap profile: *(\\d+): *(\\d+) *\\[ *(\\d+): *(\\d+) *\\] *@ "
	"*(heap[_a-z0-9]*)/?(\\d*)";
static const char growth_re[] =
	"heap profile: *(\\d+): *(\\d+) *\\[ *(\\d+): *(\\d+) *\\] @ growthz?";
static const char frag_re[] =
	"heap profile: *(\\d+): *(\\d+) *\\[ *(\\d+): *(\\d+) *\\] @ "
	"fragmentationz?";
static const char sample_re[] =
	"(-?\\d+): *(-?\\d+) *\\[ *(\\d+): *(\\d+) *] @([ x0-9a-f]*)";

/* Decimal, optionally negative, into int64 (Go's strconv.ParseInt base 10
 * on what the patterns let through). Returns 0 or -ERANGE. */
static int
parse_i64(const char *s, size_t n, int64_t *out)
{
	int neg = n && s[0] == '-';
	size_t i = (size_t)neg;
	if (i >= n)
		return -ERANGE;
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -ERANGE;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* Every "0x[0-9a-f]+" in s (leftmost, non-overlapping), as uint64, into a
 * growable array. Returns 0, HEAPPROF_EADDR (over 64 bits) or -ENOMEM. */
static int
hex_addrs(const char *s, size_t n, uint64_t **buf, size_t *cap, size_t *count)
{
	size_t k = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '0' || s[i + 1] != 'x')
			continue;
		size_t j = i + 2, digits = 0;
		uint64_t v = 0;
		int over = 0;
		while (j < n && ((s[j] >= '0' && s[j] <= '9') ||
		                 (s[j] >= 'a' && s[j] <= 'f'))) {
			unsigned d = s[j] <= '9' ? (unsigned)(s[j] - '0')
			                         : (unsigned)(s[j] - 'a' + 10);
			if (v >> 60)
				over = 1;
			v = v << 4 | d;
			j++;
			digits++;
		}
		if (!digits)
			continue;
		if (over)
			return HEAPPROF_EADDR;
		if (k == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			uint64_t *nb = realloc(*buf, ncap * sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		(*buf)[k++] = v;
		i = j - 1;
	}
	*count = k;
	return 0;
}

typedef struct heap_ctx {
	hp_re *header, *growth, *frag, *sample;
	int v2;       /* Poisson unsampling */
	int has_alloc;
	uint64_t *addrs;
	size_t addrs_cap;
} heap_ctx;

static int
group_eq(const char *s, const long *c, int a, int b)
{
	size_t la = (size_t)(c[2 * a + 1] - c[2 * a]);
	size_t lb = (size_t)(c[2 * b + 1] - c[2 * b]);
	return la == lb && !memcmp(s + c[2 * a], s + c[2 * b], la);
}

static int
group_is(const char *s, const long *c, int g, const char *lit)
{
	size_t l = (size_t)(c[2 * g + 1] - c[2 * g]);
	return l == strlen(lit) && !memcmp(s + c[2 * g], lit, l);
}

/* The header: period, sampler, sample types. */
static int
parse_header(heap_ctx *x, hp_legacy *p, const char *s, size_t n)
{
	long c[14];
	int m = heapprof__re_search(x->header, s, n, c);
	if (m < 0)
		return m;
	p->period = 0;
	if (m) {
		if (c[13] > c[12] &&
		    parse_i64(s + c[12], (size_t)(c[13] - c[12]), &p->period))
			return HEAPPROF_ENOTLEGACY;
		/* Compared as text, as pprof does ("01" != "1"). */
		x->has_alloc = (!group_eq(s, c, 3, 1) && !group_is(s, c, 3, "0")) ||
		               (!group_eq(s, c, 4, 2) && !group_is(s, c, 4, "0"));
		size_t sl = (size_t)(c[11] - c[10]);
		const char *sn = s + c[10];
		if (group_is(s, c, 5, "heap_v2") || group_is(s, c, 5, "heapz_v2")) {
			x->v2 = 1;
		} else if (group_is(s, c, 5, "heapprofile")) {
			p->period = 1;
		} else if (group_is(s, c, 5, "heap")) {
			x->v2 = 1;
			p->period /= 2;
		} else {
			return HEAPPROF_ENOTLEGACY;
		}
		memcpy(p->sampler, sn, sl < sizeof(p->sampler) ? sl : 0);
	} else {
		const char *name = "growthz";
		m = heapprof__re_search(x->growth, s, n, c);
		if (m == 0) {
			m = heapprof__re_search(x->frag, s, n, c);
			name = "fragmentationz";
		}
		if (m < 0)
			return m;
		if (!m)
			return HEAPPROF_ENOTLEGACY;
		p->period = 1;
		strcpy(p->sampler, name);
	}
	p->ntypes = x->has_alloc ? 4 : 2;
	return 0;
}

/* One count/bytes pair of a sample line (pprof's addValues). */
static int
pair(const heap_ctx *x, const hp_legacy *p, const char *s, const long *c,
     int gc, int gb, int64_t *out, int64_t *label)
{
	int64_t count, size;
	if (parse_i64(s + c[2 * gc], (size_t)(c[2 * gc + 1] - c[2 * gc]), &count) ||
	    parse_i64(s + c[2 * gb], (size_t)(c[2 * gb + 1] - c[2 * gb]), &size))
		return HEAPPROF_ESAMPLE;
	if (count == 0 && size != 0)
		return HEAPPROF_EZEROCOUNT;
	if (count != 0) {
		/* Go's division wraps for INT64_MIN / -1; C's would trap. */
		*label = count == -1 ? (int64_t)(0 - (uint64_t)size) : size / count;
		if (x->v2)
			heapprof__legacy_scale(count, size, p->period, &count, &size);
	}
	out[0] = count;
	out[1] = size;
	return 0;
}

static int
parse_sample(heap_ctx *x, hp_legacy *p, const char *s, size_t n)
{
	long c[12];
	int m = heapprof__re_search(x->sample, s, n, c);
	if (m <= 0)
		return m < 0 ? m : HEAPPROF_ESAMPLE;
	int64_t v[4], label = 0;
	int k = 0, rc;
	if (x->has_alloc) {
		if ((rc = pair(x, p, s, c, 3, 4, v, &label)))
			return rc;
		k = 2;
	}
	if ((rc = pair(x, p, s, c, 1, 2, v + k, &label)))
		return rc;
	size_t na;
	rc = hex_addrs(s + c[10], (size_t)(c[11] - c[10]), &x->addrs,
	               &x->addrs_cap, &na);
	if (rc)
		return rc;
	for (size_t i = 0; i < na; i++)
		x->addrs[i]--; /* return address -> call site (wraps at 0) */
	return heapprof__legacy_add_sample(p, v, label, x->addrs, na);
}

static int
run(heap_ctx *x, const char *buf, size_t len, hp_legacy *p, hp_legacy_err *err)
{
	size_t pos = 0, n, line_no = 1;
	const char *line;
	if (!heapprof__legacy_next_line(buf, len, &pos, &line, &n))
		return HEAPPROF_ENOTLEGACY;
	err->line = 1;
	int rc = parse_header(x, p, line, n);
	if (rc)
		return rc;
	p->kind = HP_LEGACY_PPROF;
	int sentinel = 0;
	while (heapprof__legacy_next_line(buf, len, &pos, &line, &n)) {
		line_no++;
		const char *t = line;
		size_t tn = n;
		heapprof__legacy_trim(&t, &tn);
		if (tn == 0 || t[0] == '#')
			continue;
		if (heapprof__legacy_is_sentinel(t, tn)) {
			sentinel = 1;
			break;
		}
		err->line = line_no;
		if ((rc = parse_sample(x, p, t, tn)))
			return rc;
	}
	err->line = 0;
	return heapprof__legacy_maps(p, buf, len, sentinel ? pos : len, line_no,
	                             err);
}

int
heapprof__legacy_parse_pprof(const char *buf, size_t len, hp_legacy *p,
                             hp_legacy_err *err)
{
	heap_ctx x;
	memset(&x, 0, sizeof(x));
	int rc = heapprof__re_compile(header_re, &x.header);
	if (!rc)
		rc = heapprof__re_compile(growth_re, &x.growth);
	if (!rc)
		rc = heapprof__re_compile(frag_re, &x.frag);
	if (!rc)
		rc = heapprof__re_compile(sample_re, &x.sample);
	if (!rc)
		rc = run(&x, buf, len, p, err);
	heapprof__re_free(x.header);
	heapprof__re_free(x.growth);
	heapprof__re_free(x.frag);
	heapprof__re_free(x.sample);
	free(x.addrs);
	return rc;
}
