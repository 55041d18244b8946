/*
 * range_exact.c: the range's exact runs, which hold blocks over 512 KiB
 * (sampled ones and the profiler's own): each its own run of exactly the
 * pages it needs. A freed run is kept warm (read-write, for the next
 * such block, as glibc keeps freed memory in its heap) or given back:
 * returned to PROT_NONE (a hole under an address-space limit) in an
 * address-ordered list of free extents that coalesce with each other and
 * with the range's frontier. realloc grows a sampled run in place or
 * moves its pages (mremap) rather than copying them. Everything here runs
 * with range.c's lock (rg_lock) held, except the entry points that take
 * it (heapprof__range_resize).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "range_int.h"
#include "range_lock.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A free exact run: address-ordered list, nodes from the arena (rg_lock). */
typedef struct extent {
	uintptr_t start;
	size_t len;
	struct extent *next;
	bool hole;  /* unmapped (under a limit), else PROT_NONE */
} extent;
static extent *extents;    /* free exact runs, by address (rg_lock) */
static extent *spare;      /* unused nodes (rg_lock) */

/* Freed exact runs kept read-write for the next large sampled block (not
 * under an address-space limit), oldest first, up to WARM_MAX bytes in
 * all (rg_lock). Given back to PROT_NONE at once, a block > 512 KiB that a
 * program allocates and frees in a loop faulted in every page again each
 * time: 4 MiB x 500 took 512 k page faults and 6.8 s instead of 2 k and
 * 0.13 s (glibc serves such a loop from its heap after the first free: its
 * mmap threshold rises to the freed size, up to 32 MiB). */
#define WARM_MAX ((size_t)32 << 20)
#define NWARM 8
static struct {
	uintptr_t start;
	size_t len;
} warm[NWARM];
static int nwarm;
static size_t warm_bytes;

/* Takes warm run i off the list (its bytes are no longer counted).
 * Called with rg_lock held. */
static void
warm_drop(int i)
{
	warm_bytes -= warm[i].len;
	nwarm--;
	memmove(&warm[i], &warm[i + 1], (size_t)(nwarm - i) * sizeof(warm[0]));
}

/* A warm run of len bytes (not zeroed: *dirty), cut from the smallest
 * that holds it, or 0. Called with rg_lock held. */
static uintptr_t
warm_get(size_t len)
{
	int b = -1;
	for (int i = 0; i < nwarm; i++)
		if (warm[i].len >= len && (b < 0 || warm[i].len < warm[b].len))
			b = i;
	if (b < 0)
		return 0;
	uintptr_t r = warm[b].start;
	warm[b].start += len;
	warm[b].len -= len;
	warm_bytes -= len;
	if (!warm[b].len)
		warm_drop(b);
	return r;
}

/* An exact run of len bytes, or 0: warm (*dirty), else zeroed. Called
 * with rg_lock held. */
uintptr_t
rg_exact_get(size_t len, bool *dirty)
{
	uintptr_t w = warm_get(len);
	*dirty = w != 0;
	if (w)
		return w;
	extent **best = NULL;
	for (extent **e = &extents; *e; e = &(*e)->next)
		if ((*e)->len >= len && (!best || (*e)->len < (*best)->len))
			best = e;
	if (!best)
		return rg_frontier(len);
	extent *x = *best;
	uintptr_t r = x->start;
	if (x->hole) {
		void *p = mmap((void *)r, len, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		               -1, 0);
		if (p == MAP_FAILED && errno == EEXIST) {
			/* Something else was mapped into the hole: never
			 * reuse it (see exact_put). */
			*best = x->next;
			x->next = spare;
			spare = x;
			return 0;
		}
		if (p == MAP_FAILED)
			return 0;
		if ((uintptr_t)p != r) {
			munmap(p, len);
			return 0;
		}
	} else if (mprotect((void *)r, len, PROT_READ | PROT_WRITE) != 0) {
		return 0;
	}
	if (x->len == len) {
		*best = x->next;
		x->next = spare;
		spare = x;
	} else {
		x->start += len;
		x->len -= len;
	}
	return r;
}

static void
unlink_extent(extent *x)
{
	extent **pp = &extents;
	while (*pp != x)
		pp = &(*pp)->next;
	*pp = x->next;
	x->next = spare;
	spare = x;
}

/* Gives an exact run back: coalesced with free neighbours of its kind,
 * and with the frontier if it reaches it. Called with rg_lock held.
 *
 * Under an address-space limit a free run is unmapped (a hole), so that
 * it does not count against the limit; the range keeps its first page
 * mapped, so a run at base leaves that page behind (exact_put). A hole
 * inside [base, base + span) is safe from the kernel's own placement:
 * mmap places top-down from below the stack, and a process under a limit
 * of less than a TiB cannot reach the middle of the gap where the range
 * lives. Only a program that maps at a chosen address could land there;
 * the hole is then never reused. */
static void
put_run(uintptr_t r, size_t len, bool hole)
{
	extent **e = &extents, *prev = NULL;
	while (*e && (*e)->start < r) {
		prev = *e;
		e = &(*e)->next;
	}
	extent *next = *e;
	uintptr_t s = r, end = r + len;
	bool join_prev = prev && prev->hole == hole &&
	                 prev->start + prev->len == r;
	bool join_next = next && next->hole == hole && next->start == end;
	if (join_prev)
		s = prev->start;
	if (join_next)
		end = next->start + next->len;
	if (end == rg_bump && hole) {
		/* The range ends at s now: the tail goes back whole. */
		uintptr_t top = heapprof__range_base + rg_span();
		atomic_store_explicit(&heapprof__range_span,
		                      s - heapprof__range_base,
		                      memory_order_release);
		munmap((void *)s, top - s);
		rg_committed = rg_bump = s;
		if (join_prev)
			unlink_extent(prev);
		return;
	}
	if (end == rg_bump && rg_release(s, rg_committed - s)) {
		/* Back to the frontier: everything from s up is unused. (If
		 * that fails, the run stays a free extent, below.) */
		rg_committed = rg_bump = s;
		if (join_prev)
			unlink_extent(prev);
		rg_trim();
		return;
	}
	if (hole)
		munmap((void *)r, len);
	else
		rg_release(r, len);
	if (join_prev && join_next) {
		prev->len = end - prev->start;
		prev->next = next->next;
		next->next = spare;
		spare = next;
	} else if (join_prev) {
		prev->len = end - prev->start;
	} else if (join_next) {
		next->start = r;
		next->len = end - r;
	} else {
		extent *x = spare;
		if (x)
			spare = x->next;
		else
			x = heapprof__arena_alloc(sizeof(*x));
		if (!x)
			return; /* no memory to remember it: the run is lost */
		x->start = r;
		x->len = len;
		x->hole = hole;
		x->next = next;
		*e = x;
	}
}

/* A run at base under a limit: its first page stays (PROT_NONE), the rest
 * becomes a hole. Kept whole, a freed block at base went on counting
 * against the limit: the first sampled allocation of 4 GiB, freed, left
 * 4 GiB of the limit taken (rel.range.cycle under ulimit -v). */
static void
cold_put(uintptr_t r, size_t len, bool lim)
{
	if (lim && r == heapprof__range_base && len > rg_page) {
		put_run(r, rg_page, false);
		r += rg_page;
		len -= rg_page;
	}
	put_run(r, len, lim && r > heapprof__range_base);
}

/* A freed exact run: kept warm (joined with warm neighbours; the oldest
 * go back to make room), or given back. Called with rg_lock held. */
void
rg_exact_put(uintptr_t r, size_t len)
{
	bool lim = rg_limited();
	while (lim && nwarm) { /* a limit set since: warm runs go back too */
		cold_put(warm[nwarm - 1].start, warm[nwarm - 1].len, true);
		warm_drop(nwarm - 1);
	}
	for (int i = 0; i < nwarm;) {
		if (warm[i].start + warm[i].len != r && r + len != warm[i].start) {
			i++;
			continue;
		}
		r = warm[i].start < r ? warm[i].start : r;
		len += warm[i].len;
		warm_drop(i);
	}
	if (lim || len > WARM_MAX) {
		cold_put(r, len, lim);
		return;
	}
	while (nwarm == NWARM || warm_bytes + len > WARM_MAX) {
		cold_put(warm[0].start, warm[0].len, false);
		warm_drop(0);
	}
	warm[nwarm].start = r;
	warm[nwarm].len = len;
	nwarm++;
	warm_bytes += len;
}

/* Takes [a, a + len) from the front of the warm run that starts at a;
 * false if there is none that long. Called with rg_lock held. */
static bool
warm_take(uintptr_t a, size_t len)
{
	for (int i = 0; i < nwarm; i++)
		if (warm[i].start == a && warm[i].len >= len) {
			warm[i].start += len;
			warm[i].len -= len;
			warm_bytes -= len;
			if (!warm[i].len)
				warm_drop(i);
			return true;
		}
	return false;
}

/* mremap's move of [from, from + len) to `to`, the last piece grown by
 * `grow` bytes on the way (the kernel extends the moved mapping: the
 * block stays one mapping). Moved pages keep their mapping's page
 * offset, so they never merge with their new neighbours: moved into a
 * bigger run and grown there by its own pages, a block gained a mapping
 * at every move, and two buffers grown by realloc in turn 1,000 times
 * became 1,000 mappings each, every move slower than the last: 42 s
 * instead of 3.4 s (rel.cost.regrow_mappings). Before Linux 6.17
 * (Debian 12 runs 6.1) a source of more than one mapping fails with
 * EFAULT (and, after 6.17, one that grows), and a block is several
 * mappings when it was cut from warm runs that were: a piece refused
 * with EFAULT is halved (a piece inside one mapping moves), the rest
 * tried whole after each move. Copied instead, such blocks took 1.38 M
 * page faults instead of 39 k (rel.remap.old_kernel.regrow). Returns the bytes
 * moved from the start: len (with the growth), or fewer if a move failed
 * otherwise (ENOMEM: the process's limit on mappings). */
static size_t
move_span(uintptr_t from, size_t len, uintptr_t to, size_t grow)
{
	size_t off = 0, n = len;
	while (off < len) {
		size_t g = off + n == len ? grow : 0;
		if (mremap((void *)(from + off), n, n + g, MREMAP_MAYMOVE | MREMAP_FIXED,
		           (void *)(to + off)) != MAP_FAILED) {
			off += n;
			n = len - off;
		} else if (errno == EFAULT && n > rg_page) {
			n = (n / 2 + rg_page - 1) & ~(rg_page - 1);
		} else {
			break;
		}
	}
	return off;
}

/* Moves the pages of [from, from + len) to `to`, a run of len + grow
 * bytes: nothing copied, nothing faulted in again. The old place is
 * reserved again and given back as a free run. False with the block
 * where it was if the kernel refused (`to` may have been unmapped).
 * Called with rg_lock held. */
static bool
move_pages(uintptr_t from, size_t len, uintptr_t to, size_t grow)
{
	size_t moved = move_span(from, len, to, grow);
	if (moved < len && moved) {
		/* The rest is copied after what moved (a new mapping needs
		 * one of headroom under the process's limit, a move five), or
		 * what moved goes back to the holes it left. A block split
		 * between two places could be neither given to the program
		 * nor left to it. */
		size_t rest = len - moved;
		if (mmap((void *)(to + moved), rest + grow, PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
			memcpy((void *)(to + moved), (void *)(from + moved), rest);
			munmap((void *)(from + moved), rest);
		} else if (move_span(to, moved, from, 0) == moved) {
			return false;
		} else {
			static const char m[] = "heapprof: out of mappings halfway "
			                        "through moving a block\n";
			ssize_t w = write(2, m, sizeof(m) - 1);
			(void)w;
			abort();
		}
	} else if (moved < len) {
		return false;
	}
	void *p = mmap((void *)from, len, PROT_NONE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == (void *)from)
		cold_put(from, len, rg_limited());
	else if (p != MAP_FAILED) /* a kernel without NOREPLACE */
		munmap(p, len);
	/* else something took the place meanwhile: never reused */
	return true;
}

/* A moved block grown in place: the pages just taken after it become
 * part of its mapping (unmapped, then the block's mapping extended over
 * them by mremap), so that it stays one mapping. Grown by those pages as
 * they were, a moved block was a mapping more, and its next move (with
 * growth) was refused whole; kept from growing in place, a moved block
 * moved at every growth, its page tables each time: a buffer grown 1 MiB
 * at a time to 512 MiB after one move took 3.3-5.1 s of CPU instead of
 * 1.9 (rel.cost.regrow_after_move), and under an address-space limit a
 * moved 101 MiB block grown to 150 MiB needed a run of 150 MiB where
 * glibc's mremap needs 49: realloc failed (rel.remap.limit_grow). The
 * pages are a hole only between two calls (out of the kernel's own
 * placement: put_run). Where the kernel does not extend it
 * (a block of several mappings), the pages are mapped again: a mapping
 * more. False if that failed (something mapped there meanwhile: those
 * pages are lost to the range, the block is as it was). Called with
 * rg_lock held. */
static bool
extend_mapping(uintptr_t run, size_t oldlen, size_t len)
{
	void *tail = (void *)(run + oldlen);
	if (munmap(tail, len - oldlen) != 0)
		return true; /* still mapped read-write */
	if (mremap((void *)run, oldlen, len, 0) != MAP_FAILED)
		return true;
	void *p = mmap(tail, len - oldlen, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != tail) /* a kernel without NOREPLACE */
		munmap(p, len - oldlen);
	return p == tail;
}

/* Grows the run [run, run + oldlen) in place to len bytes if the pages
 * after it are free (the frontier, a warm run). Called with rg_lock held. */
static bool
grow_here(uintptr_t run, size_t oldlen, size_t len)
{
	return run + oldlen == rg_bump ? rg_frontier(len - oldlen) != 0
	                               : warm_take(run + oldlen, len - oldlen);
}

bool
heapprof__range_resizable(const hp_obj *o)
{
	return o->run_class == BIG_CLASS && (uintptr_t)(o + 1) == o->run + sizeof(hp_obj);
}

/* A sampled block over 512 KiB that realloc resizes, as glibc's mremap
 * would: shrunk in place (its tail freed), grown in place when the pages
 * after its run are free (the frontier, a warm run; a moved block's
 * mapping extended over them), else its pages move to a run of the new
 * size. Copied, a buffer grown 1 MiB at a time to 256 MiB took 8.4 M page
 * faults and 135 s instead of 66 k and 1.1 s (rel.cost.regrow). Returns
 * the new user pointer, the header moved with it and its run updated, or
 * NULL with nothing changed (the caller copies). */
void *
heapprof__range_resize(hp_obj *o, size_t n)
{
	uintptr_t run = o->run, to = 0;
	uint32_t moved = o->moved;
	size_t oldlen = (size_t)o->shard * rg_page, need;
	if (!heapprof__range_resizable(o) || heapprof__range_in_lock ||
	    __builtin_add_overflow(n, sizeof(hp_obj), &need) ||
	    need > PTRDIFF_MAX - rg_page)
		return NULL;
	size_t len = (need + rg_page - 1) & ~(rg_page - 1);
	if (len / rg_page > UINT32_MAX || !heapprof__rlock(&rg_lock))
		return NULL;
	if (len <= oldlen) { /* shrinks in place: the tail goes back */
		if (len < oldlen)
			rg_exact_put(run + len, oldlen - len);
		to = run;
	} else if (grow_here(run, oldlen, len) &&
	           (!o->moved || extend_mapping(run, oldlen, len))) {
		to = run;
	} else {
		bool dirty;
		uintptr_t d = rg_exact_get(len, &dirty);
		if (d && move_pages(run, oldlen, d, len - oldlen))
			to = d, moved = 1;
		else if (d) /* not warm: a refused mremap may have unmapped
		             * part of d (before Linux 6.17: rel.remap);
		             * cold_put maps it again */
			cold_put(d, len, rg_limited());
	}
	heapprof__runlock(&rg_lock);
	if (!to)
		return NULL;
	o = (hp_obj *)to;
	o->run = to;
	o->shard = (uint32_t)(len / rg_page);
	o->moved = moved;
	return o + 1;
}

size_t
rg_exact_released(void)
{
	size_t n = 0;
	for (extent *e = extents; e; e = e->next)
		n += e->len;
	return n;
}
