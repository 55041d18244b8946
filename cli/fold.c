/*
 * fold.c: folded stacks: samples -> root-first name sequences with summed
 * values (see fold.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"

void
cli_fold_init(cli_fold *f, size_t nvals, int sanitize)
{
	memset(f, 0, sizeof(*f));
	f->nvals = nvals;
	f->sanitize = sanitize;
}

void
cli_fold_free(cli_fold *f)
{
	cli_names_free(&f->names);
	free(f->frames);
	free(f->stk);
	free(f->vals);
	free(f->slots);
	free(f->scratch);
	memset(f, 0, sizeof(*f));
}

/* The fold's id for name s[0..n), sanitized if asked. -1: no memory. */
static long
fold_name(cli_fold *f, const char *s, size_t n)
{
	if (!f->sanitize || (!memchr(s, ';', n) && !memchr(s, '\n', n) &&
	                     !memchr(s, '\r', n)))
		return cli_names_intern(&f->names, s, n);
	char *c = malloc(n ? n : 1);
	if (!c)
		return -1;
	for (size_t i = 0; i < n; i++)
		c[i] = s[i] == ';' ? ':' : s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
	long id = cli_names_intern(&f->names, c, n);
	free(c);
	return id;
}

static uint64_t
hash_frames(const uint32_t *v, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ n;
	for (size_t i = 0; i < n; i++)
		h = (h ^ v[i]) * 1099511628211ull;
	return h ^ (h >> 29);
}

static int
grow_slots(cli_fold *f)
{
	size_t ns = f->nslots ? f->nslots * 2 : 1024;
	uint32_t *s = calloc(ns, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < f->nstk; i++) {
		size_t n;
		const uint32_t *fr = cli_fold_frames(f, i, &n);
		size_t j = hash_frames(fr, n) & (ns - 1);
		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(f->slots);
	f->slots = s;
	f->nslots = ns;
	return 0;
}

static int
reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : 256;
	while (nc < need)
		nc *= 2;
	void *nv = realloc(*p, nc * elem);
	if (!nv)
		return -ENOMEM;
	*p = nv;
	*cap = nc;
	return 0;
}

/* The index of the stack fr[0..n), created (values 0) on first use. */
static long
stack_for(cli_fold *f, const uint32_t *fr, size_t n)
{
	if (f->nstk * 2 >= f->nslots && grow_slots(f))
		return -1;
	size_t j = hash_frames(fr, n) & (f->nslots - 1);
	for (; f->slots[j]; j = (j + 1) & (f->nslots - 1)) {
		const cli_fold_stack *o = &f->stk[f->slots[j] - 1];
		if (o->n == n && !memcmp(f->frames + o->first, fr, n * sizeof(*fr)))
			return (long)f->slots[j] - 1;
	}
	if (f->nframes + n > UINT32_MAX || f->nstk >= UINT32_MAX - 1 ||
	    reserve((void **)&f->frames, &f->frames_cap, f->nframes + n,
	            sizeof(*f->frames)) ||
	    reserve((void **)&f->stk, &f->stk_cap, f->nstk + 1, sizeof(*f->stk)) ||
	    reserve((void **)&f->vals, &f->vals_cap, (f->nstk + 1) * f->nvals + 1,
	            sizeof(*f->vals)))
		return -1;
	memset(f->vals + f->nstk * f->nvals, 0, f->nvals * sizeof(*f->vals));
	memcpy(f->frames + f->nframes, fr, n * sizeof(*fr));
	f->stk[f->nstk] = (cli_fold_stack){(uint32_t)f->nframes, (uint32_t)n};
	f->nframes += n;
	f->slots[j] = (uint32_t)f->nstk + 1;
	return (long)f->nstk++;
}

int
cli_fold_profile(cli_fold *f, pprof_dec *d, const cli_names *nm,
                 const long *slot)
{
	/* name id in nm -> name id in the fold, filled on first use */
	uint32_t *xl = malloc((nm->n ? nm->n : 1) * sizeof(*xl));
	if (!xl)
		return -ENOMEM;
	memset(xl, 0xff, (nm->n ? nm->n : 1) * sizeof(*xl));
	pprof_sample_iter it;
	pprof_sample s;
	int rc;
	heapprof__pprof_samples(d, &it);
	while ((rc = heapprof__pprof_sample_next(d, &it, &s)) == 0) {
		int any = 0;
		for (size_t i = 0; i < d->ntypes; i++)
			if (slot[i] >= 0 && s.values[i])
				any = 1;
		if (!any)
			continue;
		size_t n = 0;
		for (size_t j = s.nlocations; j-- > 0;) {
			uint32_t cnt;
			const uint32_t *ids =
				cli_names_loc(nm, s.location_index[j], &cnt);
			if (reserve((void **)&f->scratch, &f->scratch_cap, n + cnt,
			            sizeof(*f->scratch))) {
				rc = -ENOMEM;
				goto out;
			}
			for (uint32_t k = cnt; k-- > 0;) {
				uint32_t id = ids[k];
				if (xl[id] == UINT32_MAX) {
					long x = fold_name(f, nm->v[id].s, nm->v[id].n);
					if (x < 0) {
						rc = -ENOMEM;
						goto out;
					}
					xl[id] = (uint32_t)x;
				}
				f->scratch[n++] = xl[id];
			}
		}
		if (n == 0) {
			long x = fold_name(f, CLI_FOLD_NO_STACK,
			                   strlen(CLI_FOLD_NO_STACK));
			if (x < 0 || reserve((void **)&f->scratch, &f->scratch_cap,
			                     1, sizeof(*f->scratch))) {
				rc = -ENOMEM;
				goto out;
			}
			f->scratch[n++] = (uint32_t)x;
		}
		long si = stack_for(f, f->scratch, n);
		if (si < 0) {
			rc = -ENOMEM;
			goto out;
		}
		int64_t *v = f->vals + (size_t)si * f->nvals;
		for (size_t i = 0; i < d->ntypes; i++)
			if (slot[i] >= 0)
				v[slot[i]] = (int64_t)((uint64_t)v[slot[i]] +
				                       (uint64_t)s.values[i]);
	}
out:
	free(xl);
	return rc < 0 ? rc : 0;
}

static const cli_fold *sort_fold; /* qsort has no context argument */

static int
cmp_stacks(const void *pa, const void *pb)
{
	const cli_fold *f = sort_fold;
	size_t na, nb;
	const uint32_t *a = cli_fold_frames(f, *(const uint32_t *)pa, &na);
	const uint32_t *b = cli_fold_frames(f, *(const uint32_t *)pb, &nb);
	for (size_t i = 0; i < na && i < nb; i++) {
		if (a[i] == b[i])
			continue;
		int c = strcmp(f->names.v[a[i]].s, f->names.v[b[i]].s);
		if (c)
			return c;
	}
	return na < nb ? -1 : na > nb;
}

uint32_t *
cli_fold_sorted(const cli_fold *f)
{
	uint32_t *ix = malloc((f->nstk ? f->nstk : 1) * sizeof(*ix));
	if (!ix)
		return NULL;
	for (size_t i = 0; i < f->nstk; i++)
		ix[i] = (uint32_t)i;
	sort_fold = f;
	qsort(ix, f->nstk, sizeof(*ix), cmp_stacks);
	sort_fold = NULL;
	return ix;
}
