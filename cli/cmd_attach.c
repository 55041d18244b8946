/*
 * cmd_attach.c: `heapprof attach PID`: profiles a running process for a
 * while without restarting it. Loads libheapprof.so into it with a remote
 * dlopen (ptrace_call.c: no gdb), starts sampling (the library routes the
 * malloc family of every loaded object to itself: src/collect/attach.c),
 * and after -d seconds, Ctrl-C or the end of the process writes the
 * profile of what was allocated since the attach and stops sampling.
 * Owns the command line, the refusals (each with its reason and fix) and
 * the sequence of remote calls.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"
#include "ptrace_call.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof attach [-d SECONDS] [-o FILE] [-r RATE] PID\n"
	        "\n"
	        "Profiles the running process PID without restarting it: loads\n"
	        "libheapprof.so into it (ptrace, no gdb), samples its allocations, and\n"
	        "after SECONDS (or Ctrl-C, or its end) writes the profile of what was\n"
	        "allocated since the attach (alloc_*) and is still in use (inuse_*).\n"
	        "Sampling then stops; the program goes on.\n"
	        "\n"
	        "  -d, --duration SECONDS  how long to sample (default: until Ctrl-C)\n"
	        "  -o, --output FILE       the profile (default heapprof.PID.attach.pb.gz)\n"
	        "  -r, --rate BYTES        mean bytes between samples (default 512k; 1: all)\n"
	        "  -h, --help              this help\n");
}

static volatile sig_atomic_t stop_sig;
static void
on_stop(int sig)
{
	stop_sig = sig;
}

/* A line of /proc/pid/status ("Seccomp:"), its number, or -1. */
static long
status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long v = -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0) {
			v = strtol(line + kl, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long
read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Why ptrace was refused, and what to do. */
static void
explain_eperm(pid_t pid)
{
	long scope = read_long("/proc/sys/kernel/yama/ptrace_scope");
	struct stat st;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	long uid = status_field(pid, "Uid:");
	if (scope == 3)
		cli_err("attach: ptrace is disabled on this system (Yama "
		        "kernel.yama.ptrace_scope=3, until reboot): no process can be attached");
	else if (geteuid() != 0 && uid >= 0 && (uid_t)uid != geteuid())
		cli_err("attach: process %d belongs to uid %ld: run heapprof as that user "
		        "or as root", (int)pid, uid);
	else if (stat(dir, &st) == 0 && st.st_uid == 0 && uid > 0)
		cli_err("attach: process %d made itself non-dumpable "
		        "(prctl(PR_SET_DUMPABLE, 0), or setuid): only root (CAP_SYS_PTRACE) "
		        "may attach", (int)pid);
	else if (scope >= 1 && geteuid() != 0)
		cli_err("attach: ptrace not permitted (Yama kernel.yama.ptrace_scope=%ld "
		        "allows only a parent to trace): run as root, give heapprof "
		        "CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep), or "
		        "sysctl kernel.yama.ptrace_scope=0", scope);
	else
		cli_err("attach: ptrace not permitted on process %d (in a container: "
		        "run it with --cap-add=SYS_PTRACE, and a seccomp profile that "
		        "allows ptrace)", (int)pid);
}

/* The refusals that need no ptrace: 0, or 1 (said why). */
static int
refuse(pid_t pid)
{
	char path[64];
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		cli_err("attach: no process %d", (int)pid);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			explain_eperm(pid);
		else
			cli_err("attach: %s: %s", path, strerror(errno));
		return 1;
	}
	Elf64_Ehdr eh;
	ssize_t n = read(fd, &eh, sizeof(eh));
	close(fd);
	if (n < (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		cli_err("attach: process %d's executable is not ELF", (int)pid);
		return 1;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		cli_err("attach: process %d is not an x86-64 program (ELF class %d, "
		        "machine %d): attach works on x86-64 processes only; run the "
		        "program under `heapprof run` on its own architecture instead",
		        (int)pid, eh.e_ident[EI_CLASS], eh.e_machine);
		return 1;
	}
	long sc = status_field(pid, "Seccomp:");
	if (sc > 0) {
		cli_err("attach: process %d runs under a seccomp %s: the library's "
		        "loading (open, mmap) and the profiler's system calls may be "
		        "forbidden and kill it; profile it from the start instead "
		        "(heapprof run, or LD_PRELOAD=libheapprof.so)",
		        (int)pid, sc == 1 ? "strict mode" : "filter");
		return 1;
	}
	char libc[4096];
	if (pt_find_map(pid, "libc.so", libc, sizeof(libc)) != 0) {
		cli_err("attach: process %d has no libc.so mapped: statically linked "
		        "(or not glibc), there is no loader to load the profiler with; "
		        "link libheapprof.a into the program instead", (int)pid);
		return 1;
	}
	return 0;
}

/* The library's path for the remote dlopen: "DIR/./libheapprof.so", the
 * "/./" telling its constructor that attach loaded it; real: the path as
 * the kernel names the mapping. */
static int
lib_paths(char *marked, size_t cap, char *real, size_t rcap)
{
	char lib[PATH_MAX];
	int rc = cli_find_library(lib, sizeof(lib));
	if (rc != 0)
		return rc;
	char r[PATH_MAX];
	if (!realpath(lib, r))
		return -errno;
	char *slash = strrchr(r, '/');
	*slash = 0;
	if ((size_t)snprintf(marked, cap, "%s/./%s", r, slash + 1) >= cap)
		return -ENAMETOOLONG;
	*slash = '/';
	if ((size_t)snprintf(real, rcap, "%s", r) >= rcap)
		return -ENAMETOOLONG;
	return 0;
}

/* The string at `at` in the target, for dlerror's message. */
static void
read_str(pid_t pid, uint64_t at, char *out, size_t cap)
{
	struct iovec l = {out, cap - 1}, r = {(void *)at, cap - 1};
	ssize_t n = at ? process_vm_readv(pid, &l, 1, &r, 1, 0) : -1;
	out[n > 0 ? (size_t)n : 0] = 0;
	out[cap - 1] = 0;
}

static int
stop_thread(pt_thread *t, pid_t pid)
{
	pt_unsafe u;
	pt_unsafe_ranges(pid, &u);
	int rc = pt_stop_safe(t, pid, &u, 5000);
	if (rc == -EPERM)
		explain_eperm(pid);
	else if (rc == -EAGAIN)
		cli_err("attach: no thread of process %d reached a safe point (outside "
		        "libc, the loader and the allocator) within 5 s; try again", (int)pid);
	else if (rc)
		cli_err("attach: process %d: %s", (int)pid, strerror(-rc));
	return rc;
}

int
cli_attach(int argc, char **argv)
{
	double seconds = -1;
	const char *out = NULL;
	int64_t rate = 0;
	pid_t pid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if ((!strcmp(a, "-d") || !strcmp(a, "--duration")) && v) {
			char *end;
			seconds = strtod(v, &end);
			if (*end || seconds < 0) {
				cli_err("attach: -d %s: not a number of seconds", v);
				return 2;
			}
			i++;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
			out = v;
			i++;
		} else if ((!strcmp(a, "-r") || !strcmp(a, "--rate")) && v) {
			if (heapprof__parse_size(v, &rate) != 0 || rate < 1) {
				cli_err("attach: -r %s: not a rate in bytes", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--http")) {
			cli_err("attach: --http is not available yet: use -d and -o");
			return 2;
		} else if (a[0] != '-' && !pid) {
			char *end;
			long p = strtol(a, &end, 10);
			if (*end || p <= 0) {
				cli_err("attach: %s: not a process id", a);
				return 2;
			}
			pid = (pid_t)p;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!pid) {
		usage(stderr);
		return 2;
	}
	if (pid == getpid()) {
		cli_err("attach: cannot attach to itself");
		return 2;
	}
	if (refuse(pid))
		return 1;
	char marked[PATH_MAX + 8], real[PATH_MAX];
	int rc = lib_paths(marked, sizeof(marked), real, sizeof(real));
	if (rc != 0) {
		cli_err("attach: cannot find libheapprof.so (beside heapprof, ../lib, "
		        "or HEAPPROF_LIBRARY): %s", strerror(-rc));
		return 1;
	}
	char here[PATH_MAX], outabs[PATH_MAX + 64];
	char defname[64];
	snprintf(defname, sizeof(defname), "heapprof.%d.attach.pb.gz", (int)pid);
	if (!out)
		out = defname;
	if (out[0] == '/')
		snprintf(outabs, sizeof(outabs), "%s", out);
	else if (getcwd(here, sizeof(here)))
		snprintf(outabs, sizeof(outabs), "%s/%s", here, out);
	else {
		cli_err("attach: getcwd: %s", strerror(errno));
		return 1;
	}
	/* Already profiled: preloaded or linked (an earlier attach is fine) */
	char mapped[4096];
	if (pt_find_map(pid, "libheapprof", mapped, sizeof(mapped)) == 0 &&
	    (strcmp(mapped, real) != 0 ||
	     !pt_symbol(pid, mapped, "heapprof_attach_start"))) {
		cli_err("attach: process %d is already profiled (%s is loaded: "
		        "preloaded, linked, or another build): use its own profiles "
		        "(HEAPPROF_OUT, HEAPPROF_SIGNAL, HEAPPROF_HTTP)", (int)pid, mapped);
		return 1;
	}
	char libc[4096];
	pt_find_map(pid, "libc.so", libc, sizeof(libc));
	uint64_t f_dlopen = pt_symbol(pid, libc, "dlopen");
	uint64_t f_dlerror = pt_symbol(pid, libc, "dlerror");
	if (!f_dlopen) {
		cli_err("attach: %s in process %d has no dlopen (glibc before 2.34?): "
		        "profile it from the start instead (heapprof run)", libc, (int)pid);
		return 1;
	}

	/* ---- attach */
	pt_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return 1;
	if (stop_thread(t, pid) != 0)
		return 1;
	uint64_t ret = 0, at = pt_push(t, marked, strlen(marked) + 1);
	rc = at ? pt_call(t, f_dlopen, at, RTLD_NOW | RTLD_LOCAL, 0, &ret) : -EFAULT;
	if (rc == 0 && !ret) {
		char msg[512] = "";
		uint64_t m = 0;
		if (f_dlerror && pt_call(t, f_dlerror, 0, 0, 0, &m) == 0)
			read_str(pid, m, msg, sizeof(msg));
		pt_release(t);
		cli_err("attach: dlopen of the profiler failed in process %d: %s", (int)pid,
		        msg[0] ? msg : "(no message)");
		return 1;
	}
	uint64_t f_start = rc == 0 ? pt_symbol(pid, real, "heapprof_attach_start") : 0;
	uint64_t f_dump = rc == 0 ? pt_symbol(pid, real, "heapprof_dump_file") : 0;
	uint64_t f_stop = rc == 0 ? pt_symbol(pid, real, "heapprof_attach_stop") : 0;
	if (rc == 0 && (!f_start || !f_dump || !f_stop))
		rc = -ENOENT;
	if (rc == 0)
		rc = pt_call(t, f_start, (uint64_t)rate, 0, 0, &ret);
	if (rc != 0) {
		if (rc != -EFAULT && rc != -ESRCH)
			pt_release(t);
		cli_err("attach: the remote call failed in process %d: %s", (int)pid,
		        strerror(-rc));
		return 1;
	}
	int64_t pause_attach = pt_release(t);
	int started = (int)(uint32_t)ret;
	if (started == -EPERM) {
		cli_err("attach: process %d is already profiled (libheapprof.so was "
		        "preloaded or linked into it)", (int)pid);
		return 1;
	} else if (started == -EALREADY) {
		cli_err("attach: another heapprof attach is attached to process %d", (int)pid);
		return 1;
	} else if (started != 0) {
		cli_err("attach: the profiler could not start in process %d: %s",
		        (int)pid, strerror(-started));
		return 1;
	}
	fprintf(stderr, "heapprof: attached to %d (paused %.2f ms)%s\n", (int)pid,
	        pause_attach / 1e6, seconds < 0 ? "; Ctrl-C to detach" : "");

	/* ---- wait: -d, a signal, or the end of the process */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int gone = 0;
	while (!stop_sig) {
		int wait_ms = 1000;
		if (seconds >= 0) {
			struct timespec n;
			clock_gettime(CLOCK_MONOTONIC, &n);
			double left = seconds - ((n.tv_sec - t0.tv_sec) + (n.tv_nsec - t0.tv_nsec) / 1e9);
			if (left <= 0)
				break;
			wait_ms = left < 1 ? (int)(left * 1000) + 1 : 1000;
		}
		if (pidfd >= 0) {
			struct pollfd p = {pidfd, POLLIN, 0};
			if (poll(&p, 1, wait_ms) == 1) {
				gone = 1;
				break;
			}
		} else {
			usleep((useconds_t)wait_ms * 1000);
			if (kill(pid, 0) != 0 && errno == ESRCH) {
				gone = 1;
				break;
			}
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (gone) {
		cli_err("attach: process %d ended before the detach: no profile", (int)pid);
		return 1;
	}

	/* ---- detach: the profile, then sampling off */
	if (stop_thread(t, pid) != 0)
		return 1;
	at = pt_push(t, outabs, strlen(outabs) + 1);
	uint64_t dumped = 0, stopped = 0;
	rc = at ? pt_call(t, f_dump, at, 0, 0, &dumped) : -EFAULT;
	if (rc == 0)
		rc = pt_call(t, f_stop, 0, 0, 0, &stopped);
	if (rc != 0) {
		if (rc != -EFAULT && rc != -ESRCH)
			pt_release(t);
		cli_err("attach: the detach's remote call failed in process %d: %s",
		        (int)pid, strerror(-rc));
		return 1;
	}
	int64_t pause_detach = pt_release(t);
	free(t);
	int drc = (int)(uint32_t)dumped;
	if (drc != 0) {
		cli_err("attach: process %d could not write %s: %s (sampling stopped)",
		        (int)pid, outabs, strerror(drc < 0 ? -drc : drc));
		return 1;
	}
	fprintf(stderr, "heapprof: detached from %d (paused %.2f ms); wrote %s\n",
	        (int)pid, pause_detach / 1e6, outabs);
	return 0;
}
