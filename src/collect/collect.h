/*
 * collect.h: what the capture modules (src/collect/, in-process) share:
 * the per-thread state, the global configuration, and each module's
 * internal functions, grouped by the file that defines them.
 *
 * Data flow: interpose.c (malloc family) -> sampler (TLS byte counter) ->
 * on a sample: range.c (the sampled object's memory, which makes free's
 * check two compares) + stack.c (the call stack) + bucket.c (per stack and
 * size counters) -> snapshot.c (records for the writers) -> serve/dump.c.
 */
#ifndef HEAPPROF_COLLECT_H
#define HEAPPROF_COLLECT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "heapprof.h"

#define HP_MAX_DEPTH 64

/* ------------------------------------------------------------ thread state */

/* Everything the fast path touches lives here, in initial-exec TLS (no
 * __tls_get_addr call, which could itself allocate). Only the owning thread
 * reads or writes it. */
typedef struct hp_tls {
	int64_t left;      /* bytes until the next sample; <= weight: slow path */
	uint32_t busy;     /* re-entrancy depth: nonzero inside the profiler */
	uint32_t seeded;   /* rng initialised, and `left` drawn from it */
	uint64_t rng;      /* xorshift64* state */
	int64_t rate;      /* the rate `left` was drawn at; 0: off, or none */
	uintptr_t stack_lo, stack_hi; /* this thread's stack, for the fp walker */
	uint32_t shard;    /* slot shard + 1 (range.c), 0 = not chosen yet */
	/* SIGTERM or SIGINT that arrived while busy (ending.c's handler):
	 * held until the thread leaves the profiler, then raised again */
	volatile int held_sig;
	int64_t saved_left; /* `left` while busy (hp_enter / hp_leave) */
	int64_t exact;     /* bytes in use this thread added less removed, not
	                    * yet in peak.c's exact total (heapprof__exact_*) */
	uint32_t exact_reg; /* its thread-exit flush is registered (peak.c) */
} hp_tls;

extern HP_HIDDEN __thread hp_tls heapprof__tls
	__attribute__((tls_model("initial-exec")));

/* Entering and leaving the profiler. While a thread is inside (busy), its
 * `left` is 0, so every allocation it makes takes the slow path, which
 * serves it from the profiler's private memory (range.c), never from the
 * program's allocator: nothing the profiler does can wait on a lock of
 * glibc's malloc that the code it interrupted holds, and nothing it
 * allocates is counted. Every busy++ / busy-- goes through these. */
HP_INLINE void
hp_enter(hp_tls *t)
{
	if (t->busy++ == 0) {
		t->saved_left = t->left;
		t->left = 0;
	}
}

/* ending.c (libheapprof.so only, hence weak): raises the signal held by
 * t (held_sig) again, now that the thread has left the profiler. */
HP_HIDDEN void heapprof__ending_held(hp_tls *t) __attribute__((weak));

HP_INLINE void
hp_leave(hp_tls *t)
{
	if (--t->busy == 0) {
		t->left = t->saved_left;
		/* busy is 0 in memory before held_sig is read: a signal after
		 * this point finds the thread outside and is not held */
		atomic_signal_fence(memory_order_seq_cst);
		if (HP_UNLIKELY(t->held_sig) && heapprof__ending_held)
			heapprof__ending_held(t);
	}
}

/* In a fork child: a default mutex that another thread held at the fork
 * is made free again; a free one is left unwritten, so that the child
 * copies no page for it. A glibc default mutex that nobody holds has its
 * initializer's bytes; any other bytes get the initializer (never use
 * this on a mutex made with attributes). */
HP_INLINE void
hp_mutex_reset(pthread_mutex_t *m)
{
	const pthread_mutex_t init = PTHREAD_MUTEX_INITIALIZER; /* no constant page read */
	const unsigned char *a = (const unsigned char *)m;
	const unsigned char *b = (const unsigned char *)&init;
	for (size_t i = 0; i < sizeof(init); i++) {
		if (a[i] != b[i]) {
			*m = init;
			return;
		}
	}
}

/* ------------------------------------------------------------ configuration */

enum { HP_UNWIND_DWARF = 0, HP_UNWIND_FP = 1, HP_UNWIND_LIBUNWIND = 2 };

typedef struct hp_config {
	_Atomic int64_t rate;   /* mean bytes between samples; 0 = off */
	int depth;              /* max frames recorded, 1..64 */
	int unwind;             /* HP_UNWIND_*: which unwinder (stack.c) */
	int text;               /* legacy text output instead of pprof */
	int interval;           /* seconds between periodic dumps, 0 = none */
	int signal;             /* dump signal number, 0 = none */
	int at_exit;            /* dump at exit */
	char out[4096];         /* output path template (%p pid, %n sequence) */
	int mode_delta;         /* periodic files hold the interval's allocations */
	char http[256];         /* endpoint address, "" = none */
	int http_allow_remote;  /* HEAPPROF_HTTP_ALLOW_REMOTE=1 */
	char push[512];         /* push URL, "" = none */
	char app[256];          /* application name for push */
	int symbolize;          /* 0 none, 1 ELF symbol tables, 2 DWARF */
	int write_empty;        /* exit profile even if nothing was sampled */
	/* HEAPPROF_RUN_STATUS (`heapprof run`'s file, dump.c), or NULL: read
	 * at start, so that an exit reads no environment (each libc page and
	 * string page it would touch is a page fault in every process) */
	const char *run_status;
	int fsync;              /* fsync each file before its rename */
	int64_t dump_growth;    /* a file each time in use grows this much */
	double dump_limit;      /* a file at this fraction of the memory limit */
	char peak_file[4096];   /* --peak-file: rewritten as the peak grows */
	double peak_step;       /* ... when the estimate passes it by this */
	int peak_gap_ms;        /* ... and none within this many ms of one */
	int dump_pressure_ms;   /* a file when PSI stalls exceed this per s */
	double dump_usage;      /* a file when the group's usage reaches this
	                         * fraction of its limit (serve/watch.c) */
	int age;                /* HEAPPROF_AGE: 0 unset (files and the API
	                         * get age_s labels, push does not), 1 set to
	                         * 1 (push too), -1 set to 0 (none) */
	int quiet;              /* HEAPPROF_QUIET=1: no line on stderr */
	int peak_exact;         /* time the peak by the exact count (peak.c) */
	char log[1024];         /* HEAPPROF_LOG: every line to this file */
	int64_t label_cap;      /* HEAPPROF_LABEL_SETS, 0: default (labels.c) */
	int otel_ids;           /* HEAPPROF_OTEL_IDS=1: trace_id and span_id
	                         * labels from the thread context (otel.c) */
} hp_config;

/* Written once by the constructor before sampling is enabled; read-only
 * afterwards except `rate` (atomic). */
extern HP_HIDDEN hp_config heapprof__cfg;

/* The pid the library was initialised in (written once by the
 * constructor). */
extern HP_HIDDEN long heapprof__init_pid;
/* CLOCK_REALTIME ns when the constructor ran (init.c; written once). */
extern HP_HIDDEN int64_t heapprof__init_nanos;
/* The process's command line, arguments separated by spaces (written once
 * by the constructor). */
extern HP_HIDDEN char heapprof__cmdline[512];

/* 1 once the real allocator functions are resolved and the profiler may
 * sample; set by init.c with release order, read with acquire. */
extern HP_HIDDEN _Atomic int heapprof__ready;

/* ----------------------------------------------------------- interpose.c */

/* The entry points (malloc, free, ...) live in their own section, so a
 * slow path can tell whether its return address is the program's (it was
 * tail-called, the normal case) or an entry point's (it was not). */
#define HP_ENTRY __attribute__((section("heapprof_entry"), visibility("default")))
extern HP_HIDDEN const char __start_heapprof_entry[], __stop_heapprof_entry[];
/* 1 if the program's malloc is ours (not so when dlopen'd), interpose.c */
HP_HIDDEN int heapprof__interposing(void);
/* Points the fast paths at the next allocator (after it is resolved), or
 * with `on` at the functions that also count each block's chunk size for
 * the exact count (peak.c). Once, by the constructor. */
void heapprof__interpose_count(int on);

/* The next allocator's functions (glibc's, or another preloaded one). */
typedef struct hp_next {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
} hp_next;
extern HP_HIDDEN hp_next heapprof__next;
/* The next allocator's nallocx, or NULL (bootstrap.c; slowpath.c's
 * malloc_usable_size of a sampled block). */
extern HP_HIDDEN size_t (*heapprof__next_nallocx)(size_t, int);
/* The next allocator's statistics (jemalloc's mallctl, tcmalloc's
 * MallocExtension_GetNumericProperty), or NULL: from its own object, found
 * with the rest (bootstrap.c; read by allocstats.c). */
extern HP_HIDDEN int (*heapprof__next_mallctl)(const char *, void *, size_t *,
                                               void *, size_t);
extern HP_HIDDEN int (*heapprof__next_tcprop)(const char *, size_t *);
/* Resolves heapprof__next: the allocator the program would call without
 * us (bootstrap.c). Idempotent. */
void heapprof__interpose_resolve(void);
/* 1 when the program's malloc is not ours (an allocator ahead of us in
 * the lookup order, or in the executable): nothing is sampled, since its
 * free would get our pointers. Written once by resolve, before
 * heapprof__ready (slowpath.c). The kind, for init's one warning: 1
 * glibc's (loaded with dlopen), 2 the executable's, 3 a library's, whose
 * name is heapprof__unreached_name (bootstrap.c). */
extern HP_HIDDEN int heapprof__unreached;
extern HP_HIDDEN int heapprof__unreached_kind;
extern HP_HIDDEN char heapprof__unreached_name[160];

/* ------------------------------------------------------------ slowpath.c */

/* What an entry point tail-calls when its fast path does not apply: the
 * byte counter crossed zero (the allocation may be a sample), or the
 * pointer is in the profiler's range. Called from malloc: no blocking
 * locks but on the sampled path, no allocation but the forwarded one. */
void *heapprof__slow_malloc(size_t n);
void *heapprof__slow_calloc(size_t n, size_t size);
void *heapprof__slow_realloc(void *p, size_t n);
int heapprof__slow_posix_memalign(void **pp, size_t align, size_t n);
void *heapprof__slow_aligned_alloc(size_t align, size_t n);
void *heapprof__slow_memalign(size_t align, size_t n);
void *heapprof__slow_valloc(size_t n);
void *heapprof__slow_pvalloc(size_t n);
void heapprof__slow_free(void *p);
size_t heapprof__slow_usable_size(void *p);

/* The sampler's view of a request of n bytes: zero-byte requests weigh one
 * byte, so that they can be sampled too (as tcmalloc does). */
HP_INLINE uint64_t
heapprof__weight(size_t n)
{
	return (uint64_t)n + (n == 0);
}

/* The fast-path test of every allocating entry point: true (and the
 * counter charged) if this allocation is not a sample. A counter at or
 * below the weight, including 0 for a new thread and the "decide again"
 * state, sends the request to the slow path; as unsigned compares, a
 * request of 2^63 bytes or more can never wrap the counter around. */
HP_INLINE bool
heapprof__fast(hp_tls *t, uint64_t w)
{
	if (HP_LIKELY(w < (uint64_t)t->left)) {
		t->left -= (int64_t)w;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------- sampler.c */

/* Draws the next sampling distance (exponential, mean `rate`) and notes
 * the rate it was drawn at in t->rate. */
int64_t heapprof__sampler_next(hp_tls *t, int64_t rate);
/* An allocation of weight w reached the slow path (the counter is at or
 * below w): decides whether it is a sample and sets the next distance.
 * Returns the rate the sample was taken at (the rate of the distance that
 * ran out), or 0: not a sample. A thread without a distance (new, or a
 * fork child) draws its first one here and charges w against it. */
int64_t heapprof__sampler_take(hp_tls *t, int64_t rate, uint64_t w);
/* A random bit for a sample's half (peak.c), from the thread's generator
 * (seeding it at rate 1, where distances do not use it). */
uint32_t heapprof__sampler_half(hp_tls *t);
/* Forgets the thread's distance and seed (a fork child: the parent and
 * its other children must not sample at the same offsets). */
void heapprof__sampler_reset(hp_tls *t);
/* The unsampled bytes one sampled object of `size` bytes taken at `rate`
 * stands for: size / (1 - exp(-size/rate)), as heapprof_scale_heap_sample
 * (Go's scaleHeapSample) computes for one object, to within rounding;
 * without libm. */
int64_t heapprof__sampler_weight(uint64_t size, int64_t rate);

/* --------------------------------------------------------------- arena.c */

/* Bump allocation from mmap'd chunks; never freed. Thread-safe. Used for
 * buckets and stacks, so the profiler never calls the malloc it wraps. */
void *heapprof__arena_alloc(size_t n);
size_t heapprof__arena_bytes(void); /* total mapped, for the stats */
void heapprof__arena_atfork_prepare(void);
void heapprof__arena_atfork_release(void);
/* In a forked child: the lock, as if new (see init.c's fork handlers). */
void heapprof__arena_atfork_child(void);

/* --------------------------------------------------------------- range.c */

/* The sampled-object header, 64 bytes just below the user pointer. */
typedef struct hp_obj {
	uint64_t magic;
	struct hp_bucket *bucket;
	size_t size;        /* bytes the program asked for */
	uintptr_t run;      /* start of the page run holding the object */
	uint32_t run_class; /* log2 of the run's page count, or a slot class */
	uint32_t shard;     /* slots: the shard whose free list it returns to;
	                     * exact page runs: their page count */
	uint32_t age_slot;  /* age.c's table slot + 1, 0: none (set by
	                     * slowpath.c for samples; stale in others) */
	uint32_t moved;     /* exact runs: realloc moved its pages here
	                     * (mremap), so they are a mapping of their own
	                     * (range_exact.c) */
	uint32_t half;      /* samples: which half of them it is in (peak.c) */
	uint32_t aligned;   /* samples: from memalign, valloc, pvalloc, ... (an
	                     * alignment over 16): malloc_usable_size says the
	                     * slot's bytes, as glibc's have up to a page more */
	uint64_t pad1;
} hp_obj;
#define HP_OBJ_MAGIC 0x68656170726f6621ULL /* "heaprof!" */
#define HP_BOOT_MAGIC 0x626f6f74626f6f74ULL /* "bootboot": bootstrap block */
#define HP_PRIV_MAGIC 0x6865617070726976ULL /* "heappriv": the profiler's own */

/* [base, base + span) is the profiler's range; a pointer in it was sampled
 * (or is the profiler's own). base is written once at init (before
 * heapprof__ready); span grows and shrinks under range.c's lock (a pointer
 * from new space reaches a thread only after the growth). */
extern HP_HIDDEN uintptr_t heapprof__range_base;
extern HP_HIDDEN _Atomic uintptr_t heapprof__range_span;

HP_INLINE bool
heapprof__range_owns(const void *p)
{
	return (uintptr_t)p - heapprof__range_base <
	       atomic_load_explicit(&heapprof__range_span, memory_order_relaxed);
}

int heapprof__range_init(void);
/* RLIMIT_AS read again (start-up, dumps); returns whether it limits. */
bool heapprof__range_limit_refresh(void);
/* The program set RLIMIT_AS's soft limit to cur (RLIM_INFINITY: none). */
bool heapprof__range_limit_note(uint64_t cur);
/* Memory for a sampled object: returns the user pointer (aligned to
 * `align`, a power of two >= 16) with its header filled in but for the
 * bucket, or NULL if the range cannot serve it (cannot grow, commit
 * refused, or a handler interrupted this thread inside range.c). */
void *heapprof__range_alloc(size_t size, size_t align, bool zero);
/* The same for the profiler's own use (magic HP_PRIV_MAGIC, not counted as
 * a sample); never blocks on a lock its own thread holds. */
void *heapprof__range_private(size_t size, size_t align, bool zero);
/* Bytes usable from the user pointer to the end of the object's slot or
 * run (>= its size; for page-aligned blocks a whole number of pages). */
size_t heapprof__range_usable(const hp_obj *o);
/* Whether realloc may resize o's block without a copy (a sampled block
 * over 512 KiB), and that resize: the new user pointer, or NULL with
 * nothing changed. */
bool heapprof__range_resizable(const hp_obj *o);
void *heapprof__range_resize(hp_obj *o, size_t n);
/* Makes the pages of [p, p + size) present in one system call (the
 * profiler's own blocks; range.c says why). errno is kept. */
void heapprof__range_populate(void *p, size_t size);
/* Gives the object's pages back. */
void heapprof__range_free(hp_obj *o);
HP_INLINE hp_obj *
heapprof__range_obj(void *p)
{
	return (hp_obj *)p - 1;
}
/* Counters for the stats comment. */
void heapprof__range_stats(uint64_t *live_runs, uint64_t *mapped_bytes,
                           uint64_t *exhausted);
void heapprof__range_atfork_prepare(void);
void heapprof__range_atfork_release(void);
void heapprof__range_atfork_child(void);

/* --------------------------------------------------------------- stack.c */

/* At start-up: the thread's stack bounds if they need /proc/self/maps,
 * and libunwind loaded if HEAPPROF_UNWIND=libunwind asked for it; 0 or
 * -errno (then the default unwinder is used). */
int heapprof__stack_init(hp_tls *t);
/* Nonzero while this thread is inside pthread_getattr_np (interpose.c's
 * wrapper): glibc holds the thread's descriptor lock there, and a sample
 * in it must not ask for the thread's stack bounds (stack.c). */
extern HP_HIDDEN __thread int heapprof__in_getattr
	__attribute__((tls_model("initial-exec")));
/* glibc's pthread_getattr_np (resolved by stack_init, or at the wrapper's
 * first call if that comes first), or NULL. */
typedef int (*hp_getattr_fn)(pthread_t, pthread_attr_t *);
hp_getattr_fn heapprof__getattr_next(void);
/* Captures up to `max` call-site addresses (return address - 1), leaf
 * first, starting at the frame that returns to `skip_to` (the interposed
 * function's return address). Returns the number of frames. */
int heapprof__stack_capture(hp_tls *t, uintptr_t skip_to, uint64_t *out,
                            int max);
const char *heapprof__stack_unwinder(void);

/* -------------------------------------------------------------- unwind.c */

/* The default unwinder (DWARF CFI): the call sites (return address - 1;
 * the pc itself for a frame a signal interrupted) of the callers of this
 * function, innermost first, at most `max`, from the frame that returns to
 * `skip_to` if one of the first 16 does (else from the first). Reads of
 * the thread's stack are bounded by [stack_lo, stack_hi), other stacks are
 * checked page by page. No fd, no lock, no allocation; async-signal-safe. */
int heapprof__unwind_dwarf(uint64_t *out, int max, uintptr_t skip_to,
                           uintptr_t stack_lo, uintptr_t stack_hi);
/* Does the code at call site q (a frame of heapprof__unwind_dwarf) keep a
 * frame pointer? 1: its CFI computes the frame from rbp; 0: from rsp (no
 * frame pointer there); -1: unknown (no CFI, outermost frame). */
int heapprof__unwind_uses_fp(uint64_t q);
/* 1 if this thread runs a signal handler (its frame is above this one, or
 * the thread is on its alternate signal stack); 0 if not, or unknown. */
int heapprof__unwind_in_signal(uintptr_t stack_lo, uintptr_t stack_hi);

/* -------------------------------------------------------------- bucket.c */

/* Counters of one (stack, size, rate, label set): sampled objects and bytes,
 * as Go's memRecord. The rate is the one the objects were sampled at, so
 * a later heapprof_set_sample_rate() leaves them as they were. Updated
 * with relaxed atomics by any thread; read the same way by snapshots,
 * which may see a free before its alloc: readers clamp. */
typedef struct hp_bucket {
	struct hp_bucket *all_next; /* list of every bucket (release-published) */
	uint64_t hash;
	size_t size;
	int64_t rate;               /* sampled at this mean distance, >= 1 */
	const struct heapprof_labels *labels; /* its label set (labels.c), or NULL */
	_Atomic int64_t alloc_objects, alloc_bytes, free_objects, free_bytes;
	uint32_t id;    /* 0, 1, 2, ... in order of creation */
	uint32_t depth;
	/* peak.c's, under its lock, for each half of the samples: live
	 * sampled objects, how many were live at the peak of epoch
	 * peak_epoch; and the unsampled bytes of one object plus one (0:
	 * not computed yet). */
	int64_t live[2], peak_objects[2];
	uint64_t peak_epoch[2];
	int64_t weight1;
	uint64_t stack[];
} hp_bucket;

/* Maps the table now (the first sample does otherwise): 0 or -ENOMEM. */
int heapprof__bucket_init(void);
/* Finds or creates the bucket; NULL if the profiler's memory is exhausted
 * (or the table could not be mapped). */
hp_bucket *heapprof__bucket_get(const uint64_t *stack, int depth, size_t size,
                                int64_t rate, const struct heapprof_labels *ls);
/* The most recently created bucket; older ones follow via all_next. */
hp_bucket *heapprof__bucket_list(void);
uint64_t heapprof__bucket_count(void);
void heapprof__bucket_atfork_prepare(void);
void heapprof__bucket_atfork_release(void);
void heapprof__bucket_atfork_child(void);

/* -------------------------------------------------------------- config.c */

/* The HEAPPROF_* environment into c (bad values warn and keep c's). */
void heapprof__read_env(hp_config *c);
/* The command line from argv (or /proc/self/cmdline without one),
 * arguments joined by spaces, cut to cap. */
void heapprof__read_cmdline(char *buf, size_t cap, int argc, char **argv);
/* 0 if this process is not to be profiled (HEAPPROF_CHILDREN=0 in a
 * child, HEAPPROF_ONLY naming other programs). */
int heapprof__wanted(const char *cmdline);
/* ---------------------------------------------------------------- limits.c */
/* The process's memory limit: the smallest of the cgroup limits (v2
 * memory.max and memory.high, v1 memory.limit_in_bytes; its group and
 * ancestors) and RLIMIT_AS; INT64_MAX if none. */
int64_t heapprof__mem_limit(void);
enum { HP_LIMIT_NONE, HP_LIMIT_V1, HP_LIMIT_V2, HP_LIMIT_AS };
typedef struct hp_memlimit {
	int64_t limit;        /* as heapprof__mem_limit */
	int kind;             /* HP_LIMIT_*: what sets it */
	char group[4096];     /* the cgroup directory that sets it */
	char pressure[4200];  /* the own v2 group's memory.pressure, or "" */
} hp_memlimit;
/* The same, and where it comes from. */
int64_t heapprof__mem_limit_ex(hp_memlimit *g);
/* What the limit in g is measured against now (the group's
 * memory.usage_in_bytes or memory.current, the address space for
 * RLIMIT_AS), bytes; -1 if unknown. System calls: never in malloc. */
int64_t heapprof__mem_usage(const hp_memlimit *g);
/* --peak-file: set by a sampled allocation whose in-use estimate passed
 * the threshold (peak.c), cleared by the write (serve/rolling.c). */
extern HP_HIDDEN _Atomic int heapprof__rolling_want;

/* ---------------------------------------------------------------- peak.c */

/* A sampled object of bucket b, in half `half` (0 or 1, drawn at random
 * for each sample: peak.c's header), was allocated / freed (called outside
 * the fast path, the thread busy for an allocation). May request a dump
 * (--dump-growth, --dump-limit), which is taken at the next safe point. */
void heapprof__peak_alloc(hp_bucket *b, uint32_t half);
void heapprof__peak_free(hp_bucket *b, uint32_t half);
/* objs[id] = the sampled objects bucket id had in use at the peak, for
 * ids < n; with reset, the peak restarts from the in-use total now. */
void heapprof__peak_read(int64_t *objs, uint32_t n, int reset);
/* Reads the growth and limit options (once, by the constructor). */
void heapprof__peak_init(void);
void heapprof__peak_atfork_child(void);

/* The exact count of bytes in use that may time the peak (peak.c's
 * header): glibc's chunk sizes, read from the word before each block the
 * next allocator returns or is given back. heapprof__exact_step is 0 when
 * the count is off (the default; another allocator than glibc), else the
 * bytes a thread keeps before it adds them to the global total (written
 * under peak.c's lock, read relaxed). */
extern HP_HIDDEN _Atomic int64_t heapprof__exact_step;
/* Adds the thread's d bytes to the total (and takes a new high). */
HP_NOINLINE void heapprof__exact_flush(hp_tls *t, int64_t d);
/* Registers the thread's exit flush (slow path, once a thread). */
void heapprof__exact_thread(hp_tls *t);

/* The chunk size glibc keeps in the word before p (flag bits masked). */
HP_INLINE int64_t
hp_chunk(const void *p)
{
	return (int64_t)(((const size_t *)p)[-1] & ~(size_t)7);
}

/* What glibc's chunk for a request of n bytes would be (sampled blocks,
 * which live in the range, are counted in the same units). */
HP_INLINE int64_t
hp_chunk_of(size_t n)
{
	size_t c = n > SIZE_MAX / 2 ? n : (n + 8 + 15) & ~(size_t)15;
	return (int64_t)(c < 32 ? 32 : c);
}

/* d more bytes in use in this thread (negative: fewer). Two compares and
 * a thread-local store unless the thread's count passes the step. */
HP_INLINE void
heapprof__exact_add(hp_tls *t, int64_t step, int64_t d)
{
	d += t->exact;
	if (HP_UNLIKELY(d > step || d < -step))
		heapprof__exact_flush(t, d);
	else
		t->exact = d;
}

/* The same for a block in (c > 0) or out (c < 0): one compare. */
HP_INLINE void
heapprof__exact_in(hp_tls *t, int64_t step, int64_t c)
{
	c += t->exact;
	if (HP_UNLIKELY(c > step))
		heapprof__exact_flush(t, c);
	else
		t->exact = c;
}

HP_INLINE void
heapprof__exact_out(hp_tls *t, int64_t step, int64_t c)
{
	c = t->exact - c;
	if (HP_UNLIKELY(c < -step))
		heapprof__exact_flush(t, c);
	else
		t->exact = c;
}

/* The step, 0 when the exact count is off. */
HP_INLINE int64_t
heapprof__exact_on(void)
{
	return atomic_load_explicit(&heapprof__exact_step, memory_order_relaxed);
}
/* --peak-file: returns the in-use estimate now (-1 in a handler inside
 * the peak's lock) and sets the next write's threshold to next(it). */
int64_t heapprof__peak_rolling_arm(int64_t (*next)(int64_t now));
/* ----------------------------------------------------------------- age.c */

/* The allocation time of each live sampled object, for the age_s labels:
 * a lock-free table of (bucket id, birth) words, one per live sample,
 * written on the sampled path only. Returns the slot + 1 to keep in the
 * object's header, or 0 (not tracked: the sample stays unlabelled). */
uint32_t heapprof__age_track(const hp_bucket *b);
/* The sample in `slot` (a value from heapprof__age_track) was freed. */
void heapprof__age_untrack(uint32_t slot);
/* Each live tracked sample: fn(arg, bucket id, its age in ms); a nonzero
 * return from fn stops the scan and is returned. */
int heapprof__age_each(int (*fn)(void *arg, uint32_t id, int64_t ms),
                       void *arg);

/* ----------------------------------------------------------- age_split.c */

/* For a snapshot's records (each `stack` pointing into its bucket, as
 * snapshot.c makes them): the live sampled objects of each record's bucket
 * by age class now, for heapprof__encode_heap_age. 0 or -ENOMEM. */
struct heapprof__age_split;
int heapprof__age_split_records(const heapprof_record *recs, size_t n,
                                struct heapprof__age_split *out);
void heapprof__age_split_free(struct heapprof__age_split *s);

/* ------------------------------------------------------------ allocstats.c */
/* The "heapprof: memory: rss=... allocator=..." comment of a profile
 * (RSS, the next allocator's statistics; left out in a handler). Dumps
 * only. */
void heapprof__memory_comment(char *buf, size_t cap);

/* ------------------------------------------------------------ snapshot.c */
/* Nonzero while this thread dumps from a signal handler of ours (the dump
 * signal, SIGTERM/SIGINT) or from _exit: the snapshot then never takes the
 * loader's lock for build ids (snapshot.c's ids_mode, loaded_ids.c). */
extern HP_HIDDEN __thread int heapprof__in_handler
	__attribute__((tls_model("initial-exec")));

/* The counters of every bucket at one moment, indexed by bucket id: the
 * start of a delta window. */
typedef struct hp_counts {
	int64_t ao, ab, fo, fb;
} hp_counts;
typedef struct hp_baseline {
	hp_counts *c;
	uint32_t n;
	int64_t time_nanos;
} hp_baseline;

enum hp_snap_kind {
	HP_SNAP_FULL,       /* everything since start (Go's heap / allocs) */
	HP_SNAP_INUSE,      /* in-use only: alloc values 0, empty samples dropped */
	HP_SNAP_DELTA,      /* all four values minus the baseline (Go's seconds=N) */
	HP_SNAP_DELTA_ALLOC, /* alloc values minus the baseline, in-use absolute */
};

typedef struct hp_snap_opts {
	int text;                    /* legacy text (FULL only) */
	enum hp_snap_kind kind;
	const hp_baseline *base;     /* for the DELTA kinds */
	const char *default_type;    /* default_sample_type, or NULL */
	hp_baseline *next_base;      /* if set: receives the counters this
	                              * snapshot used, so consecutive windows
	                              * neither lose nor repeat an allocation */
	int peak;                    /* add peak_objects / peak_space */
	int peak_reset;              /* ... and restart the peak from now */
	int age;                     /* split in-use values by age (age_s
	                              * labels; not for HP_SNAP_DELTA) */
} hp_snap_opts;

/* Reads every bucket's counters now. 0 or -ENOMEM. */
int heapprof__baseline_take(hp_baseline *b);
void heapprof__baseline_free(hp_baseline *b);
int64_t heapprof__now_nanos(void);

/* Writes a profile of the current state through `write` (pprof gzip or
 * legacy text). Called with the calling thread's busy flag set. */
int heapprof__snapshot_write_ex(heapprof_write_fn *write, void *arg,
                                const hp_snap_opts *o);
int heapprof__snapshot_write(heapprof_write_fn *write, void *arg, int text);
/* In a forked child whose parent was dumping: forget the symbol caches. */
void heapprof__snapshot_atfork_reset(void);

/* ------------------------------------------- delivery (src/serve/hooks.c) */

/* What delivers profiles (files, signal and periodic dumps, the endpoint,
 * push) is src/serve, which includes collect.h and calls the capture;
 * the capture never includes serve.h nor names its functions: it calls
 * these hooks, which src/serve/hooks.c defines. The reference is weak, so
 * the capture links alone (heapprof__hooks() is NULL then). */
typedef struct hp_delivery {
	void (*start)(void); /* constructor time */
	void (*exit)(int dump); /* the at-exit dump (if dump) and last push;
	                         * the busy flag set; once only. dump 2: an
	                         * ending the process survives (PID 1), the
	                         * profile only, any number of times */
	void (*exit_wait)(int ms); /* waits (bounded) for another thread's exit */
	void (*due)(void);   /* a sampled allocation, when armed */
	void (*request)(void); /* one dump at the next safe point (peak.c) */
	/* fork: prepare returns 1 if it took the dump lock; parent and
	 * child get that value back */
	int (*atfork_prepare)(void);
	void (*atfork_parent)(int locked);
	void (*atfork_child)(int locked);
	/* the program is installing a seccomp filter (sandbox.c): stop
	 * what would make system calls later (threads, a dump in progress) */
	void (*sandbox)(void);
} hp_delivery;
extern HP_HIDDEN const hp_delivery heapprof__delivery __attribute__((weak));
HP_INLINE const hp_delivery *
heapprof__hooks(void)
{
	return &heapprof__delivery;
}

/* Nonzero when periodic or signal dumps are on (set once by the
 * delivery's start): a sampled allocation then calls its due hook, which
 * takes the dump that is due (the signal arrived, or the interval ended)
 * if the thread is not busy. Defined in init.c. */
extern HP_HIDDEN int heapprof__serve_armed;
HP_INLINE void
heapprof__serve_tick(hp_tls *t)
{
	if (HP_UNLIKELY(heapprof__serve_armed) && t->busy == 0)
		heapprof__delivery.due();
}

/* ---------------------------------------------------------------- warn.c */

/* Notes what fd 2 is at start-up (the constructor, first thing). */
HP_HIDDEN void heapprof__warn_note_stderr(void);
/* Prints the warnings held while the program ran, once; `final`: the
 * process is ending (an exit, _exit, a SIGTERM/SIGINT ending), and lines
 * from then on are printed at once. */
HP_HIDDEN void heapprof__warn_flush(int final);
/* A seccomp filter goes in: flush now, then never write a line again. */
HP_HIDDEN void heapprof__warn_seal(void);
/* Whether lines are held that no flush has printed yet. */
HP_HIDDEN int heapprof__warn_held(void);
/* A fork child holds none of its parent's lines. */
HP_HIDDEN void heapprof__warn_atfork_child(void);

/* ---------------------------------------------------------------- init.c */

/* Warns once per message (the pointer identifies it), with write(2),
 * never stdio: at once during start-up, else held until the process ends
 * (warn.c); to HEAPPROF_LOG instead, if set. */
void heapprof__warn(const char *msg);
/* Prints a message built at run time; the caller ensures it is once. */
void heapprof__warn_dup(const char *msg);
/* Counters of things the profiler had to give up on. */
extern HP_HIDDEN _Atomic uint64_t heapprof__dropped_samples;
/* 1 in a fork child until it records or drops a sample of its own (or
 * takes a dump): its exit profile would hold only its parent's records,
 * which the parent writes anyway, and is not written (serve/dump.c; a
 * fork storm's children each wrote a full profile, issue 29). Set by the
 * atfork child handler (init.c), cleared by the sampled path; never
 * written in a process that did not fork, so its line stays shared. */
extern HP_HIDDEN _Atomic int heapprof__fork_clean;
static inline void
hp_fork_dirty(void)
{
	if (HP_UNLIKELY(atomic_load_explicit(&heapprof__fork_clean,
	                                     memory_order_relaxed)))
		atomic_store_explicit(&heapprof__fork_clean, 0,
		                      memory_order_relaxed);
}

/* ---------------------------------------------------------- sandbox.c */

/* 0: no seccomp filter seen; 1: one was in force at start-up; 2: the
 * program installed one. Nonzero: nothing sampled, no profile written. */
extern HP_HIDDEN _Atomic int heapprof__sandbox;
/* The constructor's first call: a filter inherited from the parent? */
HP_HIDDEN void heapprof__sandbox_init(void);

/* ending.c (libheapprof.so only, hence weak): the exit profile at SIGTERM,
 * SIGINT and _exit. init installs the handlers (after serve start);
 * atfork_child notes the new process. */
HP_HIDDEN void heapprof__ending_init(void) __attribute__((weak));
HP_HIDDEN void heapprof__ending_atfork_child(void) __attribute__((weak));
/* A seccomp filter is going in: our handlers give SIG_DFL back. */
HP_HIDDEN void heapprof__ending_sandbox(void) __attribute__((weak));

/* -------------------------------------------------------------- attach.c */

/* 1 while `heapprof attach` has the process routed and sampling. */
extern HP_HIDDEN _Atomic int heapprof__attach_on;
/* The constructor, loaded with dlopen and not the program's malloc: 1 if
 * heapprof attach loaded us (cfg then made attach's), else 0. */
int heapprof__attach_loading(hp_config *cfg);
/* Routes the objects loaded since the last scan (a sample's path). */
void heapprof__attach_rescan(void);
HP_INLINE void
heapprof__attach_poll(void)
{
	if (HP_UNLIKELY(atomic_load_explicit(&heapprof__attach_on,
	                                     memory_order_relaxed)))
		heapprof__attach_rescan();
}
/* The profile's comment on the attach, or "" (snapshot.c). */
void heapprof__attach_comment(char *buf, size_t cap);
/* 1 if heapprof attach loaded the library (serve/attach_http.c). */
int heapprof__attach_loaded(void);

#endif
