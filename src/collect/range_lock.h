/*
 * range_lock.h: the locks of the sampled-object range (range.c), which
 * give up instead of waiting where waiting could hang (a signal handler
 * inside the range, an abandoned lock, a fork being prepared), and the
 * fork fence around them. Private to range.c and range_lock.c.
 */
#ifndef HEAPPROF_RANGE_LOCK_H
#define HEAPPROF_RANGE_LOCK_H

#include <pthread.h>
#include <stdbool.h>

#include "compiler.h"

/* Nonzero while this thread holds (or is taking) a range lock: a signal
 * handler that interrupted it must not take one. */
extern HP_HIDDEN __thread volatile int heapprof__range_in_lock
	__attribute__((tls_model("initial-exec")));

/* Locks m and enters a fenced section, or false (a fork is being
 * prepared, or the lock was abandoned: the caller gives up). */
bool heapprof__rlock(pthread_mutex_t *m);
/* Leaves the section and unlocks m. */
void heapprof__runlock(pthread_mutex_t *m);
/* Is a fork being prepared (sections must not start)? */
bool heapprof__rlock_forking(void);

/* The fence, from range.c's fork handlers: wait (bounded) until no
 * section is in flight but this thread's own; lower it; in the child,
 * reset it. */
void heapprof__rlock_fork_prepare(void);
void heapprof__rlock_fork_release(void);
void heapprof__rlock_fork_child(void);

#endif
