/*
 * top_model.c: `heapprof top`'s model of a profile (top_model.h): nodes
 * per function, samples merged as pprof merges them (same locations and
 * labels), focus, tag and age filters applied per sample, flat and cum
 * sums wrapping as Go's int64 arithmetic, and the inline-edge pass.
 */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "age_opt.h"
#include "cli.h"
#include "top_model.h"
/* One node per frame name, in name id order. */
int
top_build_nodes(top *t)
{
	int rc = cli_names_build(&t->nm, &t->d);
	if (rc)
		return rc;
	t->nodes = calloc(t->nm.n ? t->nm.n : 1, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	t->nnodes = t->nm.n;
	for (size_t i = 0; i < t->nm.n; i++) {
		t->nodes[i].name = t->nm.v[i].s;
		t->nodes[i].len = t->nm.v[i].n;
		if (t->focus) {
			/* Names are not NUL-terminated in the table. */
			char *z = strndup(t->nm.v[i].s, t->nm.v[i].n);
			if (!z)
				return -ENOMEM;
			t->nodes[i].focus = regexec(t->focus, z, 0, NULL, 0) == 0;
			free(z);
		}
	}
	return 0;
}

/* The location indexes of merged sample m (leaf first) and their count. */
static const uint64_t *
ms_locs(const top *t, const msample *m, size_t *n)
{
	*n = (size_t)t->keys[m->key];
	return t->keys + m->key + 1;
}

/* --focus: does the sample go through a matching function? */
static int
focused(const top *t, const msample *m)
{
	if (!t->focus)
		return 1;
	size_t nl;
	const uint64_t *locs = ms_locs(t, m, &nl);
	for (size_t j = 0; j < nl; j++) {
		uint32_t cnt;
		const uint32_t *ids = cli_names_loc(&t->nm, (uint32_t)locs[j], &cnt);
		for (uint32_t k = 0; k < cnt; k++)
			if (t->nodes[ids[k]].focus)
				return 1;
	}
	return 0;
}

static int
cmp_label(const void *a, const void *b)
{
	const pprof_label *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->str != y->str)
		return x->str < y->str ? -1 : 1;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	return x->num_unit < y->num_unit ? -1 : x->num_unit > y->num_unit;
}

static uint64_t
key_hash(const uint64_t *k, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ k[i]) * 0x100000001b3ull ^ (h >> 29);
	return h;
}

static int
reserve_keys(top *t, size_t n)
{
	if (t->keys_cap - t->nkeys >= n)
		return 0;
	size_t nc = t->keys_cap ? t->keys_cap * 2 : 4096;
	while (nc - t->nkeys < n)
		nc *= 2;
	uint64_t *nk = realloc(t->keys, nc * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	t->keys = nk;
	t->keys_cap = nc;
	return 0;
}

static int
grow_slots(top *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 1024;
	uint32_t *sl = calloc(ns, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	for (size_t i = 0; i < t->nms; i++) {
		const msample *m = &t->ms[i];
		size_t j = key_hash(t->keys + m->key, m->klen) & (ns - 1);
		while (sl[j])
			j = (j + 1) & (ns - 1);
		sl[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = sl;
	t->nslots = ns;
	return 0;
}

/* --tagfocus KEY=RE,...: whether sample s has a string label KEY whose
 * value one of the REs matches (pprof's compileTagFilter, with a key).
 * A value pprof reads as a number range (t->tag_range) selects numeric
 * labels only, which it compares in units: no string label matches, and
 * a numeric label of KEY is counted (the caller refuses). */
static int
tag_ok(top *t, const pprof_sample *s)
{
	if (!t->tag_text)
		return 1;
	for (size_t j = 0; j < s->nlabels; j++) {
		size_t kl, vl;
		const char *k = heapprof__pprof_string(&t->d, s->labels[j].key, &kl);
		if (kl != t->tag_keylen || memcmp(k, t->tag_text, kl))
			continue;
		if (t->tag_range) {
			t->tag_numeric += !s->labels[j].str;
			continue;
		}
		if (!s->labels[j].str)
			continue;
		const char *v = heapprof__pprof_string(&t->d, s->labels[j].str, &vl);
		char *z = strndup(v, vl);
		int hit = 0;
		for (int r = 0; z && r < t->ntag && !hit; r++)
			hit = regexec(&t->tag_re[r], z, 0, NULL, 0) == 0;
		free(z);
		if (hit)
			return 1;
	}
	return 0;
}

/* Adds sample s (value vi) to its merged sample: key = location indexes,
 * then the labels sorted (pprof's sampleKey, by string index). */
static int
merge_sample(top *t, const pprof_sample *s, size_t vi)
{
	size_t klen = 1 + s->nlocations + 4 * s->nlabels;
	int rc = reserve_keys(t, klen);
	if (rc)
		return rc;
	uint64_t *k = t->keys + t->nkeys;
	k[0] = s->nlocations;
	for (size_t j = 0; j < s->nlocations; j++)
		k[1 + j] = s->location_index[j];
	pprof_label lb[64], *l = lb;
	if (s->nlabels > 64 && !(l = malloc(s->nlabels * sizeof(*l))))
		return -ENOMEM;
	if (s->nlabels)
		memcpy(l, s->labels, s->nlabels * sizeof(*l));
	qsort(l, s->nlabels, sizeof(*l), cmp_label);
	int is_base = 0;
	for (size_t j = 0; j < s->nlabels; j++) {
		uint64_t *e = k + 1 + s->nlocations + 4 * j;
		e[0] = l[j].key;
		e[1] = l[j].str;
		e[2] = (uint64_t)l[j].num;
		e[3] = l[j].num_unit;
		if (heapprof__pprof_string_eq(&t->d, l[j].key, "pprof::base") &&
		    heapprof__pprof_string_eq(&t->d, l[j].str, "true"))
			is_base = 1;
	}
	if (l != lb)
		free(l);
	double var = 0;
	if (t->err && t->err->kind == TOP_ERR_SAMPLED) {
		double n, size;
		var = cli_top_err_var(t->err, &t->d, s, &n, &size);
		t->sampled += n;
	}
	if ((t->nms + 1) * 2 > t->nslots && (rc = grow_slots(t)))
		return rc;
	size_t j = key_hash(k, klen) & (t->nslots - 1);
	for (; t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
		msample *m = &t->ms[t->slots[j] - 1];
		if (m->klen == klen &&
		    !memcmp(t->keys + m->key, k, klen * sizeof(*k))) {
			m->v = add64(m->v, s->values[vi]);
			m->var += var;
			return 0;
		}
	}
	if (t->nms == t->ms_cap) {
		size_t nc = t->ms_cap ? t->ms_cap * 2 : 1024;
		msample *nm = realloc(t->ms, nc * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		t->ms = nm;
		t->ms_cap = nc;
	}
	int64_t age = -1;
	if (cli_sample_age(&t->d, s, &age))
		t->aged++;
	t->ms[t->nms] = (msample){t->nkeys, (uint32_t)klen, is_base,
	                          (t->min_age >= 0 && age < t->min_age) ||
	                                  !tag_ok(t, s),
	                          s->values[vi], var};
	t->slots[j] = (uint32_t)++t->nms;
	t->nkeys += klen;
	return 0;
}

int
top_merge_samples(top *t, size_t vi)
{
	pprof_sample_iter it;
	pprof_sample s;
	int rc;
	heapprof__pprof_samples(&t->d, &it);
	while ((rc = heapprof__pprof_sample_next(&t->d, &it, &s)) == 0)
		if ((rc = merge_sample(t, &s, vi)))
			return rc;
	return rc < 0 ? rc : 0;
}

/* Adds every merged sample's value to flat (leaf) and cum (once per node
 * per sample). Sets the total as pprof's computeTotal does. */
int
top_accumulate(top *t, int64_t *total)
{
	int64_t all = 0, base = 0;
	size_t stamp = 0;
	for (size_t i = 0; i < t->nms; i++) {
		const msample *m = &t->ms[i];
		int64_t v = m->v;
		/* pprof's total counts every sample, focused or not. */
		all = add64(all, abs64(v));
		t->total_var += m->var;
		if (m->is_base)
			base = add64(base, abs64(v));
		if (v == 0 || m->young || !focused(t, m))
			continue;
		stamp++;
		node *leaf = NULL;
		size_t nl;
		const uint64_t *locs = ms_locs(t, m, &nl);
		for (size_t j = 0; j < nl; j++) {
			uint32_t cnt;
			const uint32_t *ids =
				cli_names_loc(&t->nm, (uint32_t)locs[j], &cnt);
			for (uint32_t k = 0; k < cnt; k++) {
				node *n = &t->nodes[ids[k]];
				if (!leaf)
					leaf = n;
				if (n->stamp != stamp) {
					n->stamp = stamp;
					n->cum = add64(n->cum, v);
					n->cum_var += m->var;
				}
			}
		}
		if (leaf) {
			leaf->flat = add64(leaf->flat, v);
			leaf->flat_var += m->var;
		}
	}
	*total = base > 0 ? base : all;
	return 0;
}

/* Edges between kept nodes, as pprof's graph has them: caller -> callee,
 * "inline" when the callee is an inlined line of a location (not its
 * outermost one); an edge is inline only if every instance is. Its weight
 * is the sum of the values of the samples it is in (once per sample);
 * pprof drops edges lighter than 0.1% of the total before labelling. A
 * node prints "(inline)" if all its remaining incoming edges are inline,
 * "(partial-inline)" if only some are. */
typedef struct edge {
	uint64_t key; /* (caller + 1) << 32 | callee; 0: empty slot */
	int64_t weight;
	size_t stamp; /* last sample counted, plus one */
	int inl;
} edge;

typedef struct edges {
	edge *v;
	size_t n, cap;
} edges;

static size_t
edge_slot(const edge *v, size_t cap, uint64_t key)
{
	size_t j = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
	while (v[j].key && v[j].key != key)
		j = (j + 1) & (cap - 1);
	return j;
}

static int
edge_add(edges *e, uint32_t from, uint32_t to, int inl, int64_t w,
         size_t stamp)
{
	if ((e->n + 1) * 2 > e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 1024;
		edge *nv = calloc(nc, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		for (size_t i = 0; i < e->cap; i++)
			if (e->v[i].key)
				nv[edge_slot(nv, nc, e->v[i].key)] = e->v[i];
		free(e->v);
		e->v = nv;
		e->cap = nc;
	}
	uint64_t key = ((uint64_t)from + 1) << 32 | to;
	edge *x = &e->v[edge_slot(e->v, e->cap, key)];
	if (!x->key) {
		*x = (edge){key, 0, 0, inl};
		e->n++;
	}
	if (x->stamp == stamp)
		return 0;
	x->stamp = stamp;
	x->weight = add64(x->weight, w);
	if (!inl)
		x->inl = 0;
	return 0;
}

int
top_mark_inline(top *t, int64_t cutoff)
{
	edges e = {0};
	size_t stamp = 0;
	int rc = 0;
	for (size_t i = 0; i < t->nms; i++) {
		const msample *m = &t->ms[i];
		int64_t w = m->v;
		if (w == 0 || !focused(t, m))
			continue;
		stamp++;
		long parent = -1;
		size_t nl;
		const uint64_t *locs = ms_locs(t, m, &nl);
		for (size_t j = nl; j-- > 0;) {
			uint32_t cnt;
			const uint32_t *ids =
				cli_names_loc(&t->nm, (uint32_t)locs[j], &cnt);
			for (uint32_t k = cnt; k-- > 0;) {
				uint32_t id = ids[k];
				if (!t->nodes[id].kept)
					continue;
				if (parent >= 0 && (uint32_t)parent != id &&
				    (rc = edge_add(&e, (uint32_t)parent, id,
				                   k != cnt - 1, w, stamp)))
					goto out;
				parent = id;
			}
		}
	}
	for (size_t i = 0; i < e.cap; i++) {
		if (!e.v[i].key || abs64(e.v[i].weight) < cutoff)
			continue;
		node *n = &t->nodes[(uint32_t)e.v[i].key];
		if (e.v[i].inl)
			n->in_inline = 1;
		else
			n->in_call = 1;
	}
out:
	free(e.v);
	return rc < 0 ? rc : 0;
}

int
top_cmp_nodes(const void *pa, const void *pb)
{
	const node *a = *(node *const *)pa, *b = *(node *const *)pb;
	int64_t x = abs64(a->flat), y = abs64(b->flat);
	if (x != y)
		return x > y ? -1 : 1;
	int c = strcmp(a->name, b->name);
	if (c)
		return c;
	x = abs64(a->cum);
	y = abs64(b->cum);
	return x > y ? -1 : x < y ? 1 : 0;
}

void
top_free(top *t)
{
	free(t->nodes);
	free(t->ms);
	free(t->keys);
	free(t->slots);
	cli_names_free(&t->nm);
	heapprof__pprof_dec_free(&t->d);
}
