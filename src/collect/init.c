/*
 * init.c: the profiler's life cycle in a process: the constructor (resolve
 * the next allocator, read the environment, warm the unwinder up, then
 * enable sampling), fork handlers, the exit dump, and one-time warnings.
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
 *   HEAPPROF_RUN_STATUS set by `heapprof run`: a file to which a process
 *                      that wrote no exit profile (nothing sampled)
 *                      appends one byte, so the run can count them
 *   HEAPPROF_AGE       1 (default for files): in-use samples split by
 *                      allocation age (age_s labels); 0: not
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "lazylibs.h"
#include "parse.h"

int heapprof__serve_armed; /* written once at start (collect.h) */
/* A strong reference to the delivery half (serve/hooks.c), so that
 * libheapprof.a linked into a program brings it along: collect.h's
 * reference to heapprof__delivery is weak and would not. */
extern HP_HIDDEN const int heapprof__delivery_linked;
__attribute__((used)) static const int *const delivery_anchor =
	&heapprof__delivery_linked;

hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH, .at_exit = 1,
                           .symbolize = 1};
_Atomic int heapprof__ready;
long heapprof__init_pid;
char heapprof__cmdline[512];

/* ---------------------------------------------------------------- warnings */

#define NWARN 32
static const char *_Atomic warned[NWARN]; /* messages already printed */

/*
 * Where warnings go: the stderr the process started with. A program may
 * close it (coreutils close stdout and stderr in an atexit handler, before
 * the exit profile is written), and the next file it opens then gets fd 2:
 * a warning must never land in that file. So fd 2 is used only while it is
 * still the file it was at start (device and inode, noted at init); if it
 * is not, the start's stderr is reopened by name when it has one (a
 * terminal, a regular file: /proc/self/fd/2 named it at init), written,
 * and closed again, its identity checked first. No descriptor is kept
 * open: a copy of a pipe would hold back the reader's end of file (the
 * shell of `x=$(daemon)`, ssh). A pipe or socket that was closed loses the
 * warning. Written once by init (before that, fd 2 as it is).
 */
static int err_noted;      /* init looked at fd 2 */
static int err_open;       /* fd 2 was open at start */
static dev_t err_dev;
static ino_t err_ino;
static char err_path[256]; /* its name, if it can be reopened; else "" */

static void
note_stderr(void)
{
	struct stat st;
	err_noted = 1;
	if (fstat(2, &st) != 0)
		return;
	err_open = 1;
	err_dev = st.st_dev;
	err_ino = st.st_ino;
	if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
		return;
	ssize_t n = readlink("/proc/self/fd/2", err_path, sizeof(err_path) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(err_path) - 1 || err_path[0] != '/')
		n = 0;
	err_path[n] = 0;
}

static int
same_file(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino;
}

/* "heapprof[PID]: msg" on the start's stderr with one writev(2). errno is
 * preserved: the warning paths sit between a failing call and the code
 * that reads its errno, or inside free(), which must not change errno; a
 * write to a closed or full stderr (EBADF, ENOSPC, EPIPE) would otherwise
 * leak out. */
static void
say(const char *msg)
{
	int saved = errno;
	char pre[48];
	int n = snprintf(pre, sizeof(pre), "heapprof[%ld]: ", (long)getpid());
	struct iovec iov[3] = {{pre, n > 0 ? (size_t)n : 0},
	                       {(void *)msg, strlen(msg)},
	                       {"\n", 1}};
	int fd = 2, opened = 0;
	if (err_noted && !(err_open && same_file(2))) {
		fd = -1;
		if (err_open && err_path[0]) {
			fd = open(err_path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK |
			                        O_CLOEXEC);
			opened = fd >= 0;
			if (opened && !same_file(fd)) {
				close(fd);
				fd = -1;
				opened = 0;
			}
		}
	}
	if (fd >= 0) {
		ssize_t w = writev(fd, iov, 3);
		(void)w;
	}
	if (opened)
		close(fd);
	errno = saved;
}

void
heapprof__warn(const char *msg)
{
	for (int i = 0; i < NWARN; i++) {
		const char *cur = atomic_load(&warned[i]);
		if (cur == msg)
			return;
		if (cur == NULL) {
			const char *expect = NULL;
			if (atomic_compare_exchange_strong(&warned[i], &expect, msg))
				break;
			if (expect == msg)
				return;
		}
	}
	say(msg);
}

/* A warning whose text is built at run time: printed as is (callers make
 * sure it happens once). */
void
heapprof__warn_dup(const char *msg)
{
	say(msg);
}

/* Warnings about the environment name the variable, so they are built
 * here and printed once per process (the constructor runs once). */
static void
warn_env(const char *var, const char *val, const char *why, const char *dflt)
{
	char buf[400];
	snprintf(buf, sizeof(buf), "%s='%.100s' %s; using %s", var, val, why, dflt);
	say(buf);
}

/* ------------------------------------------------------------------ options */

/* The HEAPPROF* entries of the environment, found in one pass: the
 * constructor reads some 25 variables, and secure_getenv walked the whole
 * environment for each (7 k instructions of every start-up, issue 15).
 * Empty in a setuid or setgid process (AT_SECURE), as secure_getenv. */
#define NENV 48
static const char *hp_env[NENV]; /* constructor only */
static int hp_nenv;

static void
scan_env(void)
{
	extern char **environ;
	if (getauxval(AT_SECURE) || !environ)
		return;
	for (char **e = environ; *e && hp_nenv < NENV; e++)
		if (!strncmp(*e, "HEAPPROF", 8))
			hp_env[hp_nenv++] = *e;
}

static const char *
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
static void
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
static void
check_env_names(void)
{
	static const char *const known[] = {
		"RATE", "OUT", "FORMAT", "INTERVAL", "SIGNAL", "UNWIND", "DEPTH",
		"EXIT", "SYMBOLIZE", "MODE", "HTTP", "HTTP_ALLOW_REMOTE", "PUSH",
		"PUSH_INTERVAL", "APP", "ONLY", "CHILDREN", "MAINPID", "LIBRARY",
		"WRITE_EMPTY", "RUN_STATUS", "FSYNC", "DUMP_GROWTH", "DUMP_LIMIT", "AGE",
	};
	for (int k = 0; k < hp_nenv; k++) {
		if (strncmp(hp_env[k], "HEAPPROF_", 9) != 0)
			continue;
		const char *name = hp_env[k] + 9;
		size_t len = strcspn(name, "=");
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

static void
read_env(hp_config *c)
{
	scan_env();
	check_env_names();
	const char *v;
	int64_t n;
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
	if ((v = secure_getenv("HEAPPROF_WRITE_EMPTY")) && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "1"))
			c->write_empty = v[0] == '1';
		else
			warn_env("HEAPPROF_WRITE_EMPTY", v, "is not 0 or 1", "0");
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
	if (heapprof__many_files(c->interval, c->signal))
		heapprof__tmpl_add_seq(c->out, sizeof(c->out));
}

/* ------------------------------------------------------ which processes */

/* The command line, NULs turned into spaces, cut to the buffer: named in
 * the profile's comments, so that the files of a wrapper's processes can
 * be told apart. */
static void
read_cmdline(char *buf, size_t cap)
{
	buf[0] = 0;
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
static int
wanted(const char *cmdline)
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

/* ---------------------------------------------------------------- fork */

/*
 * The locks taken inside malloc (range, bucket, arena) are NOT held across
 * fork. pthread_atfork prepare handlers run before glibc takes its stdio
 * list lock and its own malloc locks; holding a malloc-path lock there
 * inverts the order against a thread that holds a FILE lock and mallocs
 * (getline) while a third thread's fflush(NULL) holds the list lock:
 * glibc's tst-malloc-fork-deadlock pattern hung at rate 1. The child
 * re-initialises the locks. The bucket table is fenced instead: the
 * prepare handler waits until no bucket insert is in flight and makes new
 * ones give up until the fork is done (bucket.c), because the kernel
 * copies memory while the other threads run and a child could inherit a
 * table half updated in any order. The range's critical sections are short
 * and publish with single ordered stores, so the child uses them as the
 * fork found them (at worst a run in flight is lost to the child).
 *
 * The dump lock is only tried (serve/dump.c): fork never waits for a
 * dump, and a forking thread inside the profiler (a signal handler that
 * forks, as in glibc's tst-mallocfork2) leaves it alone. The child gets a
 * fresh one either way. Holding it across fork counts as being inside the
 * profiler, since a signal can arrive in the middle of fork() and its
 * handler fork again. Nesting is per thread (a handler runs on the thread
 * it interrupted), so the stack is thread-local and a small one suffices;
 * the child, a copy of the forking thread, inherits that thread's. Forks
 * of other threads may run their handlers at the same time (glibc 2.36
 * releases its atfork lock around each handler call): a shared counter
 * was a data race (TSan, tests/sanitize/driver.c).
 */
#define FORK_NEST 16
static __thread int fork_depth __attribute__((tls_model("initial-exec")));
static __thread unsigned char fork_state[FORK_NEST]
	__attribute__((tls_model("initial-exec"))); /* 0 skipped, 1 tried, 2 locked */

static void
atfork_prepare(void)
{
	hp_tls *t = &heapprof__tls;
	int d = fork_depth++;
	if (d >= FORK_NEST)
		return;
	fork_state[d] = 0;
	if (t->busy == 0) {
		hp_enter(t);
		fork_state[d] = heapprof__hooks() &&
		                heapprof__delivery.atfork_prepare() ? 2 : 1;
		heapprof__bucket_atfork_prepare(); /* no insert in flight */
	}
}

/* The matching prepare's state. */
static int
fork_pop(void)
{
	int d = --fork_depth;
	return d < FORK_NEST ? fork_state[d] : 0;
}

static void
atfork_parent(void)
{
	int st = fork_pop();
	if (st) {
		heapprof__bucket_atfork_release();
		if (heapprof__hooks())
			heapprof__delivery.atfork_parent(st == 2);
		hp_leave(&heapprof__tls);
	}
}

static void
atfork_child(void)
{
	/* A new seed and a new distance: otherwise the parent and each of
	 * its children (prefork workers) would sample at the same offsets. */
	heapprof__sampler_reset(&heapprof__tls);
	heapprof__range_atfork_child();
	heapprof__arena_atfork_child();
	heapprof__bucket_atfork_child();
	if (heapprof__ending_atfork_child)
		heapprof__ending_atfork_child();
	heapprof__peak_atfork_child();
	int st = fork_pop();
	if (heapprof__hooks())
		heapprof__delivery.atfork_child(st == 2);
	if (st)
		hp_leave(&heapprof__tls);
}

/* ------------------------------------------------------------- lifecycle */

/* The exit dump runs on the exiting thread, whose signals are the
 * program's: under a file-size limit (ulimit -f) the profile's write
 * raised SIGXFSZ and killed the program at exit (status 153 instead of
 * its own). dump.c blocks SIGXFSZ around every dump, so the write fails
 * with EFBIG (one warning, no file left) and the signal is consumed.
 *
 * exit() may be called from a signal handler that interrupted the
 * profiler itself, which may hold its locks: then there is no exit dump
 * (one line on stderr says so). Other dumps in progress are waited for a
 * few seconds at most (dump.c). */
static void
exit_dump(void)
{
	hp_tls *t = &heapprof__tls;
	if (t->busy) {
		heapprof__warn("exit() called inside the profiler (from a signal "
		               "handler?): no exit profile");
		return;
	}
	hp_enter(t);
	int saved = errno;
	if (heapprof__hooks()) {
		heapprof__delivery.exit(heapprof__cfg.at_exit); /* SIGXFSZ handling: see dump.c */
		/* A SIGTERM on another thread may be writing the profile: the
		 * process must not end under it (ending.c). */
		heapprof__delivery.exit_wait(30000);
	}
	errno = saved;
	hp_leave(t);
}

/* Priority 101: before the constructors of the program and of libraries
 * loaded after us, so their allocations are seen and our atexit handler
 * runs after the handlers (and C++ static destructors) they register. */
__attribute__((constructor(101))) static void
heapprof_init(void)
{
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	note_stderr();
	heapprof__interpose_resolve();
	if (!heapprof__range_span) {
		heapprof__warn("cannot reserve address space for sampled "
		               "objects: profiling disabled");
		hp_leave(t);
		return;
	}
	heapprof__init_pid = (long)getpid();
	read_env(&heapprof__cfg);
	read_cmdline(heapprof__cmdline, sizeof(heapprof__cmdline));
	if (!wanted(heapprof__cmdline)) {
		/* Not this process: nothing sampled, nothing written. */
		heapprof__cfg.rate = 0;
		heapprof__cfg.at_exit = 0;
		heapprof__cfg.interval = 0;
		heapprof__cfg.signal = 0;
		heapprof__cfg.http[0] = 0;
		heapprof__cfg.push[0] = 0;
		heapprof__cfg.dump_growth = 0;
		heapprof__cfg.dump_limit = 0;
	}

	/* Setuid or setgid (AT_SECURE): the environment is the invoking
	 * user's, so read_env saw none of it (secure_getenv), and nothing is
	 * written unless the program itself asks (heapprof_dump_file): no
	 * exit dump into the working directory, no endpoint. */
	if (getauxval(AT_SECURE)) {
		heapprof__cfg.at_exit = 0;
		heapprof__cfg.interval = 0;
		heapprof__cfg.signal = 0;
		heapprof__cfg.http[0] = 0;
		heapprof__cfg.push[0] = 0;
		heapprof__cfg.dump_growth = 0;
		heapprof__cfg.dump_limit = 0;
	}
	heapprof__peak_init();
	if (heapprof__bucket_init() != 0) {
		heapprof__warn("out of memory: profiling disabled");
		hp_leave(t);
		return;
	}
	/* What the unwinder cannot do later (stack.c): /proc/self/maps read
	 * by pthread_getattr_np, libunwind's loading. Nothing otherwise. */
	if (heapprof__stack_init(t) != 0)
		heapprof__warn("HEAPPROF_UNWIND=libunwind: libunwind.so.8 not "
		               "found; using the default (dwarf) unwinder");
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if (heapprof__cfg.at_exit || heapprof__cfg.push[0]) {
		atexit(exit_dump); /* the exit dump, and push's last interval */
		at_quick_exit(exit_dump); /* quick_exit(3) runs no atexit handler */
	}
	/* Dumps that may run in a signal handler or inside malloc, and the
	 * endpoint's and push's: libz and libm now, not at their first use
	 * (src/so/libs.c). Otherwise the first dump loads them. */
	if (heapprof__cfg.signal || heapprof__cfg.interval || heapprof__cfg.http[0] ||
	    heapprof__cfg.push[0])
		heapprof__lazy_libs();
	if (heapprof__hooks())
		heapprof__delivery.start();
	/* SIGTERM, SIGINT and _exit (libheapprof.so only). */
	if (heapprof__ending_init)
		heapprof__ending_init();
	/* No distance yet: the first allocation after this draws one and
	 * is charged against it (sampler.c), as in every new thread. */
	heapprof__sampler_reset(t);
	atomic_store_explicit(&heapprof__ready, 1, memory_order_release);
	hp_leave(t);
}
