/*
 * warn.c: the profiler's own lines (warnings) and where they go.
 *
 * The profiler writes to the program's descriptors only what the user
 * asked for (issue 29). A warning of start-up (the constructor's: an
 * unknown HEAPPROF_ variable, another allocator first) is printed at once,
 * before the program's own output begins. One that comes up while the
 * program runs (a periodic dump that cannot be written, a free() of an
 * invalid pointer in the profiler's range, an abandoned range lock, the
 * endpoint's socket closed by the program) is HELD in a fixed buffer of
 * the profiler's own memory and printed once, when the process ends: at
 * exit (init.c's atexit handler), at _exit and at the SIGTERM/SIGINT
 * endings (ending.c). Lines lost there: a process killed by another
 * signal (SIGKILL, abort), one that execs (the image is replaced; exec is
 * not interposed), and the static library's _exit (not seen).
 * HEAPPROF_LOG=path sends every line to that file instead, written when it
 * comes up (open, write, close: no descriptor kept), never to the
 * program's descriptors: for servers that never exit, and for the lines
 * lost above. HEAPPROF_QUIET=1 silences stderr.
 *
 * Holding is lock-free and async-signal-safe (a warning may come from
 * inside free(), from a signal handler, from any thread): a line reserves
 * its place with a compare-and-swap, copies its text, then marks itself
 * complete. No allocation, no system call, no lock. Equal lines are
 * kept once; a line that does not fit is counted, and the count printed.
 *
 * A fork child inherits the buffer: its parent prints those lines, so the
 * child starts with an empty one (heapprof__warn_atfork_child).
 *
 * Where stderr lines go: the stderr the process started with. A program
 * may close it (coreutils close stdout and stderr in an atexit handler,
 * before the exit profile is written), and the next file it opens then
 * gets fd 2: a warning must never land in that file. So fd 2 is used only
 * while it is still the file it was at start (device and inode, noted at
 * init); if it is not, the start's stderr is reopened by name when it has
 * one (a terminal, a regular file: /proc/self/fd/2 named it at init),
 * written, and closed again, its identity checked first. No descriptor is
 * kept open: a copy of a pipe would hold back the reader's end of file
 * (the shell of `x=$(daemon)`, ssh). A pipe or socket that was closed
 * loses the line. A daemon that reopened fd 2 on its own log file does not
 * get them there either: that cannot be told from the closed-stderr case
 * above, where a line would corrupt the program's output (HEAPPROF_LOG).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collect.h"

/* ------------------------------------------------------------ where to */

static int err_noted;      /* init looked at fd 2 */
static int err_open;       /* fd 2 was open at start */
static dev_t err_dev;
static ino_t err_ino;
static char err_path[256]; /* its name, if it can be reopened; else "" */

/* fstat(2) as the system call: glibc's fstat is fstatat(fd, "", ...),
 * whose empty path the kernel copies in from libc's pages (two page
 * faults in every process, ~25 us on the VMs measured). */
static int
fd_stat(int fd, struct stat *st)
{
#ifdef SYS_fstat /* the kernel's struct stat is glibc's on x86_64 */
	return syscall(SYS_fstat, fd, st) == 0 ? 0 : -1;
#else
	return fstat(fd, st);
#endif
}

/* Written once by init, before any other thread (before that, fd 2 as it
 * is). */
HP_RARE void
heapprof__warn_note_stderr(void)
{
	struct stat st;
	err_noted = 1;
	if (fd_stat(2, &st) != 0)
		return;
	err_open = 1;
	err_dev = st.st_dev;
	err_ino = st.st_ino;
	if (!S_ISCHR(st.st_mode) && !S_ISREG(st.st_mode))
		return;
	/* The name built on the stack from immediates: a string literal, even
	 * copied to the stack, is read from the library's constants, one more
	 * page fault in every process (the barrier keeps the compiler from
	 * folding the two words back into one). */
	uint64_t w[2] = {0x65732f636f72702fULL,  /* "/proc/se" */
	                 0x00322f64662f666cULL}; /* "lf/fd/2\0" */
	__asm__("" : "+r"(w[0]), "+r"(w[1]));
	char fd2[16];
	memcpy(fd2, w, sizeof(fd2));
	ssize_t n = readlink(fd2, err_path, sizeof(err_path) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(err_path) - 1 || err_path[0] != '/')
		n = 0;
	err_path[n] = 0;
}

static int
same_file(int fd)
{
	struct stat st;
	return fd_stat(fd, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino;
}

/* "heapprof[PID]: msg" with one writev(2), to HEAPPROF_LOG or to the
 * start's stderr. errno is preserved: the warning paths sit between a
 * failing call and the code that reads its errno, or inside free(), which
 * must not change errno; a write to a closed or full stderr (EBADF,
 * ENOSPC, EPIPE) would otherwise leak out. */
/* 1 once a seccomp filter is in force (heapprof__warn_seal): no line is
 * written any more, since open, fstat and writev may be what the filter
 * forbids. */
static _Atomic int sealed;

HP_RARE static void
say(const char *msg, size_t len)
{
	const char *log = heapprof__cfg.log;
	if (!log[0] && heapprof__cfg.quiet)
		return;
	if (atomic_load_explicit(&sealed, memory_order_relaxed))
		return;
	int saved = errno;
	/* open and writev are cancellation points; free(), which may warn,
	 * is not: a pending cancel waits for the program's next one. */
	int cs = PTHREAD_CANCEL_ENABLE, ignored;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	char pre[48];
	int n = snprintf(pre, sizeof(pre), "heapprof[%ld]: ", (long)getpid());
	struct iovec iov[3] = {{pre, n > 0 ? (size_t)n : 0},
	                       {(void *)msg, len},
	                       {"\n", 1}};
	int fd = 2, opened = 0;
	if (log[0]) {
		fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_NOCTTY | O_NONBLOCK |
		                   O_CLOEXEC, 0666);
		opened = fd >= 0;
	} else if (err_noted && !(err_open && same_file(2))) {
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
	pthread_setcancelstate(cs, &ignored);
	errno = saved;
}

/* ------------------------------------------------------------ held lines */

/*
 * The buffer: the texts one after the other in held_text, each record's
 * place in held_rec. held_top packs the bytes used (low 32 bits) and the
 * records used (high 32): a writer reserves both with one CAS, fills its
 * record and sets `complete` last (release); a reader (a flush, or a
 * writer looking for its twin) skips records not complete yet. held_out:
 * the records a flush has taken (each is printed by the one flush that
 * advanced held_out past it). All in HP_BIG_BSS: a process that never
 * holds a line never touches those pages.
 */
#define HELD_BYTES 8192
#define HELD_RECS 64
#define HELD_LINE 1024 /* longer lines are cut */
static char held_text[HELD_BYTES] HP_BIG_BSS;
static struct {
	uint32_t at, len;
	_Atomic uint32_t complete;
} held_rec[HELD_RECS] HP_BIG_BSS;
static _Atomic uint64_t held_top;  /* records << 32 | bytes reserved */
static _Atomic uint32_t held_out;  /* records taken by a flush */
static _Atomic uint32_t held_lost; /* lines that did not fit */
/* 1 once the process has begun to end (the final flush): lines print at
 * once from then on. */
static _Atomic int held_ending;

/* Whether a complete record before record `upto` holds this text. */
HP_RARE static int
held_has(const char *msg, size_t len, uint32_t upto)
{
	for (uint32_t i = 0; i < upto; i++) {
		if (!atomic_load_explicit(&held_rec[i].complete, memory_order_acquire))
			continue;
		if (held_rec[i].len == len &&
		    memcmp(&held_text[held_rec[i].at], msg, len) == 0)
			return 1;
	}
	return 0;
}

HP_RARE static void
hold(const char *msg)
{
	size_t len = strlen(msg);
	if (len > HELD_LINE)
		len = HELD_LINE;
	uint64_t top = atomic_load(&held_top), next;
	uint32_t nrec, at;
	if (held_has(msg, len, (uint32_t)(top >> 32)))
		return;
	do {
		nrec = (uint32_t)(top >> 32);
		at = (uint32_t)top;
		if (nrec >= HELD_RECS || at + len > HELD_BYTES) {
			atomic_fetch_add(&held_lost, 1);
			return;
		}
		next = (uint64_t)(nrec + 1) << 32 | (at + (uint32_t)len);
	} while (!atomic_compare_exchange_weak(&held_top, &top, next));
	memcpy(&held_text[at], msg, len);
	held_rec[nrec].at = at;
	held_rec[nrec].len = (uint32_t)len;
	atomic_store_explicit(&held_rec[nrec].complete, 1, memory_order_release);
}

/* Prints the held lines no flush has printed yet, each once (equal lines
 * once), and how many did not fit. `final`: the process is ending; lines
 * from now on print at once. */
HP_RARE void
heapprof__warn_flush(int final)
{
	if (final)
		atomic_store(&held_ending, 1);
	uint32_t to = (uint32_t)(atomic_load(&held_top) >> 32);
	uint32_t from = atomic_load(&held_out);
	do {
		if (from >= to)
			goto lost;
	} while (!atomic_compare_exchange_weak(&held_out, &from, to));
	for (uint32_t i = from; i < to; i++) {
		if (!atomic_load_explicit(&held_rec[i].complete, memory_order_acquire))
			continue; /* a writer interrupted by this ending: lost */
		const char *text = &held_text[held_rec[i].at];
		if (!held_has(text, held_rec[i].len, i))
			say(text, held_rec[i].len);
	}
lost:;
	uint32_t lost = atomic_exchange(&held_lost, 0);
	if (lost) {
		char msg[120];
		int n = snprintf(msg, sizeof(msg), "%u more warning%s not kept (the "
		                 "buffer of held warnings was full)", lost,
		                 lost == 1 ? " was" : "s were");
		say(msg, n > 0 ? (size_t)n : 0);
	}
}

/* A seccomp filter is going in (sandbox.c): the held lines and the one
 * saying so are printed now, while stderr can still be written; from then
 * on nothing is (no line, no HEAPPROF_LOG write). */
HP_RARE void
heapprof__warn_seal(void)
{
	heapprof__warn_flush(0);
	atomic_store(&sealed, 1);
}

/* Whether a flush would print anything (no system call: the _exit of
 * every fork child asks). */
HP_RARE int
heapprof__warn_held(void)
{
	return (uint32_t)(atomic_load(&held_top) >> 32) > atomic_load(&held_out) ||
	       atomic_load(&held_lost) != 0;
}

/* A fork child: the lines its parent holds are the parent's to print. */
HP_RARE void
heapprof__warn_atfork_child(void)
{
	/* Written only when something was held: an unwritten page stays
	 * shared with the parent (no copy in every child). */
	uint32_t nrec = (uint32_t)(atomic_load_explicit(&held_top,
	                                                  memory_order_relaxed) >> 32);
	if (nrec) {
		for (uint32_t i = 0; i < nrec && i < HELD_RECS; i++)
			atomic_store_explicit(&held_rec[i].complete, 0,
			                      memory_order_relaxed);
		atomic_store(&held_top, 0);
		atomic_store(&held_out, 0);
	}
	if (atomic_load_explicit(&held_lost, memory_order_relaxed))
		atomic_store(&held_lost, 0);
	/* A child forked by an ending (an atexit handler that forks) runs
	 * the program's code again: it holds its lines. */
	if (atomic_load_explicit(&held_ending, memory_order_relaxed))
		atomic_store(&held_ending, 0);
}

/* A line now (start-up, an ending, HEAPPROF_LOG), or held until the end. */
HP_RARE static void
emit(const char *msg)
{
	if (heapprof__cfg.log[0] ||
	    !atomic_load_explicit(&heapprof__ready, memory_order_acquire) ||
	    atomic_load(&held_ending)) {
		say(msg, strlen(msg));
		return;
	}
	if (!heapprof__cfg.quiet)
		hold(msg);
}

/* ------------------------------------------------------------ the API */

#define NWARN 32
static const char *_Atomic warned[NWARN]; /* messages already printed */

HP_RARE void
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
	emit(msg);
}

/* A warning whose text is built at run time: printed as is (callers make
 * sure it happens once; a held one is kept once anyway). */
HP_RARE void
heapprof__warn_dup(const char *msg)
{
	emit(msg);
}
