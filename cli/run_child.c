/*
 * run_child.c: the parts of `heapprof run` around the program: the output
 * template made absolute before the program starts (a daemon that chdir's
 * still writes where the user asked), a clear word when LD_PRELOAD cannot
 * profile the program (statically linked, Go), and the program run as a
 * child, waited for, and followed by one line naming the profiles the run
 * wrote ("heapprof: wrote /dir/heapprof.4242.0.pb.gz"), and one counting
 * the processes that wrote none because they sampled nothing.
 *
 * The parent forwards the signals sent to it alone (kill PID, docker stop
 * to PID 1) to the program; those a terminal sends to the whole process
 * group (Ctrl-C, Ctrl-\) already reach the program and are not sent twice.
 * It exits with the program's status, or dies of the program's signal.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "run_child.h"
#include "parse.h"

/* Sets the environment variable name to path t, made absolute against
 * the current directory if it is relative (the program may change
 * directory): 0 or -errno. */
static int
setenv_absolute(const char *name, const char *t)
{
	if (t[0] == '/')
		return setenv(name, t, 1) ? -errno : 0;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	size_t n = strlen(cwd) + strlen(t) + 2;
	char *abs = malloc(n);
	if (!abs)
		return -ENOMEM;
	snprintf(abs, n, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "",
	         t[0] == '.' && t[1] == '/' ? t + 2 : t);
	int rc = setenv(name, abs, 1) ? -errno : 0;
	free(abs);
	return rc;
}

int
cli_run_absolute_output(void)
{
	const char *pk = getenv("HEAPPROF_PEAK_FILE");
	if (pk && *pk) {
		int prc = setenv_absolute("HEAPPROF_PEAK_FILE", pk);
		if (prc)
			return prc;
	}
	const char *t = getenv("HEAPPROF_OUT");
	if (!t || !*t) {
		const char *f = getenv("HEAPPROF_FORMAT");
		t = f && !strcmp(f, "text") ? "heapprof.%p.%n.heap"
		                            : "heapprof.%p.%n.pb.gz";
	}
	/* -i, -s, --dump-growth or --dump-limit: several files, numbered as
	 * the library will (%n); their values were checked by cmd_run. */
	char numbered[PATH_MAX];
	const char *iv = getenv("HEAPPROF_INTERVAL"), *sv = getenv("HEAPPROF_SIGNAL");
	const char *gv = getenv("HEAPPROF_DUMP_GROWTH"), *lv = getenv("HEAPPROF_DUMP_LIMIT");
	int64_t grow = 0;
	if (gv && heapprof__parse_size(gv, &grow) != 0)
		grow = 0;
	const char *uv = getenv("HEAPPROF_DUMP_USAGE"), *pv = getenv("HEAPPROF_DUMP_PRESSURE");
	int other = grow > 0 || (lv && *lv && strtod(lv, NULL) > 0) ||
	            (uv && *uv && strtod(uv, NULL) > 0) || (pv && *pv && atoi(pv) > 0);
	int64_t secs = 0;
	int sig = 0;
	if (iv && heapprof__parse_size(iv, &secs) != 0)
		secs = 0;
	if (sv && heapprof__parse_signal(sv, &sig) != 0)
		sig = 0;
	if (heapprof__many_files(secs, sig, other) &&
	    (size_t)snprintf(numbered, sizeof(numbered), "%s", t) < sizeof(numbered) &&
	    heapprof__tmpl_add_seq(numbered, sizeof(numbered)) == 1)
		t = numbered;
	return setenv_absolute("HEAPPROF_OUT", t);
}

/* ------------------------------------------------ what LD_PRELOAD can do */

/* The file execvp would run for cmd, in buf; 0 or -errno. */
static int
find_program(const char *cmd, char *buf, size_t cap)
{
	if (strchr(cmd, '/')) {
		if ((size_t)snprintf(buf, cap, "%s", cmd) >= cap)
			return -ENAMETOOLONG;
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if ((size_t)snprintf(buf, cap, "%.*s%s%s", (int)n, p,
		                     n ? "/" : "", cmd) < cap &&
		    access(buf, X_OK) == 0)
			return 0;
		if (!e)
			return -ENOENT;
		p = e;
	}
}

/* What the ELF file at path is: 0 dynamic (or not ELF, unreadable),
 * 1 statically linked, with *go set for a Go program. 64-bit only, the
 * machine's byte order (what this CLI runs). */
static int
elf_kind(const char *path, int *go)
{
	*go = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int kind = 0;
	Elf64_Ehdr h;
	if (fstat(fd, &st) || pread(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    memcmp(h.e_ident, ELFMAG, SELFMAG) || h.e_ident[EI_CLASS] != ELFCLASS64 ||
	    (h.e_type != ET_EXEC && h.e_type != ET_DYN) ||
	    h.e_phentsize != sizeof(Elf64_Phdr) || h.e_phnum > 4096)
		goto out;
	int interp = 0, dynamic = 0;
	for (unsigned i = 0; i < h.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(h.e_phoff + i * sizeof(ph))) !=
		    sizeof(ph))
			goto out;
		interp |= ph.p_type == PT_INTERP;
		dynamic |= ph.p_type == PT_DYNAMIC;
	}
	/* No PT_INTERP: nothing runs ld.so, so LD_PRELOAD is never read
	 * (static-pie has PT_DYNAMIC but no interpreter either). A shared
	 * library run directly has neither and is not our concern. */
	kind = !interp && (h.e_type == ET_EXEC || dynamic);
	/* Go: a .note.go.buildid or .go.buildinfo section. */
	if (h.e_shentsize == sizeof(Elf64_Shdr) && h.e_shstrndx < h.e_shnum) {
		Elf64_Shdr strs;
		if (pread(fd, &strs, sizeof(strs),
		          (off_t)(h.e_shoff + h.e_shstrndx * sizeof(strs))) !=
		        sizeof(strs) ||
		    strs.sh_size > (1u << 20) || strs.sh_offset > (uint64_t)st.st_size)
			goto out;
		char *names = calloc(1, strs.sh_size + 1);
		if (!names ||
		    pread(fd, names, strs.sh_size, (off_t)strs.sh_offset) !=
		        (ssize_t)strs.sh_size) {
			free(names);
			goto out;
		}
		for (unsigned i = 0; i < h.e_shnum && !*go; i++) {
			Elf64_Shdr s;
			if (pread(fd, &s, sizeof(s),
			          (off_t)(h.e_shoff + i * sizeof(s))) != sizeof(s))
				break;
			if (s.sh_name < strs.sh_size &&
			    (!strcmp(names + s.sh_name, ".note.go.buildid") ||
			     !strcmp(names + s.sh_name, ".go.buildinfo")))
				*go = 1;
		}
		free(names);
	}
out:
	close(fd);
	return kind;
}

void
cli_run_check_program(const char *cmd)
{
	char path[PATH_MAX];
	if (find_program(cmd, path, sizeof(path)))
		return; /* execvp says why */
	int go;
	int st = elf_kind(path, &go);
	if (st && go)
		cli_err("run: %s is a statically linked Go program: LD_PRELOAD "
		        "cannot profile it (the dynamic loader never runs) and its "
		        "heap is Go's; use runtime/pprof or net/http/pprof. It runs "
		        "unprofiled.", cmd);
	else if (st)
		cli_err("run: %s is statically linked: LD_PRELOAD cannot profile "
		        "it (the dynamic loader never runs); link it with "
		        "libheapprof.a instead. It runs unprofiled.", cmd);
	else if (go)
		cli_err("run: %s is a Go program: its heap is Go's, which "
		        "LD_PRELOAD cannot see (only C allocations through cgo "
		        "are profiled), and the Go runtime exits without exit(3), "
		        "so there is no profile at exit (-i or --http give "
		        "some); use runtime/pprof or net/http/pprof for the Go "
		        "heap.", cmd);
}

/* --------------------------------------------------- the files written */

/* Does name match the template tmpl (a base name: %p and %n are digits,
 * %% a '%')? */
static int
tmpl_match(const char *tmpl, const char *name)
{
	for (;;) {
		if (tmpl[0] == '%' && (tmpl[1] == 'p' || tmpl[1] == 'n')) {
			if (*name < '0' || *name > '9')
				return 0;
			while (*name >= '0' && *name <= '9') {
				name++;
				/* digits may be followed by more digits in
				 * the template: try every split */
				if (tmpl_match(tmpl + 2, name))
					return 1;
			}
			return 0;
		}
		if (tmpl[0] == '%' && tmpl[1] == '%')
			tmpl++;
		if (*tmpl != *name)
			return 0;
		if (!*tmpl)
			return 1;
		tmpl++;
		name++;
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One line on stderr naming the files of the template's directory that
 * match it (or its ".PID" form in a child process, see serve/dump.c) and
 * were written since `since`. */
static size_t
report_files(const char *tmpl, const struct timespec *since)
{
	const char *slash = strrchr(tmpl, '/');
	if (!slash || memchr(tmpl, '%', (size_t)(slash - tmpl)))
		return 1; /* a directory that varies: not listed */
	char dir[PATH_MAX];
	size_t dl = (size_t)(slash - tmpl);
	if (dl >= sizeof(dir))
		return 1;
	memcpy(dir, tmpl, dl);
	dir[dl] = 0;
	const char *base = slash + 1;
	/* The ".PID" form: before the first '.' of the base name. */
	char alt[NAME_MAX + 8];
	const char *dot = strchr(base, '.');
	size_t at = dot ? (size_t)(dot - base) : strlen(base);
	snprintf(alt, sizeof(alt), "%.*s.%%p%s", (int)at, base, base + at);
	DIR *d = opendir(dl ? dir : "/");
	if (!d)
		return 1;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!tmpl_match(base, e->d_name) &&
		    (strstr(base, "%p") || !tmpl_match(alt, e->d_name)))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) ||
		    st.st_mtim.tv_sec < since->tv_sec ||
		    (st.st_mtim.tv_sec == since->tv_sec &&
		     st.st_mtim.tv_nsec < since->tv_nsec))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nv = realloc(names, nc * sizeof(*nv));
			if (!nv)
				break;
			names = nv;
			cap = nc;
		}
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	if (n == 1) {
		cli_err("wrote %s/%s", dir, names[0]);
	} else if (n > 1) {
		/* One line: the directory once, then the names. */
		size_t shown = n > 8 ? 6 : n;
		fprintf(stderr, "heapprof: wrote %zu profiles in %s/:", n,
		        dl ? dir : "");
		for (size_t i = 0; i < shown; i++)
			fprintf(stderr, " %s", names[i]);
		if (shown < n)
			fprintf(stderr, " and %zu more", n - shown);
		fputc('\n', stderr);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return n;
}

/* ------------------------------------------- processes without a profile */

/* A process that sampled nothing writes no exit profile (unless
 * HEAPPROF_WRITE_EMPTY=1) and appends one byte to HEAPPROF_RUN_STATUS
 * instead (serve/dump.c): an empty file of ours in a fresh private
 * directory, counted and removed after the run. Any failure here only
 * loses the count. */
static char status_dir[PATH_MAX], status_file[PATH_MAX + 16];

static void
status_create(void)
{
	const char *t = getenv("TMPDIR");
	if (!t || t[0] != '/' ||
	    (size_t)snprintf(status_dir, sizeof(status_dir),
	                     "%s/heapprof-run.XXXXXX", t) >= sizeof(status_dir))
		snprintf(status_dir, sizeof(status_dir), "/tmp/heapprof-run.XXXXXX");
	if (!mkdtemp(status_dir)) {
		status_dir[0] = 0;
		return;
	}
	snprintf(status_file, sizeof(status_file), "%s/empty", status_dir);
	int fd = open(status_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || setenv("HEAPPROF_RUN_STATUS", status_file, 1) != 0) {
		if (fd >= 0)
			close(fd);
		unlink(status_file);
		rmdir(status_dir);
		status_dir[0] = 0;
		return;
	}
	close(fd);
}

/* How many processes wrote no exit profile; removes the file. */
static long
status_count(void)
{
	if (!status_dir[0])
		return 0;
	struct stat st;
	long n = stat(status_file, &st) == 0 ? (long)st.st_size : 0;
	unlink(status_file);
	rmdir(status_dir);
	unsetenv("HEAPPROF_RUN_STATUS");
	return n;
}

static void
report_empty(long n, size_t files, const char *tmpl, int exit_dump)
{
	if (n > 0)
		fprintf(stderr,
		        "heapprof: %ld process%s had no samples: no profile "
		        "written for %s (--write-empty writes empty ones)\n",
		        n, n == 1 ? "" : "es", n == 1 ? "it" : "them");
	else if (!files && exit_dump)
		cli_err("no profile was written to %s", tmpl);
}

/* The program died of a signal (abort, a crash, a kill) and no profile
 * of it is on disk: say so, or the run ends without a word. */
static void
report_death(const char *cmd, int sig)
{
	const char *abbrev = sigabbrev_np(sig);
	char name[32];
	if (abbrev)
		snprintf(name, sizeof(name), "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(name, sizeof(name), "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(name, sizeof(name), "signal %d", sig);
	cli_err("%s died of %s before writing a profile", cmd, name);
}

/* ------------------------------------------------------ parent and child */

static volatile sig_atomic_t child_pid;

static void
forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* A terminal's signals (si_code SI_KERNEL) went to the whole
	 * foreground process group, the program included. */
	if (si && si->si_code == SI_KERNEL)
		return;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

int
cli_run_child(char **argv, int exit_dump)
{
	static const int fwd[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1,
	                          SIGUSR2, SIGALRM, SIGWINCH, SIGCONT};
	const char *tmpl = getenv("HEAPPROF_OUT");
	status_create();
	struct timespec since;
	clock_gettime(CLOCK_REALTIME_COARSE, &since);
	/* Handlers before fork, so no signal between fork and their
	 * installation is lost; the child resets them before exec. */
	struct sigaction sa, old[sizeof(fwd) / sizeof(*fwd)];
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fwd) / sizeof(*fwd); i++)
		sigaction(fwd[i], &sa, &old[i]);
	fflush(NULL);
	int ep[2]; /* exec failed: the child's errno; closed on exec */
	if (pipe2(ep, O_CLOEXEC)) {
		cli_err("run: pipe: %s", strerror(errno));
		return 126;
	}
	pid_t pid = fork();
	if (pid < 0) {
		cli_err("run: fork: %s", strerror(errno));
		return 126;
	}
	if (pid == 0) {
		close(ep[0]);
		for (size_t i = 0; i < sizeof(fwd) / sizeof(*fwd); i++)
			sigaction(fwd[i], &old[i], NULL);
		char me[32];
		snprintf(me, sizeof(me), "%ld", (long)getpid());
		setenv("HEAPPROF_MAINPID", me, 1);
		execvp(argv[0], argv);
		int e = errno;
		cli_err("run: cannot run '%s': %s", argv[0], strerror(e));
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(ep[1]);
	child_pid = pid;
	int exec_errno = 0;
	while (read(ep[0], &exec_errno, sizeof(exec_errno)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			cli_err("run: waitpid: %s", strerror(errno));
			return 126;
		}
	}
	child_pid = 0;
	long empty = status_count();
	/* HEAPPROF_QUIET=1: no line of ours on the program's stderr. A
	 * stream (/dev/null, a FIFO, /dev/stdout) has no files to list. */
	const char *quiet = getenv("HEAPPROF_QUIET");
	int stream = tmpl && heapprof__out_stream(tmpl) != HP_OUT_FILE;
	if (!exec_errno && tmpl && !(quiet && *quiet && strcmp(quiet, "0"))) {
		size_t files = stream ? 1 : report_files(tmpl, &since);
		report_empty(empty, files, tmpl, exit_dump && WIFEXITED(status));
		if (WIFSIGNALED(status) && !files)
			report_death(argv[0], WTERMSIG(status));
	}
	/* --peak-file: its last version, named too (after an OOM kill, the
	 * file to read). */
	const char *pk = getenv("HEAPPROF_PEAK_FILE");
	if (!exec_errno && pk && *pk && !(quiet && *quiet && strcmp(quiet, "0")) &&
	    heapprof__out_stream(pk) == HP_OUT_FILE)
		report_files(pk, &since);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	/* Die of the program's signal, as a shell expects (no core of ours). */
	int sig = WTERMSIG(status);
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	return 128 + sig;
}
