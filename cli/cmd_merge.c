/*
 * cmd_merge.c: `heapprof merge`: merges profiles of the same type into one
 * (pprof's Merge, through heapprof_merge()), each input optionally scaled;
 * `--base OLD` gives pprof's `-base` delta. Output goes through cli_out_*,
 * so a failed merge never leaves a partial file behind.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof merge [-o|--output OUT] [--raw] [--scale R:FILE]... "
	        "[--base FILE] IN...\n"
	        "\n"
	        "Merges profile.proto files (gzip'd or not) with the same sample\n"
	        "types into one, as `go tool pprof -proto IN...` does: equal\n"
	        "samples summed, all-zero samples dropped.\n"
	        "\n"
	        "  -o OUT         output file ('-': stdout, the default when\n"
	        "                 stdout is not a terminal)\n"
	        "  --raw          write uncompressed protobuf (default: gzip)\n"
	        "  --scale R:FILE an input whose values are multiplied by R\n"
	        "                 (rounded as pprof's Scale does), in argument order\n"
	        "  --base FILE    subtract FILE: the same as --scale -1:FILE as the\n"
	        "                 last input, which is `go tool pprof -proto -base`\n"
	        "  IN             an input file ('-': stdin)\n");
}

/* A hint for inputs that are not protobuf at all: legacy text profiles. */
static const char *
text_hint(const heapprof_merge_input *in)
{
	const unsigned char *p = in->data;
	size_t n = in->len < 64 ? in->len : 64;
	if (n == 0 || (n >= 2 && p[0] == 0x1f && p[1] == 0x8b))
		return "";
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x09 || p[i] > 0x7e)
			return "";
	return " (this looks like a text profile; merge reads profile.proto only)";
}

struct input {
	const char *path;
	double scale;
};

static int
parse_scale(const char *arg, struct input *in)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || !colon[1])
		return -1;
	char buf[64];
	size_t n = (size_t)(colon - arg);
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, arg, n);
	buf[n] = 0;
	char *end;
	errno = 0;
	double r = strtod(buf, &end);
	if (errno || *end || !isfinite(r) || r == 0)
		return -1;
	in->path = colon + 1;
	in->scale = r;
	return 0;
}

int
cli_merge(int argc, char **argv)
{
	const char *out = NULL, *base = NULL;
	int raw = 0, nstdin = 0;
	struct input *ins = calloc((size_t)argc + 1, sizeof(*ins));
	heapprof_merge_input *mi = calloc((size_t)argc + 1, sizeof(*mi));
	size_t n = 0;
	int status = 2;
	if (!ins || !mi) {
		cli_err("merge: out of memory");
		goto done;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			status = 0;
			goto done;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (++i >= argc) {
				cli_err("merge: %s needs a file name", a);
				goto done;
			}
			out = argv[i];
		} else if (!strcmp(a, "--raw")) {
			raw = 1;
		} else if (!strcmp(a, "--scale")) {
			if (++i >= argc || parse_scale(argv[i], &ins[n]) < 0) {
				cli_err("merge: --scale wants R:FILE with R a "
				        "non-zero finite number");
				goto done;
			}
			n++;
		} else if (!strcmp(a, "--base")) {
			if (++i >= argc) {
				cli_err("merge: --base needs a file name");
				goto done;
			}
			if (base) {
				cli_err("merge: only one --base");
				goto done;
			}
			base = argv[i];
		} else if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				ins[n++] = (struct input){argv[i], 1};
		} else if (a[0] == '-' && a[1]) {
			cli_err("merge: unknown option '%s'", a);
			usage(stderr);
			goto done;
		} else {
			ins[n++] = (struct input){a, 1};
		}
	}
	if (base)
		ins[n++] = (struct input){base, -1};
	if (n == 0 || (base && n < 2)) {
		cli_err("merge: no input profiles%s", base ? " besides --base" : "");
		usage(stderr);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		nstdin += !strcmp(ins[i].path, "-");
	if (nstdin > 1) {
		cli_err("merge: '-' (stdin) may be given only once");
		goto done;
	}
	if (!out) {
		if (isatty(1)) {
			cli_err("merge: refusing to write a binary profile to a "
			        "terminal; use -o OUT");
			goto done;
		}
		out = "-";
	}

	status = 1;
	for (size_t i = 0; i < n; i++) {
		uint8_t *buf;
		size_t len;
		int rc = cli_read_file(ins[i].path, &buf, &len);
		if (rc < 0) {
			cli_err("merge: %s: %s", ins[i].path, heapprof_strerror(rc));
			goto done;
		}
		mi[i] = (heapprof_merge_input){buf, len, ins[i].scale};
	}
	cli_out o;
	int rc = cli_out_open(&o, out);
	if (rc < 0) {
		cli_err("merge: %s: %s", out, heapprof_strerror(rc));
		goto done;
	}
	size_t failed = n;
	rc = heapprof_merge_ex(mi, n, raw ? 0 : HEAPPROF_MERGE_GZIP, 0, &failed,
	                       cli_out_write, &o);
	if (rc < 0) {
		cli_out_abort(&o);
		if (failed < n)
			cli_err("merge: %s: %s%s", ins[failed].path,
			        heapprof_strerror(rc), text_hint(&mi[failed]));
		else if (o.err)
			cli_err("merge: %s: %s", out, heapprof_strerror(rc));
		else
			cli_err("merge: %s", heapprof_strerror(rc));
		goto done;
	}
	rc = cli_out_commit(&o);
	if (rc < 0) {
		cli_err("merge: %s: %s", out, heapprof_strerror(rc));
		goto done;
	}
	status = 0;
done:
	if (mi)
		for (size_t i = 0; i < n; i++)
			free((void *)mi[i].data);
	free(mi);
	free(ins);
	return status;
}
