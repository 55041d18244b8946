/*
 * snapshot.c: the profiler's records as a heapprof_heap_profile for the
 * writers: a copy of every bucket's counters (read with relaxed atomics
 * while the program keeps allocating: seed 003's copy loop, without the
 * retry, since buckets are only ever prepended to a list), the executable
 * mappings of /proc/self/maps with their GNU build ids (read in memory for
 * loaded objects, loaded_ids.c; else from the file), and function names
 * from the ELF symbol tables (a cache kept for the life of the process),
 * or with HEAPPROF_SYMBOLIZE=dwarf file:line and inlined frames from DWARF.
 *
 * Runs on the dumping thread with its busy flag set and dump_lock held
 * (serve/dump.c), so the memory it takes from malloc comes from the real
 * allocator, unsampled, and the symbol cache has one user at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "collect.h"
#include "otel_procctx.h"
#include "dwarf_dl.h"
#include "dwarf_sym.h"
#include "elffile.h"
#include "heap_encode.h"
#include "labels.h"
#include "loaded_ids.h"
#include "maps.h"
#include "sort_u64.h"
#include "unloaded.h"
#include "version.h"

static heapprof_symcache *symcache; /* dump_lock */
static heapprof_dwsym *dwsym;       /* dump_lock; HEAPPROF_SYMBOLIZE=dwarf */
/* Set by this thread around a dump it runs in a signal handler of ours
 * or in _exit (collect.h). */
HP_HIDDEN __thread int heapprof__in_handler
	__attribute__((tls_model("initial-exec")));

static void
dwsym_warn(void *arg, const char *file, const char *msg)
{
	char b[600];
	(void)arg;
	snprintf(b, sizeof(b),
	         "symbolize: %s: %s; its frames are left unsymbolized", file, msg);
	heapprof__warn_dup(b);
}

/* Build ids by path, so each file is read once per process (dump_lock). */
static struct bid_cache {
	char *path;
	char *hex; /* NULL: none */
} *bids;
static size_t nbids;

static const char *
build_id(const char *path)
{
	for (size_t i = 0; i < nbids; i++)
		if (!strcmp(bids[i].path, path))
			return bids[i].hex;
	char hex[129];
	int rc = heapprof__elf_build_id(path, hex, sizeof(hex));
	struct bid_cache *nb = realloc(bids, (nbids + 1) * sizeof(*bids));
	if (!nb)
		return NULL;
	bids = nb;
	bids[nbids].path = strdup(path);
	bids[nbids].hex = rc > 0 ? strdup(hex) : NULL;
	if (!bids[nbids].path)
		return NULL;
	return bids[nbids++].hex;
}

/* Executable mappings, the main binary first. */
static int
cmp_map_start(const void *a, const void *b)
{
	uint64_t x = (*(const heapprof_mapping *const *)a)->start;
	uint64_t y = (*(const heapprof_mapping *const *)b)->start;
	return x < y ? -1 : x > y;
}

/* Tells the symbol cache every distinct PC of the profile before the
 * encoder asks for them one at a time: it then finds them in one pass
 * over each file's symbols instead of sorting whole tables (issue 15).
 * Out of memory: nothing announced, the lookups still work. */
static void
announce_pcs(const heapprof_record *recs, size_t n,
             const heapprof_mapping *mappings, size_t nmappings)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += recs[i].depth;
	if (!total || !nmappings)
		return;
	uint64_t *pcs = malloc(total * sizeof(*pcs));
	const heapprof_mapping **ms = malloc(nmappings * sizeof(*ms));
	if (pcs && ms) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t d = 0; d < recs[i].depth; d++)
				pcs[k++] = recs[i].stack[d];
		hp_sort_u64(pcs, k);
		for (size_t i = 0; i < nmappings; i++)
			ms[i] = &mappings[i];
		qsort(ms, nmappings, sizeof(*ms), cmp_map_start);
		size_t j = 0;
		for (size_t i = 0; i < k; i++) {
			if (i && pcs[i] == pcs[i - 1])
				continue;
			while (j < nmappings && ms[j]->limit <= pcs[i])
				j++;
			if (j == nmappings)
				break;
			if (pcs[i] >= ms[j]->start)
				heapprof__symcache_want(symcache, ms[j], pcs[i]);
		}
	}
	free(pcs);
	free(ms);
}

/* How this dump reads the build ids of loaded objects (loaded_ids.c).
 * A process with one thread (the nlink of /proc/self/task is 2 + its
 * threads): 2, without the loader's lock, since nothing can unmap what is
 * read, and a signal handler that calls exit() may have interrupted this
 * thread in the middle of taking that lock. Otherwise 1, under the lock;
 * but not in a fork child, where a thread that is gone may hold it, nor
 * in one of the profiler's signal handlers or _exit (see above), nor
 * while the loader is changing its list: there 0, the files. */
static int
ids_mode(void)
{
	/* Inside an interrupted dlopen or dlclose (an exit() from a signal
	 * handler): the loader's list is half-made; the files. */
	if (heapprof__loader_changing())
		return 0;
	struct stat st;
	if (stat("/proc/self/task", &st) == 0 && st.st_nlink == 3)
		return 2;
	return !heapprof__in_handler && (long)getpid() == heapprof__init_pid;
}

/* The executable mappings (`ids`: their build ids read in memory, freed
 * by the caller after encoding); the file's for the rest. */
static int
collect_mappings(heapprof_maps *maps, heapprof_mapping **out, size_t *n,
                 hp_loaded_id **ids)
{
	*out = NULL;
	*n = 0;
	*ids = NULL;
	if (heapprof__maps_read_self(maps) != 0)
		return 0; /* no mappings: pprof shows raw addresses */
	size_t nx = 0;
	for (size_t i = 0; i < maps->n; i++)
		nx += (maps->v[i].perms & HEAPPROF_MAP_X) != 0;
	heapprof_mapping *m = calloc(nx + 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	int mode = ids_mode();
	hp_loaded_id *li = mode ? calloc(nx + 1, sizeof(*li)) : NULL;
	if (li) {
		for (size_t i = 0, k = 0; i < maps->n; i++)
			if (maps->v[i].perms & HEAPPROF_MAP_X)
				li[k++].map = &maps->v[i];
		if (mode == 1)
			heapprof__loaded_ids(maps, li, nx);
		else
			heapprof__loaded_ids_unlocked(maps, li, nx);
	}
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = 0;
	size_t k = 0, main_at = (size_t)-1;
	for (size_t i = 0; i < maps->n; i++) {
		const heapprof_maps_entry *e = &maps->v[i];
		if (!(e->perms & HEAPPROF_MAP_X))
			continue;
		m[k].start = e->start;
		m[k].limit = e->limit;
		m[k].offset = e->offset;
		m[k].file = e->path;
		if (li && li[k].hex[0])
			m[k].build_id = li[k].hex;
		else
			m[k].build_id = e->path[0] == '/' ? build_id(e->path) : NULL;
		if (main_at == (size_t)-1 && exe[0] && !strcmp(e->path, exe))
			main_at = k;
		k++;
	}
	if (main_at != (size_t)-1 && main_at != 0) {
		heapprof_mapping t = m[main_at];
		memmove(m + 1, m, main_at * sizeof(*m));
		m[0] = t;
	}
	*out = m;
	*n = k;
	*ids = li;
	return 0;
}

/* In a child forked while another thread was inside a dump: the caches
 * may be half updated, so the child starts afresh (the old ones are left
 * allocated: freeing them could free what is not consistent). */
HP_RARE void
heapprof__snapshot_atfork_reset(void)
{
	symcache = NULL;
	dwsym = NULL;
	bids = NULL;
	nbids = 0;
}

int64_t
heapprof__now_nanos(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One bucket's counters, frees read first: a free counted after we read
 * the allocations could otherwise exceed them. */
static void
read_counts(hp_bucket *b, hp_counts *c)
{
	c->fo = atomic_load_explicit(&b->free_objects, memory_order_acquire);
	c->fb = atomic_load_explicit(&b->free_bytes, memory_order_acquire);
	c->ao = atomic_load_explicit(&b->alloc_objects, memory_order_acquire);
	c->ab = atomic_load_explicit(&b->alloc_bytes, memory_order_acquire);
	if (c->fo > c->ao)
		c->fo = c->ao;
	if (c->fb > c->ab)
		c->fb = c->ab;
}

/* Room for the counters of every bucket that exists now, plus slack for
 * those created while we walk (they are left for the next snapshot). */
static int
baseline_alloc(hp_baseline *b, uint64_t nbuckets)
{
	b->n = (uint32_t)nbuckets;
	b->c = calloc(nbuckets + 1, sizeof(*b->c));
	return b->c ? 0 : -ENOMEM;
}

int
heapprof__baseline_take(hp_baseline *b)
{
	memset(b, 0, sizeof(*b));
	b->time_nanos = heapprof__now_nanos();
	HP_TRY(baseline_alloc(b, heapprof__bucket_count()));
	for (hp_bucket *k = heapprof__bucket_list(); k; k = k->all_next)
		if (k->id < b->n)
			read_counts(k, &b->c[k->id]);
	return 0;
}

void
heapprof__baseline_free(hp_baseline *b)
{
	free(b->c);
	memset(b, 0, sizeof(*b));
}

/* The records of a snapshot, oldest bucket first. For the delta kinds the
 * baseline's counters are subtracted (buckets newer than the baseline
 * count from zero). */
static int
collect_records(const hp_snap_opts *o, heapprof_record **out, size_t *nout,
                hp_baseline *next, heapprof_peak **peaks_out,
                heapprof_record_labels **labels_out)
{
	uint64_t cap = heapprof__bucket_count();
	heapprof_record *recs = calloc(cap + 1, sizeof(*recs));
	/* Each record's label set (labels.c), NULL if no record has one. */
	heapprof_record_labels *lab = calloc(cap + 1, sizeof(*lab));
	int labelled = 0;
	if (!recs || !lab) {
		free(recs);
		free(lab);
		return -ENOMEM;
	}
	if (next && baseline_alloc(next, cap) != 0) {
		free(recs);
		free(lab);
		return -ENOMEM;
	}
	/* With o->peak: each bucket's objects at the peak, by id, then
	 * per record (peak.c). */
	heapprof_peak *peaks = NULL;
	int64_t *pk = NULL;
	if (o->peak) {
		peaks = calloc(cap + 1, sizeof(*peaks));
		pk = calloc(cap + 1, sizeof(*pk));
		if (!peaks || !pk) {
			free(peaks);
			free(pk);
			free(recs);
			free(lab);
			if (next)
				heapprof__baseline_free(next);
			return -ENOMEM;
		}
		heapprof__peak_read(pk, (uint32_t)cap, o->peak_reset);
	}
	size_t n = 0;
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next) {
		if (b->id >= cap)
			continue; /* created during this walk: next time */
		hp_counts c;
		read_counts(b, &c);
		if (next)
			next->c[b->id] = c;
		if (c.ao == 0)
			continue;
		hp_counts z = {0, 0, 0, 0};
		const hp_counts *base =
			o->base && b->id < o->base->n ? &o->base->c[b->id] : &z;
		heapprof_record *r = &recs[n];
		switch (o->kind) {
		case HP_SNAP_DELTA:
			r->alloc_objects = c.ao - base->ao;
			r->alloc_bytes = c.ab - base->ab;
			r->free_objects = c.fo - base->fo;
			r->free_bytes = c.fb - base->fb;
			break;
		case HP_SNAP_DELTA_ALLOC:
			/* alloc - free must stay the absolute in-use pair. */
			r->alloc_objects = c.ao - base->ao;
			r->alloc_bytes = c.ab - base->ab;
			r->free_objects = c.fo - base->ao;
			r->free_bytes = c.fb - base->ab;
			break;
		default:
			r->alloc_objects = c.ao;
			r->alloc_bytes = c.ab;
			r->free_objects = c.fo;
			r->free_bytes = c.fb;
			break;
		}
		r->stack = b->stack;
		r->depth = b->depth;
		r->object_size = (int64_t)b->size;
		r->rate = b->rate; /* its own, not today's: see bucket.c */
		heapprof__labels_view(b->labels, &lab[n]);
		labelled |= b->labels != NULL;
		if (peaks) {
			peaks[n].objects = pk[b->id];
			peaks[n].bytes = pk[b->id] * (int64_t)b->size;
		}
		n++;
	}
	/* Oldest bucket first: a stable order across dumps. */
	for (size_t i = 0; i < n / 2; i++) {
		heapprof_record t = recs[i];
		recs[i] = recs[n - 1 - i];
		recs[n - 1 - i] = t;
		heapprof_record_labels l = lab[i];
		lab[i] = lab[n - 1 - i];
		lab[n - 1 - i] = l;
		if (peaks) {
			heapprof_peak q = peaks[i];
			peaks[i] = peaks[n - 1 - i];
			peaks[n - 1 - i] = q;
		}
	}
	free(pk);
	*out = recs;
	*nout = n;
	*peaks_out = peaks;
	if (!labelled) {
		free(lab);
		lab = NULL;
	}
	*labels_out = lab;
	return 0;
}

int
heapprof__snapshot_write(heapprof_write_fn *write, void *arg, int text)
{
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.text = text;
	return heapprof__snapshot_write_ex(write, arg, &o);
}

int
heapprof__snapshot_write_ex(heapprof_write_fn *write, void *arg,
                            const hp_snap_opts *o)
{
	int64_t now = heapprof__now_nanos();
	heapprof__range_limit_refresh(); /* a dump: limits may be read (range.c) */
	heapprof__procctx_poll(); /* OpenTelemetry key names (otel_procctx.c) */
	heapprof_record *recs;
	size_t n;
	hp_baseline next;
	memset(&next, 0, sizeof(next));
	heapprof_peak *peaks = NULL;
	heapprof_record_labels *lab = NULL;
	HP_TRY(collect_records(o, &recs, &n, o->next_base ? &next : NULL,
	                       &peaks, &lab));
	next.time_nanos = now;

	heapprof_maps maps;
	memset(&maps, 0, sizeof(maps));
	heapprof_mapping *mappings;
	size_t nmappings;
	hp_loaded_id *ids;
	int rc = collect_mappings(&maps, &mappings, &nmappings, &ids);
	if (rc != 0) {
		free(recs);
		free(peaks);
		free(lab);
		heapprof__maps_free(&maps);
		heapprof__baseline_free(&next);
		return rc;
	}
	if (!symcache)
		symcache = heapprof__symcache_new();

	uint64_t live, mapped, exh;
	heapprof__range_stats(&live, &mapped, &exh);
	char c1[256];
	snprintf(c1, sizeof(c1),
	         "heapprof: rate=%lld unwinder=%s buckets=%llu live_samples=%llu "
	         "dropped_samples=%llu",
	         (long long)atomic_load(&heapprof__cfg.rate),
	         heapprof__stack_unwinder(),
	         (unsigned long long)heapprof__bucket_count(),
	         (unsigned long long)live,
	         (unsigned long long)atomic_load(&heapprof__dropped_samples));
	char c2[256];
	snprintf(c2, sizeof(c2),
	         "heapprof: profiler memory: records=%zu bytes, sampled-object "
	         "pages=%llu bytes",
	         heapprof__arena_bytes(), (unsigned long long)mapped);
	char c3[600];
	snprintf(c3, sizeof(c3), "heapprof: pid=%ld cmdline=%s", (long)getpid(),
	         heapprof__cmdline);
	/* RSS and the next allocator's figures (allocstats.c), for
	 * `heapprof top --error`'s reconciliation line. */
	char c4[300];
	heapprof__memory_comment(c4, sizeof(c4));
	/* The first comment names the build ("heapprof 0.1 (commit ...)"). */
	/* Label sets (labels.c), once there is one: how many, the cap, and
	 * how often the cap refused one (those samples are under
	 * heapprof_labels=overflow). */
	char c6[200];
	uint64_t lsets, lcap, lrefused;
	heapprof__labels_stats(&lsets, &lcap, &lrefused);
	snprintf(c6, sizeof(c6),
	         "heapprof: label sets=%llu cap=%llu overflow=%llu "
	         "(past the cap: heapprof_labels=overflow)",
	         (unsigned long long)lsets, (unsigned long long)lcap,
	         (unsigned long long)lrefused);
	char c5[300]; /* heapprof attach's window, or "" */
	heapprof__attach_comment(c5, sizeof(c5));
	const char *comments[7] = {heapprof__version_string(), c1, c2, c3, c4, c5, c6};

	heapprof_heap_profile p;
	memset(&p, 0, sizeof(p));
	p.records = recs;
	p.nrecords = n;
	/* The period: the rate now. Each record is unsampled with its own
	 * (r->rate), so changing the rate never rescales what is recorded. */
	p.rate = atomic_load(&heapprof__cfg.rate);
	p.time_nanos = now;
	if (o->base && (o->kind == HP_SNAP_DELTA || o->kind == HP_SNAP_DELTA_ALLOC)) {
		/* A base never taken (the first delta file, or the exit file
		 * of a run with no periodic one) is the process's start: the
		 * allocations are all since then. Not its time 0 (a duration
		 * of 56 years). */
		int64_t since = o->base->time_nanos ? o->base->time_nanos
		                                    : heapprof__init_nanos;
		p.duration_nanos = since > 0 && now > since ? now - since : 0;
	}
	p.default_sample_type = o->default_type;
	p.mappings = mappings;
	p.nmappings = nmappings;
	int sym = heapprof__cfg.symbolize; /* 0 none, 1 symtab, 2 dwarf */
	if (sym == 2 && !dwsym) {
		heapprof_dwsym_options dwo;
		memset(&dwo, 0, sizeof(dwo));
		dwo.warn = dwsym_warn;
		dwsym = heapprof__dwsym_new(&dwo);
	}
	if (sym && symcache)
		announce_pcs(recs, n, mappings, nmappings);
	p.symbolize = sym && symcache ? heapprof__symcache_symbolize : NULL;
	p.symbolize_arg = symcache;
	if (sym == 2 && dwsym) {
		p.symbolize_frames = heapprof__dwsym_symbolize_frames;
		p.symbolize_frames_arg = dwsym;
	}
	/* Frames of objects dlclose unmapped: their own addresses, mappings
	 * and kept names (unloaded.c). */
	hp_ul_view uv;
	memset(&uv, 0, sizeof(uv));
	uv.sym = p.symbolize;
	uv.sym_arg = p.symbolize_arg;
	uv.frames = p.symbolize_frames;
	uv.frames_arg = p.symbolize_frames_arg;
	if (heapprof__unloaded_view(&uv, recs, n, mappings, nmappings) == 0 &&
	    uv.recs) {
		p.records = uv.recs;
		p.mappings = uv.maps;
		p.nmappings = uv.nmaps;
		if (p.symbolize) {
			p.symbolize = heapprof__unloaded_symbolize;
			p.symbolize_arg = &uv;
		}
		if (p.symbolize_frames) {
			p.symbolize_frames = heapprof__unloaded_symbolize_frames;
			p.symbolize_frames_arg = &uv;
		}
	}
	p.comments = comments;
	/* Comments 5 and 6 when they say something: the attach window,
	 * then the label sets. */
	int nc = 5;
	if (c5[0])
		comments[nc++] = c5;
	if (lsets || lrefused)
		comments[nc++] = c6;
	p.ncomments = (size_t)nc;
	unsigned flags = HEAPPROF_ENCODE_GZIP;
	if (o->kind != HP_SNAP_FULL)
		flags |= HEAPPROF_ENCODE_DROP_ZERO;
	if (o->kind == HP_SNAP_INUSE)
		flags |= HEAPPROF_ENCODE_INUSE_ONLY;
	if (peaks) {
		flags |= HEAPPROF_ENCODE_PEAK;
		p.peaks = peaks;
	}
	if (lab) {
		flags |= HEAPPROF_ENCODE_LABELS;
		p.labels = lab;
	}
	/* In-use values by age (age.c), read after the counters. */
	heapprof__age_split ages;
	int aged = !o->text && o->age && o->kind != HP_SNAP_DELTA &&
	           heapprof__age_split_records(recs, n, &ages) == 0;
	rc = o->text ? heapprof_encode_heap_text(&p, write, arg)
	             : heapprof__encode_heap_age(&p, flags, aged ? &ages : NULL,
	                                         write, arg);
	if (aged)
		heapprof__age_split_free(&ages);
	heapprof__unloaded_view_free(&uv);
	free(mappings);
	free(ids);
	heapprof__maps_free(&maps);
	free(recs);
	free(peaks);
	free(lab);
	if (rc == 0 && o->next_base) {
		heapprof__baseline_free(o->next_base);
		*o->next_base = next;
	} else {
		heapprof__baseline_free(&next);
	}
	return rc;
}
