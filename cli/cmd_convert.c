/*
 * cmd_convert.c: `heapprof convert`: legacy heap text (Go debug=1,
 * gperftools, heap_v2, jemalloc dumps) -> profile.proto, and pprof heap
 * profiles -> legacy text. The input format is detected (gzip'd or not),
 * the way pprof does: profile.proto first, then legacy text; a first line
 * `heap_v2/N` is a jemalloc dump. Output goes through cli_out_*, so a
 * failed conversion never leaves a partial file behind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"
#include "gz.h"
#include "legacy_parse.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof convert IN [-o|--output OUT] [--to pprof|text] [--raw]\n"
	        "\n"
	        "Converts a heap profile between the legacy text formats and\n"
	        "profile.proto. IN may be gzip'd; '-' reads stdin.\n"
	        "\n"
	        "  IN            legacy heap text (Go debug=1 `heap/N`, gperftools\n"
	        "                `heapprofile`, `heap_v2/N`, `growthz`), a jemalloc\n"
	        "                `heap_v2/N` dump, or a pprof heap profile\n"
	        "  -o OUT        output file ('-': stdout, the default unless the\n"
	        "                output is binary and stdout is a terminal)\n"
	        "  --to pprof    write profile.proto (default for text input):\n"
	        "                the numbers `go tool pprof` reads from the text\n"
	        "                (for jemalloc, those `jeprof` computes)\n"
	        "  --to text     write legacy text (default for profile.proto\n"
	        "                input): `@ heapprofile`, values as in the\n"
	        "                profile, which pprof, google-pprof and jeprof\n"
	        "                read back unchanged\n"
	        "  --raw         uncompressed protobuf (default: gzip)\n");
}

static int
mem_write(void *arg, const void *p, size_t n)
{
	struct {
		uint8_t *p;
		size_t n, cap;
	} *b = arg;
	if (b->cap - b->n < n) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap - b->n < n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

static int
out_sink(void *ctx, const uint8_t *p, size_t n)
{
	return cli_out_write(ctx, p, n);
}

/* profile.proto input written again (gzip'd or not). */
static int
copy_proto(const uint8_t *p, size_t n, int raw, cli_out *o)
{
	if (raw)
		return cli_out_write(o, p, n);
	gz_writer *g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc = heapprof__gz_writer_init(g, 1, out_sink, o,
	                                  NULL, NULL, NULL);
	if (!rc) {
		rc = heapprof__gz_write(g, p, n);
		if (!rc)
			rc = heapprof__gz_writer_finish(g);
		else
			heapprof__gz_writer_abort(g);
	}
	free(g);
	return rc;
}

static int
convert(const char *in, const uint8_t *p, size_t n, const char *to, int raw,
        cli_out *o)
{
	int fmt = heapprof__legacy_detect(p, n);
	int proto_rc = HEAPPROF_EEMPTY;
	if (fmt == HP_FMT_UNKNOWN) {
		cli_err("convert: %s: %s", in, heapprof_strerror(HEAPPROF_EEMPTY));
		return HEAPPROF_EEMPTY;
	}
	if (fmt != HP_FMT_JEMALLOC) {
		proto_rc = heapprof_pprof_check(p, n, 0);
		if (proto_rc == 0)
			fmt = HP_FMT_PPROF;
		else if (fmt != HP_FMT_LEGACY) {
			cli_err("convert: %s: neither profile.proto (%s) nor a legacy "
			        "heap profile", in, heapprof_strerror(proto_rc));
			return proto_rc;
		}
	}
	int text = to ? !strcmp(to, "text") : fmt == HP_FMT_PPROF;
	int rc;
	if (fmt == HP_FMT_PPROF) {
		rc = text ? heapprof_pprof_to_legacy(p, n, cli_out_write, o)
		          : copy_proto(p, n, raw, o);
		if (rc < 0)
			cli_err("convert: %s: %s", in, heapprof_strerror(rc));
		return rc;
	}
	struct {
		uint8_t *p;
		size_t n, cap;
	} mem = {NULL, 0, 0};
	size_t line = 0;
	rc = heapprof_legacy_to_pprof(p, n, text || raw ? 0 : HEAPPROF_CONVERT_GZIP,
	                              text ? mem_write : cli_out_write,
	                              text ? (void *)&mem : (void *)o, &line);
	if (rc < 0) {
		if (line)
			cli_err("convert: %s:%zu: %s", in, line, heapprof_strerror(rc));
		else
			cli_err("convert: %s: %s", in, heapprof_strerror(rc));
	} else if (text) {
		rc = heapprof_pprof_to_legacy(mem.p, mem.n, cli_out_write, o);
		if (rc < 0)
			cli_err("convert: %s: %s", in, heapprof_strerror(rc));
	}
	free(mem.p);
	return rc;
}

int
cli_convert(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *to = NULL;
	int raw = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (++i >= argc) {
				cli_err("convert: %s needs a file name", a);
				return 2;
			}
			out = argv[i];
		} else if (!strcmp(a, "--to") || !strncmp(a, "--to=", 5)) {
			const char *v = a[4] == '=' ? a + 5 : (++i < argc ? argv[i] : NULL);
			if (!v || (strcmp(v, "pprof") && strcmp(v, "text"))) {
				cli_err("convert: --to wants 'pprof' or 'text'");
				return 2;
			}
			to = v;
		} else if (!strcmp(a, "--raw")) {
			raw = 1;
		} else if (a[0] == '-' && a[1]) {
			cli_err("convert: unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else if (in) {
			cli_err("convert: one input only ('%s' and '%s')", in, a);
			return 2;
		} else {
			in = a;
		}
	}
	if (!in) {
		cli_err("convert: no input profile");
		usage(stderr);
		return 2;
	}
	if (raw && to && !strcmp(to, "text")) {
		cli_err("convert: --raw applies to --to pprof only");
		return 2;
	}
	uint8_t *buf, *plain = NULL;
	size_t len;
	int rc = cli_read_file(in, &buf, &len);
	if (rc < 0) {
		cli_err("convert: %s: %s", in, heapprof_strerror(rc));
		return 1;
	}
	const uint8_t *p = buf;
	if (heapprof__gz_is_gzip(buf, len)) {
		size_t n;
		rc = heapprof__gunzip(buf, len, (size_t)1 << 30, NULL, NULL, &plain,
		                      &n);
		if (rc < 0) {
			cli_err("convert: %s: %s", in, heapprof_strerror(rc));
			free(buf);
			return 1;
		}
		p = plain;
		len = n;
	}
	if (!out) {
		int binary = to ? !strcmp(to, "pprof")
		                : heapprof__legacy_detect(p, len) != HP_FMT_PPROF;
		if (binary && !raw && isatty(1)) {
			cli_err("convert: refusing to write a binary profile to a "
			        "terminal; use -o OUT");
			free(plain);
			free(buf);
			return 2;
		}
		out = "-";
	}
	cli_out o;
	rc = cli_out_open(&o, out);
	if (rc < 0) {
		cli_err("convert: %s: %s", out, heapprof_strerror(rc));
	} else {
		rc = convert(in, p, len, to, raw, &o);
		if (rc < 0) {
			cli_out_abort(&o);
		} else if ((rc = cli_out_commit(&o)) < 0) {
			cli_err("convert: %s: %s", out, heapprof_strerror(rc));
		}
	}
	free(plain);
	free(buf);
	return rc < 0 ? 1 : 0;
}
