/*
 * cmd_flame.c: `heapprof flame`: a profile (and, with --base, the
 * difference from an older one) as one self-contained HTML file with an
 * interactive flame graph. The page is cli/flame_template.html, embedded at
 * build time (build/gen/flame_template.h); this file fills in its data: the
 * folded stacks of every sample type as JSON, with '<', '>' and '&' escaped
 * so the data cannot close its script element.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hide.h"
#include "heapprof.h"
#include "cli.h"
#include "fold.h"
#include "prof_names.h"
#include "strbuf.h"

#include "flame_template.h" /* generated: heapprof_flame_template[] */

#define DATA_MARKER "@@HEAPPROF_DATA@@"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof flame [--base OLD] [--sample-index TYPE]\n"
	        "                      [--hide REGEX] [--no-default-hide]\n"
	        "                      [--title TEXT] -o|--output OUT FILE\n"
	        "\n"
	        "Writes the profile.proto file FILE (gzip'd or not) as one\n"
	        "self-contained HTML page (no network, no external script) with\n"
	        "an interactive flame graph: width = value, a switch between\n"
	        "the sample types (all are in the page), search by regular\n"
	        "expression with the matched share, click to zoom, tooltips.\n"
	        "\n"
	        "  --base OLD           diff mode: values are FILE - OLD per\n"
	        "                       stack (sample types matched by name),\n"
	        "                       red where they grew, blue where they\n"
	        "                       shrank; width = |change| (or new/base)\n"
	        "  --sample-index TYPE  the sample type shown first (a name or an\n"
	        "                       index; default: default_sample_type,\n"
	        "                       else the last type)\n"
	        CLI_HIDE_USAGE
	        "  --title TEXT         the page's title (default: FILE's name)\n"
	        "  -o OUT               the HTML file ('-': stdout); never left\n"
	        "                       half-written\n"
	        "  FILE                 the profile ('-': stdin)\n");
}

/* Appends s[0..n) as a JSON string that is also safe inside <script>. */
static void
json_str(cli_strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	cli_sb_add(b, "\"", 1);
	size_t run = 0; /* start of the bytes not yet copied */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		size_t k = 0, skip = 1;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			k = 2;
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			k = 6;
		} else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
		           ((unsigned char)s[i + 2] & 0xfe) == 0xa8) {
			/* U+2028, U+2029: line terminators in older JS */
			memcpy(esc, "\\u202", 5);
			esc[5] = (unsigned char)s[i + 2] == 0xa8 ? '8' : '9';
			k = 6;
			skip = 3;
		}
		if (!k)
			continue;
		cli_sb_add(b, s + run, i - run);
		cli_sb_add(b, esc, k);
		i += skip - 1;
		run = i + 1;
	}
	cli_sb_add(b, s + run, n - run);
	cli_sb_add(b, "\"", 1);
}

static void
json_pstr(cli_strbuf *b, const pprof_dec *d, uint32_t i)
{
	size_t n;
	const char *s = heapprof__pprof_string(d, i, &n);
	json_str(b, s, n);
}

static const char *
base_name(const char *path)
{
	if (!strcmp(path, "-"))
		return "stdin";
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* The page's data (see the template's script for the reader):
 * {title, baseTitle, types: [{name, unit}], defaultType, names, stacks:
 *  [[name index, root first]], values: [[per type]], baseValues: same} */
static void
write_json(cli_strbuf *b, const cli_fold *f, const pprof_dec *d, long vi,
           const char *title, const char *base_title)
{
	size_t nt = d->ntypes;
	cli_sb_str(b, "{\"title\":");
	json_str(b, title, strlen(title));
	if (base_title) {
		cli_sb_str(b, ",\"baseTitle\":");
		json_str(b, base_title, strlen(base_title));
	}
	cli_sb_str(b, ",\n\"types\":[");
	for (size_t i = 0; i < nt; i++) {
		cli_sb_str(b, i ? ",{\"name\":" : "{\"name\":");
		json_pstr(b, d, d->types[i].type);
		cli_sb_str(b, ",\"unit\":");
		json_pstr(b, d, d->types[i].unit);
		cli_sb_str(b, "}");
	}
	cli_sb_printf(b, "],\n\"defaultType\":%ld,\n\"names\":[", vi);
	for (size_t i = 0; i < f->names.n; i++) {
		if (i)
			cli_sb_add(b, ",\n", 2);
		json_str(b, f->names.v[i].s, f->names.v[i].n);
	}
	/* stacks whose values are all 0 are left out */
	char *keep = malloc(f->nstk ? f->nstk : 1);
	if (!keep) {
		b->err = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < f->nstk; i++) {
		const int64_t *v = cli_fold_values(f, i);
		keep[i] = 0;
		for (size_t k = 0; k < f->nvals; k++)
			if (v[k])
				keep[i] = 1;
	}
	cli_sb_str(b, "],\n\"stacks\":[");
	for (size_t i = 0, first = 1; i < f->nstk; i++) {
		if (!keep[i])
			continue;
		size_t n;
		const uint32_t *fr = cli_fold_frames(f, i, &n);
		cli_sb_str(b, first ? "\n[" : ",\n[");
		first = 0;
		for (size_t k = 0; k < n; k++)
			cli_sb_printf(b, k ? ",%u" : "%u", fr[k]);
		cli_sb_str(b, "]");
	}
	for (int pass = 0; pass < (base_title ? 2 : 1); pass++) {
		cli_sb_str(b, pass ? "],\n\"baseValues\":[" : "],\n\"values\":[");
		for (size_t i = 0, first = 1; i < f->nstk; i++) {
			if (!keep[i])
				continue;
			const int64_t *v = cli_fold_values(f, i) + pass * nt;
			cli_sb_str(b, first ? "\n[" : ",\n[");
			first = 0;
			for (size_t k = 0; k < nt; k++)
				cli_sb_printf(b, k ? ",%lld" : "%lld", (long long)v[k]);
			cli_sb_str(b, "]");
		}
	}
	cli_sb_str(b, "]}");
	free(keep);
}

/* slot[j] for the base profile's types: nt + the new type of the same
 * name, or -1. Returns how many matched. */
static size_t
match_types(const pprof_dec *nd, const pprof_dec *bd, long *slot)
{
	size_t matched = 0;
	for (size_t j = 0; j < bd->ntypes; j++) {
		size_t n;
		const char *s = heapprof__pprof_string(bd, bd->types[j].type, &n);
		slot[j] = -1;
		for (size_t i = 0; i < nd->ntypes; i++) {
			size_t m;
			const char *t = heapprof__pprof_string(nd, nd->types[i].type, &m);
			if (m == n && !memcmp(s, t, n)) {
				slot[j] = (long)(nd->ntypes + i);
				matched++;
				break;
			}
		}
	}
	return matched;
}

typedef struct opts {
	const char *path, *base, *out, *sample_index, *title;
} opts;

static int
run(const opts *o)
{
	cli_prof p, bp;
	cli_fold f;
	cli_strbuf b = {0};
	long *slot = NULL;
	int st = 1, rc = 0;
	const char *what = o->path;
	memset(&bp, 0, sizeof(bp));
	heapprof__pprof_dec_init(&bp.d, NULL, NULL);
	cli_fold_init(&f, 0, 0);
	if (cli_prof_load(&p, "flame", o->path))
		goto done;
	/* With --base, an empty type can still differ from the base's. */
	long vi = o->base ? cli_pick_sample_index(&p.d, "flame", o->sample_index)
	                  : cli_pick_nonempty_index(&p.d, "flame", o->path,
	                                            o->sample_index);
	if (vi < 0) {
		st = vi == -1 ? 2 : 1;
		goto done;
	}
	size_t nt = p.d.ntypes;
	if (o->base) {
		cli_prof_free(&bp);
		if (cli_prof_load(&bp, "flame", o->base))
			goto done;
	}
	size_t ns = nt > bp.d.ntypes ? nt : bp.d.ntypes;
	if (!(slot = malloc((ns ? ns : 1) * sizeof(*slot)))) {
		rc = -ENOMEM;
		goto fail;
	}
	cli_fold_init(&f, o->base ? 2 * nt : nt, 0);
	for (size_t i = 0; i < nt; i++)
		slot[i] = (long)i;
	if ((rc = cli_fold_profile(&f, &p.d, &p.nm, slot)))
		goto fail;
	if (o->base) {
		size_t m = match_types(&p.d, &bp.d, slot);
		if (m == 0) {
			cli_err("flame: %s and %s have no sample type in common",
			        o->base, o->path);
			goto done;
		}
		if (m < nt)
			cli_err("flame: warning: %zu sample type%s of %s not in %s "
			        "(taken as 0 there)", nt - m, nt - m > 1 ? "s" : "",
			        o->path, o->base);
		what = o->base;
		if ((rc = cli_fold_profile(&f, &bp.d, &bp.nm, slot)))
			goto fail;
	}

	const char *tpl = heapprof_flame_template;
	const char *mark = strstr(tpl, DATA_MARKER);
	if (!mark) {
		cli_err("flame: the built-in page has no data marker");
		goto done;
	}
	cli_sb_add(&b, tpl, (size_t)(mark - tpl));
	write_json(&b, &f, &p.d, vi, o->title ? o->title : base_name(o->path),
	           o->base ? base_name(o->base) : NULL);
	cli_sb_str(&b, mark + strlen(DATA_MARKER));
	what = o->path;
	if ((rc = b.err))
		goto fail;
	cli_out out;
	if ((rc = cli_out_open(&out, o->out))) {
		cli_err("flame: %s: %s", o->out, heapprof_strerror(rc));
		goto done;
	}
	cli_out_write(&out, b.p, b.n);
	if ((rc = cli_out_commit(&out))) {
		cli_err("flame: writing %s: %s", o->out, heapprof_strerror(rc));
		goto done;
	}
	st = 0;
	goto done;
fail:
	cli_err("flame: %s: %s", what, heapprof_strerror(rc));
done:
	free(slot);
	cli_sb_free(&b);
	cli_fold_free(&f);
	cli_prof_free(&bp);
	cli_prof_free(&p);
	return st;
}

int
cli_flame(int argc, char **argv)
{
	opts o = {0};
	int hopt;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			dst = &o.out;
		} else if (!strcmp(a, "--base") || !strcmp(a, "-base")) {
			dst = &o.base;
		} else if (!strcmp(a, "--title")) {
			dst = &o.title;
		} else if (!strcmp(a, "--sample-index") ||
		           !strcmp(a, "--sample_index") ||
		           !strcmp(a, "-sample_index")) {
			dst = &o.sample_index;
		} else if (!strncmp(a, "--sample-index=", 15) ||
		           !strncmp(a, "--sample_index=", 15)) {
			o.sample_index = a + 15;
		} else if (!strncmp(a, "--base=", 7)) {
			o.base = a + 7;
		} else if ((hopt = cli_hide_option("flame", argc, argv, &i))) {
			if (hopt < 0)
				return 2;
		} else if (a[0] == '-' && a[1]) {
			cli_err("flame: unknown option '%s' (see heapprof flame "
			        "--help)", a);
			return 2;
		} else if (o.path) {
			cli_err("flame: one profile at a time ('%s' and '%s'); "
			        "use --base OLD for a diff", o.path, a);
			return 2;
		} else {
			o.path = a;
		}
		if (dst) {
			if (i + 1 >= argc || !*argv[i + 1]) {
				cli_err("flame: %s needs a value", a);
				return 2;
			}
			*dst = argv[++i];
		}
	}
	if (!o.path) {
		usage(stderr);
		return 2;
	}
	if (!o.out) {
		cli_err("flame: -o OUT is required ('-' for stdout)");
		return 2;
	}
	if ((o.sample_index && !*o.sample_index) || (o.base && !*o.base)) {
		cli_err("flame: empty option value");
		return 2;
	}
	if (o.base && !strcmp(o.base, "-") && !strcmp(o.path, "-")) {
		cli_err("flame: FILE and --base cannot both be stdin");
		return 2;
	}
	return run(&o);
}
