/*
 * rolling.c: --peak-file PATH (HEAPPROF_PEAK_FILE): a profile rewritten
 * each time the in-use estimate passes the last one written by
 * --peak-step (HEAPPROF_PEAK_STEP, a fraction, 0.1), so that when the
 * OOM killer's SIGKILL comes (nothing can be written then) the file on
 * disk holds the heap at most that fraction below its peak.
 *
 * A sampled allocation whose estimate passes the threshold sets
 * heapprof__rolling_want (peak.c, under the peak's lock: no system call);
 * the write is taken like a growth dump, on that thread at the same safe
 * point (dump.c's run_due_locked, with dump_lock held, on the dump stack),
 * through the same atomic file writer (outfile.c: temporary file, rename).
 * Writes are rate-limited: none within HEAPPROF_PEAK_GAP ms (10) of the
 * end of the previous one; a write wanted meanwhile stays wanted and the
 * first sampled allocation after the gap takes it. The first write comes
 * when the estimate reaches PEAK_FIRST, so that a program's start-up
 * writes no stream of tiny files. The threshold is re-armed just before
 * each write from the estimate then: the next one is wanted at
 * (1 + step) times what this file holds.
 *
 * next_ok is written with dump_lock held and read without it (atomic).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "serve.h"

#define PEAK_FIRST (1 << 20) /* no file before the estimate reaches 1 MiB */

/* No write before this (CLOCK_MONOTONIC_COARSE ms). */
static _Atomic int64_t next_ok;

static int64_t
next_of(int64_t now)
{
	if (now < PEAK_FIRST)
		return PEAK_FIRST;
	double n = (double)now * (1.0 + heapprof__cfg.peak_step);
	return n >= 9.0e18 ? INT64_MAX : (int64_t)n + 1;
}

HP_RARE void
heapprof__rolling_start(void)
{
	if (heapprof__cfg.peak_file[0])
		heapprof__peak_rolling_arm(next_of);
}

int
heapprof__rolling_due(int64_t now_coarse)
{
	return atomic_load_explicit(&heapprof__rolling_want, memory_order_relaxed) &&
	       now_coarse >= atomic_load_explicit(&next_ok, memory_order_relaxed);
}

void
heapprof__rolling_run(int (*write_path)(const char *path), long mainpid)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (!heapprof__rolling_due(now))
		return;
	/* Forked children of `heapprof run`'s process get ".PID" names, as
	 * with -o (outfile.c). */
	char path[4200];
	if (heapprof__serve_path(heapprof__cfg.peak_file, (long)getpid(),
	                         mainpid, 0, path, sizeof(path)) != 0) {
		heapprof__warn("HEAPPROF_PEAK_FILE: the name is too long: no "
		               "peak file");
		atomic_store(&heapprof__rolling_want, 0);
		return;
	}
	if (heapprof__peak_rolling_arm(next_of) < 0)
		return; /* inside the peak's lock (a handler): later */
	atomic_store(&heapprof__rolling_want, 0);
	write_path(path);
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	atomic_store(&next_ok, now + heapprof__cfg.peak_gap_ms);
}
