/*
 * legacy_maps.c: the memory-map section of legacy profiles and the mapping
 * fix-ups pprof applies after reading it (google/pprof's
 * ParseMemoryMapFromScanner, massageMappings, remapMappingIDs; see
 * ../shared/notes/formats.md section 3). Both line forms are accepted:
 *
 *   /proc form:  start-limit perms offset dev inode [path]
 *   brief form:  start-limit [perms] [path] [(@offset)] [buildid]
 *
 * Line by line: a glog prefix ("file.cc:123] ") is dropped, `$name`
 * references are replaced by earlier `name=value` lines, entries whose
 * perms lack 'x' are skipped, and lines in neither form are ignored (a
 * line with '=' defines a substitution; heapprof keeps the first 64
 * distinct names, pprof any number). Then:
 *   1. adjacent entries of the same file (or without one) merge;
 *   2. the first entry that is not a shared library (*.so, *.so.N) nor
 *      "[...]" swaps places with entry 0 (the main binary);
 *   3. a leading /anon_hugepage entry followed by an adjacent one is dropped;
 *   4. if entry 0 starts at 0x400000 once its offset is subtracted, it is
 *      rewritten to start 0x400000, offset 0 (pprof's non-PIE heuristic);
 *   5. each location (in id order, address 0 excepted) gets the first
 *      entry containing its address; failing that, the first entry with an
 *      offset that would contain it if it started offset bytes lower is so
 *      extended (and its offset zeroed); failing that, one fake mapping
 *      [0, 2^64-1) appended at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "legacy_parse.h"
#include "legacy_re.h"

#define HEX "[[:xdigit:]]"
#define RANGE "^\\s*(?:0x)?(" HEX "+)[\\s-]?\\s*(?:0x)?(" HEX "+):?"
#define PERM "(?:\\s+([-rwxp]+))?"
static const char proc_re[] = RANGE PERM "(?:\\s+(" HEX "+))?\\s+" HEX "+:" HEX
                              "+\\s+[[:digit:]]+(?:\\s+(\\S+))?";
static const char brief_re[] = RANGE PERM "(?:\\s+(\\S+))?(?:\\s+\\(@(" HEX
                               "+)\\))?(?:\\s+(" HEX "+))?";
static const char glog_re[] = "^[^\\[\\]]+:[0-9]+]\\s";
static const char lib_re[] = "([.]so$|[.]so[._][0-9]+)";

#define MAX_ATTRS 64

typedef struct attr {
	char *key; /* "$name" */
	size_t klen;
	char *val;
	size_t vlen;
} attr;

typedef struct maps_ctx {
	hp_re *proc, *brief, *glog, *lib;
	attr *attrs;
	size_t nattrs, attrs_cap;
	char *line; /* the substituted line */
	size_t line_cap;
} maps_ctx;

static char *
dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* Hex (any case, any number of leading zeros) into uint64; -1 past 64 bits. */
static int
parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d = c <= '9' ? (unsigned)(c - '0')
		             : c <= 'F' ? (unsigned)(c - 'A' + 10)
		                        : (unsigned)(c - 'a' + 10);
		if (v >> 60)
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

static int
append_line(maps_ctx *x, size_t *len, const char *s, size_t n)
{
	if (n > x->line_cap - *len) {
		size_t ncap = x->line_cap ? x->line_cap : 256;
		while (ncap - *len < n) {
			if (ncap > SIZE_MAX / 4)
				return -ENOMEM;
			ncap *= 2;
		}
		char *nl = realloc(x->line, ncap);
		if (!nl)
			return -ENOMEM;
		x->line = nl;
		x->line_cap = ncap;
	}
	if (n)
		memcpy(x->line + *len, s, n);
	*len += n;
	return 0;
}

/* Applies the `$name` substitutions (earliest definition wins at each
 * position, as Go's strings.Replacer) into x->line. */
static int
substitute(maps_ctx *x, const char *s, size_t n, size_t *out_len)
{
	size_t len = 0, i = 0;
	while (i < n) {
		const char *dollar = x->nattrs ? memchr(s + i, '$', n - i) : NULL;
		size_t stop = dollar ? (size_t)(dollar - s) : n;
		if (append_line(x, &len, s + i, stop - i))
			return -ENOMEM;
		i = stop;
		if (i == n)
			break;
		size_t a;
		for (a = 0; a < x->nattrs; a++)
			if (x->attrs[a].klen <= n - i &&
			    !memcmp(s + i, x->attrs[a].key, x->attrs[a].klen))
				break;
		if (a < x->nattrs) {
			if (append_line(x, &len, x->attrs[a].val, x->attrs[a].vlen))
				return -ENOMEM;
			i += x->attrs[a].klen;
		} else {
			if (append_line(x, &len, s + i, 1))
				return -ENOMEM;
			i++;
		}
	}
	*out_len = len;
	return 0;
}

static int
add_attr(maps_ctx *x, const char *s, size_t n)
{
	const char *eq = memchr(s, '=', n);
	if (!eq)
		return 0;
	const char *k = s, *v = eq + 1;
	size_t kn = (size_t)(eq - s), vn = n - kn - 1;
	heapprof__legacy_trim(&k, &kn);
	heapprof__legacy_trim(&v, &vn);
	/* The earliest definition of a name wins, so a repeated one can never
	 * apply; and past MAX_ATTRS definitions (real sections have one or
	 * two) new ones are ignored, to keep substitution linear. */
	if (x->nattrs >= MAX_ATTRS)
		return 0;
	for (size_t i = 0; i < x->nattrs; i++)
		if (x->attrs[i].klen == kn + 1 && !memcmp(x->attrs[i].key + 1, k, kn))
			return 0;
	if (x->nattrs == x->attrs_cap) {
		size_t ncap = x->attrs_cap ? x->attrs_cap * 2 : 8;
		attr *na = realloc(x->attrs, ncap * sizeof(*na));
		if (!na)
			return -ENOMEM;
		x->attrs = na;
		x->attrs_cap = ncap;
	}
	attr *a = &x->attrs[x->nattrs];
	a->key = malloc(kn + 2);
	a->val = dup_range(v, vn);
	if (!a->key || !a->val) {
		free(a->key);
		free(a->val);
		return -ENOMEM;
	}
	a->key[0] = '$';
	memcpy(a->key + 1, k, kn);
	a->key[kn + 1] = 0;
	a->klen = kn + 1;
	a->vlen = vn;
	x->nattrs++;
	return 0;
}

static int
push_map(hp_legacy *p, const hp_legacy_map *m)
{
	if (p->nmaps == p->maps_cap) {
		size_t ncap = p->maps_cap ? p->maps_cap * 2 : 16;
		hp_legacy_map *nm = realloc(p->maps, ncap * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		p->maps = nm;
		p->maps_cap = ncap;
	}
	p->maps[p->nmaps++] = *m;
	return 0;
}

/* One line of the section. */
static int
entry(maps_ctx *x, hp_legacy *p, const char *raw, size_t rn)
{
	long c[14];
	int m = heapprof__re_search(x->glog, raw, rn, c);
	if (m < 0)
		return m;
	if (m) {
		raw += c[1];
		rn -= (size_t)c[1];
	}
	size_t n;
	int rc = substitute(x, raw, rn, &n);
	if (rc)
		return rc;
	const char *s = x->line ? x->line : "";
	int g_start = 1, g_end = 2, g_perm = 3, g_off, g_file, g_bid = -1;
	m = heapprof__re_search(x->proc, s, n, c);
	if (m > 0) {
		g_off = 4;
		g_file = 5;
	} else if (m == 0) {
		m = heapprof__re_search(x->brief, s, n, c);
		g_file = 4;
		g_off = 5;
		g_bid = 6;
	}
	if (m < 0)
		return m;
	if (m == 0)
		return add_attr(x, s, n);
#define GLEN(g) ((size_t)(c[2 * (g) + 1] - c[2 * (g)]))
#define GSTR(g) (s + c[2 * (g)])
#define GSET(g) ((g) >= 0 && c[2 * (g)] >= 0)
	if (GSET(g_perm) && GLEN(g_perm) && !memchr(GSTR(g_perm), 'x', GLEN(g_perm)))
		return 0; /* not executable */
	hp_legacy_map mp;
	memset(&mp, 0, sizeof(mp));
	if (parse_hex(GSTR(g_start), GLEN(g_start), &mp.start) ||
	    parse_hex(GSTR(g_end), GLEN(g_end), &mp.limit) ||
	    (GSET(g_off) && parse_hex(GSTR(g_off), GLEN(g_off), &mp.offset)))
		return add_attr(x, s, n); /* pprof: unrecognized line */
	mp.file_len = GSET(g_file) ? GLEN(g_file) : 0;
	mp.file = dup_range(GSET(g_file) ? GSTR(g_file) : "", mp.file_len);
	mp.build_id_len = GSET(g_bid) ? GLEN(g_bid) : 0;
	mp.build_id = dup_range(GSET(g_bid) ? GSTR(g_bid) : "", mp.build_id_len);
#undef GLEN
#undef GSTR
#undef GSET
	if (!mp.file || !mp.build_id || push_map(p, &mp)) {
		free(mp.file);
		free(mp.build_id);
		return -ENOMEM;
	}
	return 0;
}

static int
adjacent(const hp_legacy_map *a, const hp_legacy_map *b)
{
	if (a->file_len && b->file_len &&
	    (a->file_len != b->file_len || memcmp(a->file, b->file, a->file_len)))
		return 0;
	if (a->build_id_len && b->build_id_len &&
	    (a->build_id_len != b->build_id_len ||
	     memcmp(a->build_id, b->build_id, a->build_id_len)))
		return 0;
	if (a->limit != b->start)
		return 0;
	if (a->offset && b->offset && a->offset + (a->limit - a->start) != b->offset)
		return 0;
	return 1;
}

static void
map_free(hp_legacy_map *m)
{
	free(m->file);
	free(m->build_id);
}

/* Step 2's test: is this file the main binary's? */
static int
is_main(maps_ctx *x, const char *file, size_t n, int *err)
{
	/* strings.Replace(file, "(deleted)", "", -1), then TrimSpace. */
	size_t len = 0;
	char *t = malloc(n + 1);
	if (!t) {
		*err = -ENOMEM;
		return 0;
	}
	for (size_t i = 0; i < n;) {
		if (n - i >= 9 && !memcmp(file + i, "(deleted)", 9)) {
			i += 9;
			continue;
		}
		t[len++] = file[i++];
	}
	const char *s = t;
	heapprof__legacy_trim(&s, &len);
	int r = 0;
	if (len && s[0] != '[') {
		long c[4];
		int m = heapprof__re_search(x->lib, s, len, c);
		if (m < 0)
			*err = m;
		r = m == 0;
	}
	free(t);
	return r;
}

static int assign(hp_legacy *p);

static int
fixups(maps_ctx *x, hp_legacy *p)
{
	/* 1. merge adjacent entries */
	if (p->nmaps > 1) {
		size_t k = 1;
		for (size_t i = 1; i < p->nmaps; i++) {
			hp_legacy_map *lm = &p->maps[k - 1], *m = &p->maps[i];
			if (adjacent(lm, m)) {
				lm->limit = m->limit;
				if (m->file_len) {
					free(lm->file);
					lm->file = m->file;
					lm->file_len = m->file_len;
					m->file = NULL;
				}
				if (m->build_id_len) {
					free(lm->build_id);
					lm->build_id = m->build_id;
					lm->build_id_len = m->build_id_len;
					m->build_id = NULL;
				}
				map_free(m);
				continue;
			}
			p->maps[k++] = *m;
		}
		p->nmaps = k;
	}
	/* 2. main binary to the front (a swap, as pprof does) */
	for (size_t i = 0; i < p->nmaps; i++) {
		int err = 0;
		int main_bin = is_main(x, p->maps[i].file, p->maps[i].file_len, &err);
		if (err)
			return err;
		if (main_bin) {
			hp_legacy_map t = p->maps[0];
			p->maps[0] = p->maps[i];
			p->maps[i] = t;
			break;
		}
	}
	/* 3. /anon_hugepage */
	if (p->nmaps > 1 && p->maps[0].file_len >= 14 &&
	    !memcmp(p->maps[0].file, "/anon_hugepage", 14) &&
	    p->maps[0].limit == p->maps[1].start) {
		map_free(&p->maps[0]);
		memmove(p->maps, p->maps + 1, (p->nmaps - 1) * sizeof(*p->maps));
		p->nmaps--;
	}
	/* 4. non-PIE main binary */
	if (p->nmaps && p->maps[0].start - p->maps[0].offset == 0x400000) {
		p->maps[0].start = 0x400000;
		p->maps[0].offset = 0;
	}
	/* 5. locations -> mappings */
	return assign(p);
}

typedef struct sidx {
	uint64_t start, limit;
	size_t i;
} sidx;

static int
cmp_sidx(const void *a, const void *b)
{
	const sidx *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The first mapping (in list order) containing a, or p->nmaps. While the
 * real mappings are pairwise disjoint (`ix` sorted by start, `fast`), at
 * most one contains a: a binary search finds it; past them, the fake
 * mapping (last in the list, [0, 2^64-1)) contains every other address. */
static size_t
containing(const hp_legacy *p, const sidx *ix, size_t nix, int fast,
           size_t fake, uint64_t a)
{
	if (!fast) {
		size_t i;
		for (i = 0; i < p->nmaps; i++)
			if (p->maps[i].start <= a && a < p->maps[i].limit)
				break;
		return i;
	}
	size_t lo = 0, hi = nix;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ix[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && a < ix[lo - 1].limit)
		return ix[lo - 1].i;
	if (fake && a != UINT64_MAX)
		return fake - 1;
	return p->nmaps;
}

static int
assign(hp_legacy *p)
{
	sidx *ix = p->nmaps ? malloc(p->nmaps * sizeof(*ix)) : NULL;
	if (p->nmaps && !ix)
		return -ENOMEM;
	size_t nix = 0;
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].start < p->maps[i].limit)
			ix[nix++] = (sidx){p->maps[i].start, p->maps[i].limit, i};
	if (nix)
		qsort(ix, nix, sizeof(*ix), cmp_sidx);
	int fast = 1;
	for (size_t k = 1; k < nix; k++)
		if (ix[k - 1].limit > ix[k].start)
			fast = 0;
	size_t fake = 0; /* index + 1 */
	for (size_t l = 0; l < p->nlocs; l++) {
		uint64_t a = p->loc_addr[l];
		if (a == 0)
			continue;
		size_t i = containing(p, ix, nix, fast, fake, a);
		if (i == p->nmaps) {
			for (i = 0; i < p->nmaps; i++) {
				hp_legacy_map *m = &p->maps[i];
				if (m->offset && m->start - m->offset <= a && a < m->start) {
					m->start -= m->offset;
					m->offset = 0;
					fast = 0; /* the index no longer holds */
					break;
				}
			}
		}
		if (i == p->nmaps) {
			if (!fake) {
				hp_legacy_map fm = {0, UINT64_MAX, 0, dup_range("", 0),
				                    dup_range("", 0), 0, 0};
				if (!fm.file || !fm.build_id || push_map(p, &fm)) {
					map_free(&fm);
					free(ix);
					return -ENOMEM;
				}
				fake = p->nmaps;
			}
			i = fake - 1;
		}
		p->loc_map[l] = (uint32_t)(i + 1);
	}
	free(ix);
	return 0;
}

int
heapprof__legacy_maps(hp_legacy *p, const char *buf, size_t len, size_t pos,
                      size_t line_no, hp_legacy_err *err)
{
	maps_ctx x;
	memset(&x, 0, sizeof(x));
	int rc = heapprof__re_compile(proc_re, &x.proc);
	if (!rc)
		rc = heapprof__re_compile(brief_re, &x.brief);
	if (!rc)
		rc = heapprof__re_compile(glog_re, &x.glog);
	if (!rc)
		rc = heapprof__re_compile(lib_re, &x.lib);
	const char *line;
	size_t n;
	while (!rc && heapprof__legacy_next_line(buf, len, &pos, &line, &n)) {
		line_no++;
		rc = entry(&x, p, line, n);
		if (rc)
			err->line = line_no;
	}
	if (!rc)
		rc = fixups(&x, p);
	heapprof__re_free(x.proc);
	heapprof__re_free(x.brief);
	heapprof__re_free(x.glog);
	heapprof__re_free(x.lib);
	for (size_t i = 0; i < x.nattrs; i++) {
		free(x.attrs[i].key);
		free(x.attrs[i].val);
	}
	free(x.attrs);
	free(x.line);
	return rc;
}
