/*
 * config.c: what this process was asked to do, read once by the
 * constructor: the HEAPPROF_* environment, the command line and which
 * processes are profiled, and the memory limit --dump-limit is a fraction
 * of (cgroups, RLIMIT_AS).
 *
 * It runs once, at start-up, on the constructor's stack: its calls into
 * libc are bound lazily, at their first call (Makefile: not in EAGER_OBJ),
 * so a process pays for the lookups of only what it uses here (issue 15).
 *
 * Environment (bad values warn once and fall back to the default):
 *   HEAPPROF_RATE      mean bytes between samples (524288; 1 = all; 0 = off)
 *   HEAPPROF_OUT       output template, %p pid, %n sequence number
 *   HEAPPROF_FORMAT    pprof (default) or text
 *   HEAPPROF_INTERVAL  seconds between periodic dumps (0 = none)
 *   HEAPPROF_SIGNAL    signal that triggers a dump (name or number)
 *   HEAPPROF_UNWIND    dwarf (default), fp, or libunwind (opt-in only)
 *   HEAPPROF_DEPTH     frames per stack, 1..64 (64)
 *   HEAPPROF_EXIT      1 (default): dump at exit; 0: don't
 *   HEAPPROF_WRITE_EMPTY 1: write the exit profile of a process that
 *                      sampled nothing too (default 0: none is written)
 *   HEAPPROF_FSYNC     1: fsync each profile before renaming it into place
 *                      (survives a machine crash; ~5 ms per file on an
 *                      ext4 disk); default 0: atomic against the
 *                      process's crash only
 *   HEAPPROF_PEAK_EXACT 1: time the peak by an exact count of the bytes in
 *                      use (glibc only; ~30 instructions more a malloc +
 *                      free pair); default 0: by halves of the samples
 *                      (peak.c)
 *   HEAPPROF_RUN_STATUS set by `heapprof run`: a file to which a process
 *                      that wrote no exit profile (nothing sampled)
 *                      appends one byte, so the run can count them
 *   HEAPPROF_AGE       1 (default for files): in-use samples split by
 *                      allocation age (age_s labels); 0: not
 *   HEAPPROF_QUIET     1: the library prints nothing on stderr
 *   HEAPPROF_LOG       a file that gets all of the library's lines (appended
 *                      when they come up) instead of stderr
 *   HEAPPROF_LABEL_SETS distinct label sets per process (1..65536, default
 *                      1024; past it: heapprof_labels=overflow, labels.c)
 *   HEAPPROF_OTEL_IDS  1: trace_id and span_id labels from the
 *                      OpenTelemetry thread context too (otel.c)
 *   HEAPPROF_SYMBOLIZE symtab (default): function names from ELF symbol
 *                      tables; dwarf: file:line and inlined frames (libdw,
 *                      loaded at start-up: dumps may run inside malloc or a
 *                      signal handler); none: addresses only
 *   HEAPPROF_ONLY      profile only processes whose program name (the
 *                      executable's or argv[0]'s base name) matches one
 *                      of these comma-separated shell patterns
 *   HEAPPROF_DUMP_GROWTH  a file each time the in-use estimate passes its
 *                      high-water mark by this many bytes (gperftools'
 *                      HEAP_PROFILE_INUSE_INTERVAL)
 *   HEAPPROF_DUMP_LIMIT  one file when it reaches this fraction (0..1] of
 *                      the memory limit (cgroup memory.max or
 *                      memory.limit_in_bytes, RLIMIT_AS)
 *   HEAPPROF_CHILDREN  0: profile only the process `heapprof run` started
 *                      (HEAPPROF_MAINPID; what it execs stays profiled)
 *   HEAPPROFILE        gperftools' prefix: files prefix.PID.NNNN.heap (text)
 * All are read with secure_getenv: a setuid or setgid program ignores them
 * and writes no profile unless it calls heapprof_dump_file() itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collect.h"
#include "parse.h"

/* Warnings about the environment name the variable, so they are built
 * here and printed once per process (the constructor runs once). */
static void
warn_env(const char *var, const char *val, const char *why, const char *dflt)
{
	char buf[400];
	snprintf(buf, sizeof(buf), "%s='%.100s' %s; using %s", var, val, why, dflt);
	heapprof__warn_dup(buf);
}

/* ------------------------------------------------------------------ options */

/* The HEAPPROF* entries of the environment, found in one pass: the
 * constructor reads some 25 variables, and secure_getenv walked the whole
 * environment for each (7 k instructions of every start-up, issue 15).
 * Empty in a setuid or setgid process (AT_SECURE), as secure_getenv. */
#define NENV 48
static const char *hp_env[NENV]; /* constructor only */
static int hp_nenv;

HP_RARE static void
scan_env(void)
{
	extern char **environ;
	if (getauxval(AT_SECURE) || !environ)
		return;
	for (char **e = environ; *e && hp_nenv < NENV; e++)
		if (!strncmp(*e, "HEAPPROF", 8))
			hp_env[hp_nenv++] = *e;
}

HP_RARE static const char *
env_get(const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; i < hp_nenv; i++)
		if (!strncmp(hp_env[i], name, n) && hp_env[i][n] == '=')
			return hp_env[i] + n + 1;
	return NULL;
}
#define secure_getenv env_get /* below: only HEAPPROF* names are read */

/* gperftools' HEAPPROFILE=prefix, when HEAPPROF_OUT is unset: its file
 * names, prefix.PID.NNNN.heap (serve_path's %P: the pid in five digits,
 * %N: 0001, 0002, ...), in legacy text unless HEAPPROF_FORMAT is set. */
HP_RARE static void
read_gperftools_env(hp_config *c)
{
	const char *v = secure_getenv("HEAPPROFILE");
	const char *o = secure_getenv("HEAPPROF_OUT");
	if (!v || !*v || (o && *o))
		return;
	char t[sizeof(c->out)];
	size_t n = 0;
	for (; *v && n + 2 < sizeof(t); v++) {
		if (*v == '%')
			t[n++] = '%'; /* the prefix is a name, not a template */
		t[n++] = *v;
	}
	static const char suffix[] = ".%P.%N.heap";
	if (*v || n + sizeof(suffix) > sizeof(t)) {
		warn_env("HEAPPROFILE", secure_getenv("HEAPPROFILE"), "is too long",
		         "HEAPPROF_OUT or its default");
		return;
	}
	memcpy(t + n, suffix, sizeof(suffix));
	strcpy(c->out, t);
	const char *f = secure_getenv("HEAPPROF_FORMAT");
	if (!f || !*f)
		c->text = 1;
}


/* A HEAPPROF_* variable that is none of ours (HEAPPROF_OUTPUT for
 * HEAPPROF_OUT) is named in one warning, not ignored in silence. */
HP_RARE static void
check_env_names(void)
{
	static const char *const known[] = {
		"RATE", "OUT", "FORMAT", "INTERVAL", "SIGNAL", "UNWIND", "DEPTH",
		"EXIT", "SYMBOLIZE", "MODE", "HTTP", "HTTP_ALLOW_REMOTE", "PUSH",
		"PUSH_INTERVAL", "APP", "ONLY", "CHILDREN", "MAINPID", "LIBRARY",
		"WRITE_EMPTY", "RUN_STATUS", "FSYNC", "DUMP_GROWTH", "DUMP_LIMIT", "AGE",
		"QUIET", "LOG",
		"PEAK_EXACT", "LABEL_SETS", "OTEL_IDS",
	};
	for (int k = 0; k < hp_nenv; k++) {
		if (strncmp(hp_env[k], "HEAPPROF_", 9) != 0)
			continue;
		const char *name = hp_env[k] + 9;
		size_t len = 0; /* a loop, not strcspn: one less libc page */
		while (name[len] && name[len] != '=')
			len++;
		int ok = 0;
		for (size_t i = 0; i < HP_ARRAY_LEN(known) && !ok; i++)
			ok = strlen(known[i]) == len && !strncmp(known[i], name, len);
		if (!ok) {
			char msg[200];
			snprintf(msg, sizeof(msg),
			         "HEAPPROF_%.*s is not a heapprof variable: ignored "
			         "(see libheapprof(3) or the README)",
			         (int)(len < 60 ? len : 60), name);
			heapprof__warn_dup(msg);
		}
	}
}

HP_RARE void
heapprof__read_env(hp_config *c)
{
	scan_env();
	const char *v;
	int64_t n;
	/* First: it silences the warnings about the others too. */
	if ((v = secure_getenv("HEAPPROF_QUIET")) && *v)
		c->quiet = strcmp(v, "0") != 0;
	/* Where all lines go, the warnings about the others among them. A
	 * path that cannot be opened for appending (or is too long) is said
	 * on stderr, and the lines go there as without it. */
	if ((v = secure_getenv("HEAPPROF_LOG")) && *v) {
		/* Relative to the working directory of start-up: the
		 * program may change it before a line comes. */
		size_t at = 0;
		if (v[0] != '/' && getcwd(c->log, sizeof(c->log) - 1) &&
		    c->log[0] == '/') {
			at = strlen(c->log);
			c->log[at++] = '/';
		}
		int fd = -1;
		errno = ENAMETOOLONG;
		if (at + strlen(v) < sizeof(c->log)) {
			strcpy(c->log + at, v);
			fd = open(c->log, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY |
			                      O_NONBLOCK | O_CLOEXEC, 0666);
		}
		if (fd >= 0) {
			close(fd);
		} else {
			c->log[0] = 0;
			char msg[300];
			snprintf(msg, sizeof(msg), "HEAPPROF_LOG='%.100s': %s; warnings "
			         "go to stderr", v, strerror(errno));
			heapprof__warn_dup(msg);
		}
	}
	check_env_names();
	if ((v = secure_getenv("HEAPPROF_RATE")) && *v) {
		if (heapprof__parse_size(v, &n) == 0)
			c->rate = n;
		else
			warn_env("HEAPPROF_RATE", v, "is not a byte count", "524288");
	}
	if ((v = secure_getenv("HEAPPROF_DEPTH")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n >= 1 && n <= HP_MAX_DEPTH)
			c->depth = (int)n;
		else
			warn_env("HEAPPROF_DEPTH", v, "is not in 1..64", "64");
	}
	if ((v = secure_getenv("HEAPPROF_UNWIND")) && *v) {
		if (!strcmp(v, "fp"))
			c->unwind = HP_UNWIND_FP;
		else if (!strcmp(v, "libunwind"))
			c->unwind = HP_UNWIND_LIBUNWIND;
		else if (strcmp(v, "dwarf"))
			warn_env("HEAPPROF_UNWIND", v, "is not dwarf, fp or libunwind",
			         "dwarf");
	}
	if ((v = secure_getenv("HEAPPROF_FORMAT")) && *v) {
		if (!strcmp(v, "text"))
			c->text = 1;
		else if (strcmp(v, "pprof") && strcmp(v, "proto"))
			warn_env("HEAPPROF_FORMAT", v, "is not pprof or text", "pprof");
	}
	if ((v = secure_getenv("HEAPPROF_INTERVAL")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n <= 86400 * 365)
			c->interval = (int)n;
		else
			warn_env("HEAPPROF_INTERVAL", v, "is not a number of seconds",
			         "0 (no periodic dumps)");
	}
	if ((v = secure_getenv("HEAPPROF_SIGNAL")) && *v) {
		int sig;
		if (heapprof__parse_signal(v, &sig) == 0)
			c->signal = sig;
		else
			warn_env("HEAPPROF_SIGNAL", v, "is not a usable signal",
			         "none");
	}
	if ((v = secure_getenv("HEAPPROF_EXIT")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->at_exit = v[0] == '1';
		else
			warn_env("HEAPPROF_EXIT", v, "is not 0 or 1", "1");
	}
	/* A string of the initial environment, which is never freed. */
	c->run_status = secure_getenv("HEAPPROF_RUN_STATUS");
	if ((v = secure_getenv("HEAPPROF_WRITE_EMPTY")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->write_empty = v[0] == '1';
		else
			warn_env("HEAPPROF_WRITE_EMPTY", v, "is not 0 or 1", "0");
	}
	if ((v = secure_getenv("HEAPPROF_PEAK_EXACT")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->peak_exact = v[0] == '1';
		else
			warn_env("HEAPPROF_PEAK_EXACT", v, "is not 0 or 1", "0");
	}
	if ((v = secure_getenv("HEAPPROF_LABEL_SETS")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n >= 1 && n <= 65536)
			c->label_cap = n;
		else
			warn_env("HEAPPROF_LABEL_SETS", v, "is not in 1..65536", "1024");
	}
	if ((v = secure_getenv("HEAPPROF_OTEL_IDS")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->otel_ids = v[0] == '1';
		else
			warn_env("HEAPPROF_OTEL_IDS", v, "is not 0 or 1", "0");
	}
	if ((v = secure_getenv("HEAPPROF_FSYNC")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->fsync = v[0] == '1';
		else
			warn_env("HEAPPROF_FSYNC", v, "is not 0 or 1", "0");
	}
	if ((v = secure_getenv("HEAPPROF_SYMBOLIZE")) && *v) {
		if (!strcmp(v, "none"))
			c->symbolize = 0;
		else if (!strcmp(v, "dwarf"))
			c->symbolize = 2;
		else if (strcmp(v, "symtab"))
			warn_env("HEAPPROF_SYMBOLIZE", v, "is not none, symtab or dwarf",
			         "symtab");
	}
	if ((v = secure_getenv("HEAPPROF_AGE")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->age = v[0] == '1' ? 1 : -1;
		else
			warn_env("HEAPPROF_AGE", v, "is not 0 or 1",
			         "age labels in files");
	}
	if ((v = secure_getenv("HEAPPROF_MODE")) && *v) {
		if (!strcmp(v, "delta"))
			c->mode_delta = 1;
		else if (strcmp(v, "cumulative"))
			warn_env("HEAPPROF_MODE", v, "is not cumulative or delta",
			         "cumulative");
	}
	if ((v = secure_getenv("HEAPPROF_HTTP")) && *v) {
		if (strlen(v) < sizeof(c->http) && strchr(v, ':'))
			strcpy(c->http, v);
		else
			warn_env("HEAPPROF_HTTP", v, "is not HOST:PORT",
			         "no endpoint");
	}
	if ((v = secure_getenv("HEAPPROF_HTTP_ALLOW_REMOTE")) && !strcmp(v, "1"))
		c->http_allow_remote = 1;
	if ((v = secure_getenv("HEAPPROF_PUSH")) && *v) {
		if (strlen(v) < sizeof(c->push) && !strncmp(v, "http://", 7))
			strcpy(c->push, v);
		else
			warn_env("HEAPPROF_PUSH", v, "is not an http:// URL",
			         "no push");
	}
	if ((v = secure_getenv("HEAPPROF_APP")) && *v && strlen(v) < sizeof(c->app))
		strcpy(c->app, v);
	if ((v = secure_getenv("HEAPPROF_DUMP_GROWTH")) && *v) {
		if (heapprof__parse_size(v, &n) == 0)
			c->dump_growth = n;
		else
			warn_env("HEAPPROF_DUMP_GROWTH", v, "is not a byte count",
			         "0 (no growth dumps)");
	}
	if ((v = secure_getenv("HEAPPROF_DUMP_LIMIT")) && *v) {
		char *end;
		double f = strtod(v, &end);
		if (end != v && !*end && f > 0 && f <= 1)
			c->dump_limit = f;
		else
			warn_env("HEAPPROF_DUMP_LIMIT", v, "is not a fraction in "
			         "(0, 1]", "none (no limit dump)");
	}
	read_gperftools_env(c);
	const char *dflt = c->text ? "heapprof.%p.%n.heap" : "heapprof.%p.%n.pb.gz";
	v = secure_getenv("HEAPPROF_OUT");
	if (c->out[0]) {
		/* set from HEAPPROFILE */
	} else if (v && *v && strlen(v) < sizeof(c->out))
		strcpy(c->out, v);
	else {
		if (v && *v)
			warn_env("HEAPPROF_OUT", v, "is too long", dflt);
		strcpy(c->out, dflt);
	}
	/* Several files from one template: numbered, not overwritten. */
	if (heapprof__many_files(c->interval, c->signal,
	                         c->dump_growth > 0 || c->dump_limit > 0))
		heapprof__tmpl_add_seq(c->out, sizeof(c->out));
}

/* ------------------------------------------------------ which processes */

/* The command line, arguments joined by spaces (newlines too), cut to
 * the buffer: named in the profile's comments, so that the files of a
 * wrapper's processes can be told apart. From the argv glibc passes to
 * constructors: the same bytes as /proc/self/cmdline at start, without an
 * open, a read and a close in every process. /proc only when there is no
 * argv. */
HP_RARE void
heapprof__read_cmdline(char *buf, size_t cap, int argc, char **argv)
{
	buf[0] = 0;
	if (argv && argc > 0) {
		heapprof__join_args(buf, cap, argc, argv);
		return;
	}
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0 || buf[i] == '\n')
			buf[i] = ' ';
	buf[n] = 0;
}

static const char *
base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Does a name match one of the comma-separated patterns? */
static int
name_matches(const char *pats, const char *name)
{
	char pat[256];
	while (*pats) {
		size_t len = strcspn(pats, ",");
		if (len && len < sizeof(pat)) {
			memcpy(pat, pats, len);
			pat[len] = 0;
			if (fnmatch(pat, name, 0) == 0)
				return 1;
		}
		pats += len + (pats[len] == ',');
	}
	return 0;
}

/* 0 if this process is not to be profiled: HEAPPROF_CHILDREN=0 in a
 * process other than the one `heapprof run` started, or HEAPPROF_ONLY
 * naming other programs. Such a process keeps the library (its own
 * children may match) but samples nothing and writes nothing. */
HP_RARE int
heapprof__wanted(const char *cmdline)
{
	const char *v = secure_getenv("HEAPPROF_CHILDREN");
	if (v && !strcmp(v, "0")) {
		const char *m = secure_getenv("HEAPPROF_MAINPID");
		long mp = m ? strtol(m, NULL, 10) : 0;
		if (mp > 0 && mp != heapprof__init_pid)
			return 0;
	}
	v = secure_getenv("HEAPPROF_ONLY");
	if (v && *v) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		char a0[256];
		size_t l = strcspn(cmdline, " "); /* argv[0] */
		snprintf(a0, sizeof(a0), "%.*s", (int)l, cmdline);
		if (!(n > 0 && name_matches(v, base_name(exe))) &&
		    !(*a0 && name_matches(v, base_name(a0))))
			return 0;
	}
	return 1;
}

/* ---------------------------------------------------------- the limit */

/* Reads a whole (small) file into buf, NUL-terminated; its length or -1. */
static ssize_t
slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, cap - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == cap - 1)
			break;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The smallest limit in `file` (memory.max, memory.limit_in_bytes) of the
 * group mnt + rel and its ancestors up to the mount, or INT64_MAX. v1's
 * "no limit" is a huge number: anything from 2^62 up is none. */
static int64_t
walk_limit(const char *mnt, const char *rel, const char *file)
{
	char dir[4096], path[4200], v[64];
	snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	size_t base = strlen(mnt);
	int64_t best = INT64_MAX;
	for (;;) {
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (slurp(path, v, sizeof(v)) > 0 && v[0] >= '0' && v[0] <= '9') {
			long long x = strtoll(v, NULL, 10);
			if (x > 0 && x < ((long long)1 << 62) && x < best)
				best = x;
		}
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < base)
			break;
		*slash = 0;
	}
	return best;
}

/* The process's group path of one hierarchy from /proc/self/cgroup: v2
 * ("0::/path") if v1ctl is NULL, else the v1 line listing that controller. */
static int
cgroup_path(const char *cg, const char *v1ctl, char *out, size_t cap)
{
	for (const char *l = cg; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *c1 = memchr(l, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
		if (c2) {
			size_t cl = (size_t)(c2 - c1 - 1), pl = len - (size_t)(c2 + 1 - l);
			int match = 0;
			if (!v1ctl) {
				match = cl == 0 && c1 - l == 1 && l[0] == '0';
			} else {
				for (const char *t = c1 + 1; t < c2;) {
					const char *te = memchr(t, ',', (size_t)(c2 - t));
					size_t tl = te ? (size_t)(te - t) : (size_t)(c2 - t);
					if (tl == strlen(v1ctl) && !memcmp(t, v1ctl, tl))
						match = 1;
					t += tl + 1;
				}
			}
			if (match && pl < cap) {
				memcpy(out, c2 + 1, pl);
				out[pl] = 0;
				return 0;
			}
		}
		l += len + (e ? 1 : 0);
	}
	return -1;
}

/* The smallest memory limit of this process's cgroups (v2 memory.max, v1
 * memory.limit_in_bytes), its group and ancestors, found through
 * /proc/self/mountinfo (a mount may show a subtree: its root is cut from
 * the group's path); INT64_MAX if none. Constructor time only. */
static int64_t
cgroup_limit(void)
{
	static char cg[8192] HP_BIG_BSS, mi[65536] HP_BIG_BSS;
	char v2[1024], v1[1024];
	if (slurp("/proc/self/cgroup", cg, sizeof(cg)) <= 0 ||
	    slurp("/proc/self/mountinfo", mi, sizeof(mi)) <= 0)
		return INT64_MAX;
	int has2 = cgroup_path(cg, NULL, v2, sizeof(v2)) == 0;
	int has1 = cgroup_path(cg, "memory", v1, sizeof(v1)) == 0;
	int64_t best = INT64_MAX;
	for (char *l = mi, *e; *l; l = e ? e + 1 : l + strlen(l)) {
		e = strchr(l, '\n');
		if (e)
			*e = 0;
		char *f[6] = {0};
		char *sv = NULL, *tok = strtok_r(l, " ", &sv);
		for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &sv))
			f[i] = tok;
		if (!f[4])
			continue;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &sv); /* optional fields */
		char *fstype = tok ? strtok_r(NULL, " ", &sv) : NULL;
		if (fstype)
			strtok_r(NULL, " ", &sv); /* source */
		char *opts = fstype ? strtok_r(NULL, " ", &sv) : NULL;
		if (!fstype || !opts)
			continue;
		const char *root = f[3], *mnt = f[4], *path = NULL, *file = NULL;
		if (!strcmp(fstype, "cgroup2") && has2) {
			path = v2;
			file = "memory.max";
		} else if (!strcmp(fstype, "cgroup") && has1 &&
		           (strstr(opts, ",memory") || !strncmp(opts, "memory", 6))) {
			path = v1;
			file = "memory.limit_in_bytes";
		}
		if (!path)
			continue;
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		if (rl && (strncmp(path, root, rl) || (path[rl] && path[rl] != '/')))
			continue; /* the group is outside this mount */
		int64_t x = walk_limit(mnt, path[rl] ? path + rl : "/", file);
		if (x < best)
			best = x;
	}
	return best;
}

int64_t
heapprof__mem_limit(void)
{
	int64_t best = cgroup_limit();
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (int64_t)rl.rlim_cur > 0 && (int64_t)rl.rlim_cur < best)
		best = (int64_t)rl.rlim_cur;
	return best;
}
