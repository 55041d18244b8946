/*
 * customlabels.c: labels from Polar Signals' custom labels (the older form
 * of the OpenTelemetry thread context, issue 33), with no code in the
 * program: where a loaded object exports the thread-local variable and
 * custom_labels_abi_version (4 bytes) in its .dynsym, a sample copies the
 * thread's labels into a label set, each key and value as they are.
 *
 * The ABI (custom-labels-v0.md and -v1.md of github.com/polarsignals/
 * custom-labels): a string is {size_t len; const unsigned char *buf}
 * (buf NULL: absent), a label {string key, value}, and the thread's set
 * v0 (abi_version 0): the TLS variable custom_labels_thread_local_data
 *    is itself {label *storage; size_t count};
 * v1 (abi_version 1): the TLS variable custom_labels_current_set points to
 *    {label *storage; size_t count; size_t capacity} (NULL: no set).
 * A label whose key.buf is NULL is ignored, and so is a key seen before
 * in the array (the first wins); value.buf is never NULL. Both are read.
 *
 * Validation: a sample reads at most CL_MAX labels and CL_TEXT bytes of
 * text; storage and every string must lie inside a readable mapping of
 * the process (below) before a byte of it is read; a NUL inside a key or
 * value, an empty key, a NULL value, a count or length past the bounds,
 * or a record that differs when read again after the copy (rewritten
 * while read): no labels. The library itself never leaves a pointer to
 * freed memory visible (it orders its stores with barriers), but nothing
 * else stops a program from writing garbage there.
 *
 * The readable mappings: a sorted table of the process's readable ranges
 * (/proc/self/maps, adjacent ranges merged), read once when the variable
 * is found (outside malloc) and read again by a sample that finds label
 * memory outside it (memory mapped since: a thread's new malloc arena):
 * no system call on the sampled path while the labels stay in memory the
 * table knows, which is the steady state. A range unmapped after the
 * table was read stays in it until the next re-read: a garbage pointer
 * into exactly such a range would fault; that is the residual risk, and
 * the price of no system call per sample (mincore or process_vm_readv
 * would be exact but cost one or more calls on every sampled allocation;
 * a SIGSEGV handler would change the program's own signal handling).
 * A pointer still outside after a re-read is remembered (`bad`), so a
 * garbage record costs one re-read, not one per sample.
 *
 * Precedence (labels.c): the thread's C API set, else the OpenTelemetry
 * thread context's attributes (otel.c), else custom labels.
 *
 * Shared state: `off`/`version` are set once before sampling begins (the
 * constructor) or published by the release store of `found`. The table
 * is written only by the holder of `rebuilding` (a flag taken with a
 * test-and-set: a sample that does not get it gives no labels rather than
 * wait), under the sequence counter `seq` (odd while written); readers
 * search it and check `seq` again, so a torn search is thrown away. `bad`
 * is a hint (a relaxed atomic).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect.h"
#include "customlabels.h"
#include "labels.h"
#include "tlssym.h"

#define CL_MAX 16      /* labels read at most */
#define CL_KEY_MAX 128 /* bytes of a key */
#define CL_TEXT 1024   /* bytes of keys and values, with their NULs */
#define CL_RANGES 1024 /* readable ranges the first table holds */

typedef struct {
	size_t len;
	const unsigned char *buf;
} cl_string;
typedef struct {
	cl_string key, value;
} cl_label;

static intptr_t off;
static int version; /* 0 or 1: the ABI */
static _Atomic int found;

/* ------------------------------------------------ the readable mappings */

/* The table: cap ranges' starts and ends. The first is static; a
 * process with more readable ranges (a JVM, thousands of dlopened
 * objects) gets a bigger one, mapped (as glibc's malloc maps memory),
 * published with a release store and never unmapped (a reader may still
 * be searching the old one): all of them together are less than twice
 * the last. Before, the table kept the lowest CL_RANGES ranges and
 * refused label memory above them, with a re-read of the maps per sample
 * (otel_review.ranges). */
typedef struct {
	size_t cap;
	uintptr_t *lo, *hi;
} cl_table;
/* (HP_BIG_BSS: 16 KiB a process without custom labels never touches,
 * kept off the pages of the small state that every process touches) */
HP_BIG_BSS static uintptr_t lo0[CL_RANGES], hi0[CL_RANGES];
static cl_table tab0 = {CL_RANGES, lo0, hi0};
static _Atomic(cl_table *) tab; /* NULL: tab0 */
static _Atomic size_t nranges;   /* at most the table's cap */
static _Atomic unsigned seq;
static atomic_flag rebuilding = ATOMIC_FLAG_INIT;
static _Atomic uintptr_t bad; /* a page still unreadable after a re-read */

static cl_table *
table(void)
{
	cl_table *t = atomic_load_explicit(&tab, memory_order_acquire);
	return t ? t : &tab0;
}

/* A table for at least `want` ranges, mapped; NULL if it cannot be. */
HP_RARE static cl_table *
table_new(size_t want)
{
	size_t cap = CL_RANGES;
	while (cap < 2 * want && cap < ((size_t)1 << 24))
		cap *= 2;
	size_t len = sizeof(cl_table) + 2 * cap * sizeof(uintptr_t);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	cl_table *t = m;
	t->cap = cap;
	t->lo = (uintptr_t *)(t + 1);
	t->hi = t->lo + cap;
	return t;
}

/* Parses the maps at fd into t: the start, end and first permission
 * character of each line, a byte at a time through a buffer; no
 * allocation, no stdio. Returns the number of (merged) readable ranges,
 * which may be more than t holds. */
HP_RARE static size_t
maps_parse(int fd, cl_table *t)
{
	HP_BIG_BSS static char buf[4096];
	size_t n = 0;
	uintptr_t last = 0; /* the end of the last readable range */
	int field = 0; /* 0: start, 1: end, 2: permissions, 3: the rest */
	int r = 0, vvar = 0; /* readable; "[vvar" seen so far (its pages
	                      * may raise SIGBUS when read) */
	uintptr_t a = 0, b = 0;
	ssize_t got;
	while ((got = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			char c = buf[i];
			if (c == '\n') {
				if (r && vvar < 5 && b > a) {
					if (n && last == a) { /* adjacent: merged */
						if (n <= t->cap)
							t->hi[n - 1] = b;
					} else {
						if (n < t->cap) {
							t->lo[n] = a;
							t->hi[n] = b;
						}
						n++;
					}
					last = b;
				}
				field = r = vvar = 0;
				a = b = 0;
				continue;
			}
			if (field == 0 || field == 1) {
				int d = c >= '0' && c <= '9'   ? c - '0'
				        : c >= 'a' && c <= 'f' ? c - 'a' + 10
				                               : -1;
				if (d >= 0) {
					if (field == 0)
						a = a << 4 | (uintptr_t)d;
					else
						b = b << 4 | (uintptr_t)d;
				} else {
					field++;
				}
			} else if (field == 2) {
				field = 3;
				r = c == 'r';
			} else if (vvar < 5) {
				vvar = c == "[vvar"[vvar] ? vvar + 1 : c == '[';
			}
		}
	}
	return n;
}

/* Reads /proc/self/maps into the table, a bigger one if it does not hold
 * them all. The caller holds `rebuilding`. */
HP_RARE static void
maps_read(void)
{
	int saved = errno;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errno = saved;
		return;
	}
	atomic_fetch_add_explicit(&seq, 1, memory_order_acq_rel); /* odd */
	cl_table *t = table();
	size_t n = maps_parse(fd, t);
	for (int tries = 0; n > t->cap && tries < 3; tries++) {
		cl_table *big = table_new(n);
		if (!big || lseek(fd, 0, SEEK_SET) != 0)
			break; /* the lowest t->cap ranges, as they are */
		atomic_store_explicit(&tab, big, memory_order_release);
		t = big;
		n = maps_parse(fd, t);
	}
	close(fd);
	atomic_store_explicit(&nranges, n < t->cap ? n : t->cap,
	                      memory_order_relaxed);
	atomic_fetch_add_explicit(&seq, 1, memory_order_release); /* even */
	errno = saved;
}

/* Whether [p, p + len) lies in one readable range of the table. */
static int
in_table(uintptr_t p, size_t len)
{
	unsigned s = atomic_load_explicit(&seq, memory_order_acquire);
	if (s & 1)
		return 0;
	const cl_table *t = table();
	size_t a = 0, b = atomic_load_explicit(&nranges, memory_order_relaxed);
	if (b > t->cap)
		b = t->cap; /* a table replaced meanwhile: the check below */
	while (a < b) { /* the last range starting at or below p */
		size_t m = (a + b) / 2;
		if (t->lo[m] <= p)
			a = m + 1;
		else
			b = m;
	}
	int ok = a > 0 && p + len <= t->hi[a - 1];
	atomic_thread_fence(memory_order_acquire);
	return ok && atomic_load_explicit(&seq, memory_order_relaxed) == s;
}

/* Whether [p, p + len) may be read: in the table, or in it once the
 * table is read again (at most once per unreadable page). */
static int
readable(const void *ptr, size_t len)
{
	uintptr_t p = (uintptr_t)ptr;
	if (p < 4096 || p + len < p || p + len > ((uintptr_t)1 << 47))
		return 0;
	if (in_table(p, len))
		return 1;
	uintptr_t page = p & ~(uintptr_t)4095;
	if (atomic_load_explicit(&bad, memory_order_relaxed) == page)
		return 0;
	if (atomic_flag_test_and_set_explicit(&rebuilding, memory_order_acquire))
		return 0; /* another thread is reading it: no labels now */
	maps_read();
	atomic_flag_clear_explicit(&rebuilding, memory_order_release);
	if (in_table(p, len))
		return 1;
	atomic_store_explicit(&bad, page, memory_order_relaxed);
	return 0;
}

/* ------------------------------------------------------------ the labels */

/* The set {storage, count} of this thread now, or NULL. */
static int
current(const cl_label **storage, size_t *count)
{
	uintptr_t var = heapprof__thread_pointer() + (uintptr_t)off;
	const void *set = (const void *)var; /* v0: the set is the variable */
	if (version == 1) {
		memcpy(&set, (const void *)var, sizeof(set));
		if (!set)
			return 0;
		if (!readable(set, 2 * sizeof(size_t)))
			return -1;
	}
	memcpy(storage, set, sizeof(*storage));
	memcpy(count, (const char *)set + sizeof(*storage), sizeof(*count));
	return *count != 0;
}

const heapprof_labels *
heapprof__customlabels_labels(void)
{
	if (!atomic_load_explicit(&found, memory_order_acquire))
		return NULL;
	const cl_label *storage;
	size_t count;
	if (current(&storage, &count) <= 0)
		return NULL;
	if (count > CL_MAX || (uintptr_t)storage % sizeof(size_t) ||
	    !readable(storage, count * sizeof(cl_label)))
		return NULL;
	cl_label l[CL_MAX];
	memcpy(l, storage, count * sizeof(cl_label));
	const char *kv[2 * CL_MAX];
	char text[CL_TEXT];
	size_t n = 0, at = 0;
	for (size_t i = 0; i < count; i++) {
		if (!l[i].key.buf)
			continue; /* absent: ignored */
		size_t kl = l[i].key.len, vl = l[i].value.len;
		if (!kl || kl > CL_KEY_MAX || !l[i].value.buf ||
		    vl > CL_TEXT || at + kl + vl + 2 > CL_TEXT ||
		    !readable(l[i].key.buf, kl) || !readable(l[i].value.buf, vl))
			return NULL;
		char *k = text + at, *v = k + kl + 1;
		memcpy(k, l[i].key.buf, kl);
		memcpy(v, l[i].value.buf, vl);
		k[kl] = v[vl] = 0;
		for (size_t c = 0; c < kl + 1 + vl; c++) /* (no memchr: a */
			if (!k[c] && c != kl)            /* symbol bound in */
				return NULL;             /* every process) */
		size_t j = 0; /* a key seen before: the first wins */
		while (j < n && strcmp(kv[2 * j], k))
			j++;
		if (j < n)
			continue;
		kv[2 * n] = k;
		kv[2 * n + 1] = v;
		n++;
		at += kl + vl + 2;
	}
	/* The same record still: not rewritten while we read (the thread's
	 * own signal handler is the only writer that can interleave). */
	const cl_label *s2;
	size_t c2;
	atomic_signal_fence(memory_order_seq_cst);
	if (current(&s2, &c2) <= 0 || s2 != storage || c2 != count ||
	    memcmp(l, storage, count * sizeof(cl_label)))
		return NULL;
	int rc;
	return n ? heapprof__labels_intern(kv, n, &rc) : NULL;
}

/* In a fork child: a thread of the parent's that was re-reading the maps
 * is not in the child, and its `rebuilding` flag and odd `seq` would stay
 * so (no labels in memory new to the table, then none at all: before,
 * otel_review.fork_reread). Left as they are when the child forked from
 * inside the profiler (a signal handler that may have interrupted this
 * thread's own re-read, which then finishes it). */
HP_RARE void
heapprof__customlabels_atfork_child(int outside)
{
	if (!outside)
		return;
	if (atomic_load_explicit(&seq, memory_order_relaxed) & 1) {
		atomic_store_explicit(&nranges, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&seq, 1, memory_order_release);
	}
	atomic_flag_clear(&rebuilding);
}

/* --------------------------------------------------------- the variable */

HP_RARE void
heapprof__customlabels_resolve(int startup)
{
	if (atomic_load_explicit(&found, memory_order_relaxed))
		return;
	static const struct {
		const char *var;
		uint32_t abi;
	} forms[] = {{"custom_labels_current_set", 1},
	             {"custom_labels_thread_local_data", 0}};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		heapprof_tls_peer v = {"custom_labels_abi_version", NULL, 0};
		intptr_t o;
		if (!heapprof__tls_static_off(forms[i].var, startup, &v, &o))
			continue;
		uint32_t abi;
		if (!v.addr || v.size != 4)
			continue;
		memcpy(&abi, v.addr, 4);
		if (abi != forms[i].abi)
			continue; /* "nothing in this document applies" */
		off = o;
		version = (int)abi;
		if (!atomic_flag_test_and_set(&rebuilding)) {
			maps_read();
			atomic_flag_clear(&rebuilding);
		}
		atomic_store_explicit(&found, 1, memory_order_release);
		return;
	}
}
