/*
 * cmd_delta.c: `heapprof delta [--types T1,T2] [--raw] OLD NEW -o OUT`:
 * the delta of two consecutive profiles of one source, through the library's
 * delta computer (heapprof_delta_*). An uncompressed regular file is read
 * where it lies (heapprof_delta_compute_read: the computer holds its
 * dictionary and a window of samples, never the whole profile); a gzip'd
 * one, stdin or a pipe is read into memory (read mode would inflate a
 * gzip'd file again on each of its passes: twice the time on real Go
 * profiles, BENCHMARKS.md "## Delta"). Output goes through cli_out, so a
 * failure never leaves a partial file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"

static void
delta_usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof delta [--types T1,T2,...] [--raw] OLD NEW -o|--output OUT\n"
	        "\n"
	        "Writes NEW minus OLD for the cumulative sample types and NEW's own\n"
	        "values for the others (e.g. inuse_* of heap profiles), as a\n"
	        "continuous profiler's delta: duplicate samples summed, all-zero\n"
	        "samples dropped, unreferenced locations, functions and strings\n"
	        "pruned; duration = time between the two profiles.\n"
	        "\n"
	        "  --types T1,T2  sample types to subtract, by name (default:\n"
	        "                 alloc_objects,alloc_space,contentions,delay)\n"
	        "  --raw          write uncompressed protobuf (default: gzip)\n"
	        "  -o OUT         output file ('-': stdout); written atomically\n"
	        "\n"
	        "OLD and NEW are profile.proto files, gzip'd or not; '-' reads one\n"
	        "of them from stdin. They must have the same sample types (in any\n"
	        "order), one of them at least to subtract.\n");
}

static int
discard(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

/* One input: a regular file by its descriptor (fd >= 0), else its bytes. */
typedef struct delta_in {
	int fd;
	uint8_t *buf;
	size_t len;
} delta_in;

static long
pread_at(void *arg, uint64_t at, void *buf, size_t n)
{
	const delta_in *in = arg;
	for (;;) {
		ssize_t r = pread(in->fd, buf, n, (off_t)at);
		if (r >= 0)
			return (long)r;
		if (errno != EINTR)
			return -errno;
	}
}

static int
in_open(delta_in *in, const char *path)
{
	in->fd = -1;
	in->buf = NULL;
	in->len = 0;
	if (strcmp(path, "-") != 0) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat sb;
		if (fd < 0)
			return -errno;
		uint8_t magic[2] = {0, 0};
		if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    pread(fd, magic, 2, 0) >= 0 &&
		    !(magic[0] == 0x1f && magic[1] == 0x8b)) {
			in->fd = fd;
			return 0;
		}
		close(fd); /* gzip'd, a pipe, a device: read once, into memory */
	}
	return cli_read_file(path, &in->buf, &in->len);
}

static int
in_delta(heapprof_delta *d, delta_in *in, unsigned flags,
         heapprof_write_fn *write, void *arg)
{
	if (in->fd >= 0)
		return heapprof_delta_compute_read(d, pread_at, in, flags,
		                                   write, arg);
	return heapprof_delta_compute(d, in->buf, in->len, flags, write, arg);
}

static void
in_close(delta_in *in)
{
	if (in->fd >= 0)
		close(in->fd);
	free(in->buf);
	in->fd = -1;
	in->buf = NULL;
}

/* Splits "a,b,c" in place into names[]; returns the count or -1. */
static int
split_types(char *s, const char **names, int max)
{
	int n = 0;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		if (n == max)
			return -1;
		if (*tok)
			names[n++] = tok;
	}
	return n;
}

/* An input's error, with what the decoder found wrong if it says; for
 * "nothing to subtract", which names would have been. */
static void
types_err(const heapprof_delta *d, const char *in, const char *types, int rc)
{
	const char *fault = heapprof_delta_fault(d);
	if (rc != HEAPPROF_ENOSUBTRACT && *fault)
		cli_err("delta: %s: %s: %s", in, heapprof_strerror(rc), fault);
	else if (rc != HEAPPROF_ENOSUBTRACT)
		cli_err("delta: %s: %s", in, heapprof_strerror(rc));
	else if (types)
		cli_err("delta: %s: no sample type named %s (--types)", in,
		        types);
	else
		cli_err("delta: %s: no cumulative sample type (alloc_objects, "
		        "alloc_space, contentions, delay) to subtract; name "
		        "the types with --types",
		        in);
}

int
cli_delta(int argc, char **argv)
{
	const char *in[2] = {NULL, NULL}, *out = NULL;
	char *types = NULL;
	int nin = 0, raw = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			delta_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--raw")) {
			raw = 1;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output") ||
		           !strcmp(a, "--types")) {
			if (i + 1 >= argc) {
				cli_err("delta: %s needs an argument", a);
				return 2;
			}
			if (a[1] == '-' && a[2] == 't')
				types = argv[++i];
			else
				out = argv[++i];
		} else if (!strncmp(a, "--types=", 8)) {
			types = (char *)a + 8;
		} else if (a[0] == '-' && a[1] != '\0') {
			cli_err("delta: unknown option '%s'", a);
			delta_usage(stderr);
			return 2;
		} else if (nin < 2) {
			in[nin++] = a;
		} else {
			cli_err("delta: too many inputs (want OLD NEW)");
			return 2;
		}
	}
	if (nin != 2 || !out) {
		cli_err("delta: want OLD NEW -o OUT ('heapprof delta --help')");
		return 2;
	}
	if (!strcmp(in[0], "-") && !strcmp(in[1], "-")) {
		cli_err("delta: only one input can be stdin");
		return 2;
	}
	const char *names[64];
	heapprof_delta_options opt = {0};
	char types_arg[256] = "";
	if (types) {
		/* Kept for messages: split_types cuts it up. */
		snprintf(types_arg, sizeof types_arg, "%s", types);
		int n = split_types(types, names, 64);
		if (n <= 0) {
			cli_err("delta: --types wants 1 to 64 comma-separated names");
			return 2;
		}
		opt.types = names;
		opt.ntypes = (size_t)n;
	}

	/* One input open at a time: OLD is taken and closed before NEW is
	 * opened. */
	delta_in src = {-1, NULL, 0};
	int status = 1, rc;
	heapprof_delta *d;
	rc = heapprof_delta_new(&d, &opt);
	if (rc < 0) {
		cli_err("delta: %s", heapprof_strerror(rc));
		goto done;
	}
	for (int k = 0; k < 2; k++) {
		rc = in_open(&src, in[k]);
		if (rc < 0) {
			cli_err("delta: %s: %s", in[k], heapprof_strerror(rc));
			heapprof_delta_free(d);
			goto done;
		}
		if (k == 1)
			break;
		rc = in_delta(d, &src, HEAPPROF_DELTA_SUBTRACT, discard, NULL);
		in_close(&src);
		if (rc < 0) {
			types_err(d, in[0], types ? types_arg : NULL, rc);
			heapprof_delta_free(d);
			goto done;
		}
	}
	cli_out o;
	rc = cli_out_open(&o, out);
	if (rc < 0) {
		cli_err("delta: %s: %s", out, heapprof_strerror(rc));
		heapprof_delta_free(d);
		goto done;
	}
	rc = in_delta(d, &src,
	              (raw ? 0 : HEAPPROF_DELTA_GZIP) | HEAPPROF_DELTA_SUBTRACT |
	                      HEAPPROF_DELTA_SAME_TYPES,
	              cli_out_write, &o);
	if (rc < 0) {
		cli_out_abort(&o);
		if (rc == HEAPPROF_ETYPES)
			cli_err("delta: %s and %s have different sample types "
			        "(not two profiles of one kind)",
			        in[0], in[1]);
		else if (o.err)
			cli_err("delta: %s: %s", out, heapprof_strerror(rc));
		else
			types_err(d, in[1], types ? types_arg : NULL, rc);
		heapprof_delta_free(d);
		goto done;
	}
	heapprof_delta_free(d);
	rc = cli_out_commit(&o);
	if (rc < 0) {
		cli_err("delta: %s: %s", out, heapprof_strerror(rc));
		goto done;
	}
	status = 0;
done:
	in_close(&src);
	return status;
}
