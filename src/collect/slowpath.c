/*
 * slowpath.c: everything an interposed call does beyond its fast path:
 * deciding that an allocation is a sample and drawing the next distance,
 * serving a sampled allocation from the profiler's range and recording it
 * in its bucket, and the free / realloc / usable-size of pointers in the
 * range.
 *
 * Each heapprof__slow_* function is tail-called by its entry point
 * (interpose.c), so its own return address is the program's call site: the
 * first frame of the recorded stack. If the compiler did not make the tail
 * call (unoptimised builds), the return address lies in the entry-point
 * section and one more frame is skipped.
 *
 * If a sample cannot be recorded (range exhausted, profiler memory
 * exhausted) the allocation is forwarded unsampled and counted in
 * heapprof__dropped_samples: the program's allocation never fails because
 * of the profiler. errno is preserved across everything done here.
 *
 * A thread inside the profiler (busy: stack capture, symbolizer, zlib,
 * the dump thread, ...) reaches here for every allocation (hp_enter sets
 * its counter to 0) and is served from the profiler's private memory in
 * the range (HP_PRIV_MAGIC): never glibc's malloc, whose arena lock the
 * code a signal handler interrupted may hold, and never a sample. If the
 * range cannot serve it, the next allocator does.
 *
 * Every block the next allocator hands out here or gets back is counted
 * in the exact total that times the peak (in(), out(), realloc_next()),
 * as the fast paths count theirs (interpose.c); a sampled block is
 * counted at record_alloc / record_free, by glibc's chunk arithmetic.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collect.h"
#include "labels.h"
#include "probes.h"

/* The USDT semaphores of probes.h: nonzero while a tracer is attached. */
HP_HIDDEN volatile unsigned short otel_memory_alloc_semaphore
	__attribute__((section(".probes"))) = 0;
HP_HIDDEN volatile unsigned short otel_memory_free_semaphore
	__attribute__((section(".probes"))) = 0;

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older kernels say EINVAL */
#endif

/* p, from the next allocator, in the exact count. */
static void *
in(void *p)
{
	int64_t step = heapprof__exact_on();
	if (step && p)
		heapprof__exact_add(&heapprof__tls, step, hp_chunk(p));
	return p;
}

/* p, about to go back to the next allocator, out of the exact count. */
static void
out(void *p)
{
	int64_t step = heapprof__exact_on();
	if (step && p)
		heapprof__exact_add(&heapprof__tls, step, -hp_chunk(p));
}

/* The next allocator's realloc(p, n) of its own block p, counted: p is
 * gone if the result is not NULL or n is 0 (glibc frees it then). */
static void *
realloc_next(void *p, size_t n)
{
	int64_t step = heapprof__exact_on();
	if (!step || !p)
		return in(heapprof__next.realloc(p, n));
	int64_t old = hp_chunk(p);
	void *q = heapprof__next.realloc(p, n);
	if (q || !n)
		heapprof__exact_add(&heapprof__tls, step,
		                    (q ? hp_chunk(q) : 0) - old);
	return q;
}

/* The program's return address, and whether one more frame must go. */
#define CALLER(ra, extra)                                                      \
	do {                                                                   \
		ra = (uintptr_t)__builtin_return_address(0);                   \
		extra = ra >= (uintptr_t)__start_heapprof_entry &&             \
		        ra < (uintptr_t)__stop_heapprof_entry;                 \
	} while (0)

/* The byte counter reached an allocation of `n` bytes. Decides whether it
 * is a sample and sets the next distance (sampler.c). Returns the rate the
 * sample was taken at, which its record keeps, or 0: not a sample. */
HP_HIDDEN int heapprof__unreached; /* collect.h; here for the sanitizer build */

static int64_t
sample_decide(hp_tls *t, size_t n)
{
	if (t->busy || !atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return 0; /* counter unchanged: decide again next time */
	if (HP_UNLIKELY(!t->exact_reg))
		heapprof__exact_thread(t); /* its first visit here */
	/* Not the program's malloc: what reaches us (reallocarray, which the
	 * allocator ahead of us lacks) is never a sample, its free being the
	 * other allocator's. Rate 0 sends the thread back here only after
	 * 1 MiB. */
	int64_t rate = heapprof__unreached ? 0
	                                   : atomic_load_explicit(&heapprof__cfg.rate,
	                                                          memory_order_relaxed);
	if (atomic_load_explicit(&heapprof__sandbox, memory_order_relaxed))
		rate = 0; /* no profile will be written (sandbox.c) */
	return heapprof__sampler_take(t, rate, heapprof__weight(n));
}

/* The bucket of the program's stack here for a sample of `size` bytes
 * taken at `rate`, under the thread's label set now (labels.c), or NULL
 * (profiler memory exhausted). */
static hp_bucket *
bucket_here(hp_tls *t, uintptr_t ra, int extra, size_t size, int64_t rate)
{
	uint64_t stack[HP_MAX_DEPTH + 1];
	int d = heapprof__stack_capture(t, ra, stack, heapprof__cfg.depth + extra);
	return heapprof__bucket_get(stack + (d > extra ? extra : 0),
	                            d > extra ? d - extra : d, size, rate,
	                            heapprof__labels_sample());
}

/* A sample of `size` bytes at o, recorded in bucket b. Its half (peak.c)
 * is a draw of its thread's generator, which the program cannot sway. */
static void
record_alloc(hp_obj *o, hp_bucket *b, size_t size)
{
	atomic_fetch_add_explicit(&b->alloc_objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->alloc_bytes, (int64_t)size,
	                          memory_order_relaxed);
	o->bucket = b;
	hp_fork_dirty();
	o->half = heapprof__sampler_half(&heapprof__tls);
	heapprof__peak_alloc(b, o->half);
	int64_t step = heapprof__exact_on();
	if (step)
		heapprof__exact_add(&heapprof__tls, step, hp_chunk_of(size));
	o->age_slot = heapprof__age_track(b);
	if (HP_PROBE_ALLOC_ON()) {
		void *user = (char *)o + sizeof(*o);
		HP_PROBE_ALLOC(user, size, heapprof__sampler_weight(size, b->rate));
	}
	heapprof__attach_poll(); /* objects dlopen'd since an attach */
}

/* A sample of `size` bytes in bucket b, in half `half`, with age slot
 * `slot`, freed. */
static void
record_free(hp_bucket *b, size_t size, uint32_t half, uint32_t slot)
{
	atomic_fetch_add_explicit(&b->free_objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->free_bytes, (int64_t)size,
	                          memory_order_relaxed);
	heapprof__peak_free(b, half);
	heapprof__age_untrack(slot);
	int64_t step = heapprof__exact_on();
	if (step)
		heapprof__exact_add(&heapprof__tls, step, -hp_chunk_of(size));
}

/* The ELF header of the object we are linked into (the linker's symbol,
 * of no declared size: read with memcpy). */
extern const char __ehdr_start[] HP_HIDDEN;
static _Atomic int self_warm; /* warm_self ran (or is running) */

/* The profiler's own code and read-only data (tables, CFI), made
 * present at the first sample: its first run through the sampling and
 * dump code took a page-fault trap (15-40 us on this VM) per 64 KiB of
 * the library it entered, 4-8 in a compiler process, against one system
 * call per segment here. Segments over 1 MiB are left alone: linked
 * statically, __ehdr_start is the program's, whose code may be large and
 * is mostly present already. */
static HP_NOINLINE void
warm_self(void)
{
	if (atomic_exchange_explicit(&self_warm, 1, memory_order_relaxed))
		return;
	ElfW(Ehdr) eh;
	memcpy(&eh, __ehdr_start, sizeof(eh));
	const char *phs = __ehdr_start + eh.e_phoff;
	uintptr_t base = 0;
	int first = 1;
	for (int i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;
		memcpy(&ph, phs + (size_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (first) { /* the first maps the header */
			base = (uintptr_t)__ehdr_start - (ph.p_vaddr & ~(uintptr_t)4095);
			first = 0;
		}
		/* Not the headers' own segment (the loader's: dynamic
		 * symbols, relocations), unless code shares it. */
		if ((ph.p_flags & PF_W) || ph.p_memsz > ((size_t)1 << 20) ||
		    (ph.p_offset == 0 && !(ph.p_flags & PF_X)))
			continue;
		uintptr_t a = base + ph.p_vaddr;
		int saved = errno;
		(void)madvise((void *)(a & ~(uintptr_t)4095),
		              ph.p_memsz + (a & 4095), MADV_POPULATE_READ);
		errno = saved;
	}
}

/* Serves a sampled allocation from the range and records it. NULL: could
 * not (the caller forwards the request unsampled). */
static HP_NOINLINE void *
sampled_alloc(hp_tls *t, int64_t rate, size_t size, size_t align, bool zero,
              uintptr_t ra, int extra)
{
	int saved = errno;
	hp_enter(t);
	if (HP_UNLIKELY(!atomic_load_explicit(&self_warm, memory_order_relaxed)))
		warm_self();
	void *p = heapprof__range_alloc(size, align, zero);
	if (p) {
		hp_bucket *b = bucket_here(t, ra, extra, size, rate);
		if (b) {
			heapprof__range_obj(p)->aligned = align > 16;
			record_alloc(heapprof__range_obj(p), b, size);
		} else {
			heapprof__range_free(heapprof__range_obj(p));
			p = NULL;
		}
	}
	/* Not recordable (no space for it, commit refused): counted, unless
	 * no allocator could serve the size at all. */
	if (!p && size <= PTRDIFF_MAX) {
		atomic_fetch_add_explicit(&heapprof__dropped_samples, 1,
		                          memory_order_relaxed);
		hp_fork_dirty();
	}
	hp_leave(t);
	heapprof__serve_tick(t); /* a periodic or signal dump that is due */
	errno = saved;
	return p;
}

/* realloc to n bytes of sampled object o, whose new size is a sample
 * too, when its block can be resized without a copy (range_exact.c):
 * the old sample is freed and the new one recorded, as for a copying
 * realloc. NULL: could not, nothing changed. */
static HP_NOINLINE void *
sampled_resize(hp_tls *t, int64_t rate, hp_obj *o, size_t n, uintptr_t ra,
               int extra)
{
	int saved = errno;
	hp_enter(t);
	hp_bucket *b = bucket_here(t, ra, extra, n, rate);
	hp_bucket *ob = o->bucket;
	size_t osize = o->size;
	uint32_t oslot = o->age_slot, ohalf = o->half;
	void *p = b ? heapprof__range_resize(o, n) : NULL;
	if (p) {
		if (HP_PROBE_FREE_ON())
			HP_PROBE_FREE((char *)o + sizeof(*o));
		record_free(ob, osize, ohalf, oslot);
		heapprof__range_obj(p)->size = n;
		heapprof__range_obj(p)->aligned = 0;
		record_alloc(heapprof__range_obj(p), b, n);
	}
	hp_leave(t);
	heapprof__serve_tick(t);
	errno = saved;
	return p;
}

/* An allocation of a thread inside the profiler: private memory, or NULL
 * (the caller forwards it to the next allocator). */
static void *
priv_alloc(size_t n, size_t align, bool zero)
{
	int saved = errno;
	void *p = heapprof__range_private(n, align < 16 ? 16 : align, zero);
	errno = saved;
	return p;
}

/* A sample if the sampler says so and it can be recorded, else NULL (the
 * caller forwards the request). */
static void *
try_sample(hp_tls *t, size_t n, size_t align, bool zero, uintptr_t ra,
           int extra)
{
	int64_t rate = sample_decide(t, n);
	return rate ? sampled_alloc(t, rate, n, align, zero, ra, extra) : NULL;
}

void
heapprof__slow_free(void *p)
{
	hp_obj *o = heapprof__range_obj(p);
	if (o->magic == HP_PRIV_MAGIC) {
		int saved = errno;
		heapprof__range_free(o);
		errno = saved;
		return;
	}
	if (o->magic != HP_OBJ_MAGIC) {
		if (o->magic != HP_BOOT_MAGIC)
			heapprof__warn("free() of an invalid or already freed pointer "
			               "in the profiler's range: ignored");
		return;
	}
	int saved = errno;
	if (HP_PROBE_FREE_ON())
		HP_PROBE_FREE(p);
	record_free(o->bucket, o->size, o->half, o->age_slot);
	heapprof__range_free(o);
	errno = saved;
}

/* What the next allocator's malloc_usable_size would say of a block of n
 * bytes: jemalloc's and tcmalloc's nallocx where the next allocator has it
 * (bootstrap.c), else glibc's chunk arithmetic (a chunk is the request
 * plus its 8-byte size field, rounded to 16, 32 at least; the next
 * chunk's first 8 bytes are usable too; from 128 KiB, glibc's default
 * mmap threshold, a mapped chunk: that plus 8, to whole pages, less its
 * 16-byte header). glibc's threshold moves up as a program frees large
 * blocks, and those then have less: a program that grows one into the
 * slack grows it at most a page further than it would without us.
 *
 * Why it matters (issue 30): programs such as redis grow a block into the
 * slack malloc_usable_size reports and realloc only when it runs out. A
 * sampled block's slot has up to twice the request; reporting that made
 * sampled blocks grow unseen (62.8 MB of 100.5 MB at rate 1) and realloc
 * less often than the rest, so their records kept the weight of a smaller
 * size (355 MB of 100.5 MB at the default rate). With the next allocator's
 * figure the program makes the same calls as without the profiler, and the
 * estimate is unbiased again. */
static size_t
next_usable(size_t n)
{
	size_t (*nx)(size_t, int) = heapprof__next_nallocx;
	if (nx) {
		size_t u = nx(n ? n : 1, 0);
		if (u)
			return u;
	}
	if (n > SIZE_MAX - 64)
		return n;
	size_t chunk = (n + 8 + 15) & ~(size_t)15;
	if (n >= ((size_t)128 << 10)) {
		size_t pg = (size_t)4096;
		return ((chunk + 8 + pg - 1) & ~(pg - 1)) - 16;
	}
	return (chunk < 32 ? 32 : chunk) - 8;
}

size_t
heapprof__slow_usable_size(void *p)
{
	hp_obj *o = heapprof__range_obj(p);
	if (o->magic == HP_OBJ_MAGIC && !o->aligned) {
		/* A sample: as the next allocator would say, within the
		 * slot (a request that fills its slot gets no more). An
		 * aligned one (memalign, valloc, pvalloc) says its slot's
		 * bytes, below: glibc's have up to a page more. */
		size_t slot = heapprof__range_usable(o), u = next_usable(o->size);
		return u < slot ? u : slot;
	}
	return o->magic == HP_OBJ_MAGIC || o->magic == HP_BOOT_MAGIC ||
	               o->magic == HP_PRIV_MAGIC
	               ? heapprof__range_usable(o)
	               : 0;
}

static void *
malloc_at(hp_tls *t, size_t n, uintptr_t ra, int extra)
{
	if (heapprof__fast(t, heapprof__weight(n)))
		return in(heapprof__next.malloc(n));
	void *p = try_sample(t, n, 16, false, ra, extra);
	if (p)
		return p;
	return in(heapprof__next.malloc(n));
}

void *
heapprof__slow_malloc(size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	hp_tls *t = &heapprof__tls;
	void *p = HP_UNLIKELY(t->busy) ? priv_alloc(n, 16, false)
	                               : try_sample(t, n, 16, false, ra, extra);
	if (p)
		return p;
	return in(heapprof__next.malloc(n));
}

void *
heapprof__slow_calloc(size_t n, size_t size)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return heapprof__next.calloc(n, size); /* ENOMEM, as glibc */
	hp_tls *t = &heapprof__tls;
	void *p = HP_UNLIKELY(t->busy) ? priv_alloc(total, 16, true)
	                               : try_sample(t, total, 16, true, ra, extra);
	if (p)
		return p;
	return in(heapprof__next.calloc(n, size));
}

/* realloc of a pointer from the range: a sampled free plus a (possibly
 * sampled) allocation plus a copy. */
static void *
realloc_owned(hp_tls *t, void *p, size_t n, uintptr_t ra, int extra)
{
	hp_obj *o = heapprof__range_obj(p);
	if (o->magic != HP_OBJ_MAGIC && o->magic != HP_BOOT_MAGIC &&
	    o->magic != HP_PRIV_MAGIC) {
		heapprof__warn("realloc() of an invalid or freed pointer in the "
		               "profiler's range");
		errno = EINVAL;
		return NULL;
	}
	if (n == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
		heapprof__slow_free(p);
		return NULL;
	}
	size_t usable = heapprof__range_usable(o);
	if (o->magic == HP_PRIV_MAGIC && n <= usable && t->busy) {
		/* the profiler's own block: grows in place, its new pages
		 * made present at once (range.c) */
		if (n > o->size && n - o->size >= 4096)
			heapprof__range_populate((char *)p + o->size, n - o->size);
		o->size = n;
		return p;
	}
	void *q;
	if (t->busy) {
		q = priv_alloc(n, 16, false);
		if (!q)
			q = in(heapprof__next.malloc(n));
	} else if (heapprof__fast(t, heapprof__weight(n))) {
		q = in(heapprof__next.malloc(n));
	} else { /* a sample (malloc_at's steps, with a growth in place) */
		int64_t rate = sample_decide(t, n);
		if (rate && o->magic == HP_OBJ_MAGIC &&
		    heapprof__range_resizable(o) &&
		    (q = sampled_resize(t, rate, o, n, ra, extra)))
			return q;
		q = rate ? sampled_alloc(t, rate, n, 16, false, ra, extra) : NULL;
		if (!q)
			q = in(heapprof__next.malloc(n));
	}
	if (!q)
		return NULL; /* errno is ENOMEM; p is untouched */
	/* What the program may have written: up to the usable size. */
	memcpy(q, p, usable < n ? usable : n);
	heapprof__slow_free(p);
	return q;
}

void *
heapprof__slow_realloc(void *p, size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	hp_tls *t = &heapprof__tls;
	if (heapprof__range_owns(p))
		return realloc_owned(t, p, n, ra, extra);
	if (!p && t->busy) {
		void *q = priv_alloc(n, 16, false);
		return q ? q : in(heapprof__next.malloc(n));
	}
	if (!p)
		return malloc_at(t, n, ra, extra);
	if (n == 0 || t->busy)
		return realloc_next(p, n); /* n == 0 frees p */
	int64_t rate = sample_decide(t, n);
	if (rate) {
		/* The new block is a sample: move the data into the range. */
		void *q = sampled_alloc(t, rate, n, 16, false, ra, extra);
		if (q) {
			size_t old = heapprof__next.malloc_usable_size(p);
			memcpy(q, p, old < n ? old : n);
			out(p);
			heapprof__next.free(p);
			return q;
		}
	}
	return realloc_next(p, n);
}

HP_INLINE bool
pow2(size_t a)
{
	return a && !(a & (a - 1));
}

int
heapprof__slow_posix_memalign(void **pp, size_t align, size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	hp_tls *t = &heapprof__tls;
	/* Invalid alignments go to the next allocator, which reports them. */
	int64_t rate;
	if (pow2(align) && align % sizeof(void *) == 0 && t->busy) {
		void *p = priv_alloc(n, align, false);
		if (p) {
			*pp = p;
			return 0;
		}
	} else if (pow2(align) && align % sizeof(void *) == 0 &&
	           (rate = sample_decide(t, n)) != 0) {
		void *p = sampled_alloc(t, rate, n, align < 16 ? 16 : align, false,
		                        ra, extra);
		if (p) {
			*pp = p;
			return 0;
		}
	}
	int rc = heapprof__next.posix_memalign(pp, align, n);
	if (!rc)
		(void)in(*pp);
	return rc;
}

/* aligned_alloc and memalign: a sample only for a power-of-two alignment;
 * anything else goes to the next allocator, which decides about it. */
static void *
aligned_slow(size_t align, size_t n, uintptr_t ra, int extra,
             void *(*next)(size_t, size_t))
{
	hp_tls *t = &heapprof__tls;
	if (pow2(align)) {
		void *p = t->busy ? priv_alloc(n, align, false)
		                  : try_sample(t, n, align < 16 ? 16 : align,
		                               false, ra, extra);
		if (p)
			return p;
	}
	return in(next(align, n));
}

void *
heapprof__slow_aligned_alloc(size_t align, size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	return aligned_slow(align, n, ra, extra, heapprof__next.aligned_alloc);
}

void *
heapprof__slow_memalign(size_t align, size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	return aligned_slow(align, n, ra, extra, heapprof__next.memalign);
}

void *
heapprof__slow_valloc(size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	hp_tls *t = &heapprof__tls;
	size_t pg = (size_t)getpagesize();
	void *p = t->busy ? priv_alloc(n, pg, false)
	                  : try_sample(t, n, pg, false, ra, extra);
	if (p)
		return p;
	return in(heapprof__next.valloc(n));
}

void *
heapprof__slow_pvalloc(size_t n)
{
	uintptr_t ra;
	int extra;
	CALLER(ra, extra);
	hp_tls *t = &heapprof__tls;
	size_t pg = (size_t)getpagesize();
	/* pvalloc rounds the block up to whole pages; the program asked for
	 * n bytes, which is what is recorded. A page-aligned block in the
	 * range ends on a page boundary, so its usable size is whole pages. */
	if (n <= SIZE_MAX - pg) {
		void *p = t->busy ? priv_alloc(n, pg, false)
		                  : try_sample(t, n, pg, false, ra, extra);
		if (p)
			return p;
	}
	return in(heapprof__next.pvalloc(n));
}
