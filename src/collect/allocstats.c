/*
 * allocstats.c: the "heapprof: memory:" comment of each profile: what the
 * process holds (its RSS, from /proc/self/statm) and what the next
 * allocator says it holds, so that `heapprof top --error` can reconcile
 * the profile's in-use estimate with them (cli/top_err.c reads the line).
 *
 *   heapprof: memory: rss=B allocator=NAME held=B in_use=B free=B
 *
 * NAME is glibc (mallinfo2: held = arena + hblkhd, the bytes taken from
 * the system by every arena and by mmap'ed chunks; in_use = uordblks +
 * hblkhd; free = fordblks), jemalloc (mallctl after an "epoch" refresh:
 * held = stats.resident, in_use = stats.allocated, free = held - in_use)
 * or tcmalloc (MallocExtension_GetNumericProperty: held =
 * generic.heap_size - tcmalloc.pageheap_unmapped_bytes, in_use =
 * generic.current_allocated_bytes). rss=unknown when /proc cannot be read.
 *
 * Runs only in dumps (snapshot.c), never in the malloc path. The
 * allocator's statistics take its locks (mallinfo2 each arena's mutex,
 * mallctl its ctl and arena mutexes): in a dump run by a signal handler of
 * ours or by _exit (heapprof__in_handler), the code the handler
 * interrupted may hold one of them on this very thread, so there the
 * figures are left out and the comment says so
 * ("allocator=skipped(...)"). Elsewhere a dump runs on a thread that is
 * not inside the allocator: periodic and growth dumps are taken by a
 * sampled allocation after the next allocator has returned, API and
 * endpoint dumps outside it, and the exit dump is where the snapshot
 * itself already calls malloc.
 *
 * jemalloc's mallctl and tcmalloc's MallocExtension_GetNumericProperty
 * are looked up once, when the next allocator is found (bootstrap.c), in
 * that allocator's own object: a dump never calls dlsym, which takes the
 * loader's lock (a fork child of a threaded program may find it held
 * forever), and a glibc program pays nothing (weak references cost every
 * process two failed symbol lookups at load: rel.cost.true_instructions).
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"


/* Resident bytes from /proc/self/statm (its second field, in pages);
 * 0 if unreadable. open/read/close only: async-signal-safe. */
static uint64_t
rss_bytes(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char b[128];
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = '\0';
	const char *p = b;
	while (*p && *p != ' ')
		p++;
	if (*p != ' ')
		return 0;
	p++;
	uint64_t pages = 0;
	int digits = 0;
	for (; *p >= '0' && *p <= '9'; p++, digits++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	long ps = sysconf(_SC_PAGESIZE);
	return digits ? pages * (uint64_t)(ps > 0 ? ps : 4096) : 0;
}

static int
je_size(const char *name, size_t *out)
{
	size_t len = sizeof(*out);
	return heapprof__next_mallctl(name, out, &len, NULL, 0) == 0 &&
	       len == sizeof(*out);
}

/* held, in_use, free of the next allocator; its name, or NULL. */
static const char *
allocator_stats(uint64_t *held, uint64_t *in_use, uint64_t *fr)
{
	if (heapprof__next_mallctl) {
		/* Writing "epoch" refreshes the cached statistics. */
		uint64_t epoch = 1;
		size_t elen = sizeof(epoch);
		size_t res, all;
		heapprof__next_mallctl("epoch", &epoch, &elen, &epoch, sizeof(epoch));
		if (je_size("stats.resident", &res) &&
		    je_size("stats.allocated", &all)) {
			*held = res;
			*in_use = all;
			*fr = res > all ? res - all : 0;
			return "jemalloc";
		}
		return NULL;
	}
	int (*prop)(const char *, size_t *) = heapprof__next_tcprop;
	if (prop) {
		size_t heap = 0, unmapped = 0, all = 0;
		if (!prop("generic.heap_size", &heap) ||
		    !prop("generic.current_allocated_bytes", &all))
			return NULL;
		prop("tcmalloc.pageheap_unmapped_bytes", &unmapped);
		*held = heap > unmapped ? heap - unmapped : 0;
		*in_use = all;
		*fr = *held > all ? *held - all : 0;
		return "tcmalloc";
	}
	struct mallinfo2 mi = mallinfo2();
	*held = mi.arena + mi.hblkhd;
	*in_use = mi.uordblks + mi.hblkhd;
	*fr = mi.fordblks;
	return "glibc";
}

void
heapprof__memory_comment(char *buf, size_t cap)
{
	char rss[32];
	uint64_t r = rss_bytes();
	if (r)
		snprintf(rss, sizeof(rss), "%llu", (unsigned long long)r);
	else
		snprintf(rss, sizeof(rss), "unknown");
	if (heapprof__in_handler) {
		snprintf(buf, cap,
		         "heapprof: memory: rss=%s allocator=skipped(dump in a "
		         "signal handler or _exit, where the allocator's locks "
		         "may be held)",
		         rss);
		return;
	}
	uint64_t held = 0, in_use = 0, fr = 0;
	const char *name = allocator_stats(&held, &in_use, &fr);
	if (!name) {
		snprintf(buf, cap,
		         "heapprof: memory: rss=%s allocator=unknown(its "
		         "statistics did not answer)",
		         rss);
		return;
	}
	snprintf(buf, cap,
	         "heapprof: memory: rss=%s allocator=%s held=%llu in_use=%llu "
	         "free=%llu",
	         rss, name, (unsigned long long)held,
	         (unsigned long long)in_use, (unsigned long long)fr);
}
