/*
 * cmd_symbolize.c: `heapprof symbolize IN -o OUT`: adds function names,
 * files, lines and inlined frames (DWARF, through libdw) to the locations
 * of every mapping not yet symbolized, finding each mapping's file the way
 * pprof finds binaries (--binary-path like PPROF_BINARY_PATH, then the
 * recorded path) and refusing a file whose build id differs from the
 * mapping's. The rest of the profile is copied unchanged (src/ops/symbolize.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heapprof.h"
#include "cli.h"
#include "dwarf_sym.h"
#include "elffile.h"
#include "gz.h"
#include "pprof_dec.h"
#include "../src/ops/symbolize.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof symbolize [--binary-path DIR]... [--debug-dir DIR]...\n"
	        "                          [--force] [--demangle MODE] [--raw]\n"
	        "                          IN [-o|--output OUT]\n"
	        "\n"
	        "Adds function names, source files, line numbers and inlined\n"
	        "frames (from DWARF, with elfutils' libdw) to the locations of a\n"
	        "pprof profile (gzip'd or not) and writes the profile back out,\n"
	        "everything else unchanged. Mappings that already have files or\n"
	        "lines are left alone unless --force (names alone, as heapprof\n"
	        "run writes them, are completed). A mapping's file is looked for as\n"
	        "pprof does: DIR/<build id>/<basename>, DIR/<basename>,\n"
	        "DIR/<full path> for each --binary-path DIR (then each directory\n"
	        "of $PPROF_BINARY_PATH), then the recorded path. A file whose\n"
	        "build id differs from the mapping's is never used: the mapping\n"
	        "is left unsymbolized with a warning. Separate debug info is\n"
	        "found by build id (ROOT/.build-id/xx/yyyy.debug) and by\n"
	        ".gnu_debuglink, in each debug root (--debug-dir, default\n"
	        "/usr/lib/debug, plus every --binary-path DIR) and next to the\n"
	        "file. Offline: debuginfod is never asked.\n"
	        "\n"
	        "  -o OUT             output file ('-': stdout, the default when\n"
	        "                     stdout is not a terminal)\n"
	        "  --raw              write uncompressed protobuf (default: gzip)\n"
	        "  --binary-path DIR  where to look for binaries (repeatable;\n"
	        "                     DIR may be a ':'-separated list)\n"
	        "  --debug-dir DIR    a debug root (repeatable; replaces the\n"
	        "                     default /usr/lib/debug)\n"
	        "  --force            re-symbolize mappings that have functions\n"
	        "  --demangle MODE    C++ names: simple (the default, as pprof\n"
	        "                     shows them: ns::Class::method), full, none\n"
	        "  IN                 the input profile ('-': stdin)\n");
}

typedef struct strlist {
	const char **v;
	size_t n, cap;
} strlist;

static int
push(strlist *l, const char *s)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 8;
		const char **nv = realloc(l->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = nc;
	}
	l->v[l->n++] = s;
	return 0;
}

/* Splits a ':'-separated list (modified in place) onto l. */
static int
push_list(strlist *l, char *s)
{
	for (char *tok = strtok(s, ":"); tok; tok = strtok(NULL, ":"))
		if (*tok)
			HP_TRY(push(l, tok));
	return 0;
}

/* Names pprof never symbolizes. */
static int
pseudo_file(const char *f)
{
	return !f || !*f || f[0] == '[' || !strncmp(f, "linux-vdso", 10) ||
	       !strncmp(f, "/dev/dri/", 9) || !strcmp(f, "//anon") ||
	       !strncmp(f, "/memfd:", 7);
}

static int
is_file(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

typedef struct ctx {
	heapprof_dwsym *dw;
	char **paths; /* per mapping: the file chosen, or NULL */
} ctx;

static size_t
frames_cb(void *arg, size_t mi, const heapprof_mapping *m, uint64_t addr,
          heapprof_frame *out, size_t cap)
{
	ctx *c = arg;
	if (!c->paths[mi])
		return 0;
	return heapprof__dwsym_frames(c->dw, m, c->paths[mi], addr, out, cap);
}

/* Finds the file for mapping (file, bid); returns a malloc'd path or NULL
 * after printing why. */
static char *
find_file(heapprof_dwsym *dw, const strlist *dirs, const char *file,
          const char *bid)
{
	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	size_t dmax = 0;
	for (size_t i = 0; i < dirs->n; i++)
		if (strlen(dirs->v[i]) > dmax)
			dmax = strlen(dirs->v[i]);
	size_t cap = dmax + strlen(file) + strlen(bid) + strlen(base) + 8;
	char *cand = malloc(cap), *mismatch = NULL;
	if (!cand)
		return NULL;
	for (size_t i = 0; i <= dirs->n * 3; i++) {
		const char *d = i < dirs->n * 3 ? dirs->v[i / 3] : NULL;
		if (!d)
			snprintf(cand, cap, "%s", file);
		else if (i % 3 == 0 && *bid)
			snprintf(cand, cap, "%s/%s/%s", d, bid, base);
		else if (i % 3 == 1)
			snprintf(cand, cap, "%s/%s", d, base);
		else if (i % 3 == 2 && file[0] == '/')
			snprintf(cand, cap, "%s%s", d, file);
		else
			continue;
		if (!is_file(cand))
			continue;
		int st = heapprof__dwsym_file_status(dw, cand, bid, NULL);
		if (st == HEAPPROF_DWSYM_OK)
			return cand;
		if (st == HEAPPROF_DWSYM_BUILDID && !mismatch)
			mismatch = strdup(cand);
	}
	if (mismatch) {
		char have[2 * HEAPPROF_BUILD_ID_MAX + 1] = "";
		if (heapprof__elf_build_id(mismatch, have, sizeof(have)) <= 0)
			snprintf(have, sizeof(have), "(none)");
		cli_err("symbolize: warning: %s: build id %s does not match the "
		        "mapping's %s; mapping left unsymbolized",
		        mismatch, have, bid);
	} else {
		cli_err("symbolize: warning: %s: not found%s; mapping left "
		        "unsymbolized", file,
		        dirs->n ? " (nor under the binary path)" : "");
	}
	free(mismatch);
	free(cand);
	return NULL;
}

static int
write_adapter(void *c, const uint8_t *p, size_t n)
{
	return cli_out_write(c, p, n);
}

struct opts {
	const char *in, *out;
	int raw, force, demangle;
	strlist bindirs, debugdirs;
};

/* 0: run; -1: help printed (exit 0); 2: usage error. */
static int
parse(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		int more = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return -1;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (!more) {
				cli_err("symbolize: %s needs a file name", a);
				return 2;
			}
			o->out = argv[++i];
		} else if (!strcmp(a, "--binary-path") || !strcmp(a, "--debug-dir")) {
			if (!more) {
				cli_err("symbolize: %s needs a directory", a);
				return 2;
			}
			strlist *l = a[2] == 'b' ? &o->bindirs : &o->debugdirs;
			if (push_list(l, argv[++i]) < 0) {
				cli_err("symbolize: out of memory");
				return 2;
			}
		} else if (!strcmp(a, "--raw")) {
			o->raw = 1;
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
		} else if (!strcmp(a, "--demangle")) {
			const char *m = more ? argv[++i] : "";
			if (!strcmp(m, "simple"))
				o->demangle = HEAPPROF_DEMANGLE_SIMPLE;
			else if (!strcmp(m, "full"))
				o->demangle = HEAPPROF_DEMANGLE_FULL;
			else if (!strcmp(m, "none"))
				o->demangle = HEAPPROF_DEMANGLE_NONE;
			else {
				cli_err("symbolize: --demangle wants simple, full "
				        "or none");
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			cli_err("symbolize: unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else if (o->in) {
			cli_err("symbolize: one input profile only ('%s' and '%s')",
			        o->in, a);
			return 2;
		} else {
			o->in = a;
		}
	}
	if (!o->in) {
		cli_err("symbolize: no input profile");
		usage(stderr);
		return 2;
	}
	return 0;
}

static int
run(struct opts *o, pprof_dec *d)
{
	uint8_t *buf = NULL;
	size_t len;
	int rc = cli_read_file(o->in, &buf, &len);
	if (rc < 0) {
		cli_err("symbolize: %s: %s", o->in, heapprof_strerror(rc));
		return 1;
	}
	/* Every sample decoded first (its values, its locations), as every
	 * other subcommand does: a profile go tool pprof would reject is
	 * refused, not passed on. */
	rc = heapprof__pprof_check(d, buf, len);
	if (rc < 0) {
		if (d->fault[0])
			cli_err("symbolize: %s: %s: %s", o->in,
			        heapprof_strerror(rc), d->fault);
		else
			cli_err("symbolize: %s: %s", o->in, heapprof_strerror(rc));
		free(buf);
		return 1;
	}
	/* Debug roots: --debug-dir (default /usr/lib/debug), then the binary
	 * directories, so DIR/.build-id/xx/yyyy.debug is found there too. */
	strlist roots = {0};
	int status = 1;
	bool *which = calloc(d->nmaps + 1, sizeof(bool));
	size_t *nlocs = calloc(d->nmaps + 1, sizeof(size_t));
	heapprof_sym_map_stats *st = calloc(d->nmaps + 1, sizeof(*st));
	ctx c = {0};
	c.paths = calloc(d->nmaps + 1, sizeof(char *));
	if (!which || !nlocs || !st || !c.paths)
		goto oom;
	if (o->debugdirs.n == 0 && push(&roots, "/usr/lib/debug") < 0)
		goto oom;
	for (size_t i = 0; i < o->debugdirs.n; i++)
		if (push(&roots, o->debugdirs.v[i]) < 0)
			goto oom;
	for (size_t i = 0; i < o->bindirs.n; i++)
		if (push(&roots, o->bindirs.v[i]) < 0)
			goto oom;
	heapprof_dwsym_options dopt = {0};
	dopt.debug_dirs = roots.v;
	dopt.ndebug_dirs = roots.n;
	dopt.demangle = o->demangle;
	c.dw = heapprof__dwsym_new(&dopt);
	if (!c.dw)
		goto oom;

	for (size_t i = 0; i < d->nlocs; i++) {
		uint64_t mid = 0;
		pprof_location l;
		if (heapprof__pprof_location(d, i, &l) == 0)
			mid = l.mapping_id;
		long mi = heapprof__pprof_find_mapping(d, mid);
		if (mi >= 0)
			nlocs[mi]++;
	}
	for (size_t i = 0; i < d->nmaps; i++) {
		pprof_mapping m;
		/* Names alone (heapprof's default symtab mode writes them,
		 * with has_functions) are completed: DWARF adds files, lines
		 * and inlined frames. A mapping with files or lines already
		 * is left alone. */
		if (heapprof__pprof_mapping(d, i, &m) < 0 || !nlocs[i] ||
		    ((m.has_filenames || m.has_line_numbers) && !o->force))
			continue;
		size_t fl, bl;
		const char *fp = heapprof__pprof_string(d, m.filename, &fl);
		const char *bp = heapprof__pprof_string(d, m.build_id, &bl);
		char *file = strndup(fp, fl), *bid = strndup(bp, bl);
		if (!file || !bid) {
			free(file);
			free(bid);
			goto oom;
		}
		if (!pseudo_file(file)) {
			c.paths[i] = find_file(c.dw, &o->bindirs, file, bid);
			which[i] = c.paths[i] != NULL;
		}
		free(file);
		free(bid);
	}

	if (!o->out) {
		if (isatty(1)) {
			cli_err("symbolize: refusing to write a binary profile to "
			        "a terminal; use -o OUT");
			status = 2;
			goto done;
		}
		o->out = "-";
	}
	cli_out out;
	rc = cli_out_open(&out, o->out);
	if (rc < 0) {
		cli_err("symbolize: %s: %s", o->out, heapprof_strerror(rc));
		goto done;
	}
	gz_writer *g = NULL;
	if (!o->raw) {
		g = malloc(sizeof(*g));
		rc = g ? heapprof__gz_writer_init(g, 1, write_adapter, &out, NULL,
		                                  NULL, NULL)
		       : -ENOMEM;
	}
	if (rc == 0)
		rc = heapprof__symbolize_profile(
			d, which, frames_cb, &c, g ? heapprof__gz_write : write_adapter,
			g ? (void *)g : (void *)&out, st);
	if (g && rc == 0)
		rc = heapprof__gz_writer_finish(g);
	else if (g)
		heapprof__gz_writer_abort(g);
	free(g);
	if (rc < 0) {
		cli_out_abort(&out);
		cli_err("symbolize: %s", heapprof_strerror(rc));
		goto done;
	}
	rc = cli_out_commit(&out);
	if (rc < 0) {
		cli_err("symbolize: %s: %s", o->out, heapprof_strerror(rc));
		goto done;
	}
	for (size_t i = 0; i < d->nmaps; i++)
		if (which[i] && st[i].named < st[i].locations)
			cli_err("symbolize: warning: %s: %zu of %zu locations have "
			        "no symbol", c.paths[i],
			        st[i].locations - st[i].named, st[i].locations);
	status = 0;
	goto done;
oom:
	cli_err("symbolize: out of memory");
done:
	if (c.paths)
		for (size_t i = 0; i < d->nmaps; i++)
			free(c.paths[i]);
	free(c.paths);
	heapprof__dwsym_free(c.dw);
	free(roots.v);
	free(which);
	free(nlocs);
	free(st);
	free(buf);
	return status;
}

int
cli_symbolize(int argc, char **argv)
{
	struct opts o;
	memset(&o, 0, sizeof(o));
	int rc = parse(argc, argv, &o);
	if (rc == 0) {
		const char *env = getenv("PPROF_BINARY_PATH");
		char *envc = env ? strdup(env) : NULL;
		if (envc)
			push_list(&o.bindirs, envc);
		/* Offline only: keep libdw from asking debuginfod (it reads
		 * the variable when it is loaded, just below). */
		unsetenv("DEBUGINFOD_URLS");
		const char *why = heapprof__dwsym_unavailable();
		if (why) {
			cli_err("symbolize: %s", why);
			rc = 1;
		} else {
			pprof_dec d;
			heapprof__pprof_dec_init(&d, NULL, NULL);
			rc = run(&o, &d);
			heapprof__pprof_dec_free(&d);
		}
		free(envc);
	}
	free(o.bindirs.v);
	free(o.debugdirs.v);
	return rc < 0 ? 0 : rc;
}
