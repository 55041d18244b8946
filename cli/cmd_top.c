/*
 * cmd_top.c: `heapprof top`: the top functions of a profile by flat value,
 * printed as `go tool pprof -top` prints them (same header lines, columns,
 * units, percentages, node dropping below 0.5% of the total and ordering).
 * Reads profile.proto (gzip'd or not) or legacy text through the shared
 * decoder; frame names from prof_names.c (as pprof names them). Samples
 * with the same locations and labels are merged before anything is summed,
 * as pprof's profile.Merge does; sums wrap as Go's int64 arithmetic.
 */
#include <ctype.h>
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
#include "top_model.h"

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
	if ((rc = top_build_nodes(t)) || (rc = top_merge_samples(t, (size_t)vi)) ||
	    (rc = top_accumulate(t, &total))) {
		cli_err("top: %s: %s", path, heapprof_strerror(rc));
		return 1;
	}
	if (t->min_age >= 0 && (rc = check_age(t, path, (size_t)vi)) != 0)
		return rc;
	if (t->tag_numeric) {
		cli_err("top: --tagfocus %s: a number range, which pprof compares "
		        "with %zu numeric labels in their units: not supported "
		        "(go tool pprof -tagfocus does it)", t->tag_text,
		        t->tag_numeric);
		return 2;
	}

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
	qsort(g, kept, sizeof(*g), top_cmp_nodes);
	if (max_nodes > 0 && (size_t)max_nodes < kept)
		kept = (size_t)max_nodes;
	for (size_t i = 0; i < kept; i++)
		g[i]->kept = 1;
	if ((rc = top_mark_inline(t, abs64((int64_t)((double)flat_all * 0.001))))) {
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

/* The end of pprof's number at v (tagFilterRangeRx: [+-]?digits, then
 * letters for a unit), or NULL if none starts there. */
static const char *
range_num(const char *v)
{
	const char *p = v + (*v == '+' || *v == '-');
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	while (isalpha((unsigned char)*p))
		p++;
	return p;
}

/* Whether pprof's parseTagFilterRange reads v as a number range: its
 * first two numbers (leftmost, not overlapping) are v itself, "N:", ":N"
 * or "N:M". Then pprof filters numeric labels, not string ones. */
static int
tag_is_range(const char *v)
{
	const char *b[2], *e[2];
	int n = 0;
	for (const char *p = v; *p && n < 2;) {
		const char *q = range_num(p);
		if (!q) {
			p++;
			continue;
		}
		b[n] = p;
		e[n++] = q;
		p = q;
	}
	size_t len = strlen(v);
	if (n == 1)
		return (b[0] == v && (*e[0] == 0 || (e[0][0] == ':' && !e[0][1]))) ||
		       (b[0] == v + 1 && v[0] == ':' && *e[0] == 0);
	return n == 2 && b[0] == v && e[0][0] == ':' && b[1] == e[0] + 1 &&
	       e[1] == v + len;
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
	if (tag_is_range(eq + 1)) {
		/* pprof's words, on stderr as pprof says them */
		fprintf(stderr, "tagfocus:Interpreted '%s' as range, not regexp\n",
		        eq + 1);
		t->tag_range = 1;
		t->tag_text = spec;
		return 0;
	}
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
