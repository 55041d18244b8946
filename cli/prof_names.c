/*
 * prof_names.c: frame names of a decoded profile (Function/Line data, else
 * ELF symbols through the symbol cache, else hex addresses), interned, per
 * location; plus the sample-index rule and open-error messages shared by
 * top, collapse and flame.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cli.h"
#include "strbuf.h"
#include "demangle.h"
#include "prof_names.h"
#include "hide.h"

static uint64_t
hash_name(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static int
grow_slots(cli_names *nm)
{
	size_t ns = nm->nslots ? nm->nslots * 2 : 1024;
	uint32_t *s = calloc(ns, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < nm->n; i++) {
		size_t j = hash_name(nm->v[i].s, nm->v[i].n) & (ns - 1);
		while (s[j])
			j = (j + 1) & (ns - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(nm->slots);
	nm->slots = s;
	nm->nslots = ns;
	return 0;
}

long
cli_names_intern(cli_names *nm, const char *s, size_t n)
{
	if (nm->n * 2 >= nm->nslots && grow_slots(nm))
		return -1;
	size_t j = hash_name(s, n) & (nm->nslots - 1);
	for (; nm->slots[j]; j = (j + 1) & (nm->nslots - 1)) {
		const cli_name *o = &nm->v[nm->slots[j] - 1];
		if (o->n == n && memcmp(o->s, s, n) == 0)
			return (long)nm->slots[j] - 1;
	}
	if (nm->n == nm->cap) {
		size_t nc = nm->cap ? nm->cap * 2 : 256;
		cli_name *nv = realloc(nm->v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		nm->v = nv;
		nm->cap = nc;
	}
	char *copy = malloc(n + 1);
	if (!copy)
		return -1;
	memcpy(copy, s, n);
	copy[n] = '\0';
	nm->v[nm->n] = (cli_name){copy, n};
	nm->slots[j] = (uint32_t)nm->n + 1;
	return (long)nm->n++;
}

static int
push_id(cli_names *nm, long id)
{
	if (id < 0)
		return -ENOMEM;
	if (nm->nloc_ids == nm->loc_ids_cap) {
		size_t nc = nm->loc_ids_cap ? nm->loc_ids_cap * 2 : 1024;
		uint32_t *nv = realloc(nm->loc_ids, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		nm->loc_ids = nv;
		nm->loc_ids_cap = nc;
	}
	nm->loc_ids[nm->nloc_ids++] = (uint32_t)id;
	return 0;
}

static char *
dup_string(const pprof_dec *d, uint32_t i)
{
	size_t n;
	const char *s = heapprof__pprof_string(d, i, &n);
	char *c = malloc(n + 1);
	if (c) {
		memcpy(c, s, n);
		c[n] = '\0';
	}
	return c;
}

static int
load_mappings(cli_names *nm, const pprof_dec *d)
{
	nm->maps = calloc(d->nmaps ? d->nmaps : 1, sizeof(*nm->maps));
	nm->map_symbolized = calloc(d->nmaps ? d->nmaps : 1, 1);
	if (!nm->maps || !nm->map_symbolized)
		return -ENOMEM;
	for (size_t i = 0; i < d->nmaps; i++) {
		pprof_mapping pm;
		int rc = heapprof__pprof_mapping(d, i, &pm);
		if (rc)
			return rc;
		char *file = dup_string(d, pm.filename);
		char *bid = dup_string(d, pm.build_id);
		nm->maps[i] = (heapprof_mapping){pm.memory_start, pm.memory_limit,
		                                 pm.file_offset, file, bid};
		nm->map_symbolized[i] = pm.has_functions || pm.has_filenames ||
		                        pm.has_line_numbers;
		nm->nmaps = i + 1;
		if (!file || !bid)
			return -ENOMEM;
	}
	return 0;
}

/* A C++ linkage name demangled as pprof's default shows it (simple form:
 * "ns::Class::method"); other names as they are. */
static long
demangled(cli_names *nm, const char *s, size_t n)
{
	if (n > 2 && s[0] == '_' && s[1] == 'Z') {
		char *z = strndup(s, n);
		char *dm = z ? heapprof__demangle(z, 0) : NULL;
		free(z);
		if (dm) {
			long id = cli_names_intern(nm, dm, strlen(dm));
			free(dm);
			return id;
		}
	}
	return cli_names_intern(nm, s, n);
}

/* A name from an ELF symbol table: its version suffix dropped
 * ("__libc_start_main@@GLIBC_2.34"), demangled. */
static long
intern_symbol(cli_names *nm, const char *s)
{
	return demangled(nm, s, heapprof__sym_unversioned_len(s));
}

/* A location (or Line) without a function name, as go tool pprof -top
 * names it: from the ELF symbols of its mapping's file when the mapping is
 * not marked symbolized (pprof symbolizes those from the local file), else
 * "[file's base name]" (pprof's NodeInfo with only an object file: every
 * unnamed frame of a library is one row), else "<unknown>". */
static long
unknown_name(cli_names *nm, const pprof_dec *d, const pprof_location *l)
{
	const char *name = NULL;
	long mi = heapprof__pprof_find_mapping(d, l->mapping_id);
	if (mi >= 0 && l->address && !nm->map_symbolized[mi])
		name = heapprof__symcache_lookup(nm->syms, &nm->maps[mi],
		                                 l->address);
	if (name)
		return intern_symbol(nm, name);
	const char *file = mi >= 0 ? nm->maps[mi].file : "";
	if (!file[0])
		return cli_names_intern(nm, "<unknown>", 9);
	const char *b = strrchr(file, '/');
	b = b ? b + 1 : file;
	char *br = malloc(strlen(b) + 3);
	if (!br)
		return -1;
	int n = sprintf(br, "[%s]", b);
	long id = cli_names_intern(nm, br, (size_t)n);
	free(br);
	return id;
}

int
cli_names_build(cli_names *nm, pprof_dec *d)
{
	memset(nm, 0, sizeof(*nm));
	nm->syms = heapprof__symcache_new();
	if (!nm->syms)
		return -ENOMEM;
	int rc = load_mappings(nm, d);
	if (rc)
		return rc;
	size_t n = d->nlocs ? d->nlocs : 1;
	nm->loc_first = malloc(n * sizeof(uint32_t));
	nm->loc_count = malloc(n * sizeof(uint32_t));
	if (!nm->loc_first || !nm->loc_count)
		return -ENOMEM;
	for (size_t i = 0; i < d->nlocs; i++) {
		pprof_location l;
		if ((rc = heapprof__pprof_location(d, i, &l)))
			return rc;
		nm->loc_first[i] = (uint32_t)nm->nloc_ids;
		for (size_t k = 0; k < l.nlines; k++) {
			long fi = heapprof__pprof_find_function(
				d, l.lines[k].function_id);
			pprof_function f;
			size_t nl = 0;
			const char *s = NULL;
			int plain = 0; /* name == system_name: pprof demangles */
			if (fi >= 0 &&
			    heapprof__pprof_function(d, (size_t)fi, &f) == 0) {
				s = heapprof__pprof_string(d, f.name, &nl);
				size_t sl;
				const char *ss = heapprof__pprof_string(
					d, f.system_name, &sl);
				plain = sl == nl && memcmp(s, ss, nl) == 0;
			}
			rc = push_id(nm, !nl     ? unknown_name(nm, d, &l)
			                 : plain ? demangled(nm, s, nl)
			                         : cli_names_intern(nm, s, nl));
			if (rc)
				return rc;
		}
		if (l.nlines == 0 && (rc = push_id(nm, unknown_name(nm, d, &l))))
			return rc;
		nm->loc_count[i] = (uint32_t)nm->nloc_ids - nm->loc_first[i];
	}
	return cli_hide_names(nm, d->nlocs); /* --hide, the wrapper list */
}

void
cli_names_free(cli_names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i].s);
	for (size_t i = 0; i < nm->nmaps; i++) {
		free((char *)nm->maps[i].file);
		free((char *)nm->maps[i].build_id);
	}
	free(nm->maps);
	free(nm->map_symbolized);
	free(nm->v);
	free(nm->slots);
	free(nm->loc_first);
	free(nm->loc_count);
	free(nm->loc_ids);
	heapprof__symcache_free(nm->syms);
	memset(nm, 0, sizeof(*nm));
}

long
cli_pick_sample_index(const pprof_dec *d, const char *cmd, const char *want)
{
	if (d->ntypes == 0) {
		cli_err("%s: the profile has no sample types", cmd);
		return -1;
	}
	if (!want) {
		for (size_t i = 0; d->default_sample_type && i < d->ntypes; i++) {
			size_t a, b;
			const char *x = heapprof__pprof_string(d, d->types[i].type, &a);
			const char *y = heapprof__pprof_string(d, d->default_sample_type, &b);
			if (a == b && memcmp(x, y, a) == 0)
				return (long)i;
		}
		return (long)d->ntypes - 1;
	}
	char *end;
	errno = 0;
	long v = strtol(want, &end, 10);
	if (*want && !*end && !errno) {
		if (v < 0 || (size_t)v >= d->ntypes) {
			cli_err("%s: sample index %s is outside the range [0..%zu]",
			        cmd, want, d->ntypes - 1);
			return -1;
		}
		return v;
	}
	const char *no_inuse = strncmp(want, "inuse_", 6) == 0 ? want + 6 : want;
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, want) ||
		    heapprof__pprof_string_eq(d, d->types[i].type, no_inuse))
			return (long)i;
	cli_err("%s: unknown sample type '%s'; the profile has:", cmd, want);
	for (size_t i = 0; i < d->ntypes; i++) {
		size_t n;
		const char *s = heapprof__pprof_string(d, d->types[i].type, &n);
		fprintf(stderr, "  %zu %.*s\n", i, (int)n, s);
	}
	return -1;
}

/* Whether any sample has a nonzero value of type vi. */
static int
type_has_values(pprof_dec *d, size_t vi)
{
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(d, &it);
	while (heapprof__pprof_sample_next(d, &it, &s) == 0)
		if (s.values[vi] != 0)
			return 1;
	return 0;
}

long
cli_pick_nonempty_index(pprof_dec *d, const char *cmd, const char *path,
                        const char *want)
{
	long vi = cli_pick_sample_index(d, cmd, want);
	if (vi < 0 || type_has_values(d, (size_t)vi))
		return vi;
	size_t tn;
	const char *type = heapprof__pprof_string(d, d->types[vi].type, &tn);
	long alt = -1;
	if (!want) {
		/* inuse_X empty (nothing in use at exit): peak_X (what was
		 * in use at the peak), else alloc_X, else the first type
		 * with values. */
		static const char *const pre[] = {"peak_", "alloc_"};
		for (size_t k = 0; k < 2 && tn > 6 && !memcmp(type, "inuse_", 6);
		     k++) {
			char a[128];
			snprintf(a, sizeof(a), "%s%.*s", pre[k], (int)(tn - 6),
			         type + 6);
			for (size_t i = 0; i < d->ntypes && alt < 0; i++)
				if (heapprof__pprof_string_eq(d, d->types[i].type, a) &&
				    type_has_values(d, i))
					alt = (long)i;
		}
		for (size_t i = 0; i < d->ntypes && alt < 0; i++)
			if (type_has_values(d, i))
				alt = (long)i;
	}
	if (alt >= 0) {
		size_t an;
		const char *at = heapprof__pprof_string(d, d->types[alt].type, &an);
		cli_err("%s: %s: %.*s is 0 in every sample (nothing in use when "
		        "the profile was written); showing %.*s", cmd, path,
		        (int)tn, type, (int)an, at);
		return alt;
	}
	for (size_t i = 0; i < d->ntypes && want; i++)
		if (type_has_values(d, i)) {
			cli_err("%s: %s: %.*s is 0 in every sample; choose another "
			        "type with --sample-index", cmd, path, (int)tn, type);
			return -2;
		}
	cli_err("%s: %s: the profile is empty (every value of every sample "
	        "is 0)", cmd, path);
	return -2;
}

int
cli_note_empty_inuse(pprof_dec *d, const char *cmd, const char *path, long vi)
{
	size_t tn;
	const char *type = heapprof__pprof_string(d, d->types[vi].type, &tn);
	if (tn <= 6 || memcmp(type, "inuse_", 6) || type_has_values(d, (size_t)vi))
		return 0;
	char peak[128];
	snprintf(peak, sizeof(peak), "peak_%.*s", (int)(tn - 6), type + 6);
	int has_peak = 0;
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, peak))
			has_peak = 1;
	if (has_peak)
		cli_err("%s: %s: nothing in use when the profile was written "
		        "(%.*s is 0); --sample-index %s shows what was in use "
		        "at the peak, alloc_%.*s all that was allocated", cmd,
		        path, (int)tn, type, peak, (int)(tn - 6), type + 6);
	else
		cli_err("%s: %s: nothing in use when the profile was written "
		        "(%.*s is 0); --sample-index alloc_%.*s shows all that "
		        "was allocated", cmd, path, (int)tn, type, (int)(tn - 6),
		        type + 6);
	return 1;
}

/* The first bytes of the input, inflated if gzip'd: for the text check. */
static size_t
peek(const uint8_t *p, size_t n, char *out, size_t cap)
{
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
		z_stream zs;
		memset(&zs, 0, sizeof(zs));
		if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
			return 0;
		zs.next_in = (Bytef *)p;
		zs.avail_in = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
		zs.next_out = (Bytef *)out;
		zs.avail_out = (uInt)cap;
		inflate(&zs, Z_SYNC_FLUSH);
		size_t got = cap - zs.avail_out;
		inflateEnd(&zs);
		return got;
	}
	size_t k = n < cap ? n : cap;
	memcpy(out, p, k);
	return k;
}

static int
looks_like_text(const uint8_t *p, size_t n)
{
	char head[64];
	size_t k = peek(p, n, head, sizeof(head));
	if (k < 4)
		return 0;
	for (size_t i = 0; i < k; i++)
		if ((unsigned char)head[i] < 0x09 || (unsigned char)head[i] > 0x7e)
			return 0;
	return 1;
}

void
cli_open_error(const char *cmd, const char *path, const uint8_t *buf,
               size_t len, int rc, const char *fault)
{
	if (rc != HEAPPROF_EEMPTY && looks_like_text(buf, len))
		cli_err("%s: %s: this looks like a legacy text profile; "
		        "%s reads profile.proto only (convert it with "
		        "`go tool pprof -proto %s > out.pb.gz`)",
		        cmd, path, cmd, path);
	else if (fault && fault[0])
		cli_err("%s: %s: %s: %s", cmd, path, heapprof_strerror(rc), fault);
	else
		cli_err("%s: %s: %s", cmd, path, heapprof_strerror(rc));
}

int
cli_read_profile(const char *path, uint8_t **out, size_t *len)
{
	int rc = cli_read_file(path, out, len);
	if (rc || !looks_like_text(*out, *len))
		return rc;
	/* Legacy text (heapprof run --text, gperftools, Go debug=1): read
	 * as pprof reads it, through the converter. */
	cli_strbuf m = {0};
	rc = heapprof_legacy_to_pprof(*out, *len, 0, cli_sb_write, &m, NULL);
	if (rc < 0) {
		free(m.p);
		return 0; /* not legacy either: the decoder says what it is */
	}
	free(*out);
	*out = (uint8_t *)m.p;
	*len = m.n;
	return 0;
}

int
cli_prof_load(cli_prof *p, const char *cmd, const char *path)
{
	memset(p, 0, sizeof(*p));
	heapprof__pprof_dec_init(&p->d, NULL, NULL);
	int rc = cli_read_profile(path, &p->buf, &p->len);
	if (rc) {
		cli_err("%s: %s: %s", cmd, path, heapprof_strerror(rc));
		return 1;
	}
	/* Every sample decoded before anything is said of the values (a
	 * sample with too few values read as an empty profile). */
	if ((rc = heapprof__pprof_check(&p->d, p->buf, p->len))) {
		cli_open_error(cmd, path, p->buf, p->len, rc, p->d.fault);
		return 1;
	}
	if ((rc = cli_names_build(&p->nm, &p->d))) {
		cli_err("%s: %s: %s", cmd, path, heapprof_strerror(rc));
		return 1;
	}
	return 0;
}

void
cli_prof_free(cli_prof *p)
{
	cli_names_free(&p->nm);
	heapprof__pprof_dec_free(&p->d);
	free(p->buf);
	p->buf = NULL;
}
