/*
 * attach.c: `heapprof attach`'s half in the profiled process. The CLI
 * (cli/cmd_attach.c) loads libheapprof.so into a running process with a
 * remote dlopen, then calls heapprof_attach_start(); at the end it calls
 * heapprof_dump_file() and heapprof_attach_stop().
 *
 * Loaded with dlopen, the library's malloc is nobody's (libc's comes first
 * in every lookup), so routing is done here: the GOT entries of the malloc
 * family (R_X86_64_JUMP_SLOT and GLOB_DAT relocations in every loaded
 * object) are rewritten to point at the library's entry points, the value
 * each held being the program's allocator (whatever it is: the entry
 * points forward to heapprof__next, the allocator the program's lookup
 * finds first, and an entry is rewritten only if it held that function or
 * the object's own lazy-binding stub). Entries of the freeing functions
 * (free, realloc, reallocarray, malloc_usable_size; and dlclose, see
 * fn_name) are rewritten first and never put back: a block sampled while
 * attached lives in the profiler's range and may be freed long after the
 * detach, which only our free knows how to do (one range check for every
 * other pointer). The
 * allocating ones go back to what they held at heapprof_attach_stop().
 * Objects relocated after the attach (dlopen, lazy PLT slots) bind ours
 * through the loader's own lookup (attach_symval.c: the definer's
 * .dynsym values, with the same split at the detach); they are also
 * rescanned at the next sample (heapprof__attach_poll: the loader's count
 * of loaded objects changed), for a function whose lookups could not be
 * routed (an IFUNC).
 *
 * Shared state: the saved entries (slots) and `scanned_adds` are under
 * `lock` (attach, stop and rescans; rare paths, a sample's at most);
 * attach_on is atomic; attach_mode and attach_nanos are written by the
 * constructor and heapprof_attach_start before routing begins.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "attach_symval.h"
#include "collect.h"
#include "customlabels.h"
#include "labels.h"

_Atomic int heapprof__attach_on;
static int attach_mode;       /* loaded by heapprof attach (constructor) */
static int64_t attach_nanos;  /* CLOCK_REALTIME of the last attach */
static int attach_count;      /* attaches so far (under lock) */

#ifndef HP_ENTRY_RENAMED

/* The functions routed, in this order; the first FREEING stay routed.
 * dlclose is unload_hook.c's: it keeps what the sampled frames of an
 * object it unmaps belong to, so a profile still names them (without it,
 * a plugin loaded and closed while attached showed as <unknown> frames
 * with no mapping); it stays routed since those samples outlive the
 * detach (a later attach's profile counts them). */
enum { F_FREE, F_REALLOC, F_REALLOCARRAY, F_USABLE, F_DLCLOSE, FREEING,
       F_MALLOC = FREEING, F_CALLOC, F_POSIX_MEMALIGN, F_ALIGNED_ALLOC,
       F_MEMALIGN, F_VALLOC, F_PVALLOC, NFN };
static const char *const fn_name[NFN] = {
	"free", "realloc", "reallocarray", "malloc_usable_size", "dlclose", "malloc",
	"calloc", "posix_memalign", "aligned_alloc", "memalign", "valloc",
	"pvalloc"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t ours[NFN];   /* our entry points (under lock) */
static uintptr_t theirs[NFN]; /* what the program's lookup finds, or 0:
                               * not routed (our entry would not forward
                               * to it) */

/* One rewritten GOT entry. */
typedef struct slot {
	uintptr_t *at;
	uintptr_t old;
	int fn;
	int restored;
} slot;
#define CHUNK 512
typedef struct chunk {
	struct chunk *next;
	int n;
	slot s[CHUNK];
} chunk;
static chunk *slots;               /* under lock */
static unsigned long long scanned_adds; /* dlpi_adds at the last complete
                                         * scan */
/* glibc 2.35's _dl_find_object (looked up at the attach, under lock): it
 * knows an object only once the loader has relocated it and protected its
 * RELRO; NULL before 2.35. */
static int (*find_object)(void *, void *);
static int scan_pending; /* a scan met an object still being loaded (under
                          * lock) */
static int symval_failed[NFN]; /* why a function's lookups could not be
                                * routed (errno; under lock): objects
                                * loaded later get it at a sample */

/* Writes v at p, making p's page writable for the time (RELRO). */
static int
poke(uintptr_t *p, uintptr_t v, uintptr_t relro_lo, uintptr_t relro_hi)
{
	uintptr_t a = (uintptr_t)p;
	if (a < relro_lo || a >= relro_hi) {
		atomic_store_explicit((_Atomic uintptr_t *)p, v, memory_order_release);
		return 0;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *page = (void *)(a & ~(uintptr_t)(pg - 1));
	if (mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
		return -errno;
	atomic_store_explicit((_Atomic uintptr_t *)p, v, memory_order_release);
	mprotect(page, (size_t)pg, PROT_READ);
	return 0;
}

static slot *
new_slot(void)
{
	if (!slots || slots->n == CHUNK) {
		chunk *c = heapprof__arena_alloc(sizeof(chunk));
		if (!c)
			return NULL;
		memset(c, 0, sizeof(*c));
		c->next = slots;
		slots = c;
	}
	return &slots->s[slots->n++];
}

/* Which functions a scan routes: the freeing ones, or all. */
static int scan_upto;

static uintptr_t
dyn_ptr(ElfW(Addr) base, ElfW(Addr) v)
{
	/* glibc relocates the dynamic section's pointers in place; a value
	 * below the load address has not been */
	return v < base ? base + v : v;
}

/* The relocations of one object: routes each entry of a routed function
 * that holds the program's definition, or the object's lazy stub. */
static void
scan_rela(const struct dl_phdr_info *info, const ElfW(Rela) *r, size_t n,
          const ElfW(Sym) *symtab, const char *strtab, uintptr_t lo,
          uintptr_t hi, uintptr_t relro_lo, uintptr_t relro_hi)
{
	for (size_t i = 0; i < n; i++) {
		unsigned type = ELF64_R_TYPE(r[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		const char *nm = strtab + symtab[ELF64_R_SYM(r[i].r_info)].st_name;
		if (nm[0] != 'f' && nm[0] != 'r' && nm[0] != 'm' && nm[0] != 'c' &&
		    nm[0] != 'p' && nm[0] != 'a' && nm[0] != 'v' && nm[0] != 'd')
			continue;
		int f;
		for (f = 0; f < scan_upto; f++)
			if (strcmp(nm, fn_name[f]) == 0)
				break;
		if (f == scan_upto || !theirs[f])
			continue;
		uintptr_t *at = (uintptr_t *)(info->dlpi_addr + r[i].r_offset);
		uintptr_t v = atomic_load_explicit((_Atomic uintptr_t *)at,
		                                   memory_order_relaxed);
		if (v == ours[f])
			continue; /* routed already */
		/* the program's function, or (lazy binding, not bound yet)
		 * the object's own PLT stub */
		if (v != theirs[f] && !(v >= lo && v < hi && type == R_X86_64_JUMP_SLOT))
			continue;
		slot *s = new_slot();
		if (!s)
			return;
		s->at = at;
		s->old = v;
		s->fn = f;
		s->restored = 0;
		if (poke(at, ours[f], relro_lo, relro_hi) != 0)
			slots->n--; /* not routed: forget it */
	}
}

static int
scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	unsigned long long *adds = arg;
	*adds = info->dlpi_adds;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t lo = UINTPTR_MAX, hi = 0, relro_lo = 0, relro_hi = 0;
	long pg = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + p->p_vaddr;
		if (p->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)a;
		else if (p->p_type == PT_LOAD) {
			if (a < lo)
				lo = a;
			if (a + p->p_memsz > hi)
				hi = a + p->p_memsz;
		} else if (p->p_type == PT_GNU_RELRO) {
			/* the whole pages the loader made read-only (its
			 * _dl_protect_relro rounds the end down): the rest of
			 * the last page stays writable, and poke must not
			 * make it read-only */
			relro_lo = a & ~(uintptr_t)(pg - 1);
			relro_hi = (a + p->p_memsz) & ~(uintptr_t)(pg - 1);
		}
	}
	/* the vdso: nothing to route, and its dynamic section is not
	 * relocated */
	if (!dyn || (info->dlpi_name && strncmp(info->dlpi_name, "linux-vdso", 10) == 0))
		return 0;
	/* An object another thread's dlopen has added but not finished
	 * relocating: its entries hold link-time values (skipped, and never
	 * looked at again: the count of loaded objects would not change), or
	 * a poke would make its RELRO read-only under the loader. Left for
	 * the next sample's scan. */
	uint64_t fo[64];
	if (find_object && lo < hi && find_object((void *)lo, fo) != 0) {
		scan_pending = 1;
		return 0;
	}
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rela = NULL, *jmprel = NULL;
	size_t relasz = 0, pltrelsz = 0;
	int pltrel_is_rela = 1;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(info->dlpi_addr, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(info->dlpi_addr, d->d_un.d_ptr); break;
		case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(info->dlpi_addr, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(info->dlpi_addr, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		case DT_PLTREL: pltrel_is_rela = d->d_un.d_val == DT_RELA; break;
		default: break;
		}
	}
	if (!symtab || !strtab || !pltrel_is_rela)
		return 0;
	if (rela)
		scan_rela(info, rela, relasz / sizeof(ElfW(Rela)), symtab, strtab,
		          lo, hi, relro_lo, relro_hi);
	if (jmprel)
		scan_rela(info, jmprel, pltrelsz / sizeof(ElfW(Rela)), symtab, strtab,
		          lo, hi, relro_lo, relro_hi);
	return 0;
}

/* Routes the first `upto` functions in every loaded object (under lock). */
static void
scan_all(int upto)
{
	scan_upto = upto;
	scan_pending = 0;
	unsigned long long adds = 0;
	dl_iterate_phdr(scan_one, &adds);
	if (!scan_pending)
		scanned_adds = adds;
}

/* Our entry points and the program's functions (under lock): 0, or -1 if
 * ours cannot be found. */
static int
resolve_fns(void)
{
	Dl_info di;
	if (!dladdr((void *)resolve_fns, &di) || !di.dli_fname)
		return -1;
	void *self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!self)
		return -1;
	find_object = (int (*)(void *, void *))dlsym(RTLD_DEFAULT, "_dl_find_object");
	const uintptr_t next[NFN] = {
		(uintptr_t)heapprof__next.free, (uintptr_t)heapprof__next.realloc,
		0, (uintptr_t)heapprof__next.malloc_usable_size,
		(uintptr_t)dlsym(RTLD_NEXT, "dlclose"), /* unload_hook.c's next */
		(uintptr_t)heapprof__next.malloc, (uintptr_t)heapprof__next.calloc,
		(uintptr_t)heapprof__next.posix_memalign,
		(uintptr_t)heapprof__next.aligned_alloc,
		(uintptr_t)heapprof__next.memalign, (uintptr_t)heapprof__next.valloc,
		(uintptr_t)heapprof__next.pvalloc};
	int rc = 0;
	for (int f = 0; f < NFN; f++) {
		uintptr_t o = (uintptr_t)dlsym(self, fn_name[f]);
		Dl_info od;
		/* dlclose: ours, outside the entry section (its frames are
		 * not the allocator's) */
		if (f == F_DLCLOSE ? !o || !dladdr((void *)o, &od) ||
		                     od.dli_fbase != di.dli_fbase
		                   : o < (uintptr_t)__start_heapprof_entry ||
		                     o >= (uintptr_t)__stop_heapprof_entry) {
			rc = -1;
			break;
		}
		ours[f] = o;
		uintptr_t t = (uintptr_t)dlsym(RTLD_DEFAULT, fn_name[f]);
		if (t == o) /* its definition leads here (attach_symval.c) */
			t = heapprof__symval_orig(f);
		/* routed only where our entry forwards to the same function:
		 * reallocarray forwards to realloc */
		if (f == F_REALLOCARRAY)
			theirs[f] = theirs[F_REALLOC] ? t : 0;
		else
			theirs[f] = t && t == next[f] ? t : 0;
	}
	dlclose(self);
	return rc;
}

/* Called by the constructor when the library was loaded with dlopen and
 * its own malloc is not the program's: 1 if that load was heapprof
 * attach's, which names the library with a "/./" before its file name.
 * Then the configuration becomes attach's: nothing runs on its own (no
 * exit dump, signal, endpoint, thread, handler, nor a line on the
 * program's stderr), and nothing is sampled until heapprof_attach_start. */
HP_RARE int
heapprof__attach_loading(hp_config *cfg)
{
	Dl_info di;
	if (!dladdr((void *)heapprof__attach_loading, &di) || !di.dli_fname ||
	    !strstr(di.dli_fname, "/./"))
		return 0;
	attach_mode = 1;
	cfg->at_exit = 0;
	cfg->interval = 0;
	cfg->signal = 0;
	cfg->http[0] = 0;
	cfg->push[0] = 0;
	cfg->dump_growth = 0;
	cfg->dump_limit = 0;
	cfg->write_empty = 1;
	cfg->quiet = 1;
	cfg->run_status = NULL;
	return 1;
}

/* The loader's lookups of the routed functions made to find ours
 * (attach_symval.c), the freeing ones first, so that an object relocated
 * from now on (a dlopen, a lazy PLT slot's first call) is routed before
 * any code of it runs. Then a dlopen running meanwhile, which may have
 * read the old values, is waited for (a dlopen of ourselves takes the
 * loader's lock, which a dlopen holds until its object is relocated and
 * initialised; no sample waits for our lock: none is taken before the
 * rate is set): the scans after this find it relocated. Under lock. */
static void
route_lookups(void)
{
	/* Not dlclose: unload_hook.c's wrapper finds the real one with
	 * dlsym(RTLD_NEXT), which would then return the wrapper itself
	 * (it recursed for ever: attach_real.cxx.dlopen_later). Objects
	 * loaded later reach glibc's dlclose directly. */
	uintptr_t t[NFN];
	memcpy(t, theirs, sizeof(t));
	t[F_DLCLOSE] = 0;
	heapprof__symval_route(NFN, fn_name, t, ours, symval_failed);
	symval_failed[F_DLCLOSE] = 0;
	Dl_info di;
	if (dladdr((void *)route_lookups, &di) && di.dli_fname) {
		void *self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
		if (self)
			dlclose(self);
	}
}

HP_EXPORT int heapprof_attach_start(long rate);
HP_EXPORT int heapprof_attach_stop(void);

/* The remote call after the dlopen: 0, or -EPERM (not loaded by attach:
 * the process is profiled already), -EALREADY, -ENOSYS (our entry points
 * not found). rate <= 0: the default. */
HP_RARE HP_EXPORT int
heapprof_attach_start(long rate)
{
	if (!attach_mode || !atomic_load(&heapprof__ready))
		return -EPERM;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	pthread_mutex_lock(&lock);
	int rc = 0;
	if (atomic_load(&heapprof__attach_on)) {
		rc = -EALREADY;
		goto out;
	}
	if (resolve_fns() != 0) {
		rc = -ENOSYS;
		goto out;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	attach_nanos = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	attach_count++;
	atomic_store(&heapprof__cfg.rate, rate > 0 ? (int64_t)rate : 524288);
	/* our entry points now the program's: samples may be taken */
	heapprof__unreached = 0;
	heapprof__otel_resolve(0); /* outside malloc (otel.c) */
	heapprof__customlabels_resolve(0);
	route_lookups();
	scan_all(FREEING); /* every free first: then no sample can reach
	                    * a free that does not know it */
	scan_all(NFN);
	atomic_store(&heapprof__attach_on, 1);
out:
	pthread_mutex_unlock(&lock);
	hp_leave(t);
	return rc;
}

/* The remote call at the detach: the allocating entries back to what they
 * held, sampling off. The freeing ones stay (the header says why). */
HP_RARE HP_EXPORT int
heapprof_attach_stop(void)
{
	if (!attach_mode)
		return -EPERM;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	pthread_mutex_lock(&lock);
	atomic_store(&heapprof__attach_on, 0);
	/* objects relocated from now on bind the program's allocating
	 * functions again; the freeing ones keep ours */
	heapprof__symval_restore(FREEING);
	int restored = 0;
	for (chunk *c = slots; c; c = c->next) {
		for (int i = 0; i < c->n; i++) {
			slot *s = &c->s[i];
			if (s->fn < FREEING || s->restored)
				continue;
			/* The object may have been unloaded since, and its
			 * pages mapped again by anything (a guard page, code):
			 * written only if an object loaded now has a writable
			 * segment there (the loader's lock, in dladdr1, keeps
			 * it from going meanwhile). A successful mprotect said
			 * nothing: it made a PROT_NONE page read-write. */
			long pg = sysconf(_SC_PAGESIZE);
			void *page = (void *)((uintptr_t)s->at & ~(uintptr_t)(pg - 1));
			Dl_info di;
			struct link_map *lm = NULL;
			int ro = 0, w = 0;
			if (dladdr1(s->at, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
			    di.dli_fbase) {
				ElfW(Ehdr) *eh = (ElfW(Ehdr) *)di.dli_fbase;
				ElfW(Phdr) *ph = (ElfW(Phdr) *)((char *)eh + eh->e_phoff);
				for (int k = 0; k < eh->e_phnum; k++) {
					uintptr_t a = lm->l_addr + ph[k].p_vaddr;
					if (ph[k].p_type == PT_LOAD && (ph[k].p_flags & PF_W) &&
					    (uintptr_t)s->at >= a &&
					    (uintptr_t)s->at + sizeof(uintptr_t) <= a + ph[k].p_memsz)
						w = 1;
					/* read-only after the loading: the RELRO's
					 * whole pages, as the loader protects them */
					if (ph[k].p_type == PT_GNU_RELRO &&
					    (uintptr_t)page >= (a & ~(uintptr_t)(pg - 1)) &&
					    (uintptr_t)page + (uintptr_t)pg <=
					            ((a + ph[k].p_memsz) & ~(uintptr_t)(pg - 1)))
						ro = 1;
				}
			}
			if (!w) { /* gone: nothing of ours to put back */
				s->restored = 1;
				continue;
			}
			if (ro && mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
				continue;
			if (*s->at == ours[s->fn])
				*s->at = s->old;
			s->restored = 1;
			restored++;
			if (ro)
				mprotect(page, (size_t)pg, PROT_READ);
		}
	}
	/* stop sampling; entries not restored (a thread inside one now)
	 * forward unsampled */
	atomic_store(&heapprof__cfg.rate, 0);
	pthread_mutex_unlock(&lock);
	hp_leave(t);
	return restored;
}

/* A sample's look for objects loaded since the last scan (collect.h):
 * the loader's count of objects added, read with the first object. */
static int
first_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

void
heapprof__attach_rescan(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(first_adds, &adds);
	if (adds == scanned_adds) /* a racy read: the scan below re-checks */
		return;
	/* Another thread's scan (or an attach, a stop) holds the lock: wait
	 * for it, as the block just sampled must not leave this call before
	 * every object loaded so far frees through us (a plugin handed it
	 * right after its dlopen would give it to the program's free, which
	 * aborts on a pointer of our range). Bounded: this thread may be in
	 * a dl_iterate_phdr callback, holding the loader's lock the holder's
	 * scan waits for. */
	int got = pthread_mutex_trylock(&lock) == 0;
	if (!got) {
		struct timespec t0, tn;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			sched_yield();
			got = pthread_mutex_trylock(&lock) == 0;
			clock_gettime(CLOCK_MONOTONIC, &tn);
		} while (!got && (tn.tv_sec - t0.tv_sec) * 1000000000L +
		                         (tn.tv_nsec - t0.tv_nsec) < 20000000L);
		if (!got)
			return;
	}
	if (atomic_load(&heapprof__attach_on) && adds != scanned_adds) {
		scan_all(FREEING);
		scan_all(NFN);
	}
	pthread_mutex_unlock(&lock);
}

#else /* the sanitizer build: no attach */

HP_RARE int
heapprof__attach_loading(hp_config *cfg)
{
	(void)cfg;
	return 0;
}

void
heapprof__attach_rescan(void)
{
}

#endif

int
heapprof__attach_loaded(void)
{
	return attach_mode;
}

/* The profile's comment on the attach, or "" (snapshot.c). */
void
heapprof__attach_comment(char *buf, size_t cap)
{
	buf[0] = 0;
	if (!attach_mode || !attach_nanos)
		return;
	time_t s = (time_t)(attach_nanos / 1000000000);
	struct tm tm;
	char when[64];
	gmtime_r(&s, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	const char *late = "";
#ifndef HP_ENTRY_RENAMED
	/* written under lock by the attach, before any sample */
	for (int f = 0; f < NFN; f++)
		if (theirs[f] && symval_failed[f])
			late = "; objects loaded later routed at their first "
			       "sample only (allocator symbols not routable)";
#endif
	snprintf(buf, cap,
	         "heapprof: attached to the running process at %s (unix %lld): "
	         "the profile covers allocations since the attach%s%s",
	         when, (long long)s,
	         attach_count > 1 ? " (and those of the earlier attaches)" : "", late);
}
