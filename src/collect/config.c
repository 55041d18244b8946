/*
 * config.c: what this process was asked to do, read once by the
 * constructor: the HEAPPROF_* environment, the command line and which
 * processes are profiled (the memory limit --dump-limit is a fraction of:
 * limits.c).
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
 *                      the memory limit (limits.c: cgroup memory.max,
 *                      memory.high or memory.limit_in_bytes, RLIMIT_AS)
 *   HEAPPROF_DUMP_USAGE  one file when what the limit is measured against
 *                      (the group's usage, the address space) reaches this
 *                      fraction of it, read every 100 ms (watch.c)
 *   HEAPPROF_PEAK_FILE a file rewritten each time the in-use estimate
 *                      passes the last one written by HEAPPROF_PEAK_STEP
 *                      (a fraction, 0.1), none within 4 times the last
 *                      write's time nor HEAPPROF_PEAK_GAP ms (0) of it: on
 *                      disk before an OOM kill (rolling.c)
 *   HEAPPROF_DUMP_PRESSURE a file when memory stalls (PSI) exceed this
 *                      many ms in a second, at most one per 10 s (watch.c)
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


/* A fraction in (0, max]: 0, or -1 (not one). */
HP_RARE static int
parse_frac(const char *v, double max, double *out)
{
	char *end;
	double f = strtod(v, &end);
	if (end == v || *end || !(f > 0 && f <= max))
		return -1;
	*out = f;
	return 0;
}

/* --peak-file, --peak-step, HEAPPROF_PEAK_GAP, --dump-usage,
 * --dump-pressure. */
HP_RARE static void
read_peak_env(hp_config *c)
{
	const char *v;
	int64_t n;
	c->peak_step = 0.1;
	c->peak_gap_ms = 0;
	if ((v = secure_getenv("HEAPPROF_PEAK_FILE")) && *v) {
		if (strlen(v) < sizeof(c->peak_file))
			strcpy(c->peak_file, v);
		else
			warn_env("HEAPPROF_PEAK_FILE", v, "is too long",
			         "none (no peak file)");
	}
	if ((v = secure_getenv("HEAPPROF_PEAK_STEP")) && *v &&
	    parse_frac(v, 10, &c->peak_step) != 0)
		warn_env("HEAPPROF_PEAK_STEP", v, "is not a fraction in (0, 10]",
		         "0.1");
	if ((v = secure_getenv("HEAPPROF_PEAK_GAP")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n <= 3600000)
			c->peak_gap_ms = (int)n;
		else
			warn_env("HEAPPROF_PEAK_GAP", v, "is not a number of ms",
			         "0");
	}
	if ((v = secure_getenv("HEAPPROF_DUMP_USAGE")) && *v &&
	    parse_frac(v, 1, &c->dump_usage) != 0)
		warn_env("HEAPPROF_DUMP_USAGE", v, "is not a fraction in (0, 1]",
		         "none (no usage dump)");
	if ((v = secure_getenv("HEAPPROF_DUMP_PRESSURE")) && *v) {
		if (heapprof__parse_size(v, &n) == 0 && n >= 1 && n <= 1000)
			c->dump_pressure_ms = (int)n;
		else
			warn_env("HEAPPROF_DUMP_PRESSURE", v, "is not in 1..1000 "
			         "(ms of stall per second)", "none");
	}
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
		"PEAK_FILE", "PEAK_STEP", "PEAK_GAP", "DUMP_PRESSURE",
		"DUMP_USAGE",
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
		if (parse_frac(v, 1, &c->dump_limit) != 0)
			warn_env("HEAPPROF_DUMP_LIMIT", v, "is not a fraction in "
			         "(0, 1]", "none (no limit dump)");
	}
	read_peak_env(c);
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
	                         c->dump_growth > 0 || c->dump_limit > 0 ||
	                         c->dump_usage > 0 || c->dump_pressure_ms > 0))
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
