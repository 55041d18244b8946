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
 * Writes are rate-limited by the time they take: the writes since the
 * first may have taken at most PEAK_BURST (100 ms) plus a fifth of the
 * time since it began, so they take at most a fifth of a growing
 * program's time in the long run; and none comes within HEAPPROF_PEAK_GAP
 * ms (0) of the last. A write wanted meanwhile stays wanted, and the first
 * sampled allocation after the wait takes it. (A fixed 10 ms gap let a
 * 1 GB/s leak in a 128 MiB group outrun a 10% step, and a gap of 4 times
 * the last write's time, after a first write that symbolized everything
 * on a loaded machine, left the file at a quarter of the heap at the
 * kill; a budget spreads one slow write over the time that follows.) The first write comes
 * when the estimate reaches PEAK_FIRST, so that a program's start-up
 * writes no stream of tiny files. The threshold is re-armed just before
 * each write from the estimate then: the next one is wanted at
 * (1 + step) times what this file holds.
 *
 * next_ok is written with dump_lock held and read without it (atomic);
 * on the malloc path the clock is read only once a write is wanted, and
 * then the coarse one (vDSO, never a system call); the writes are timed
 * with the precise one, in the dump.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "serve.h"

#define PEAK_FIRST (1 << 20) /* no file before the estimate reaches 1 MiB */
#define PEAK_BURST_US 100000 /* write time allowed beyond a fifth */

/* No write before this (CLOCK_MONOTONIC us). */
static _Atomic int64_t next_ok;
static int64_t first_us; /* when the first write began (dump_lock) */
static int64_t spent_us; /* the writes' time so far (dump_lock) */

static int64_t
mono_us(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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
heapprof__rolling_due(void)
{
	/* The coarse clock: never a system call, whatever the clock source
	 * (a wait may end a tick late). */
	return atomic_load_explicit(&heapprof__rolling_want, memory_order_relaxed) &&
	       mono_us(CLOCK_MONOTONIC_COARSE) >=
	               atomic_load_explicit(&next_ok, memory_order_relaxed);
}

void
heapprof__rolling_run(int (*write_path)(const char *path), long mainpid)
{
	if (!heapprof__rolling_due())
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
	int64_t t0 = mono_us(CLOCK_MONOTONIC);
	if (!first_us)
		first_us = t0;
	write_path(path);
	int64_t t1 = mono_us(CLOCK_MONOTONIC);
	spent_us += t1 - t0;
	/* budget(t) = BURST + (t - first) / 5 - spent >= 0 */
	int64_t ok = first_us + 5 * (spent_us - PEAK_BURST_US);
	int64_t floor = t1 + (int64_t)heapprof__cfg.peak_gap_ms * 1000;
	atomic_store(&next_ok, ok > floor ? ok : floor);
}
