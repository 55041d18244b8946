/*
 * otel.c: labels from the OpenTelemetry thread context (OTEP 4947), with
 * no code in the program: where the process publishes the thread-local
 * pointer otel_thread_ctx_v1 (exported in a .dynsym), a sample copies the
 * record it points to into a label set.
 *
 * The record, packed: trace_id[16], span_id[8], valid (u8), trace_flags
 * (u8), attrs_data_size (u16, host order): a 28-byte header, then
 * attrs_data_size bytes of {key u8, len u8, value[len]} entries; 640
 * bytes at most in all. Everything read is checked: a NULL or low pointer,
 * valid != 1 (before or after the copy: a torn record), a size past 612,
 * an entry running past the size, a NUL in a value: no labels. An
 * attribute is a label named as the process context's
 * threadlocal.attribute_key_map names its key index (OTEP 4719,
 * otel_procctx.c: one pointer loaded here), else otel.attr.K (K: its key
 * index). HEAPPROF_OTEL_IDS=1
 * adds trace_id and span_id (hex) labels: one set per span, which the cap
 * on sets (labels.c) bounds.
 *
 * Where the variable is comes from the loaded objects' own symbol tables
 * (their .gnu.hash, walked with dl_iterate_phdr: the variable's offset in
 * its object's TLS block plus that block's address in this thread), once,
 * by the constructor (or heapprof_attach_start's dlsym), never on the
 * sampled path. At start-up a failing dlsym cost every process 8 page
 * faults (its code and dlerror's in libc and the loader) and ~5 k
 * instructions; the walk reads hash pages the loader's relocation already
 * read. dlsym takes the loader's lock, and a sample may be taken where
 * the thread holds the loader's dl_iterate_phdr lock (a callback that
 * allocates): against a dlopen in another thread (the loader's lock, then
 * that one) the two threads deadlocked (rel.otel.dlpi_dlopen). It also
 * cleared a pending dlerror() of the program's. The variable must be in
 * static TLS (a library loaded with the program, or given static TLS):
 * then it lies at the same offset from the thread pointer in every
 * thread, which is all the sampled path computes (`off`). An SDK that is
 * dlopen'd later is not read (its TLS is per-thread memory that only
 * __tls_get_addr finds, which may allocate).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "collect.h"
#include "labels.h"
#include "otel_procctx.h"

#define REC_MAX 640
#define HDR 28
#define MAX_ATTRS 32

/* otel_thread_ctx_v1's offset from the thread pointer, valid when
 * `found` (set once, before sampling begins or with a release store). */
static intptr_t off;
static _Atomic int found;

static inline uintptr_t
thread_pointer(void)
{
	uintptr_t tp = 0;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return tp;
}

static void
hex(char *out, const uint8_t *b, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = 0;
}

/* The label set of the record at rec, or NULL. */
static const heapprof_labels *
from_record(const uint8_t *rec)
{
	if ((uintptr_t)rec < 4096)
		return NULL;
	uint8_t b[REC_MAX];
	memcpy(b, rec, HDR);
	uint16_t size;
	memcpy(&size, b + 26, 2);
	if (b[24] != 1 || size > REC_MAX - HDR)
		return NULL;
	memcpy(b + HDR, rec + HDR, size);
	/* valid still 1 after the copy: not rewritten while we read */
	atomic_signal_fence(memory_order_seq_cst);
	if (*(const volatile uint8_t *)(rec + 24) != 1)
		return NULL;
	const char *kv[2 * (MAX_ATTRS + 2)];
	char text[MAX_ATTRS * 16 + REC_MAX + 64];
	size_t n = 0, at = 0;
	const hp_keymap *km =
		atomic_load_explicit(&heapprof__otel_keymap, memory_order_acquire);
	for (size_t p = HDR; p < (size_t)HDR + size;) {
		if (p + 2 > (size_t)HDR + size)
			return NULL;
		uint8_t key = b[p], len = b[p + 1];
		if (p + 2 + len > (size_t)HDR + size || n == MAX_ATTRS)
			return NULL;
		for (size_t i = 0; i < len; i++) /* (no memchr: a symbol
		                                  * bound in every process) */
			if (!b[p + 2 + i])
				return NULL;
		if (km && key < km->n && km->name[key]) {
			kv[2 * n] = km->name[key]; /* the arena's: never freed */
		} else {
			kv[2 * n] = text + at;
			memcpy(text + at, "otel.attr.", 10); /* no snprintf: ~1,500 */
			at += 10;                   /* instructions a sample */
			if (key >= 100)
				text[at++] = (char)('0' + key / 100);
			if (key >= 10)
				text[at++] = (char)('0' + key / 10 % 10);
			text[at++] = (char)('0' + key % 10);
			text[at++] = 0;
		}
		kv[2 * n + 1] = text + at;
		memcpy(text + at, b + p + 2, len);
		text[at + len] = 0;
		at += len + 1u;
		n++;
		p += 2u + len;
	}
	if (heapprof__cfg.otel_ids) {
		static const uint8_t zero[16];
		if (memcmp(b, zero, 16)) {
			kv[2 * n] = "trace_id";
			kv[2 * n + 1] = text + at;
			hex(text + at, b, 16);
			at += 33;
			n++;
		}
		if (memcmp(b + 16, zero, 8)) {
			kv[2 * n] = "span_id";
			kv[2 * n + 1] = text + at;
			hex(text + at, b + 16, 8);
			n++;
		}
	}
	int rc;
	return n ? heapprof__labels_intern(kv, n, &rc) : NULL;
}

const heapprof_labels *
heapprof__otel_labels(void)
{
	if (!atomic_load_explicit(&found, memory_order_acquire))
		return NULL;
	const uint8_t *rec;
	memcpy(&rec, (const void *)(thread_pointer() + (uintptr_t)off), sizeof(rec));
	return from_record(rec);
}

/* --------------------------------------- the variable, from .gnu.hash */

typedef struct {
	const char *name;
	uint32_t hash;
	uintptr_t addr; /* this thread's copy, once found */
} tls_find;

/* d_ptr of a dynamic entry as an address (glibc relocates most in place;
 * an object whose dynamic section is read-only keeps them relative). */
static uintptr_t
dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v;
}

static int
tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	tls_find *f = arg;
	if (!info->dlpi_tls_data)
		return 0; /* no TLS in this object (or none for this thread) */
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
			                          info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	uintptr_t base = info->dlpi_addr, gh = 0, sym = 0, str = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_GNU_HASH)
			gh = dyn_ptr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_SYMTAB)
			sym = dyn_ptr(base, dyn->d_un.d_ptr);
		else if (dyn->d_tag == DT_STRTAB)
			str = dyn_ptr(base, dyn->d_un.d_ptr);
	}
	if (!gh || !sym || !str)
		return 0;
	/* The GNU hash table: nbuckets, symoffset, bloom words, bloom
	 * shift; the Bloom filter, the buckets, the chains. */
	const uint32_t *h = (const uint32_t *)gh;
	uint32_t nb = h[0], symoff = h[1], nbloom = h[2], shift = h[3];
	if (!nb || !nbloom)
		return 0;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + nbloom);
	const uint32_t *chain = buckets + nb;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word = bloom[(f->hash / bits) % nbloom];
	ElfW(Addr) mask = ((ElfW(Addr))1 << (f->hash % bits)) |
	                  ((ElfW(Addr))1 << ((f->hash >> shift) % bits));
	if ((word & mask) != mask)
		return 0;
	uint32_t i = buckets[f->hash % nb];
	if (i < symoff)
		return 0;
	const ElfW(Sym) *syms = (const ElfW(Sym) *)sym;
	for (;; i++) {
		uint32_t h2 = chain[i - symoff];
		const ElfW(Sym) *s = &syms[i];
		if ((h2 | 1) == (f->hash | 1) &&
		    strcmp((const char *)str + s->st_name, f->name) == 0) {
			if (ELF64_ST_TYPE(s->st_info) == STT_TLS &&
			    s->st_shndx != SHN_UNDEF) {
				f->addr = (uintptr_t)info->dlpi_tls_data + s->st_value;
				return 1;
			}
			return 0; /* defined otherwise, or a reference */
		}
		if (h2 & 1)
			return 0;
	}
}

/* This thread's copy of the TLS variable `name`, defined in a loaded
 * object's .dynsym, or 0. The first definition in load order, as the
 * loader's lookup would find (the executable first). */
static uintptr_t
tls_symbol(const char *name)
{
	tls_find f = {name, 5381, 0};
	for (const char *c = name; *c; c++)
		f.hash = f.hash * 33 + (uint8_t)*c;
	dl_iterate_phdr(tls_cb, &f);
	return f.addr;
}

void
heapprof__otel_resolve(int startup)
{
	uintptr_t tp = thread_pointer();
	if (!tp || atomic_load_explicit(&found, memory_order_relaxed))
		return;
	int saved = errno;
	uintptr_t a = tls_symbol("otel_thread_ctx_v1");
	if (!a) {
		errno = saved;
		return;
	}
	/* At start-up every object's TLS is static. Later (attach), the
	 * loader's static TLS size bounds it, when the loader says it
	 * (glibc's, as the sanitizers read it); else it is not read. */
	if (!startup) {
		void (*info)(size_t *, size_t *);
		void *f = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
		memcpy(&info, &f, sizeof(info));
		size_t size = 0, align = 0;
		if (info)
			info(&size, &align);
		else
			(void)dlerror();
#if defined(__x86_64__)
		int in_static = a < tp && tp - a <= size;
#else
		int in_static = a >= tp && a - tp < size;
#endif
		if (!in_static) {
			errno = saved;
			return;
		}
	}
	off = (intptr_t)(a - tp);
	atomic_store_explicit(&found, 1, memory_order_release);
	heapprof__procctx_enable(); /* the key names (otel_procctx.c) */
	errno = saved;
}
