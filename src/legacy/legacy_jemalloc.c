/*
 * legacy_jemalloc.c: jemalloc's heap dumps (`prof.dump`, `prof_final`,
 * ...), which `go tool pprof` cannot read, read as jemalloc's own `jeprof`
 * (its ReadThreadedHeapProfile) reads them:
 *
 *   heap_v2/RATE                     header; RATE = 2^lg_prof_sample
 *     t*: N: B [N: B]                whole-process totals (skipped)
 *     t0: N: B [N: B]                per-thread totals (skipped)
 *   @ 0xaddr 0xaddr ...              a stack, leaf first
 *     t*: IN: IB [AN: AB]            its in-use and allocation pairs
 *     t3: IN: IB [AN: AB]            the same per thread (not summed)
 *   MAPPED_LIBRARIES:                /proc/self/maps
 *
 * What jeprof does with the numbers: for each stack's `t*:` line, each pair
 * (count n, bytes s) with n != 0 is unsampled when RATE != 0 (even when it
 * is 1) as ratio = (s / n) / RATE, scale = 1 / (1 - exp(-ratio)),
 * n *= scale, s *= scale, kept as floating point; `tN:` lines only feed its
 * per-thread views; lines matching nothing are ignored.
 *
 * What this reader does: the same formula, each product truncated to an
 * integer (as pprof does for its own v2 unsampling), so totals are at most
 * one unit per sample below jeprof's; a stack's `t*:` line becomes one
 * sample with the sample types pprof would give the same numbers in its
 * legacy format (four types unless the header `t*:` line's allocation pair
 * equals its in-use pair or is 0, then objects/space), the "bytes" label and
 * mapping rules of legacy_heap.c / legacy_maps.c, and every address minus 1
 * (jeprof leaves the leaf address as is; pprof convention is a call-site
 * address for every frame).
 *
 * The allocator's own frames: every stack in a dump is taken by jemalloc
 * itself, so it starts inside jemalloc (its backtrace code, its entry
 * point). jeprof names each frame (nm -D on a stripped library gives each
 * address the nearest exported symbol before it) and throws away, leaf
 * first, everything up to and including the last frame named as an
 * allocator entry point (malloc, calloc, realloc, mallocx, rallocx,
 * posix_memalign, operator new, ...); its flat then falls on the program's
 * function that called the allocator. This reader has no symbols, so it
 * drops by object instead (je_trim): the leading run of frames in the same
 * shared library as the leaf frame (libjemalloc.so.2, or wherever the
 * allocator lives when preloaded), which is what jeprof drops when
 * jemalloc is a shared library. A stack entirely inside it is kept whole;
 * a leaf frame in the main executable (jemalloc linked in statically) is
 * left alone: there the boundary needs the names. Stricter than jeprof: a non-blank line that is
 * neither a stack, a t-line nor the map sentinel, an address that is not
 * hex or over 64 bits, a count or size over int64, a count with zero bytes
 * (jeprof dies dividing by zero there) are errors (HEAPPROF_EJEMALLOC,
 * HEAPPROF_EADDR).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_parse.h"
#include "legacy_re.h"
#include "hpmath.h"

static const char tline_re[] =
	"^\\s*(t(\\*|\\d+)):\\s+(\\d+):\\s+(\\d+)\\s+\\[\\s*(\\d+):\\s+(\\d+)\\]$";

static int
perl_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

static int
dec64(const char *s, size_t n, int64_t *out)
{
	uint64_t v = 0;
	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = (int64_t)v;
	return 0;
}

/* jeprof's AdjustSamples for one pair, truncated. */
static int
adjust(int64_t n, int64_t s, int64_t rate, int64_t *on, int64_t *os)
{
	*on = n;
	*os = s;
	if (!rate || !n)
		return 0;
	if (!s)
		return HEAPPROF_EJEMALLOC;
	double ratio = ((double)s / (double)n) / (double)rate;
	double scale = 1.0 / (1.0 - hp_exp_neg(ratio));
	double dn = (double)n * scale, ds = (double)s * scale;
	if (!(dn < 9223372036854775808.0) || !(ds < 9223372036854775808.0))
		return HEAPPROF_EOVERFLOW;
	*on = (int64_t)dn;
	*os = (int64_t)ds;
	return 0;
}

/* Addresses of a "@ ..." line (after '@'), each minus 1. */
static int
stack_addrs(const char *s, size_t n, uint64_t **buf, size_t *cap, size_t *cnt)
{
	size_t k = 0, i = 0;
	for (;;) {
		while (i < n && perl_space(s[i]))
			i++;
		if (i == n)
			break;
		size_t j = i;
		while (j < n && !perl_space(s[j]))
			j++;
		const char *t = s + i;
		size_t tn = j - i;
		if (tn > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
			t += 2;
			tn -= 2;
		}
		uint64_t v = 0;
		if (!tn)
			return HEAPPROF_EJEMALLOC;
		for (size_t d = 0; d < tn; d++) {
			char c = t[d];
			unsigned x;
			if (c >= '0' && c <= '9')
				x = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				x = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				x = (unsigned)(c - 'A' + 10);
			else
				return HEAPPROF_EJEMALLOC;
			if (v >> 60)
				return HEAPPROF_EADDR;
			v = v << 4 | x;
		}
		if (k == *cap) {
			size_t ncap = *cap ? *cap * 2 : 64;
			uint64_t *nb = realloc(*buf, ncap * sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		(*buf)[k++] = v - 1;
		i = j;
	}
	*cnt = k;
	return 0;
}

typedef struct je_ctx {
	hp_re *tline;
	uint64_t *addrs;
	size_t naddrs, addrs_cap;
	int have_stack;
	int header_totals; /* seen the header's t*: line */
	char *line;        /* the current line without '\r' */
	size_t line_cap;
} je_ctx;

/* A t-line's four numbers; returns 1 if the line is one, 0 if not. */
static int
tline(je_ctx *x, const char *s, size_t n, int *star, int64_t v[4], int *err)
{
	long c[14];
	int m = heapprof__re_search(x->tline, s, n, c);
	if (m <= 0) {
		*err = m;
		return 0;
	}
	*star = s[c[4]] == '*';
	for (int g = 0; g < 4; g++)
		if (dec64(s + c[6 + 2 * g], (size_t)(c[7 + 2 * g] - c[6 + 2 * g]),
		          &v[g])) {
			*err = HEAPPROF_EJEMALLOC;
			return 0;
		}
	*err = 0;
	return 1;
}

/* Does mapping index + 1 `m` name a shared library ("*.so", "*.so.N")? */
static int
is_shared_lib(const hp_legacy *p, uint32_t m)
{
	if (!m || m > p->nmaps)
		return 0;
	const hp_legacy_map *mp = &p->maps[m - 1];
	const char *f = mp->file;
	size_t n = mp->file_len;
	const char *base = f;
	for (size_t i = 0; i < n; i++)
		if (f[i] == '/')
			base = f + i + 1;
	size_t bn = (size_t)(f + n - base);
	for (size_t i = 0; i + 3 <= bn; i++)
		if (!memcmp(base + i, ".so", 3) &&
		    (i + 3 == bn || base[i + 3] == '.' || base[i + 3] == '_'))
			return 1;
	return 0;
}

static int
same_file(const hp_legacy *p, uint32_t a, uint32_t b)
{
	if (a == b)
		return 1;
	if (!a || !b || a > p->nmaps || b > p->nmaps)
		return 0;
	const hp_legacy_map *x = &p->maps[a - 1], *y = &p->maps[b - 1];
	return x->file_len == y->file_len &&
	       !memcmp(x->file, y->file, x->file_len);
}

/* Drops each stack's leading frames inside the allocator's shared library
 * (see the header comment), then renumbers the locations still used in
 * order of first use, as pprof would have built them from the shorter
 * stacks. The address -> location map is dropped: parsing is over. */
static int
je_trim(hp_legacy *p)
{
	if (!p->nlocs)
		return 0;
	uint32_t *newid = malloc(p->nlocs * sizeof(*newid));
	uint64_t *addr = malloc(p->nlocs * sizeof(*addr));
	uint32_t *map = malloc(p->nlocs * sizeof(*map));
	if (!newid || !addr || !map) {
		free(newid);
		free(addr);
		free(map);
		return -ENOMEM;
	}
	memset(newid, 0xff, p->nlocs * sizeof(*newid));
	size_t out = 0;
	uint32_t nused = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		size_t a = p->stack_at[i], e = p->stack_at[i + 1], k = a;
		if (e > a) {
			uint32_t leaf = p->loc_map[p->stack[a]];
			if (is_shared_lib(p, leaf)) {
				while (k < e && same_file(p, leaf,
				                          p->loc_map[p->stack[k]]))
					k++;
				if (k == e)
					k = a; /* all allocator: kept whole */
			}
		}
		p->stack_at[i] = out;
		for (; k < e; k++) {
			uint32_t l = p->stack[k];
			if (newid[l] == UINT32_MAX) {
				newid[l] = nused;
				addr[nused] = p->loc_addr[l];
				map[nused] = p->loc_map[l];
				nused++;
			}
			p->stack[out++] = newid[l];
		}
	}
	p->stack_at[p->nsamples] = out;
	p->nstack = out;
	memcpy(p->loc_addr, addr, nused * sizeof(*addr));
	memcpy(p->loc_map, map, nused * sizeof(*map));
	p->nlocs = nused;
	heapprof__u64map_free(&p->locmap);
	free(newid);
	free(addr);
	free(map);
	return 0;
}

static int
run(je_ctx *x, const char *buf, size_t len, hp_legacy *p, hp_legacy_err *err)
{
	size_t pos = 0, n, line_no = 1;
	const char *line;
	heapprof__legacy_next_line(buf, len, &pos, &line, &n);
	err->line = 1;
	/* ^heap_v2/(\d+): digits right after the slash, anything after. */
	size_t d = 8;
	while (d < n && line[d] >= '0' && line[d] <= '9')
		d++;
	if (d == 8 || dec64(line + 8, d - 8, &p->period))
		return HEAPPROF_EJEMALLOC;
	p->kind = HP_LEGACY_JEMALLOC;
	strcpy(p->sampler, "heap_v2");
	p->ntypes = 4;
	int sentinel = 0;
	while (heapprof__legacy_next_line(buf, len, &pos, &line, &n)) {
		line_no++;
		err->line = line_no;
		/* s/\r//g */
		if (n > x->line_cap) {
			char *nl = realloc(x->line, n);
			if (!nl)
				return -ENOMEM;
			x->line = nl;
			x->line_cap = n;
		}
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (line[i] != '\r')
				x->line[k++] = line[i];
		const char *s = x->line;
		if ((k >= 17 && !memcmp(s, "MAPPED_LIBRARIES:", 17)) ||
		    (k >= 15 && !memcmp(s, "--- Memory map:", 15))) {
			sentinel = 1;
			break;
		}
		while (k && perl_space(*s)) {
			s++;
			k--;
		}
		while (k && perl_space(s[k - 1]))
			k--;
		if (!k)
			continue;
		if (s[0] == '@' && k > 1 && perl_space(s[1])) {
			int rc = stack_addrs(s + 1, k - 1, &x->addrs, &x->addrs_cap,
			                     &x->naddrs);
			if (rc)
				return rc;
			x->have_stack = 1;
			continue;
		}
		int star, rc;
		int64_t v[4];
		if (!tline(x, s, k, &star, v, &rc))
			return rc ? rc : HEAPPROF_EJEMALLOC;
		if (!x->have_stack) {
			/* The header's totals: the first t*: line decides the
			 * sample types (pprof's rule, compared as numbers
			 * here: jemalloc prints them without padding). */
			if (star && !x->header_totals) {
				x->header_totals = 1;
				int alloc = (v[2] != v[0] && v[2] != 0) ||
				            (v[3] != v[1] && v[3] != 0);
				p->ntypes = alloc ? 4 : 2;
			}
			continue;
		}
		if (!star)
			continue; /* per-thread view */
		int64_t out[4], label = 0;
		if (v[0])
			label = v[1] / v[0];
		else if (v[2])
			label = v[3] / v[2];
		int64_t *in_pair = p->ntypes == 4 ? out + 2 : out;
		if (p->ntypes == 4 &&
		    (rc = adjust(v[2], v[3], p->period, &out[0], &out[1])))
			return rc;
		if ((rc = adjust(v[0], v[1], p->period, &in_pair[0], &in_pair[1])))
			return rc;
		if ((rc = heapprof__legacy_add_sample(p, out, label, x->addrs,
		                                      x->naddrs)))
			return rc;
	}
	err->line = 0;
	int rc = heapprof__legacy_maps(p, buf, len, sentinel ? pos : len,
	                               line_no, err);
	return rc ? rc : je_trim(p);
}

int
heapprof__legacy_parse_jemalloc(const char *buf, size_t len, hp_legacy *p,
                                hp_legacy_err *err)
{
	je_ctx x;
	memset(&x, 0, sizeof(x));
	int rc = heapprof__re_compile(tline_re, &x.tline);
	if (!rc)
		rc = run(&x, buf, len, p, err);
	heapprof__re_free(x.tline);
	free(x.addrs);
	free(x.line);
	return rc;
}
