/*
 * driver.c: the multithreaded program of the sanitizer builds (make
 * sanitize: build/sanitize/{tsan,asan,ubsan}/driver; run by
 * tests/reliability/rel_sanitize.sh). It links the capture half (src/collect
 * and src/serve, with hp_entry.c and hp_boot.c in place of interpose.c and
 * bootstrap.c) and calls the profiler's entry points as hp_malloc, ...,
 * while the sanitizer keeps the process's malloc.
 *
 *   driver SECONDS THREADS
 *
 * Phase 1 (SECONDS of wall time): THREADS workers allocate, reallocate and
 * free blocks of mixed sizes with every entry point, and hand blocks to
 * each other through a mailbox (frees and reallocs across threads); a
 * dumper thread takes every kind of dump (pprof and text through a
 * writer, in-use, delta windows, files) and changes the sampling rate
 * (1, small, 0, large); an HTTP client (if HEAPPROF_HTTP is set) scrapes
 * the endpoint; a local server receives HEAPPROF_PUSH profiles (SAN_PUSH=1:
 * the driver binds a port and re-executes itself with HEAPPROF_PUSH set);
 * the main thread sends HEAPPROF_SIGNAL, starts short-lived allocating
 * threads, and forks (worker 0 too): each child dumps, allocates and
 * exits. Every block carries a pattern checked when it is
 * freed, every pprof output is validated (heapprof_pprof_check).
 *
 * Phase 2 (exactness): everything freed, the text dump shows nothing in
 * use; at rate 1, new threads allocate blocks that the main thread keeps:
 * the dump's in-use objects and bytes are exactly what the driver holds,
 * and nothing once the main thread has freed them.
 *
 * SAN_EXIT=1: exit() half a second into phase 1 instead, the exit dump
 * racing with the workers. SAN_TMPDIR: where dump files go.
 *
 * Exit status 0 if every check passed; the sanitizers' own exit codes
 * (set by the script) say whether they found anything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "driver.h"
#include "pprof_dec.h"
#include "serve.h"

/* The profiler's entry points (tests/sanitize/hp_entry.c). */
void *hp_malloc(size_t n);
void hp_free(void *p);
void *hp_calloc(size_t n, size_t size);
void *hp_realloc(void *p, size_t n);
void *hp_reallocarray(void *p, size_t n, size_t size);
int hp_posix_memalign(void **pp, size_t align, size_t n);
void *hp_aligned_alloc(size_t align, size_t n);
void *hp_memalign(size_t align, size_t n);
void *hp_valloc(size_t n);
void *hp_pvalloc(size_t n);
size_t hp_malloc_usable_size(void *p);

/* Forks by the main thread, and by worker 0 at the same time (two threads
 * in fork at once run their fork handlers at once: glibc 2.36 releases
 * its atfork lock around each handler). None under ASan: LLVM 14's ASan
 * does not hold its allocator's locks across fork, so a child that
 * allocates while another thread was inside malloc blocks for ever, with
 * or without the profiler, and often. LLVM 14's TSan does not hold its
 * user allocator's locks either (only its internal allocator's), which
 * could block a child (seen once): such a child fails the run with its
 * stack (driver_child.c), and the forks stay. UBSan uses glibc's
 * malloc, which holds its locks across fork. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NFORK 0
#endif
#endif
#ifndef NFORK
#define NFORK 3
#endif

_Atomic long errors;
_Atomic int stop;      /* phase 1 is over */
_Atomic int stop_push; /* the push server may stop */
_Atomic int pushes;    /* POSTs received with a body */

void
failf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "driver[%ld]: FAIL: ", (long)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	atomic_fetch_add(&errors, 1);
}

static uint64_t
rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* ---------------------------------------------------------------- blocks */

/* A block the driver holds: its first bytes (up to 64) and its last byte
 * are `tag`, checked when it is freed or reallocated. */
typedef struct blk {
	unsigned char *p;
	size_t n;
	unsigned char tag;
} blk;

static void
fill(blk *b)
{
	if (!b->n)
		return;
	memset(b->p, b->tag, b->n < 64 ? b->n : 64);
	b->p[b->n - 1] = b->tag;
}

/* The first min(n, keep, 64) bytes are still the tag, and the last byte
 * too for keep == SIZE_MAX (after a realloc only the head is known). */
static void
check(const blk *b, size_t keep, const char *what)
{
	size_t k = b->n < keep ? b->n : keep;
	size_t head = k < 64 ? k : 64;
	for (size_t i = 0; i < head; i++)
		if (b->p[i] != b->tag) {
			failf("%s: byte %zu of a %zu-byte block is %#x, not %#x",
			      what, i, b->n, b->p[i], b->tag);
			return;
		}
	if (keep == SIZE_MAX && k && b->p[k - 1] != b->tag)
		failf("%s: last byte of a %zu-byte block changed", what, b->n);
}

static size_t
rand_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;
	if (r < 5)
		return 0;
	if (r < 500)
		return 1 + rnd(s) % 128;
	if (r < 800)
		return 129 + rnd(s) % 1920;
	if (r < 950)
		return 2049 + rnd(s) % 63488;
	if (r < 995)
		return 65537 + rnd(s) % 250000;
	return 1 + rnd(s) % (2u << 20);
}

static void
blk_free(blk *b, const char *what)
{
	check(b, SIZE_MAX, what);
	hp_free(b->p);
	b->p = NULL;
}

/* A new block of about n bytes from one of the entry points. */
static int
blk_alloc(blk *b, size_t n, uint64_t *s, int kinds)
{
	static const size_t aligns[] = {8, 16, 32, 64, 256, 4096};
	void *p = NULL;
	int zero = 0;
	size_t align = 0;
	switch (rnd(s) % (uint64_t)kinds) {
	case 0:
	case 1:
		p = hp_malloc(n);
		break;
	case 2:
		p = hp_calloc(1 + n % 7, n / (1 + n % 7) + 1);
		n = (1 + n % 7) * (n / (1 + n % 7) + 1);
		zero = 1;
		break;
	case 3:
		align = aligns[rnd(s) % 6];
		if (hp_posix_memalign(&p, align, n) != 0)
			p = NULL;
		break;
	case 4:
		p = hp_realloc(NULL, n);
		break;
	case 5:
		align = aligns[1 + rnd(s) % 5];
		n = (n + align - 1) / align * align; /* C11: a multiple */
		p = hp_aligned_alloc(align, n);
		break;
	case 6:
		align = aligns[1 + rnd(s) % 5];
		p = hp_memalign(align, n);
		break;
	case 7:
		p = hp_reallocarray(NULL, 1 + n % 3, n / (1 + n % 3) + 1);
		n = (1 + n % 3) * (n / (1 + n % 3) + 1);
		break;
	case 8:
		align = 4096;
		p = rnd(s) & 1 ? hp_valloc(n) : hp_pvalloc(n);
		break;
	}
	if (!p) {
		failf("allocation of %zu bytes failed", n);
		return -1;
	}
	if (align && (uintptr_t)p % align)
		failf("%p is not aligned to %zu", p, align);
	if (hp_malloc_usable_size(p) < n)
		failf("usable size %zu < %zu", hp_malloc_usable_size(p), n);
	b->p = p;
	b->n = n;
	if (zero)
		for (size_t i = 0; i < n && i < 64; i++)
			if (b->p[i]) {
				failf("calloc'd block not zero at %zu", i);
				break;
			}
	b->tag = (unsigned char)(1 + rnd(s) % 255);
	fill(b);
	return 0;
}

/* TSan says a zero-byte block has a usable size of 1 but leaves that
 * byte's shadow as the previous block there left it (freed): the copy of
 * the usable size that moving a block into the range makes (slowpath.c)
 * then reads "freed" memory. A TSan quirk, not the profiler's: under TSan
 * zero-byte blocks are freed, not reallocated. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_REALLOC_OF_ZERO 1
#endif
#endif

static void
blk_realloc(blk *b, size_t n, uint64_t *s)
{
#ifdef NO_REALLOC_OF_ZERO
	if (b->n == 0) {
		blk_free(b, "free");
		return;
	}
#endif
	check(b, SIZE_MAX, "before realloc");
	unsigned char *q = hp_realloc(b->p, n);
	if (!q && n) {
		failf("realloc to %zu bytes failed", n);
		return;
	}
	size_t old = b->n;
	b->p = q;
	b->n = n;
	check(b, old, "after realloc");
	if (!q)
		return;
	b->tag = (unsigned char)(1 + rnd(s) % 255);
	fill(b);
}

/* Blocks in transit between threads (lock). */
#define MAILBOX 512
static pthread_mutex_t mail_lock = PTHREAD_MUTEX_INITIALIZER;
static blk mailbox[MAILBOX];
static int nmail;

static int
mail_put(blk *b)
{
	pthread_mutex_lock(&mail_lock);
	int ok = nmail < MAILBOX;
	if (ok)
		mailbox[nmail++] = *b;
	pthread_mutex_unlock(&mail_lock);
	return ok;
}

static int
mail_get(blk *b)
{
	pthread_mutex_lock(&mail_lock);
	int ok = nmail > 0;
	if (ok)
		*b = mailbox[--nmail];
	pthread_mutex_unlock(&mail_lock);
	return ok;
}

/* --------------------------------------------------------------- workers */

#define SLOTS 256
static void fork_and_wait(int k);
/* Not with SAN_EXIT=1: a fork racing with exit() meets a glibc 2.36 bug
 * (exit's __cxa_finalize unregisters the atfork handlers while
 * __run_prefork_handlers, its lock released, walks them: "Fatal glibc
 * error: array index 0 not less than array length 0"). Written before
 * the workers start. */
static int worker_forks = 1;
/* The workers stop by this time (monotonic seconds) even if the main
 * thread is late to say so (waiting for a slow child): every new block
 * size is a new bucket, and a phase 1 that ran for minutes made each dump
 * take seconds. Written before the workers start. */
static double workers_end;
static double now_s(void);

static void *
worker(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL * ((uintptr_t)arg + 1);
	blk held[SLOTS];
	memset(held, 0, sizeof(held));
	long ops = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		blk *b = &held[rnd(&s) % SLOTS];
		uint64_t r = rnd(&s) % 100;
		ops++;
		if (ops % 256 == 0 && now_s() > workers_end)
			break;
		if (arg == 0 && worker_forks && ops % 2000 == 0 && ops / 2000 <= NFORK)
			fork_and_wait(100 + (int)(ops / 2000));
		if (!b->p) {
			if (r < 15 && mail_get(b)) {
				/* another thread's block: realloc or keep it */
				if (r < 8)
					blk_realloc(b, rand_size(&s), &s);
				continue;
			}
			blk_alloc(b, rand_size(&s), &s, 9);
		} else if (r < 20) {
			blk_realloc(b, rand_size(&s), &s);
		} else if (r < 30) {
			if (!mail_put(b))
				blk_free(b, "free");
			b->p = NULL;
		} else {
			blk_free(b, "free");
		}
	}
	for (int i = 0; i < SLOTS; i++)
		if (held[i].p)
			blk_free(&held[i], "final free");
	return (void *)ops;
}

/* ---------------------------------------------------------------- dumper */

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static int
sbuf_write(void *arg, const void *d, size_t n)
{
	sbuf *b = arg;
	if (b->cap - b->n < n) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap - b->n < n)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
	return 0;
}

static void
pprof_ok(const char *what, int rc, sbuf *b)
{
	if (rc != 0)
		failf("%s: %s", what, heapprof_strerror(rc));
	else if ((rc = heapprof_pprof_check(b->p, b->n, 0)) != 0)
		failf("%s: the profile does not check: %s", what,
		      heapprof_strerror(rc));
	b->n = 0;
}

/* In-use objects and bytes from the legacy text header, raw sampled
 * counts ("heap profile: N: B [ AN: AB] @ heap_v2/RATE"). */
static int
text_inuse(long long *objs, long long *bytes)
{
	sbuf b = {0};
	int rc = heapprof_dump(sbuf_write, &b, 1);
	int ok = rc == 0 && sbuf_write(&b, "", 1) == 0 &&
	         sscanf(b.p, "heap profile: %lld: %lld [", objs, bytes) == 2;
	if (!ok)
		failf("text dump: rc %d, header '%.60s'", rc, b.p ? b.p : "");
	free(b.p);
	return ok ? 0 : -1;
}

/* In-use objects and bytes summed over the samples of the pprof in-use
 * profile (unsampled values, equal to the raw counts at rate 1). */
static int
pprof_inuse(long long *objs, long long *bytes)
{
	sbuf b = {0};
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int rc = heapprof_dump_profile(sbuf_write, &b, HEAPPROF_PROFILE_INUSE);
	if (rc == 0)
		rc = heapprof__pprof_dec_open(&d, b.p, b.n);
	long io = -1, is = -1;
	for (size_t i = 0; rc == 0 && i < d.ntypes; i++) {
		if (heapprof__pprof_string_eq(&d, d.types[i].type, "inuse_objects"))
			io = (long)i;
		if (heapprof__pprof_string_eq(&d, d.types[i].type, "inuse_space"))
			is = (long)i;
	}
	*objs = *bytes = 0;
	if (rc == 0 && (io < 0 || is < 0))
		rc = HEAPPROF_ENOTHEAP;
	pprof_sample_iter it;
	pprof_sample sm;
	if (rc == 0)
		heapprof__pprof_samples(&d, &it);
	while (rc == 0 && (rc = heapprof__pprof_sample_next(&d, &it, &sm)) == 0) {
		*objs += sm.values[io];
		*bytes += sm.values[is];
	}
	if (rc == 1)
		rc = 0;
	if (rc != 0)
		failf("in-use profile: %s", heapprof_strerror(rc));
	heapprof__pprof_dec_free(&d);
	free(b.p);
	return rc;
}

static char tmpdir[3000];

static void *
dumper(void *arg)
{
	(void)arg;
	static const uint64_t rates[] = {1, 64, 1, 4096, 0, 65536, 1, 512};
	hp_tls *t = &heapprof__tls;
	sbuf b = {0};
	hp_baseline base;
	memset(&base, 0, sizeof(base));
	char path[3100];
	for (unsigned i = 0; !atomic_load(&stop); i++) {
		pprof_ok("heapprof_dump", heapprof_dump(sbuf_write, &b, 0), &b);
		int rc = heapprof_dump(sbuf_write, &b, 1);
		if (rc != 0 || b.n < 14 || memcmp(b.p, "heap profile: ", 14))
			failf("text dump: rc %d", rc);
		b.n = 0;
		pprof_ok("in-use profile", heapprof_dump_profile(
		             sbuf_write, &b, HEAPPROF_PROFILE_INUSE), &b);
		pprof_ok("heap profile", heapprof_dump_profile(
		             sbuf_write, &b, HEAPPROF_PROFILE_HEAP), &b);
		/* Consecutive delta windows, as the periodic files and push
		 * take them (the caller's busy flag set, as theirs is). */
		hp_snap_opts o;
		memset(&o, 0, sizeof(o));
		o.kind = i % 2 ? HP_SNAP_DELTA : HP_SNAP_DELTA_ALLOC;
		o.base = &base;
		o.next_base = &base;
		t->busy++;
		rc = heapprof__serve_snapshot(sbuf_write, &b, &o);
		t->busy--;
		pprof_ok("delta snapshot", rc, &b);
		if (i % 4 == 0) {
			snprintf(path, sizeof(path), "%s/api.pb.gz", tmpdir);
			if ((rc = heapprof_dump_file(path)) != 0)
				failf("heapprof_dump_file: %s", heapprof_strerror(rc));
		}
		uint64_t r = rates[i % (sizeof(rates) / sizeof(rates[0]))];
		if (heapprof_set_sample_rate(r) != 0 || heapprof_sample_rate() != r)
			failf("heapprof_set_sample_rate(%" PRIu64 ")", r);
		(void)heapprof_active();
	}
	heapprof__baseline_free(&base);
	free(b.p);
	return NULL;
}

/* ------------------------------------------------------------------ fork */

/* SAN_CHILD_HANG=K: child K blocks for ever instead (the check that a
 * stuck child ends the run with its stack, not a hang). */
static int child_hang = -1;

/* In a child forked while every other thread allocates and dumps: dump,
 * allocate, dump to a file, exit. Its stderr is a file of its own, which
 * the parent copies to its stderr (driver_child.c). */
static void
child(int k, const char *errpath)
{
	child_stderr(errpath);
	while (k == child_hang)
		pause();
	atomic_store(&errors, 0); /* the parent's, if any, are counted there */
	sbuf b = {0};
	pprof_ok("child dump", heapprof_dump(sbuf_write, &b, 0), &b);
	uint64_t s = 12345 + (uint64_t)k;
	blk bl[64];
	for (int i = 0; i < 64; i++)
		blk_alloc(&bl[i], rand_size(&s), &s, 9);
	for (int i = 0; i < 64; i++)
		blk_free(&bl[i], "child free");
	char path[3100];
	snprintf(path, sizeof(path), "%s/child.%d.pb.gz", tmpdir, k);
	int rc = heapprof_dump_file(path);
	if (rc != 0)
		failf("child dump file: %s", heapprof_strerror(rc));
	free(b.p);
	_exit(atomic_load(&errors) ? 1 : 0);
}

/* The wait is bounded: a child stuck for ever (a lock inherited locked)
 * ends with its stack printed, not with the run hanging. */
static void
fork_and_wait(int k)
{
	char errpath[3100];
	snprintf(errpath, sizeof(errpath), "%s/child.%d.err", tmpdir, k);
	pid_t c = fork();
	if (c == 0)
		child(k, errpath);
	if (c < 0)
		failf("fork: %s", strerror(errno));
	else
		child_wait(c, k, errpath);
}

/* ----------------------------------------------------------------- phase 2 */

/* At rate 1, each thread allocates PER blocks and hands them over. */
#define PER 300
static void *
holder(void *arg)
{
	blk *out = arg;
	uint64_t s = 0xabcdef12345ULL ^ (uintptr_t)arg;
	for (int i = 0; i < PER; i++) {
		size_t n = 1 + rnd(&s) % 5000;
		/* malloc, calloc, posix_memalign, realloc(NULL), aligned_alloc,
		 * memalign, reallocarray: no valloc (its size is rounded) */
		blk_alloc(&out[i], n, &s, 8);
		if (i % 3 == 0) { /* churn that leaves nothing behind */
			blk tmp;
			blk_alloc(&tmp, n, &s, 8);
			blk_realloc(&tmp, n + 100, &s);
			blk_free(&tmp, "phase 2 free");
		}
	}
	return NULL;
}

/* A short-lived thread of phase 1: its first allocations (a new thread's
 * sampler state, its slot shard chosen), some left in the mailbox for the
 * workers to free. */
static void *
short_thread(void *arg)
{
	uint64_t s = 0x51ed270b27f3c5e1ULL ^ (uintptr_t)arg;
	for (int i = 0; i < 50; i++) {
		blk b;
		if (blk_alloc(&b, rand_size(&s), &s, 9) != 0)
			continue;
		if (i % 5 || !mail_put(&b))
			blk_free(&b, "short thread free");
	}
	return NULL;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "classify"))
		return child_classify_selftest();
	if (argc < 3) {
		fprintf(stderr, "usage: driver SECONDS THREADS | driver classify\n");
		return 2;
	}
	const char *ps = getenv("SAN_PUSH");
	if (ps && !strcmp(ps, "1") && !getenv("SAN_PUSH_FD"))
		reexec_for_push(argv);
	double secs = atof(argv[1]);
	int nt = atoi(argv[2]);
	if (nt < 1 || nt > 64)
		nt = 4;
	const char *td = getenv("SAN_TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s", td ? td : "/tmp");
	if (!heapprof_active()) {
		fprintf(stderr, "driver: the profiler is not active\n");
		return 2;
	}
	/* The profiler forwards to the sanitizer's malloc (hp_boot.c), or
	 * the sanitizer would not see the program's blocks. */
	if (heapprof__next.malloc != malloc || heapprof__next.free != free) {
		fprintf(stderr, "driver: the next allocator is not the process's "
		                "malloc (did bootstrap.c stop using dlsym?)\n");
		return 2;
	}
	const char *hv = getenv("SAN_CHILD_HANG");
	child_hang = hv && *hv ? atoi(hv) : -1;
	const char *ex = getenv("SAN_EXIT");
	int exit_early = ex && !strcmp(ex, "1");
	worker_forks = !exit_early;
	pthread_t th[64], dth, hth, pth;
	const char *pfd = getenv("SAN_PUSH_FD");
	if (pfd)
		pthread_create(&pth, NULL, push_server, (void *)(intptr_t)atoi(pfd));
	workers_end = now_s() + secs + 10;
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	pthread_create(&dth, NULL, dumper, NULL);
	int port = heapprof__http_port();
	if (port > 0)
		pthread_create(&hth, NULL, http_client, (void *)(intptr_t)port);

	/* The main thread: a signal dump now and then, and NFORK forks. */
	/* SAN_EXIT=1: exit() in the middle of phase 1, the exit dump racing
	 * with the workers (no checks but the sanitizer's). */
	if (exit_early) {
		struct timespec ts = {0, 500 * 1000 * 1000};
		nanosleep(&ts, NULL);
		exit(atomic_load(&errors) ? 1 : 0);
	}
	double t0 = now_s();
	int forks = 0;
	while (now_s() - t0 < secs || forks < NFORK) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		if (heapprof__cfg.signal > 0)
			kill(getpid(), heapprof__cfg.signal);
		pthread_t sh[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&sh[i], NULL, short_thread,
			               (void *)(intptr_t)(forks * 4 + i + 1));
		for (int i = 0; i < 4; i++)
			pthread_join(sh[i], NULL);
		if (forks < NFORK && now_s() - t0 > secs * (forks + 1) / 4)
			fork_and_wait(forks++);
	}
	atomic_store(&stop, 1);
	long ops = 0;
	for (int i = 0; i < nt; i++) {
		void *r;
		pthread_join(th[i], &r);
		ops += (long)r;
	}
	pthread_join(dth, NULL);
	if (port > 0)
		pthread_join(hth, NULL);
	blk b;
	while (mail_get(&b))
		blk_free(&b, "mailbox free");

	/* Phase 2: nothing sampled is live any more, whatever the rates. */
	long long objs, bytes;
	if (text_inuse(&objs, &bytes) == 0 && (objs || bytes))
		failf("everything freed, yet %lld objects, %lld bytes in use",
		      objs, bytes);
	heapprof_set_sample_rate(1);
	static blk kept[64][PER];
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, holder, kept[i]);
	long long want_o = 0, want_b = 0;
	for (int i = 0; i < nt; i++) {
		pthread_join(th[i], NULL);
		for (int j = 0; j < PER; j++)
			if (kept[i][j].p)
				want_o++, want_b += (long long)kept[i][j].n;
	}
	if (text_inuse(&objs, &bytes) == 0 && (objs != want_o || bytes != want_b))
		failf("at rate 1: %lld objects, %lld bytes in use; the driver "
		      "holds %lld, %lld (%" PRIu64 " samples dropped)",
		      objs, bytes, want_o, want_b,
		      (uint64_t)atomic_load(&heapprof__dropped_samples));
	if (pprof_inuse(&objs, &bytes) == 0 && (objs != want_o || bytes != want_b))
		failf("at rate 1, pprof: %lld objects, %lld bytes in use; the "
		      "driver holds %lld, %lld", objs, bytes, want_o, want_b);
	for (int i = 0; i < nt; i++)
		for (int j = 0; j < PER; j++)
			if (kept[i][j].p)
				blk_free(&kept[i][j], "phase 2 final free");
	if (text_inuse(&objs, &bytes) == 0 && (objs || bytes))
		failf("at rate 1, all freed: %lld objects, %lld bytes in use",
		      objs, bytes);

	/* Push: at least one profile arrives (every second when all is
	 * well; two minutes is for a machine that is very loaded). */
	if (pfd) {
		for (int i = 0; i < 120 && !atomic_load(&pushes); i++)
			sleep(1);
		if (!atomic_load(&pushes))
			failf("no profile pushed in 2 minutes");
		atomic_store(&stop_push, 1);
		pthread_join(pth, NULL);
	}
	long e = atomic_load(&errors);
	printf("driver: %d threads, %ld ops, %d forks, %d pushes, %lld objects "
	       "checked at rate 1: %s\n", nt, ops, forks,
	       atomic_load(&pushes), want_o, e ? "FAILED" : "ok");
	return e ? 1 : 0;
}
