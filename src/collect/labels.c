/*
 * labels.c: label sets (issue 33), the "which request allocated" half of a
 * record's key: the C API (heapprof_labels_*), the set interning, the
 * thread's current set, and the cap on distinct sets.
 *
 * A set is interned once in the profiler's own memory (arena.c) and never
 * freed: its pairs sorted by key, duplicates keeping the last value, the
 * text "key\0value\0..." after an array of heapprof_label pointing into it,
 * so a snapshot hands the writers the set as it is. The same pairs give
 * the same pointer, which is what bucket.c keys records on.
 *
 * Shared state: `tab` (the hash table of sets, mapped at the first set,
 * of a fixed size: twice the cap, rounded up to a power of two, so it is
 * never more than half full) is published with a compare-and-swap; each
 * of its slots is written once, by a compare-and-swap from NULL, and read
 * with acquire loads. No lock: interning may run on the sampled path (the
 * OpenTelemetry thread context, otel.c) and a fork in the middle of an
 * insert leaves the child a slot either empty or holding a whole set.
 * `count` reserves a place under the cap before a set is made (given back
 * if another thread published the same set first). The thread's current
 * set is an initial-exec thread-local pointer that only its thread writes
 * (heapprof_labels_use) and that only its sampled path reads.
 *
 * Past the cap (HEAPPROF_LABEL_SETS, default 1024): the overflow set,
 * heapprof_labels=overflow; every refusal is counted (`refused`) and the
 * profile's comments say how many.
 */
#include <errno.h>
#include <string.h>

#include "collect.h"
#include "customlabels.h"
#include "labels.h"

#define LS_PAIRS 64
#define LS_TEXT 4096
#define LS_CAP_DEFAULT 1024
#define LS_CAP_MAX 65536

struct heapprof_labels {
	uint64_t hash;
	uint32_t n, len;     /* pairs; bytes of text */
	heapprof_label kv[]; /* n of them, then the text */
};

typedef struct ls_table {
	size_t mask;
	_Atomic(const heapprof_labels *) slot[];
} ls_table;

static _Atomic(ls_table *) tab;
/* A slot a thread is filling (never a set's address). */
#define LS_BUSY ((const heapprof_labels *)(uintptr_t)1)
static _Atomic uint64_t count;   /* sets made (or reserved) */
static _Atomic uint64_t refused; /* interning refused by the cap */
static const heapprof_labels *overflow_set; /* made with the table */

HP_HIDDEN __thread const heapprof_labels *heapprof__labels_cur
	__attribute__((tls_model("initial-exec")));

static uint64_t
cap_now(void)
{
	int64_t c = heapprof__cfg.label_cap;
	return c <= 0 ? LS_CAP_DEFAULT : c > LS_CAP_MAX ? LS_CAP_MAX : (uint64_t)c;
}

/* A set of the n sorted pairs in kv, made in the arena (NULL: no memory). */
static heapprof_labels *
lset_new(const char *const *k, const char *const *v, size_t n, uint64_t h,
         size_t len)
{
	heapprof_labels *s = heapprof__arena_alloc(sizeof(*s) +
	                                           n * sizeof(heapprof_label) + len);
	if (!s)
		return NULL;
	s->hash = h;
	s->n = (uint32_t)n;
	s->len = (uint32_t)len;
	char *text = (char *)(s->kv + n);
	for (size_t i = 0; i < n; i++) {
		size_t a = strlen(k[i]) + 1, b = strlen(v[i]) + 1;
		memcpy(text, k[i], a);
		s->kv[i].key = text;
		memcpy(text + a, v[i], b);
		s->kv[i].value = text + a;
		text += a + b;
	}
	return s;
}

/* The table, mapped at the first call (NULL: no memory). */
static ls_table *
table_get(void)
{
	ls_table *t = atomic_load_explicit(&tab, memory_order_acquire);
	if (t)
		return t;
	size_t slots = 16;
	while (slots < 2 * cap_now())
		slots *= 2;
	ls_table *n = heapprof__arena_alloc(sizeof(*n) + slots * sizeof(n->slot[0]));
	if (!n)
		return NULL;
	memset(n, 0, sizeof(*n) + slots * sizeof(n->slot[0]));
	n->mask = slots - 1;
	if (!overflow_set) {
		/* Racing first callers may each make one: any is right. */
		static const char *const ok[1] = {"heapprof_labels"};
		static const char *const ov[1] = {"overflow"};
		overflow_set = lset_new(ok, ov, 1, 0, sizeof("heapprof_labels") +
		                                         sizeof("overflow"));
	}
	ls_table *expect = NULL;
	if (atomic_compare_exchange_strong(&tab, &expect, n))
		return n;
	return expect; /* another thread's (ours stays unused in the arena) */
}

/* This thread is in intern() (a signal handler that interrupted it and
 * interns too must not wait for the slot its own thread holds BUSY). */
static __thread int interning __attribute__((tls_model("initial-exec")));

static const heapprof_labels *intern(const char *const *kv, size_t n, int *rc);

const heapprof_labels *
heapprof__labels_intern(const char *const *kv, size_t n, int *rc)
{
	interning++;
	const heapprof_labels *s = intern(kv, n, rc);
	interning--;
	return s;
}

static const heapprof_labels *
intern(const char *const *kv, size_t n, int *rc)
{
	const char *k[LS_PAIRS], *v[LS_PAIRS];
	size_t m = 0;
	*rc = -EINVAL;
	if (n > LS_PAIRS || (n && !kv))
		return NULL;
	/* Sorted by key (insertion: n is small), a repeated key replaced by
	 * its later value. */
	for (size_t i = 0; i < n; i++) {
		const char *key = kv[2 * i], *val = kv[2 * i + 1];
		if (!key || !*key || !val)
			return NULL;
		size_t j = 0;
		while (j < m && strcmp(k[j], key) < 0)
			j++;
		if (j < m && !strcmp(k[j], key)) {
			v[j] = val;
			continue;
		}
		memmove(k + j + 1, k + j, (m - j) * sizeof(*k));
		memmove(v + j + 1, v + j, (m - j) * sizeof(*v));
		k[j] = key;
		v[j] = val;
		m++;
	}
	if (m == 0) {
		*rc = 0; /* the empty set: no labels */
		return NULL;
	}
	/* The text's hash (FNV-1a) and length. */
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t len = 0;
	for (size_t i = 0; i < m; i++) {
		for (int w = 0; w < 2; w++) {
			const char *s = w ? v[i] : k[i];
			size_t l = strlen(s) + 1;
			len += l;
			if (len > LS_TEXT)
				return NULL;
			for (size_t c = 0; c < l; c++) {
				h ^= (unsigned char)s[c];
				h *= 0x100000001b3ULL;
			}
		}
	}
	*rc = -ENOMEM;
	ls_table *t = table_get();
	if (!t)
		return NULL;
	*rc = 0;
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		const heapprof_labels *s =
			atomic_load_explicit(&t->slot[i], memory_order_acquire);
		if (!s) {
			/* The slot is taken (BUSY) before a place under the cap
			 * is: two threads making one set never both hold a
			 * place, so the count never passes the sets made, and
			 * a set refused once is refused for good (it had been
			 * split: made by one thread, overflow for another,
			 * rel.labels.stress_cap). */
			const heapprof_labels *expect = NULL;
			if (!atomic_compare_exchange_strong(&t->slot[i], &expect,
			                                    LS_BUSY)) {
				i = (i - 1) & t->mask; /* look at it again */
				continue;
			}
			heapprof_labels *made = NULL;
			int full = 1;
			if (atomic_fetch_add(&count, 1) < cap_now()) {
				full = 0;
				made = lset_new(k, v, m, h, len);
			}
			if (!made)
				atomic_fetch_sub(&count, 1);
			/* Published (or the slot given back), then answered. */
			atomic_store_explicit(&t->slot[i], made,
			                      memory_order_release);
			if (made)
				return made;
			if (!full) {
				*rc = -ENOMEM;
				return NULL;
			}
			atomic_fetch_add_explicit(&refused, 1,
			                          memory_order_relaxed);
			*rc = overflow_set ? 1 : -ENOMEM;
			return overflow_set;
		}
		if (s == LS_BUSY) {
			/* Another thread is making a set here: wait for it
			 * (a few hundred instructions, unless it was
			 * descheduled: a bound of 2^22 turns was met on a
			 * loaded machine, and the set was split), then look
			 * again. A signal handler that interrupted this
			 * thread inside intern() would wait for itself: the
			 * overflow set at once. The bound (about a second)
			 * is for a fork child whose parent had a thread here. */
			long w = 0;
			while (interning == 1 &&
			       atomic_load_explicit(&t->slot[i],
			                            memory_order_acquire) == LS_BUSY &&
			       ++w < (1L << 30))
				__asm__ volatile("" ::: "memory");
			if (interning != 1 || w >= (1L << 30)) {
				atomic_fetch_add_explicit(&refused, 1,
				                          memory_order_relaxed);
				*rc = overflow_set ? 1 : -ENOMEM;
				return overflow_set;
			}
			i = (i - 1) & t->mask;
			continue;
		}
		if (s->hash == h && s->len == len && s->n == m &&
		    heapprof__labels_equal(s, k, v, m))
			return s;
	}
}

int
heapprof__labels_equal(const heapprof_labels *s, const char *const *k,
                       const char *const *v, size_t m)
{
	if (s->n != m)
		return 0;
	for (size_t i = 0; i < m; i++)
		if (strcmp(s->kv[i].key, k[i]) || strcmp(s->kv[i].value, v[i]))
			return 0;
	return 1;
}

void
heapprof__labels_view(const heapprof_labels *s, heapprof_record_labels *out)
{
	out->labels = s ? s->kv : NULL;
	out->n = s ? s->n : 0;
}

void
heapprof__labels_stats(uint64_t *sets, uint64_t *cap, uint64_t *nrefused)
{
	*sets = atomic_load_explicit(&count, memory_order_relaxed);
	*cap = cap_now();
	*nrefused = atomic_load_explicit(&refused, memory_order_relaxed);
}

/* The API's own calls go to these (an exported name called from inside
 * the library is a symbol the loader looks up in every process). */
static int labels_make(const char *const *kv, size_t n,
                       const heapprof_labels **out);
static const heapprof_labels *labels_use(const heapprof_labels *set);

HP_EXPORT int
heapprof_labels_make(const char *const *kv, size_t n, const heapprof_labels **out)
{
	return labels_make(kv, n, out);
}

static int
labels_make(const char *const *kv, size_t n, const heapprof_labels **out)
{
	if (!out)
		return -EINVAL;
	int saved = errno, rc;
	hp_tls *t = &heapprof__tls;
	/* busy: what interning allocates (nothing today) is not sampled */
	hp_enter(t);
	const heapprof_labels *s = heapprof__labels_intern(kv, n, &rc);
	hp_leave(t);
	errno = saved;
	if (rc < 0)
		return rc;
	*out = s;
	return rc;
}

HP_EXPORT const heapprof_labels *
heapprof_labels_use(const heapprof_labels *set)
{
	return labels_use(set);
}

static const heapprof_labels *
labels_use(const heapprof_labels *set)
{
	const heapprof_labels *old = heapprof__labels_cur;
	heapprof__labels_cur = set;
	return old;
}

HP_EXPORT int
heapprof_labels_set(const char *const *kv, size_t n, const heapprof_labels **saved)
{
	const heapprof_labels *s;
	int rc = labels_make(kv, n, &s);
	if (rc < 0)
		return rc;
	const heapprof_labels *old = labels_use(s);
	if (saved)
		*saved = old;
	return rc;
}

HP_EXPORT void
heapprof_labels_restore(const heapprof_labels *saved)
{
	(void)labels_use(saved);
}

/* Sampled path: the thread's own set, else its OpenTelemetry context's,
 * else its custom labels' (customlabels.c). */
const heapprof_labels *
heapprof__labels_sample(void)
{
	const heapprof_labels *s = heapprof__labels_cur;
	if (!s)
		s = heapprof__otel_labels();
	return s ? s : heapprof__customlabels_labels();
}
