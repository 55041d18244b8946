/*
 * cmd_attach.c: `heapprof attach PID`: profiles a running process for a
 * while without restarting it. Loads libheapprof.so into it with a remote
 * dlopen (ptrace_call.c: no gdb), starts sampling (the library routes the
 * malloc family of every loaded object to itself: src/collect/attach.c),
 * and after -d seconds, Ctrl-C, SIGTERM, `heapprof detach PID`
 * (attach_session.c) or the end of the process writes the profile of what
 * was allocated since the attach and stops sampling. With --http the
 * target serves /debug/pprof until the detach (src/serve/attach_http.c).
 * Owns the command line, the refusals (each with its reason and fix) and
 * the sequence of remote calls.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "attach_session.h"
#include "cli.h"
#include "parse.h"
#include "ptrace_call.h"

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof attach [-d SECONDS] [-o FILE] [-r RATE] [--http ADDR] PID\n"
	        "\n"
	        "Profiles the running process PID without restarting it: loads\n"
	        "libheapprof.so into it (ptrace, no gdb), samples its allocations, and\n"
	        "after SECONDS (or Ctrl-C, SIGTERM, `heapprof detach PID`, or its end)\n"
	        "writes the profile of what was allocated since the attach (alloc_*)\n"
	        "and is still in use (inuse_*). Sampling then stops; the program goes on.\n"
	        "\n"
	        "  -d, --duration SECONDS  how long to sample (default: until Ctrl-C or\n"
	        "                          heapprof detach PID)\n"
	        "  -o, --output FILE       the profile (default heapprof.PID.attach.pb.gz)\n"
	        "  -r, --rate BYTES        mean bytes between samples (default 512k; 1: all)\n"
	        "      --http ADDR         the process serves /debug/pprof/heap, /allocs\n"
	        "                          (Go's endpoints) on ADDR, a loopback HOST:PORT\n"
	        "                          (PORT 0: any free one), until the detach\n"
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

/* Threads of the target never to stop for a remote call: the endpoint's
 * (--http), which may be in the middle of a snapshot holding the
 * profiler's dump lock, and which heapprof_attach_http_stop joins. */
static pid_t skip_tids[16];
static int nskip;

/* The thread ids of pid, up to cap: how many. */
static int
task_list(pid_t pid, pid_t *out, int cap)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) && n < cap)
		if (atoi(e->d_name) > 0)
			out[n++] = (pid_t)atoi(e->d_name);
	if (d)
		closedir(d);
	return n;
}

static int
stop_thread(pt_thread *t, pid_t pid)
{
	pt_unsafe u;
	pt_unsafe_ranges(pid, &u);
	memcpy(u.skip, skip_tids, sizeof(skip_tids));
	u.nskip = nskip;
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

/* --http ADDR as the endpoint takes it (HOST:PORT, HOST an IPv4 or [IPv6]
 * loopback address or localhost), checked before the target is touched:
 * 0, or 1 (said why). A port some socket of this network namespace holds
 * is refused here; the target's own bind says the rest. */
static int
http_check(pid_t pid, const char *spec)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	char *end;
	long port = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) ||
	    !colon[1] || *end || port < 0 || port > 65535) {
		cli_err("attach: --http %s: not HOST:PORT (e.g. localhost:6060, "
		        "127.0.0.1:0 for any free port)", spec);
		return 1;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	char *h = host;
	if (h[0] == '[' && h[strlen(h) - 1] == ']') {
		h[strlen(h) - 1] = 0;
		h++;
	}
	if (!strcmp(h, "localhost"))
		h = "127.0.0.1";
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	memset(&s4, 0, sizeof(s4));
	memset(&s6, 0, sizeof(s6));
	struct sockaddr *sa;
	socklen_t sl;
	int loop;
	if (inet_pton(AF_INET, h, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		s4.sin_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&s4;
		sl = sizeof(s4);
		loop = (ntohl(s4.sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, h, &s6.sin6_addr) == 1) {
		s6.sin6_family = AF_INET6;
		s6.sin6_port = htons((uint16_t)port);
		sa = (struct sockaddr *)&s6;
		sl = sizeof(s6);
		loop = IN6_IS_ADDR_LOOPBACK(&s6.sin6_addr);
	} else {
		cli_err("attach: --http %s: %s is not an IP address nor localhost",
		        spec, host);
		return 1;
	}
	if (!loop) {
		cli_err("attach: --http %s: not a loopback address: an attached "
		        "process serves its profiles on loopback only (reach it from "
		        "elsewhere through ssh -L)", spec);
		return 1;
	}
	/* the target's network namespace is ours: try the address */
	struct stat a, b;
	char ns[64];
	snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)pid);
	if (port == 0 || stat("/proc/self/ns/net", &a) != 0 || stat(ns, &b) != 0 ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 0;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, rc = 0;
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, sa, sl) != 0 && errno == EADDRINUSE) {
			cli_err("attach: --http %s: the address is in use: choose "
			        "another port (PORT 0: any free one); process %d was "
			        "not touched", spec, (int)pid);
			rc = 1;
		}
		close(fd);
	}
	return rc;
}

/* The session: what the detach needs. */
typedef struct session {
	pid_t pid;
	pt_thread *t;
	uint64_t f_dump, f_stop, f_http_stop;
	const char *outabs;
	const char *lib; /* libheapprof.so's path as the kernel names it */
} session;

/* The detach: the endpoint off, the profile, then sampling off. 0, or 1
 * (msg says why); msg gets the last line either way. */
static int
detach_from(session *s, char *msg, size_t cap)
{
	pt_thread *t = s->t;
	pid_t pid = s->pid;
	if (stop_thread(t, pid) != 0) {
		snprintf(msg, cap, "could not stop a thread of process %d to detach "
		         "(see the session's output)", (int)pid);
		return 1;
	}
	/* The process may have run exec since the attach: the addresses
	 * found then point into nothing, or into the new program (calling
	 * them crashed it: attach_review.exec). Looked at with a thread
	 * stopped: an exec from another thread now would end that one
	 * first, and the calls would fail with ESRCH. */
	if (pt_symbol(pid, s->lib, "heapprof_attach_stop") != s->f_stop) {
		pt_release(t);
		char exe[PATH_MAX] = "", link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);
		exe[n > 0 ? (size_t)n : 0] = 0;
		snprintf(msg, cap, "attach: process %d ran exec while attached (now %s): "
		         "the profile of the program before it is lost; nothing was "
		         "called in the new one", (int)pid, exe[0] ? exe : "?");
		return 1;
	}
	uint64_t at = pt_push(t, s->outabs, strlen(s->outabs) + 1);
	uint64_t dumped = 0, stopped = 0, hs = 0;
	int rc = 0;
	if (s->f_http_stop)
		rc = pt_call(t, s->f_http_stop, 0, 0, 0, &hs);
	if (rc == 0)
		rc = at ? pt_call(t, s->f_dump, at, 0, 0, &dumped) : -EFAULT;
	if (rc == 0)
		rc = pt_call(t, s->f_stop, 0, 0, 0, &stopped);
	if (rc != 0) {
		if (rc != -EFAULT && rc != -ESRCH)
			pt_release(t);
		snprintf(msg, cap, "attach: the detach's remote call failed in process "
		         "%d: %s", (int)pid, strerror(-rc));
		return 1;
	}
	int64_t pause_detach = pt_release(t);
	int drc = (int)(uint32_t)dumped;
	if (drc != 0) {
		snprintf(msg, cap, "attach: process %d could not write %s: %s "
		         "(sampling stopped)", (int)pid, s->outabs,
		         strerror(drc < 0 ? -drc : drc));
		return 1;
	}
	snprintf(msg, cap, "detached from %d (paused %.2f ms); wrote %s",
	         (int)pid, pause_detach / 1e6, s->outabs);
	return 0;
}

/* Waits for -d, a signal, `heapprof detach` (*req gets its connection) or
 * the end of the process (1). Signals are blocked but in ppoll. */
static int
wait_end(pid_t pid, double seconds, int lfd, const sigset_t *open_mask, int *req)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int gone = 0;
	while (!stop_sig && *req < 0) {
		int wait_ms = 1000;
		if (seconds >= 0) {
			struct timespec n;
			clock_gettime(CLOCK_MONOTONIC, &n);
			double left = seconds - ((n.tv_sec - t0.tv_sec) + (n.tv_nsec - t0.tv_nsec) / 1e9);
			if (left <= 0)
				break;
			wait_ms = left < 1 ? (int)(left * 1000) + 1 : 1000;
		}
		struct pollfd p[2];
		int n = 0, ip = -1, il = -1;
		if (pidfd >= 0) {
			ip = n;
			p[n++] = (struct pollfd){pidfd, POLLIN, 0};
		}
		if (lfd >= 0) {
			il = n;
			p[n++] = (struct pollfd){lfd, POLLIN, 0};
		}
		struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000};
		int r = ppoll(p, (nfds_t)n, &ts, open_mask);
		if (r > 0 && ip >= 0 && p[ip].revents) {
			gone = 1;
			break;
		}
		if (r > 0 && il >= 0 && p[il].revents)
			*req = as_accept(lfd);
		if (pidfd < 0 && kill(pid, 0) != 0 && errno == ESRCH) {
			gone = 1;
			break;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return gone;
}

int
cli_attach(int argc, char **argv)
{
	double seconds = -1;
	const char *out = NULL, *http = NULL;
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
		} else if (!strcmp(a, "--http") && v) {
			http = v;
			i++;
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
	if (refuse(pid) || (http && http_check(pid, http)))
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
	/* `heapprof detach PID`'s rendezvous (attach_session.c), before the
	 * target is touched: a name taken means another session */
	int lfd = as_listen(pid);
	if (lfd < 0) {
		if (lfd == -EADDRINUSE)
			cli_err("attach: another heapprof attach session runs for process "
			        "%d (`heapprof detach %d` ends it)", (int)pid, (int)pid);
		else
			cli_err("attach: the session's socket: %s", strerror(-lfd));
		return 1;
	}
	/* Ctrl-C, SIGTERM, SIGHUP: blocked from here, but in the wait, so
	 * that one arriving in the middle of a remote call waits for its end
	 * (a tracer gone mid-call would leave the thread in our call) and
	 * then ends the session as at its end: profile, detach */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigset_t ends, open_mask;
	sigemptyset(&ends);
	sigaddset(&ends, SIGINT);
	sigaddset(&ends, SIGTERM);
	sigaddset(&ends, SIGHUP);
	sigprocmask(SIG_BLOCK, &ends, &open_mask);
	sigdelset(&open_mask, SIGINT);
	sigdelset(&open_mask, SIGTERM);
	sigdelset(&open_mask, SIGHUP);

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
	session s = {pid, t, 0, 0, 0, outabs, real};
	uint64_t f_start = rc == 0 ? pt_symbol(pid, real, "heapprof_attach_start") : 0;
	s.f_dump = rc == 0 ? pt_symbol(pid, real, "heapprof_dump_file") : 0;
	s.f_stop = rc == 0 ? pt_symbol(pid, real, "heapprof_attach_stop") : 0;
	uint64_t f_http = http && rc == 0 ? pt_symbol(pid, real, "heapprof_attach_http") : 0;
	uint64_t f_http_stop = http && rc == 0
		? pt_symbol(pid, real, "heapprof_attach_http_stop") : 0;
	if (rc == 0 && (!f_start || !s.f_dump || !s.f_stop ||
	                (http && (!f_http || !f_http_stop))))
		rc = -ENOENT;
	/* the endpoint first: if ADDR cannot be bound nothing was routed */
	int port = 0;
	if (rc == 0 && http) {
		at = pt_push(t, http, strlen(http) + 1);
		pid_t was[1024], now[1024];
		int nw = task_list(pid, was, 1024);
		rc = at ? pt_call(t, f_http, at, 0, 0, &ret) : -EFAULT;
		port = (int)(uint32_t)ret;
		/* the endpoint's thread: new since the call (a thread the
		 * program made meanwhile is only never stopped, no harm) */
		int nn = task_list(pid, now, 1024);
		for (int i = 0; i < nn && nskip < 16; i++) {
			int old_one = 0;
			for (int k = 0; k < nw; k++)
				old_one |= was[k] == now[i];
			if (!old_one)
				skip_tids[nskip++] = now[i];
		}
		if (rc == 0 && port > 0)
			s.f_http_stop = f_http_stop;
	}
	if (rc == 0 && port >= 0)
		rc = pt_call(t, f_start, (uint64_t)rate, 0, 0, &ret);
	int started = (int)(uint32_t)ret;
	if (rc == 0 && port >= 0 && started != 0 && s.f_http_stop)
		rc = pt_call(t, s.f_http_stop, 0, 0, 0, &ret); /* the attach failed */
	if (rc != 0) {
		if (rc != -EFAULT && rc != -ESRCH)
			pt_release(t);
		cli_err("attach: the remote call failed in process %d: %s", (int)pid,
		        strerror(-rc));
		return 1;
	}
	int64_t pause_attach = pt_release(t);
	if (port < 0) {
		cli_err("attach: --http %s: %s in process %d%s: nothing was started "
		        "there (the profiler's library stays loaded, inert, as after "
		        "any detach)", http,
		        port == -EALREADY ? "another heapprof attach is attached"
		                          : strerror(-port), (int)pid,
		        port == -EADDRINUSE ? " (choose another port; 0: any free one)" : "");
		return 1;
	}
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
	        pause_attach / 1e6,
	        seconds < 0 ? "; Ctrl-C or `heapprof detach PID` to detach" : "");
	if (http) {
		char host[256];
		snprintf(host, sizeof(host), "%.*s", (int)(strrchr(http, ':') - http), http);
		fprintf(stderr, "heapprof: serving http://%s:%d/debug/pprof/ until the "
		        "detach\n", host, port);
	}

	/* ---- wait: -d, a signal, `heapprof detach`, or the end of the process */
	int req = -1;
	if (wait_end(pid, seconds, lfd, &open_mask, &req)) {
		cli_err("attach: process %d ended before the detach: no profile", (int)pid);
		if (req >= 0)
			as_reply(req, 0, "the process ended before the detach: no profile");
		return 1;
	}
	close(lfd); /* no second request: the name is free again */

	/* ---- detach */
	char msg[PATH_MAX + 256];
	rc = detach_from(&s, msg, sizeof(msg));
	if (rc == 0)
		fprintf(stderr, "heapprof: %s\n", msg);
	else
		cli_err("%s", msg);
	if (req >= 0)
		as_reply(req, rc == 0, msg);
	free(t);
	return rc;
}
