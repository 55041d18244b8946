/*
 * cmd_top.c: `heapprof top`: the top functions of a profile by flat value,
 * printed as `go tool pprof -top` prints them (same header lines, columns,
 * units, percentages, node dropping below 0.5% of the total and ordering).
 * Reads profile.proto (gzip'd or not) or legacy text through the shared
 * decoder; frame names from prof_names.c (as pprof names them). Samples
 * with the same locations and labels are merged before anything is summed,
 * as pprof's profile.Merge does; sums wrap as Go's int64 arithmetic.
 */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapprof.h"
#include "age_opt.h"
#include "cli.h"
#include "strbuf.h"
#include "pprof_dec.h"
#include "prof_names.h"
#include "top_err.h"
#include "top_fmt.h"
#include "hide.h"

#define PM "\xc2\xb1" /* the plus-minus sign, in UTF-8 */

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof top [-n|--nodecount N] [--sample-index TYPE] [--base OLD]\n"
	        "                    [--focus REGEX] [--hide REGEX] "
	        "[--no-default-hide]\n"
	        "                    [--min-age AGE] [--tagfocus KEY=REGEX] [--error] FILE\n"
	        "\n"
	        "Prints the functions of a profile.proto file (gzip'd or not)\n"
	        "with the largest flat values, like `go tool pprof -top`: flat,\n"
	        "flat%%, sum%%, cum, cum%%, name. Functions whose cum is at most\n"
	        "0.5%% of the total are dropped, as pprof does. Names come from\n"
	        "the profile, else from the ELF symbols of the mapped files.\n"
	        "\n"
	        "  -n N                 show at most N functions (default: all)\n"
	        "  --sample-index TYPE  the sample type to show: a name\n"
	        "                       (inuse_space, alloc_space, inuse_objects,\n"
	        "                       alloc_objects, ...) or an index; default:\n"
	        "                       the profile's default_sample_type, else\n"
	        "                       the last type (pprof's rule)\n"
	        "  --base OLD           show FILE - OLD (pprof -base: OLD's values\n"
	        "                       subtracted, stack by stack, then merged)\n"
	        "  --focus REGEX        only samples with a frame whose function\n"
	        "                       name matches REGEX (POSIX extended)\n"
	        CLI_HIDE_USAGE
	        "  --min-age AGE        only in-use samples whose objects were\n"
	        "                       allocated at least AGE ago (600, 600s,\n"
	        "                       10m, 1h, 1d: the age_s labels; classes\n"
	        "                       0 1s 2s 5s 10s 30s 1m 2m 5m 10m 30m 1h\n"
	        "                       2h 6h 12h 1d 2d 7d 30d); default type\n"
	        "                       inuse_space\n"
	        "  --tagfocus KEY=RE[,RE...]  only samples with a string label KEY\n"
	        "                       whose value matches one of the REs\n"
	        "                       (POSIX extended; pprof -tagfocus)\n"
	        "  --error              also the 95%% interval of the total and of\n"
	        "                       each row's flat and cum (from the sample\n"
	        "                       counts; 'exact' at rate 1), and a line\n"
	        "                       reconciling the in-use estimate with the\n"
	        "                       RSS and the allocator's figures heapprof\n"
	        "                       records (without it the output is\n"
	        "                       go tool pprof -top's, byte for byte)\n"
	        "  FILE                 the profile ('-': stdin)\n");
}

/* One function (pprof "node" at functions granularity). */
typedef struct node {
	const char *name; /* borrowed from the names table */
	size_t len;
	int64_t flat, cum;
	size_t stamp; /* last sample that added to cum, plus one */
	int kept;     /* printed: takes part in the edge pass */
	int focus;    /* the name matches --focus */
	int in_inline, in_call; /* kinds of incoming edges among kept nodes */
	double flat_var, cum_var; /* --error: the estimators' variances */
} node;

/* A merged sample: its key at keys[key .. key + klen) starts with the
 * location count and indexes; v is the sum of the chosen value. */
typedef struct msample {
	size_t key;
	uint32_t klen;
	int is_base; /* labelled pprof::base=true (a -diff_base sample) */
	int young;   /* --min-age: no age_s label of at least min_age;
	              * --tagfocus: no label that matches */
	int64_t v;
	double var; /* --error: the variance of v (top_err.c) */
} msample;

typedef struct top {
	pprof_dec d;
	regex_t *focus; /* --focus, or NULL */
	const char *focus_text;
	int64_t min_age; /* --min-age in seconds, or -1 */
	const char *tag_text; /* --tagfocus, or NULL */
	size_t tag_keylen;    /* its key: tag_text[0 .. tag_keylen) */
	regex_t tag_re[16];   /* its regular expressions */
	int ntag;
	size_t aged;     /* samples with an age_s label */
	top_err *err;    /* --error, or NULL */
	int err_base;    /* --error with --base: no intervals */
	double total_var, sampled; /* --error: of the total; objects sampled */
	cli_names nm;
	node *nodes; /* one per name id of nm */
	size_t nnodes;
	/* The samples merged as pprof's profile.Merge merges them before
	 * anything is summed: one per (locations, labels), values added. */
	msample *ms;
	size_t nms, ms_cap;
	uint64_t *keys; /* arena: each sample's key, see sample_key */
	size_t nkeys, keys_cap;
	uint32_t *slots; /* key hash -> ms index + 1 */
	size_t nslots;
} top;

/* One node per frame name, in name id order. */
static int
build_nodes(top *t)
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

/* Sums and absolute values wrap as Go's int64 arithmetic does in pprof
 * (no undefined behaviour in C at INT64_MIN or on overflow). */
static int64_t
abs64(int64_t v)
{
	return (int64_t)(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

static int64_t
add64(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
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
 * value one of the REs matches (pprof's compileTagFilter, with a key). */
static int
tag_ok(const top *t, const pprof_sample *s)
{
	if (!t->tag_text)
		return 1;
	for (size_t j = 0; j < s->nlabels; j++) {
		size_t kl, vl;
		const char *k = heapprof__pprof_string(&t->d, s->labels[j].key, &kl);
		if (!s->labels[j].str || kl != t->tag_keylen ||
		    memcmp(k, t->tag_text, kl))
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

static int
merge_samples(top *t, size_t vi)
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
static int
accumulate(top *t, int64_t *total)
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

static int
mark_inline(top *t, int64_t cutoff)
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

static int
cmp_nodes(const void *pa, const void *pb)
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

static void
top_free(top *t)
{
	free(t->nodes);
	free(t->ms);
	free(t->keys);
	free(t->slots);
	cli_names_free(&t->nm);
	heapprof__pprof_dec_free(&t->d);
}

static int
parse_count(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v <= 0)
		return -1;
	*out = v;
	return 0;
}

/* --min-age needs age labels and an in-use type: else says why, and
 * returns the exit status. */
static int
check_age(const top *t, const char *path, size_t vi)
{
	size_t n;
	const char *type = heapprof__pprof_string(&t->d, t->d.types[vi].type, &n);
	if (n < 6 || strncmp(type, "inuse_", 6) != 0) {
		cli_err("top: --min-age: %.*s has no ages; they are on the "
		        "in-use types (inuse_space, inuse_objects)", (int)n, type);
		return 2;
	}
	if (t->aged == 0) {
		cli_err("top: --min-age: %s has no age_s labels (heapprof "
		        "writes them in its files unless HEAPPROF_AGE=0, and on "
		        "the endpoint with ?age=1)", path);
		return 1;
	}
	return 0;
}

/* "+-" and the 95% half-width of variance var, in the report's unit. */
static void
pm_value(const top_fmt *f, double var, char *out, size_t cap)
{
	char v[40];
	cli_top_fmt_value(f, (int64_t)llround(cli_top_err_half(var)), v,
	                  sizeof(v));
	snprintf(out, cap, "\xc2\xb1%s", v);
}

/* --error: the interval of the total (or why there is none) and the
 * reconciliation line, before the column header. */
static void
print_error_lines(top *t, const top_fmt *f, int64_t total, const char *path)
{
	const top_err *e = t->err;
	char a[48], r[48];
	if (e->kind == TOP_ERR_EXACT) {
		printf("Error: none, the values are exact (rate 1: every "
		       "allocation was recorded)\n");
	} else if (e->kind == TOP_ERR_SAMPLED) {
		double half = cli_top_err_half(t->total_var);
		pm_value(f, t->total_var, a, sizeof(a));
		cli_top_scaled_label(e->rate, "bytes", "auto", r, sizeof(r));
		char rel[32] = "";
		if (total != 0)
			snprintf(rel, sizeof(rel), " (\xc2\xb1%.1f%%)",
			         100.0 * half / fabs((double)total));
		char tv[48];
		cli_top_fmt_value(f, total, tv, sizeof(tv));
		printf("Error: total %s %s%s, a 95%% interval from %.0f sampled "
		       "objects at rate %s; rows: " PM "flat, " PM "cum\n",
		       tv, a, rel, t->sampled, r);
	} else {
		printf("Error: no interval: %s\n", e->why);
	}
	if (t->err_base)
		return;
	top_mem m;
	cli_top_mem_parse(&t->d, &m);
	if (!m.have)
		return;
	double heap, half, sampled;
	int exact;
	cli_top_err_inuse(&t->d, &heap, &half, &exact, &sampled);
	char line[600];
	cli_top_mem_line(&m, heap, half, exact, sampled, line, sizeof(line));
	printf("%s\n", line);
	(void)path;
}

/* Decodes, aggregates and prints. Returns the exit status. */
static int
run_top(top *t, const uint8_t *buf, size_t len, const char *path,
        const char *sample_index, long max_nodes)
{
	pprof_dec *d = &t->d;
	/* Every sample checked first: a malformed one is the error, not
	 * the empty view it would make. */
	int rc = heapprof__pprof_check(d, buf, len);
	if (rc) {
		cli_open_error("top", path, buf, len, rc, d->fault);
		return 1;
	}
	long vi = cli_pick_sample_index(d, "top", sample_index);
	if (vi < 0)
		return 2;
	if (!sample_index)
		cli_note_empty_inuse(d, "top", path, vi);
	int64_t total = 0;
	if (t->err && t->err_base) {
		memset(t->err, 0, sizeof(*t->err));
		snprintf(t->err->why, sizeof(t->err->why),
		         "with --base (a difference of two profiles of the same "
		         "objects)");
	} else if (t->err) {
		cli_top_err_init(t->err, d, (size_t)vi);
	}
	if ((rc = build_nodes(t)) || (rc = merge_samples(t, (size_t)vi)) ||
	    (rc = accumulate(t, &total))) {
		cli_err("top: %s: %s", path, heapprof_strerror(rc));
		return 1;
	}
	if (t->min_age >= 0 && (rc = check_age(t, path, (size_t)vi)) != 0)
		return rc;

	/* The graph: nodes with a value, then those above the cutoff. */
	node **g = malloc((t->nnodes ? t->nnodes : 1) * sizeof(*g));
	if (!g) {
		cli_err("top: %s", heapprof_strerror(-ENOMEM));
		return 1;
	}
	size_t ng = 0, kept = 0;
	int64_t flat_all = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		if (t->nodes[i].flat || t->nodes[i].cum) {
			g[ng++] = &t->nodes[i];
			flat_all = add64(flat_all, t->nodes[i].flat);
		}
	int64_t cutoff = abs64((int64_t)((double)flat_all * 0.005));
	for (size_t i = 0; i < ng; i++)
		if (abs64(g[i]->cum) >= cutoff)
			g[kept++] = g[i];
	size_t dropped = ng - kept, orig = kept;
	qsort(g, kept, sizeof(*g), cmp_nodes);
	if (max_nodes > 0 && (size_t)max_nodes < kept)
		kept = (size_t)max_nodes;
	for (size_t i = 0; i < kept; i++)
		g[i]->kept = 1;
	if ((rc = mark_inline(t, abs64((int64_t)((double)flat_all * 0.001))))) {
		free(g);
		cli_err("top: %s: %s", path, heapprof_strerror(rc));
		return 1;
	}

	size_t tn, un;
	const char *type = heapprof__pprof_string(d, d->types[vi].type, &tn);
	const char *unit = heapprof__pprof_string(d, d->types[vi].unit, &un);
	char unitz[64];
	snprintf(unitz, sizeof(unitz), "%.*s", (int)un, unit);
	int64_t minv = 0;
	for (size_t i = 0; i < kept; i++) {
		int64_t m = abs64(g[i]->flat) ? abs64(g[i]->flat) : abs64(g[i]->cum);
		if (m > 0 && (minv == 0 || m < minv))
			minv = m;
	}
	top_fmt f;
	cli_top_fmt_init(&f, unitz, minv, total);

	/* Header lines, as pprof's ProfileLabels and reportLabels. */
	if (d->nmaps) {
		const heapprof_mapping *m0 = &t->nm.maps[0];
		if (m0->file[0]) {
			const char *b = strrchr(m0->file, '/');
			printf("File: %s\n", b ? b + 1 : m0->file);
		}
		if (m0->build_id[0])
			printf("Build ID: %s\n", m0->build_id);
	}
	for (size_t i = 0; i < d->ncomments; i++) {
		size_t n;
		const char *c = heapprof__pprof_string(d, d->comments[i], &n);
		if (!(n && c[0] == '#'))
			printf("%.*s\n", (int)n, c);
	}
	printf("Type: %.*s\n", (int)tn, type);
	char a[64], b[64], p[16];
	if (d->time_nanos) {
		cli_top_fmt_time(d->time_nanos, a, sizeof(a));
		printf("Time: %s\n", a);
	}
	if (d->duration_nanos) {
		char u[64], ratio[32] = "";
		cli_top_scaled_label(d->duration_nanos, "nanoseconds", "auto", a,
		                     sizeof(a));
		cli_top_fmt_value(&f, total, b, sizeof(b));
		double ns = cli_top_scale(total, unitz, "nanoseconds", u,
		                          sizeof(u));
		if (!strcmp(u, "ns") && ns != 0) {
			cli_top_percent((int64_t)ns, d->duration_nanos, p,
			                sizeof(p));
			snprintf(ratio, sizeof(ratio), "(%s)", p);
		}
		printf("Duration: %s, Total samples = %s %s\n", a, b, ratio);
	}
	const char *hide = cli_hide_active();
	if (t->focus_text || hide || t->min_age >= 0 || t->tag_text)
		printf("Active filters:\n");
	if (t->focus_text)
		cli_hide_print_filter("focus", t->focus_text);
	if (hide)
		cli_hide_print_filter("hide", hide);
	if (t->min_age >= 0) /* what go tool pprof calls it */
		printf("   tagfocus=age_s=%llds:\n", (long long)t->min_age);
	if (t->tag_text)
		cli_hide_print_filter("tagfocus", t->tag_text);
	int64_t shown = 0;
	for (size_t i = 0; i < kept; i++)
		shown = add64(shown, g[i]->flat);
	cli_top_fmt_value(&f, shown, a, sizeof(a));
	cli_top_fmt_value(&f, total, b, sizeof(b));
	cli_top_percent(shown, total, p, sizeof(p));
	printf("Showing nodes accounting for %s, %s of %s total\n", a,
	       p + strspn(p, " "), b);
	if (total != 0) {
		if (dropped > 0) {
			cli_top_fmt_value(
				&f, abs64((int64_t)((double)total * 0.005)), a,
				sizeof(a));
			printf("Dropped %zu node%s (cum <= %s)\n", dropped,
			       dropped > 1 ? "s" : "", a);
		}
		if (kept > 0 && kept < orig)
			printf("Showing top %zu nodes out of %zu\n", kept, orig);
	}
	int cols = t->err && t->err->kind == TOP_ERR_SAMPLED;
	if (t->err)
		print_error_lines(t, &f, total, path);
	if (cols)
		printf("%10s %5s%% %5s%% %10s %5s%% %11s %11s\n", "flat", "flat",
		       "sum", "cum", "cum", PM "flat", PM "cum");
	else
		printf("%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum",
		       "cum", "cum");
	int64_t sum = 0;
	for (size_t i = 0; i < kept; i++) {
		char fp[16], sp[16], cp[16];
		sum = add64(sum, g[i]->flat);
		cli_top_fmt_value(&f, g[i]->flat, a, sizeof(a));
		cli_top_fmt_value(&f, g[i]->cum, b, sizeof(b));
		cli_top_percent(g[i]->flat, total, fp, sizeof(fp));
		cli_top_percent(sum, total, sp, sizeof(sp));
		cli_top_percent(g[i]->cum, total, cp, sizeof(cp));
		char ef[48] = "", ec[48] = "";
		if (cols) {
			/* "+-" is two bytes, one column: width 11 is 10. */
			pm_value(&f, g[i]->flat_var, ef, sizeof(ef));
			pm_value(&f, g[i]->cum_var, ec, sizeof(ec));
			printf("%10s %s %s %10s %s %11s %11s  %s%s\n", a, fp, sp,
			       b, cp, ef, ec, g[i]->name,
			       !g[i]->in_inline ? ""
			       : g[i]->in_call  ? " (partial-inline)"
			                        : " (inline)");
			continue;
		}
		printf("%10s %s %s %10s %s  %s%s\n", a, fp, sp, b, cp,
		       g[i]->name,
		       !g[i]->in_inline ? ""
		       : g[i]->in_call  ? " (partial-inline)"
		                        : " (inline)");
	}
	free(g);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_err("top: writing the output: %s", strerror(errno));
		return 1;
	}
	return 0;
}

/* --base OLD: replaces *buf by NEW merged with -1 x OLD, as pprof's -base
 * does. Returns 0 or the exit status. */
static int
subtract_base(uint8_t **buf, size_t *len, const char *path, const char *base)
{
	uint8_t *old;
	size_t old_len;
	int rc = cli_read_profile(base, &old, &old_len);
	if (rc) {
		cli_err("top: %s: %s", base, heapprof_strerror(rc));
		return 1;
	}
	heapprof_merge_input in[2] = {{*buf, *len, 1.0}, {old, old_len, -1.0}};
	cli_strbuf m = {0};
	size_t failed = 0;
	rc = heapprof_merge_ex(in, 2, 0, 0, &failed, cli_sb_write, &m);
	free(old);
	if (rc) {
		cli_err("top: --base: %s: %s", failed == 1 ? base : path,
		        heapprof_strerror(rc));
		free(m.p);
		return 1;
	}
	free(*buf);
	*buf = (uint8_t *)m.p;
	*len = m.n;
	return 0;
}

/* --tagfocus KEY=RE[,RE...] into t: 0, or 2 (said why). */
static int
tagfocus_compile(top *t, const char *spec, int64_t min_age)
{
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec || min_age >= 0) {
		cli_err(min_age >= 0 ? "top: --tagfocus and --min-age: one or the other"
		                     : "top: --tagfocus needs KEY=REGEX[,REGEX...]");
		return 2;
	}
	t->tag_keylen = (size_t)(eq - spec);
	for (const char *r = eq + 1;;) {
		size_t l = strcspn(r, ",");
		char *z = strndup(r, l);
		int e = z && t->ntag < 16
		                ? regcomp(&t->tag_re[t->ntag], z, REG_EXTENDED | REG_NOSUB)
		                : REG_ESPACE;
		free(z);
		if (e) {
			cli_err("top: --tagfocus '%s': a bad or 17th regular expression",
			        spec);
			return 2;
		}
		t->ntag++;
		if (!r[l])
			break;
		r += l + 1;
	}
	t->tag_text = spec;
	return 0;
}

int
cli_top(int argc, char **argv)
{
	const char *path = NULL, *sample_index = NULL, *base = NULL;
	const char *focus = NULL, *tagfocus = NULL;
	long max_nodes = 0;
	int64_t min_age = -1;
	int want_err = 0;
	top_err err;
	int hopt;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--nodecount")) {
			if (i + 1 >= argc || parse_count(argv[++i], &max_nodes)) {
				cli_err("top: %s needs a positive count", a);
				return 2;
			}
		} else if (!strncmp(a, "-n", 2) && a[2] != '-' && a[2]) {
			if (parse_count(a + 2, &max_nodes)) {
				cli_err("top: bad count '%s'", a + 2);
				return 2;
			}
		} else if (!strcmp(a, "--sample-index") ||
		           !strcmp(a, "--sample_index") ||
		           !strcmp(a, "-sample_index")) {
			if (i + 1 >= argc) {
				cli_err("top: %s needs a type", a);
				return 2;
			}
			sample_index = argv[++i];
		} else if (!strncmp(a, "--sample-index=", 15) ||
		           !strncmp(a, "--sample_index=", 15)) {
			sample_index = a + 15;
		} else if (!strncmp(a, "-sample_index=", 14)) {
			sample_index = a + 14;
		} else if (!strcmp(a, "--base") || !strcmp(a, "-base")) {
			if (i + 1 >= argc) {
				cli_err("top: %s needs a profile", a);
				return 2;
			}
			base = argv[++i];
		} else if (!strcmp(a, "--focus") || !strcmp(a, "-focus")) {
			if (i + 1 >= argc) {
				cli_err("top: %s needs a regular expression", a);
				return 2;
			}
			focus = argv[++i];
		} else if (!strcmp(a, "--min-age") || !strncmp(a, "--min-age=", 10)) {
			const char *v = a[9] == '=' ? a + 10
			                : i + 1 < argc ? argv[++i] : NULL;
			if (cli_parse_age(v, &min_age)) {
				cli_err("top: --min-age needs an age (600, 600s, "
				        "10m, 1h, 1d)");
				return 2;
			}
		} else if (!strcmp(a, "--tagfocus") || !strcmp(a, "-tagfocus")) {
			if (i + 1 >= argc) {
				cli_err("top: %s needs KEY=REGEX", a);
				return 2;
			}
			tagfocus = argv[++i];
		} else if (!strncmp(a, "--tagfocus=", 11)) {
			tagfocus = a + 11;
		} else if (!strcmp(a, "--error") || !strcmp(a, "-error")) {
			want_err = 1;
		} else if ((hopt = cli_hide_option("top", argc, argv, &i))) {
			if (hopt < 0)
				return 2;
		} else if (a[0] == '-' && a[1]) {
			cli_err("top: unknown option '%s' (see heapprof top --help)",
			        a);
			return 2;
		} else if (path) {
			cli_err("top: one profile at a time ('%s' and '%s')", path,
			        a);
			return 2;
		} else {
			path = a;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	if (sample_index && !*sample_index) {
		cli_err("top: empty sample type");
		return 2;
	}
	uint8_t *buf;
	size_t len;
	int rc = cli_read_profile(path, &buf, &len);
	if (rc) {
		cli_err("top: %s: %s", path, heapprof_strerror(rc));
		return 1;
	}
	if (base && (rc = subtract_base(&buf, &len, path, base)) != 0) {
		free(buf);
		return rc;
	}
	top t;
	memset(&t, 0, sizeof(t));
	t.min_age = min_age;
	if (want_err) {
		t.err = &err;
		t.err_base = base != NULL;
	}
	if (min_age >= 0 && !sample_index)
		sample_index = "inuse_space";
	regex_t re;
	if (focus) {
		int e = regcomp(&re, focus, REG_EXTENDED | REG_NOSUB);
		if (e) {
			char msg[256];
			regerror(e, &re, msg, sizeof(msg));
			cli_err("top: --focus '%s': %s", focus, msg);
			free(buf);
			return 2;
		}
		t.focus = &re;
		t.focus_text = focus;
	}
	if (tagfocus && (rc = tagfocus_compile(&t, tagfocus, min_age)) != 0) {
		if (focus)
			regfree(&re);
		free(buf);
		return rc;
	}
	heapprof__pprof_dec_init(&t.d, NULL, NULL);
	int st = run_top(&t, buf, len, path, sample_index, max_nodes);
	top_free(&t);
	if (focus)
		regfree(&re);
	for (int r = 0; r < t.ntag; r++)
		regfree(&t.tag_re[r]);
	free(buf);
	return st;
}
