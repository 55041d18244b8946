/*
 * legacy_parse.c: the shared half of the legacy readers (see
 * legacy_parse.h): format detection, Go-compatible line splitting and
 * white-space trimming, pprof's heap unsampling, and the sample / location
 * tables every reader appends to (locations deduplicated by address, in
 * order of first use, which is the order pprof numbers them in).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "legacy_parse.h"
#include "hpmath.h"
#include "pb.h"

static const char *const types4[] = {
	"alloc_objects", "count", "alloc_space", "bytes",
	"inuse_objects", "count", "inuse_space", "bytes",
};
static const char *const types2[] = {"objects", "count", "space", "bytes"};

const char *const *
heapprof__legacy_type_names(int ntypes)
{
	return ntypes == 4 ? types4 : types2;
}

/* ------------------------------------------------------------ text utils */

/* Length of the white-space character at the start of s, or 0. Go's
 * unicode.IsSpace: \t \n \v \f \r space, U+0085, U+00A0, U+1680,
 * U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (UTF-8). */
static size_t
space_fwd(const unsigned char *s, size_t n)
{
	if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
		return 1;
	if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;
	if (n >= 3) {
		if (s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80)
			return 3;
		if (s[0] == 0xe2 && s[1] == 0x80 &&
		    (s[2] <= 0x8a || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf) &&
		    s[2] >= 0x80)
			return 3;
		if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
			return 3;
		if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
			return 3;
	}
	return 0;
}

/* The same at the end of s[0..n). */
static size_t
space_back(const unsigned char *s, size_t n)
{
	if (n >= 1 && space_fwd(s + n - 1, 1))
		return 1;
	if (n >= 2 && space_fwd(s + n - 2, 2) == 2)
		return 2;
	if (n >= 3 && space_fwd(s + n - 3, 3) == 3)
		return 3;
	return 0;
}

void
heapprof__legacy_trim(const char **s, size_t *n)
{
	const unsigned char *p = (const unsigned char *)*s;
	size_t len = *n, k;
	while (len && (k = space_fwd(p, len)) != 0) {
		p += k;
		len -= k;
	}
	while (len && (k = space_back(p, len)) != 0)
		len -= k;
	*s = (const char *)p;
	*n = len;
}

int
heapprof__legacy_next_line(const char *buf, size_t len, size_t *pos,
                           const char **line, size_t *n)
{
	if (*pos >= len)
		return 0;
	const char *s = buf + *pos;
	const char *nl = memchr(s, '\n', len - *pos);
	size_t l = nl ? (size_t)(nl - s) : len - *pos;
	*pos += l + (nl != NULL);
	if (l && s[l - 1] == '\r')
		l--;
	*line = s;
	*n = l;
	return 1;
}

static int
contains(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	if (n < k)
		return 0;
	for (size_t i = 0; i + k <= n; i++)
		if (s[i] == needle[0] && !memcmp(s + i, needle, k))
			return 1;
	return 0;
}

int
heapprof__legacy_is_sentinel(const char *s, size_t n)
{
	return contains(s, n, "--- Memory map: ---") ||
	       contains(s, n, "MAPPED_LIBRARIES:");
}

void
heapprof__legacy_scale(int64_t count, int64_t size, int64_t rate, int64_t *oc,
                       int64_t *os)
{
	/* A sample of average size S under Poisson sampling with mean R is
	 * kept with probability 1 - exp(-S/R); divide by it. pprof converts
	 * the products back with a truncating int64() conversion. */
	if (count == 0 || size == 0) {
		*oc = *os = 0;
		return;
	}
	if (rate <= 1) {
		*oc = count;
		*os = size;
		return;
	}
	double avg = (double)size / (double)count;
	double scale = 1.0 / (1.0 - hp_exp_neg(avg / (double)rate));
	double c = (double)count * scale, s = (double)size * scale;
	/* Out of range (or NaN): what Go's conversion gives on amd64. */
	*oc = c >= -9223372036854775808.0 && c < 9223372036854775808.0
	          ? (int64_t)c : INT64_MIN;
	*os = s >= -9223372036854775808.0 && s < 9223372036854775808.0
	          ? (int64_t)s : INT64_MIN;
}

/* --------------------------------------------------------------- tables */

static int
grow(void **p, size_t *cap, size_t need, size_t elem)
{
	return heapprof__grow(heapprof__pb_libc_realloc, NULL, p, cap, need,
	                      elem);
}

/* The location index for addr, created if new. */
static int
location(hp_legacy *p, uint64_t addr, uint32_t *out)
{
	if (p->nlocs >= UINT32_MAX - 1)
		return HEAPPROF_EOVERFLOW;
	int found;
	HP_TRY(heapprof__u64map_get_or_put(&p->locmap, addr, (uint32_t)p->nlocs,
	                                   out, &found));
	if (found)
		return 0;
	size_t need = p->nlocs + 1, cap = p->locs_cap;
	if (grow((void **)&p->loc_addr, &cap, need, sizeof(uint64_t)))
		return -ENOMEM;
	cap = p->locs_cap;
	if (grow((void **)&p->loc_map, &cap, need, sizeof(uint32_t)))
		return -ENOMEM;
	p->locs_cap = cap;
	p->loc_addr[p->nlocs] = addr;
	p->loc_map[p->nlocs] = 0;
	*out = (uint32_t)p->nlocs++;
	return 0;
}

/* Makes room for one more sample (capacity counted in samples). */
static int
sample_room(hp_legacy *p)
{
	size_t ns = p->nsamples, nt = (size_t)p->ntypes;
	if (ns + 1 < p->samples_cap)
		return 0;
	size_t ncap = p->samples_cap ? p->samples_cap * 2 : 64;
	if (ncap > SIZE_MAX / 8 / (nt + 2))
		return -ENOMEM;
	int64_t *v = realloc(p->values, ncap * nt * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->values = v;
	int64_t *l = realloc(p->label, ncap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	p->label = l;
	size_t *a = realloc(p->stack_at, (ncap + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	p->stack_at = a;
	if (ns == 0)
		a[0] = 0;
	p->samples_cap = ncap;
	return 0;
}

int
heapprof__legacy_add_sample(hp_legacy *p, const int64_t *values, int64_t label,
                            const uint64_t *addrs, size_t naddrs)
{
	size_t ns = p->nsamples, nt = (size_t)p->ntypes;
	if (sample_room(p))
		return -ENOMEM;
	if (naddrs > SIZE_MAX / 8 - p->nstack)
		return -ENOMEM;
	if (grow((void **)&p->stack, &p->stack_cap, p->nstack + naddrs,
	         sizeof(uint32_t)))
		return -ENOMEM;
	for (size_t i = 0; i < naddrs; i++) {
		uint32_t li;
		int rc = location(p, addrs[i], &li);
		if (rc)
			return rc;
		p->stack[p->nstack + i] = li;
	}
	p->nstack += naddrs;
	memcpy(p->values + ns * nt, values, nt * sizeof(int64_t));
	p->label[ns] = label;
	p->stack_at[ns + 1] = p->nstack;
	p->nsamples = ns + 1;
	return 0;
}

/* ---------------------------------------------------------- entry points */

int
heapprof__legacy_detect(const void *buf, size_t len)
{
	const char *s = buf;
	if (len >= 8 && !memcmp(s, "heap_v2/", 8))
		return HP_FMT_JEMALLOC;
	size_t pos = 0, n;
	const char *line;
	if (heapprof__legacy_next_line(s, len, &pos, &line, &n) &&
	    contains(line, n, "heap profile:"))
		return HP_FMT_LEGACY;
	return len ? HP_FMT_PPROF : HP_FMT_UNKNOWN;
}

int
heapprof__legacy_parse(const char *buf, size_t len, hp_legacy *out,
                       hp_legacy_err *err)
{
	memset(out, 0, sizeof(*out));
	err->line = 0;
	if (!len)
		return HEAPPROF_EEMPTY;
	int rc;
	if (heapprof__legacy_detect(buf, len) == HP_FMT_JEMALLOC)
		rc = heapprof__legacy_parse_jemalloc(buf, len, out, err);
	else
		rc = heapprof__legacy_parse_pprof(buf, len, out, err);
	if (rc)
		heapprof__legacy_free(out);
	return rc;
}

void
heapprof__legacy_free(hp_legacy *p)
{
	free(p->values);
	free(p->label);
	free(p->stack_at);
	free(p->stack);
	free(p->loc_addr);
	free(p->loc_map);
	for (size_t i = 0; i < p->nmaps; i++) {
		free(p->maps[i].file);
		free(p->maps[i].build_id);
	}
	free(p->maps);
	heapprof__u64map_free(&p->locmap);
	memset(p, 0, sizeof(*p));
}
