/*
 * merge.c: accumulating profiles into the merger, as pprof's Merge does
 * (profile/merge.go): headers combined (combineHeaders), then every
 * non-zero sample of every input mapped in input order, mapping its
 * locations (memoized per input id), their mappings (matched by rounded
 * size, file offset and build id or file name; later inputs' addresses
 * rebased onto the first matching mapping) and functions (start line,
 * name, system name, file name). Equal samples (same merged locations, same
 * labels in canonical order) have their values summed. Renumbering and
 * encoding are in merge_write.c.
 *
 * Differences from the pprof this is checked against (Debian's 2021
 * google/pprof, which Go 1.19's `go tool pprof` also vendors):
 *   - a summed value that overflows int64 fails with HEAPPROF_EOVERFLOW (Go
 *     wraps around silently);
 *   - Line.column (profile.proto since 2024) is part of the location key and
 *     written out, as upstream pprof does now; the 2021 code ignores it;
 *   - doc_url (field 15) is kept (first non-empty), as upstream does;
 *   - numeric labels: pprof keys units with fmt's %x of a []string, under
 *     which one empty unit and no unit look alike but two empty units do
 *     not; here a missing unit is always the empty string.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "merge.h"
#include "hpmath.h"

#define V(m, T, vec) ((T *)(m)->vec.p)

void
heapprof__mg_init(mg_merger *m)
{
	memset(m, 0, sizeof(*m));
	heapprof__pprof_dec_init(&m->dec, NULL, NULL);
	m->err = heapprof__strtab_init_pprof(&m->str);
	/* Never leave a pool NULL: `pool + 0` on NULL is undefined in C. */
	mg_vec *v[] = {&m->comments, &m->maps, &m->funcs, &m->locs, &m->lines,
	               &m->samples, &m->sloc, &m->slab, &m->svals};
	size_t sz[] = {sizeof(uint32_t), sizeof(mg_mapping), sizeof(mg_function),
	               sizeof(mg_location), sizeof(mg_line), sizeof(mg_sample),
	               sizeof(uint32_t), sizeof(mg_label), sizeof(int64_t)};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]) && !m->err; i++)
		m->err = heapprof__mg_vec_reserve(v[i], sz[i], 1);
}

void
heapprof__mg_free(mg_merger *m)
{
	heapprof__pprof_dec_free(&m->dec);
	free(m->types);
	heapprof__mg_vec_free(&m->comments);
	heapprof__strtab_free(&m->str);
	heapprof__mg_vec_free(&m->maps);
	heapprof__mg_vec_free(&m->funcs);
	heapprof__mg_vec_free(&m->locs);
	heapprof__mg_vec_free(&m->lines);
	heapprof__mg_vec_free(&m->samples);
	heapprof__mg_vec_free(&m->sloc);
	heapprof__mg_vec_free(&m->slab);
	heapprof__mg_vec_free(&m->svals);
	heapprof__mg_tab_free(&m->map_tab);
	heapprof__mg_tab_free(&m->func_tab);
	heapprof__mg_tab_free(&m->loc_tab);
	heapprof__mg_tab_free(&m->sample_tab);
	heapprof__mg_tab_free(&m->comment_tab);
	free(m->in_str);
	free(m->in_map);
	free(m->in_func);
	free(m->in_loc);
	free(m->in_map_delta);
	free(m->tvals);
	free(m->tlocs);
	free(m->tlabs);
	free(m->tlines);
	memset(m, 0, sizeof(*m));
}

int64_t
heapprof__mg_scale_value(int64_t v, double r)
{
	double d = hp_round((double)v * r);
	/* Go's int64(float64) on amd64 (CVTTSD2SQ) gives INT64_MIN for NaN
	 * and out-of-range values; C leaves them undefined. */
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
		return INT64_MIN;
	return (int64_t)d;
}

/* Grows a scratch array to hold n elements. */
static int
grow(void **p, size_t *cap, size_t n, size_t elem)
{
	return heapprof__grow(heapprof__pb_libc_realloc, NULL, p, cap, n,
	                      elem);
}
#define GROW(m, arr, n) grow((void **)&(m)->arr, &(m)->arr##_cap, (n), sizeof(*(m)->arr))

/* Input string index -> interned id. */
static long
in_string(mg_merger *m, uint64_t i)
{
	if (i >= m->dec.nstrings)
		return HEAPPROF_EINDEX;
	if (m->in_str[i])
		return (long)m->in_str[i] - 1;
	size_t n;
	const char *p = heapprof__pprof_string(&m->dec, i, &n);
	uint32_t id;
	int rc = heapprof__strtab_intern(&m->str, p, n, &id);
	if (rc < 0)
		return rc;
	m->in_str[i] = id + 1;
	return id;
}

#define TRY_STR(dst, m, i)                                                     \
	do {                                                                   \
		long t_id_ = in_string((m), (i));                              \
		if (t_id_ < 0)                                                 \
			return (int)t_id_;                                     \
		(dst) = (uint32_t)t_id_;                                       \
	} while (0)

/* ---------------------------------------------------------------- header */

static bool
comment_eq(const void *ctx, uint32_t idx)
{
	const mg_merger *m = *(const mg_merger *const *)ctx;
	return ((const uint32_t *)m->comments.p)[idx] == m->cur_comment;
}

static int
add_header(mg_merger *m)
{
	pprof_dec *d = &m->dec;
	uint32_t pt[2];
	TRY_STR(pt[0], m, d->period_type.type);
	TRY_STR(pt[1], m, d->period_type.unit);
	if (m->ninputs == 0) {
		m->ntypes = d->ntypes;
		m->types = calloc(d->ntypes ? 2 * d->ntypes : 1, sizeof(uint32_t));
		if (!m->types)
			return -ENOMEM;
		for (size_t i = 0; i < d->ntypes; i++) {
			TRY_STR(m->types[2 * i], m, d->types[i].type);
			TRY_STR(m->types[2 * i + 1], m, d->types[i].unit);
		}
		m->period_type[0] = pt[0];
		m->period_type[1] = pt[1];
		TRY_STR(m->drop_frames, m, d->drop_frames);
		TRY_STR(m->keep_frames, m, d->keep_frames);
	} else {
		/* pprof's compatible(): equal period type, equal sample types
		 * (type and unit), in order. */
		if (pt[0] != m->period_type[0] || pt[1] != m->period_type[1] ||
		    d->ntypes != m->ntypes)
			return HEAPPROF_ETYPES;
		for (size_t i = 0; i < d->ntypes; i++) {
			uint32_t t, u;
			TRY_STR(t, m, d->types[i].type);
			TRY_STR(u, m, d->types[i].unit);
			if (t != m->types[2 * i] || u != m->types[2 * i + 1])
				return HEAPPROF_ETYPES;
		}
	}
	/* combineHeaders, loop for loop (a zero time_nanos resets it). */
	if (m->time_nanos == 0 || d->time_nanos < m->time_nanos)
		m->time_nanos = d->time_nanos;
	m->duration_nanos = (int64_t)((uint64_t)m->duration_nanos +
	                              (uint64_t)d->duration_nanos);
	if (m->period == 0 || m->period < d->period)
		m->period = d->period;
	for (size_t i = 0; i < d->ncomments; i++) {
		TRY_STR(m->cur_comment, m, d->comments[i]);
		const mg_merger *self = m;
		uint32_t h = (uint32_t)heapprof__mg_hash(0, m->cur_comment);
		if (heapprof__mg_tab_find(&m->comment_tab, h, comment_eq, &self))
			continue;
		HP_TRY(heapprof__mg_vec_reserve(&m->comments, sizeof(uint32_t), 1));
		((uint32_t *)m->comments.p)[m->comments.n] = m->cur_comment;
		HP_TRY(heapprof__mg_tab_insert(&m->comment_tab, h,
		                               (uint32_t)m->comments.n));
		m->comments.n++;
	}
	if (m->default_sample_type == 0)
		TRY_STR(m->default_sample_type, m, d->default_sample_type);
	if (m->doc_url == 0)
		TRY_STR(m->doc_url, m, d->doc_url);
	return 0;
}

/* ---------------------------------------------------------------- mappings */

struct map_key {
	const mg_merger *m;
	uint64_t ksize, offset;
	uint32_t kname;
};

static bool
map_eq(const void *ctx, uint32_t idx)
{
	const struct map_key *k = ctx;
	const mg_mapping *mm = V(k->m, const mg_mapping, maps) + idx;
	return mm->ksize == k->ksize && mm->offset == k->offset &&
	       mm->kname == k->kname;
}

/* Input mapping (decoder index di, -1: none) -> merged index + 1 (0: none)
 * and the rebasing delta for addresses. pprof's mapMapping. */
static int
map_mapping(mg_merger *m, long di, uint32_t *out, uint64_t *delta)
{
	*out = 0;
	*delta = 0;
	if (di < 0)
		return 0;
	if (m->in_map[di]) {
		*out = m->in_map[di];
		*delta = m->in_map_delta[di];
		return 0;
	}
	pprof_mapping src;
	HP_TRY(heapprof__pprof_mapping(&m->dec, (size_t)di, &src));
	mg_mapping mm = {0};
	mm.start = src.memory_start;
	mm.limit = src.memory_limit;
	mm.offset = src.file_offset;
	TRY_STR(mm.file, m, src.filename);
	TRY_STR(mm.build_id, m, src.build_id);
	mm.flags = (uint8_t)(src.has_functions | src.has_filenames << 1 |
	                     src.has_line_numbers << 2 | src.has_inline_frames << 3);
	uint64_t size = src.memory_limit - src.memory_start;
	size = size + 0x1000 - 1;
	mm.ksize = size - size % 0x1000;
	mm.kname = mm.build_id ? mm.build_id : mm.file;
	struct map_key k = {m, mm.ksize, mm.offset, mm.kname};
	uint64_t h = heapprof__mg_hash(heapprof__mg_hash(
	        heapprof__mg_hash(1, mm.ksize), mm.offset), mm.kname);
	uint32_t f = heapprof__mg_tab_find(&m->map_tab, (uint32_t)h, map_eq, &k);
	if (f) {
		*delta = V(m, mg_mapping, maps)[f - 1].start - src.memory_start;
	} else {
		HP_TRY(heapprof__mg_vec_reserve(&m->maps, sizeof(mg_mapping), 1));
		if (m->maps.n >= UINT32_MAX - 1)
			return HEAPPROF_EOVERFLOW;
		V(m, mg_mapping, maps)[m->maps.n] = mm;
		HP_TRY(heapprof__mg_tab_insert(&m->map_tab, (uint32_t)h,
		                               (uint32_t)m->maps.n));
		f = (uint32_t)++m->maps.n;
	}
	m->in_map[di] = f;
	m->in_map_delta[di] = *delta;
	*out = f;
	return 0;
}

/* ---------------------------------------------------------------- functions */

struct func_key {
	const mg_merger *m;
	mg_function f;
};

static bool
func_eq(const void *ctx, uint32_t idx)
{
	const struct func_key *k = ctx;
	const mg_function *f = V(k->m, const mg_function, funcs) + idx;
	return f->start_line == k->f.start_line && f->name == k->f.name &&
	       f->system_name == k->f.system_name &&
	       f->filename == k->f.filename;
}

/* Input function id -> merged index + 1 (0: unresolved). pprof's
 * mapFunction. */
static int
map_function(mg_merger *m, uint64_t id, uint32_t *out)
{
	*out = 0;
	long di = heapprof__pprof_find_function(&m->dec, id);
	if (di < 0)
		return 0;
	if (m->in_func[di]) {
		*out = m->in_func[di];
		return 0;
	}
	pprof_function src;
	HP_TRY(heapprof__pprof_function(&m->dec, (size_t)di, &src));
	struct func_key k = {m, {0, 0, 0, src.start_line}};
	TRY_STR(k.f.name, m, src.name);
	TRY_STR(k.f.system_name, m, src.system_name);
	TRY_STR(k.f.filename, m, src.filename);
	uint64_t h = heapprof__mg_hash(2, (uint64_t)src.start_line);
	h = heapprof__mg_hash(h, k.f.name);
	h = heapprof__mg_hash(h, k.f.system_name);
	h = heapprof__mg_hash(h, k.f.filename);
	uint32_t f = heapprof__mg_tab_find(&m->func_tab, (uint32_t)h, func_eq, &k);
	if (!f) {
		HP_TRY(heapprof__mg_vec_reserve(&m->funcs, sizeof(mg_function), 1));
		if (m->funcs.n >= UINT32_MAX - 1)
			return HEAPPROF_EOVERFLOW;
		V(m, mg_function, funcs)[m->funcs.n] = k.f;
		HP_TRY(heapprof__mg_tab_insert(&m->func_tab, (uint32_t)h,
		                               (uint32_t)m->funcs.n));
		f = (uint32_t)++m->funcs.n;
	}
	m->in_func[di] = f;
	*out = f;
	return 0;
}

/* ---------------------------------------------------------------- locations */

struct loc_key {
	const mg_merger *m;
	mg_location l;
	const mg_line *lines;
};

static bool
loc_eq(const void *ctx, uint32_t idx)
{
	const struct loc_key *k = ctx;
	const mg_location *l = V(k->m, const mg_location, locs) + idx;
	if (l->kaddr != k->l.kaddr || l->mapping != k->l.mapping ||
	    l->folded != k->l.folded || l->nlines != k->l.nlines)
		return false;
	const mg_line *a = V(k->m, const mg_line, lines) + l->lines;
	for (uint32_t i = 0; i < l->nlines; i++)
		if (a[i].func != k->lines[i].func || a[i].line != k->lines[i].line ||
		    a[i].column != k->lines[i].column)
			return false;
	return true;
}

/* Input location (decoder index di) -> merged index. pprof's mapLocation. */
static long
map_location(mg_merger *m, size_t di)
{
	if (m->in_loc[di])
		return (long)m->in_loc[di] - 1;
	pprof_location src;
	HP_TRY(heapprof__pprof_location(&m->dec, di, &src));
	HP_TRY(GROW(m, tlines, src.nlines));
	if (src.nlines > UINT32_MAX)
		return HEAPPROF_EOVERFLOW;
	/* Copy the lines out of the decoder's scratch first. */
	for (size_t i = 0; i < src.nlines; i++) {
		m->tlines[i].func = (uint32_t)0;
		m->tlines[i].line = src.lines[i].line;
		m->tlines[i].column = src.lines[i].column;
	}
	struct loc_key k = {m, {0}, m->tlines};
	uint64_t delta;
	long mdi = src.mapping_id ? heapprof__pprof_find_mapping(&m->dec, src.mapping_id) : -1;
	HP_TRY(map_mapping(m, mdi, &k.l.mapping, &delta));
	k.l.addr = src.address + delta;
	k.l.kaddr = k.l.addr;
	if (k.l.mapping)
		k.l.kaddr -= V(m, mg_mapping, maps)[k.l.mapping - 1].start;
	k.l.folded = src.is_folded;
	k.l.nlines = (uint32_t)src.nlines;
	uint64_t h = heapprof__mg_hash(3, k.l.kaddr);
	h = heapprof__mg_hash(h, (uint64_t)k.l.mapping << 1 | k.l.folded);
	for (size_t i = 0; i < src.nlines; i++) {
		/* src.lines stays valid: map_function does not decode
		 * locations. */
		HP_TRY(map_function(m, src.lines[i].function_id, &m->tlines[i].func));
		h = heapprof__mg_hash(h, m->tlines[i].func);
		h = heapprof__mg_hash(h, (uint64_t)m->tlines[i].line);
		h = heapprof__mg_hash(h, (uint64_t)m->tlines[i].column);
	}
	uint32_t f = heapprof__mg_tab_find(&m->loc_tab, (uint32_t)h, loc_eq, &k);
	if (!f) {
		HP_TRY(heapprof__mg_vec_reserve(&m->lines, sizeof(mg_line), src.nlines));
		HP_TRY(heapprof__mg_vec_reserve(&m->locs, sizeof(mg_location), 1));
		if (m->locs.n >= UINT32_MAX - 1)
			return HEAPPROF_EOVERFLOW;
		k.l.lines = m->lines.n;
		if (src.nlines)
			memcpy(V(m, mg_line, lines) + m->lines.n, m->tlines,
			       src.nlines * sizeof(mg_line));
		m->lines.n += src.nlines;
		V(m, mg_location, locs)[m->locs.n] = k.l;
		HP_TRY(heapprof__mg_tab_insert(&m->loc_tab, (uint32_t)h,
		                               (uint32_t)m->locs.n));
		f = (uint32_t)++m->locs.n;
	}
	m->in_loc[di] = f;
	return (long)f - 1;
}

/* ---------------------------------------------------------------- samples */

/* Canonical label order: string labels before numeric ones, then key bytes
 * (Go's sort.Strings); equal keys keep input order (stable sort). */
static int
label_cmp(const strtab *s, const mg_label *a, const mg_label *b)
{
	if (a->is_str != b->is_str)
		return a->is_str ? -1 : 1;
	if (a->key == b->key)
		return 0;
	size_t na, nb;
	const char *pa = heapprof__strtab_get(s, a->key, &na);
	const char *pb = heapprof__strtab_get(s, b->key, &nb);
	int c = memcmp(pa, pb, na < nb ? na : nb);
	if (c)
		return c;
	return na < nb ? -1 : na > nb;
}

/* Stable merge sort of a[0..n) using tmp[0..n). */
static void
sort_labels(const strtab *s, mg_label *a, mg_label *tmp, size_t n)
{
	if (n < 2)
		return;
	if (n <= 8) {
		for (size_t i = 1; i < n; i++) {
			mg_label x = a[i];
			size_t j = i;
			while (j > 0 && label_cmp(s, &a[j - 1], &x) > 0) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
		return;
	}
	size_t h = n / 2;
	sort_labels(s, a, tmp, h);
	sort_labels(s, a + h, tmp, n - h);
	size_t i = 0, j = h, o = 0;
	while (i < h && j < n)
		tmp[o++] = label_cmp(s, &a[j], &a[i]) < 0 ? a[j++] : a[i++];
	while (i < h)
		tmp[o++] = a[i++];
	while (j < n)
		tmp[o++] = a[j++];
	memcpy(a, tmp, n * sizeof(*a));
}

struct sample_key {
	const mg_merger *m;
	const uint32_t *locs;
	const mg_label *labs;
	uint32_t nlocs, nlabs;
};

static bool
sample_eq(const void *ctx, uint32_t idx)
{
	const struct sample_key *k = ctx;
	const mg_sample *s = V(k->m, const mg_sample, samples) + idx;
	if (s->nlocs != k->nlocs || s->nlabels != k->nlabs)
		return false;
	if (k->nlocs && memcmp(V(k->m, const uint32_t, sloc) + s->locs, k->locs,
	                       k->nlocs * sizeof(uint32_t)) != 0)
		return false;
	const mg_label *l = V(k->m, const mg_label, slab) + s->labels;
	for (uint32_t i = 0; i < k->nlabs; i++)
		if (l[i].key != k->labs[i].key || l[i].str != k->labs[i].str ||
		    l[i].unit != k->labs[i].unit || l[i].num != k->labs[i].num ||
		    l[i].is_str != k->labs[i].is_str)
			return false;
	return true;
}

/* pprof's mapSample for one decoded input sample. */
static int
add_sample(mg_merger *m, const pprof_sample *s, double scale)
{
	size_t nt = m->ntypes;
	HP_TRY(GROW(m, tvals, nt ? nt : 1));
	bool zero = true;
	for (size_t i = 0; i < nt; i++) {
		int64_t v = s->values[i];
		if (scale != 1)
			v = heapprof__mg_scale_value(v, scale);
		m->tvals[i] = v;
		zero &= v == 0;
	}
	if (zero) /* Scale() and Merge() both drop all-zero samples */
		return 0;
	if (s->nlocations > UINT32_MAX || s->nlabels > UINT32_MAX / 2)
		return HEAPPROF_EOVERFLOW;
	HP_TRY(GROW(m, tlocs, s->nlocations ? s->nlocations : 1));
	/* The location ids point into decoder scratch that map_location does
	 * not touch (it decodes locations, not samples). */
	uint64_t h = heapprof__mg_hash(4, s->nlocations);
	for (size_t i = 0; i < s->nlocations; i++) {
		long di = heapprof__pprof_find_location(&m->dec, s->location_ids[i]);
		if (di < 0)
			return HEAPPROF_EID;
		long li = map_location(m, (size_t)di);
		if (li < 0)
			return (int)li;
		m->tlocs[i] = (uint32_t)li;
		h = heapprof__mg_hash(h, (uint64_t)li);
	}
	HP_TRY(GROW(m, tlabs, 2 * s->nlabels + 2));
	uint32_t nl = 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const pprof_label *in = &s->labels[i];
		mg_label l = {0};
		/* pprof's postDecode: str != 0 is a string label; else a
		 * numeric one if num or unit is set; else dropped. */
		if (in->str != 0) {
			l.is_str = 1;
			TRY_STR(l.str, m, in->str);
		} else if (in->num != 0 || in->num_unit != 0) {
			l.num = in->num;
			TRY_STR(l.unit, m, in->num_unit);
		} else {
			continue;
		}
		TRY_STR(l.key, m, in->key);
		m->tlabs[nl++] = l;
	}
	sort_labels(&m->str, m->tlabs, m->tlabs + nl, nl);
	for (uint32_t i = 0; i < nl; i++) {
		const mg_label *l = &m->tlabs[i];
		h = heapprof__mg_hash(h, (uint64_t)l->key << 32 | l->str);
		h = heapprof__mg_hash(h, (uint64_t)l->unit << 1 | l->is_str);
		h = heapprof__mg_hash(h, (uint64_t)l->num);
	}
	struct sample_key k = {m, m->tlocs, m->tlabs, (uint32_t)s->nlocations, nl};
	uint32_t f = heapprof__mg_tab_find(&m->sample_tab, (uint32_t)h, sample_eq, &k);
	if (f) {
		int64_t *acc = V(m, int64_t, svals) + V(m, mg_sample, samples)[f - 1].vals;
		for (size_t i = 0; i < nt; i++)
			if (__builtin_add_overflow(acc[i], m->tvals[i], &acc[i]))
				return HEAPPROF_EOVERFLOW;
		return 0;
	}
	HP_TRY(heapprof__mg_vec_reserve(&m->samples, sizeof(mg_sample), 1));
	HP_TRY(heapprof__mg_vec_reserve(&m->sloc, sizeof(uint32_t), k.nlocs));
	HP_TRY(heapprof__mg_vec_reserve(&m->slab, sizeof(mg_label), nl));
	HP_TRY(heapprof__mg_vec_reserve(&m->svals, sizeof(int64_t), nt));
	if (m->samples.n >= UINT32_MAX - 1)
		return HEAPPROF_EOVERFLOW;
	mg_sample ns = {m->sloc.n, m->slab.n, m->svals.n, k.nlocs, nl};
	if (k.nlocs)
		memcpy(V(m, uint32_t, sloc) + m->sloc.n, m->tlocs,
		       k.nlocs * sizeof(uint32_t));
	m->sloc.n += k.nlocs;
	if (nl)
		memcpy(V(m, mg_label, slab) + m->slab.n, m->tlabs, nl * sizeof(mg_label));
	m->slab.n += nl;
	if (nt)
		memcpy(V(m, int64_t, svals) + m->svals.n, m->tvals, nt * sizeof(int64_t));
	m->svals.n += nt;
	V(m, mg_sample, samples)[m->samples.n] = ns;
	HP_TRY(heapprof__mg_tab_insert(&m->sample_tab, (uint32_t)h,
	                               (uint32_t)m->samples.n));
	m->samples.n++;
	return 0;
}

/* ---------------------------------------------------------------- inputs */

static int
reset_memo(void **p, size_t *cap, size_t n, size_t elem)
{
	HP_TRY(grow(p, cap, n ? n : 1, elem));
	memset(*p, 0, (n ? n : 1) * elem);
	return 0;
}

static int
add(mg_merger *m, const void *data, size_t len, double scale, size_t limit)
{
	pprof_dec *d = &m->dec;
	d->limit = limit ? limit : PPROF_DEC_DEFAULT_LIMIT;
	HP_TRY(heapprof__pprof_dec_open(d, data, len));
	HP_TRY(reset_memo((void **)&m->in_str, &m->in_str_cap, d->nstrings,
	                  sizeof(uint32_t)));
	HP_TRY(reset_memo((void **)&m->in_map, &m->in_map_cap, d->nmaps,
	                  sizeof(uint32_t)));
	HP_TRY(reset_memo((void **)&m->in_map_delta, &m->in_map_delta_cap,
	                  d->nmaps, sizeof(uint64_t)));
	HP_TRY(reset_memo((void **)&m->in_func, &m->in_func_cap, d->nfuncs,
	                  sizeof(uint32_t)));
	HP_TRY(reset_memo((void **)&m->in_loc, &m->in_loc_cap, d->nlocs,
	                  sizeof(uint32_t)));
	HP_TRY(add_header(m));
	m->ninputs++;
	/* The first mapping of the first profile that has any is the main
	 * binary: map it first so that it stays mapping 1. */
	if (m->maps.n == 0 && d->nmaps > 0) {
		uint32_t mi;
		uint64_t delta;
		HP_TRY(map_mapping(m, 0, &mi, &delta));
	}
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(d, &it);
	for (;;) {
		int rc = heapprof__pprof_sample_next(d, &it, &s);
		if (rc == 1)
			break;
		HP_TRY(rc);
		HP_TRY(add_sample(m, &s, scale));
	}
	return 0;
}

int
heapprof__mg_add(mg_merger *m, const void *data, size_t len, double scale,
                 size_t limit)
{
	if (m->err)
		return m->err;
	int rc = add(m, data, len, scale, limit);
	if (rc < 0)
		m->err = rc;
	return rc;
}
