/*
 * cmd_collapse.c: `heapprof collapse`: a profile as folded stacks
 * ("root;caller;leaf VALUE", one line per distinct stack), the input of
 * flamegraph.pl, inferno, speedscope and Pyroscope's folded format. One
 * sample type (pprof's sample-index rule); names from prof_names.c; ';' in
 * names becomes ':' and line breaks become spaces, so every line parses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "cli.h"
#include "fold.h"
#include "prof_names.h"
#include "hide.h"
#include "strbuf.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof collapse [--sample-index TYPE] [--hide REGEX]\n"
	        "                         [--no-default-hide] [-o OUT] FILE\n"
	        "\n"
	        "Writes the stacks of a profile.proto file (gzip'd or not) as\n"
	        "folded stacks, one line per distinct stack:\n"
	        "    root;caller;...;leaf VALUE\n"
	        "for flamegraph.pl, inferno, speedscope and Pyroscope (folded).\n"
	        "Frames run from the root to the leaf; inlined functions are\n"
	        "frames of their own. Values of identical stacks are summed;\n"
	        "stacks whose sum is 0 are left out; values can be negative in\n"
	        "a diff profile. Names come from the profile, else from the ELF\n"
	        "symbols of the mapped files, else are hex addresses; ';' in a\n"
	        "name is written as ':' and line breaks as spaces. A sample\n"
	        "without locations is the frame '" CLI_FOLD_NO_STACK "'.\n"
	        "Lines are sorted by their frames.\n"
	        "\n"
	        "  --sample-index TYPE  the sample type: a name (inuse_space,\n"
	        "                       alloc_space, inuse_objects, ...) or an\n"
	        "                       index; default: the profile's\n"
	        "                       default_sample_type, else the last type\n"
	        CLI_HIDE_USAGE
	        "  -o OUT               output file (default '-': stdout); never\n"
	        "                       left half-written\n"
	        "  FILE                 the profile ('-': stdin)\n");
}

/* Appends the folded lines of f (value slot 0) to b. */
static void
write_folded(const cli_fold *f, const uint32_t *order, cli_strbuf *b)
{
	for (size_t k = 0; k < f->nstk; k++) {
		size_t n;
		const uint32_t *fr = cli_fold_frames(f, order[k], &n);
		int64_t v = cli_fold_values(f, order[k])[0];
		if (v == 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (i)
				cli_sb_add(b, ";", 1);
			cli_sb_add(b, f->names.v[fr[i]].s, f->names.v[fr[i]].n);
		}
		cli_sb_printf(b, " %lld\n", (long long)v);
	}
}

static int
run(const char *path, const char *out, const char *sample_index)
{
	cli_prof p;
	cli_fold f;
	cli_strbuf b = {0};
	uint32_t *order = NULL;
	long *slot = NULL;
	int st = 1, rc = 0;
	cli_fold_init(&f, 1, 1);
	if (cli_prof_load(&p, "collapse", path))
		goto done;
	long vi = cli_pick_nonempty_index(&p.d, "collapse", path, sample_index);
	if (vi < 0) {
		st = vi == -1 ? 2 : 1;
		goto done;
	}
	slot = malloc(p.d.ntypes * sizeof(*slot));
	if (!slot) {
		rc = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p.d.ntypes; i++)
		slot[i] = (long)i == vi ? 0 : -1;
	if ((rc = cli_fold_profile(&f, &p.d, &p.nm, slot)))
		goto fail;
	if (!(order = cli_fold_sorted(&f))) {
		rc = -ENOMEM;
		goto fail;
	}
	write_folded(&f, order, &b);
	if ((rc = b.err))
		goto fail;
	cli_out o;
	if ((rc = cli_out_open(&o, out))) {
		cli_err("collapse: %s: %s", out, heapprof_strerror(rc));
		goto done;
	}
	cli_out_write(&o, b.p, b.n);
	if ((rc = cli_out_commit(&o))) {
		cli_err("collapse: writing %s: %s", out, heapprof_strerror(rc));
		goto done;
	}
	st = 0;
	goto done;
fail:
	cli_err("collapse: %s: %s", path, heapprof_strerror(rc));
done:
	free(order);
	free(slot);
	cli_sb_free(&b);
	cli_fold_free(&f);
	cli_prof_free(&p);
	return st;
}

int
cli_collapse(int argc, char **argv)
{
	const char *path = NULL, *out = "-", *sample_index = NULL;
	int hopt;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--sample-index") ||
		           !strcmp(a, "--sample_index") ||
		           !strcmp(a, "-sample_index") || !strcmp(a, "-o")) {
			if (i + 1 >= argc) {
				cli_err("collapse: %s needs a value", a);
				return 2;
			}
			if (!strcmp(a, "-o"))
				out = argv[++i];
			else
				sample_index = argv[++i];
		} else if (!strncmp(a, "--sample-index=", 15) ||
		           !strncmp(a, "--sample_index=", 15)) {
			sample_index = a + 15;
		} else if (!strncmp(a, "-sample_index=", 14)) {
			sample_index = a + 14;
		} else if ((hopt = cli_hide_option("collapse", argc, argv, &i))) {
			if (hopt < 0)
				return 2;
		} else if (a[0] == '-' && a[1]) {
			cli_err("collapse: unknown option '%s' (see heapprof "
			        "collapse --help)", a);
			return 2;
		} else if (path) {
			cli_err("collapse: one profile at a time ('%s' and '%s')",
			        path, a);
			return 2;
		} else {
			path = a;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	if ((sample_index && !*sample_index) || !*out) {
		cli_err("collapse: empty %s", !*out ? "output name" : "sample type");
		return 2;
	}
	return run(path, out, sample_index);
}
