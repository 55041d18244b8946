/*
 * trapcount.h: this thread's page-fault traps, from the software perf
 * counter of page faults (user mode). It counts traps, not the pages a
 * system call such as madvise(MADV_POPULATE_*) makes present: what the
 * profiler's cost tests (rprog_traps, test_elf) measure, a trap being
 * 15-40 us on this project's VMs and a populated page ~1 us.
 */
#ifndef HEAPPROF_TRAPCOUNT_H
#define HEAPPROF_TRAPCOUNT_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A counter, stopped and at zero, or -1 (errno: perf events not allowed). */
static inline int
trap_counter(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static inline void
trap_start(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

/* Stops the counter: the traps since trap_start, or UINT64_MAX. */
static inline uint64_t
trap_stop(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	uint64_t v = 0;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return UINT64_MAX;
	return v;
}

#endif
