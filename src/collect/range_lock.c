/*
 * range_lock.c: the range's locks (range_lock.h says what they promise).
 *
 * A lock is taken with a trylock, then a timed wait: one held for
 * LOCK_WAIT seconds was abandoned, and every later use gives up at once.
 * Each holder is inside a fenced section, counted for the fork fence.
 *
 * Shared state: dead[] (atomics), forking and inflight (seq_cst
 * atomics); heapprof__range_in_lock and self_inflight are this thread's.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "collect.h"
#include "range_lock.h"

__thread volatile int heapprof__range_in_lock
	__attribute__((tls_model("initial-exec")));

/* Lock m, or false. A lock held for LOCK_WAIT seconds was abandoned: a
 * handler longjmp'd out of its holder's critical section (no section
 * here lasts more than a few system calls). Then it is marked dead and
 * every later use of it gives up at once, as for heapprof__range_in_lock: allocations go
 * unsampled (counted), frees leak. A lock that is seen free again is
 * alive again. */
#define LOCK_WAIT 5
static _Atomic(pthread_mutex_t *) dead[4];

/* Fork. The locks are not held across fork (init.c), but a child forked
 * while another thread is inside one of this file's sections would
 * inherit its lists, bump and commit marks half updated (a run given back
 * to PROT_NONE while `committed` still covered it: the child's next
 * sample wrote to it, SIGSEGV). So sections are fenced off, as bucket.c's
 * inserts: the fork handler raises `forking` and waits (bounded) until no
 * section is in flight; a section that begins while it is up does not
 * run: an allocation gives up (unsampled, counted), a free is deferred
 * (range.c's `deferred`, a lock-free stack linked through the header's bucket
 * field: one compare-and-swap, whole in any child) and done by the next
 * allocation or free after the fork. Never a wait: the thread may hold a
 * stdio lock that the forking thread needs (init.c). `inflight` and
 * `forking` are a Dekker pair (seq_cst); self_inflight counts this
 * thread's own sections (a fork from a handler that interrupted one). */
static _Atomic int forking HP_FORK_BSS, inflight HP_FORK_BSS;
static __thread int self_inflight __attribute__((tls_model("initial-exec")));
#define FORK_WAIT_MS 2000

static int64_t
mono_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool lock_once(pthread_mutex_t *m);

/* Lock m and enter a fenced section, or false (a fork is being prepared,
 * or the lock was abandoned). */
bool
heapprof__rlock(pthread_mutex_t *m)
{
	if (!lock_once(m))
		return false;
	self_inflight++;
	atomic_fetch_add(&inflight, 1);
	if (!atomic_load(&forking))
		return true;
	atomic_fetch_sub(&inflight, 1);
	self_inflight--;
	pthread_mutex_unlock(m);
	atomic_signal_fence(memory_order_seq_cst);
	heapprof__range_in_lock--;
	return false;
}

static bool
lock_once(pthread_mutex_t *m)
{
	heapprof__range_in_lock++;
	atomic_signal_fence(memory_order_seq_cst);
	if (pthread_mutex_trylock(m) == 0)
		goto locked;
	for (int i = 0; i < 4; i++)
		if (atomic_load_explicit(&dead[i], memory_order_relaxed) == m)
			goto fail;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += LOCK_WAIT;
	int rc;
	while ((rc = pthread_mutex_timedlock(m, &ts)) == EINTR)
		;
	if (rc == 0)
		goto locked;
	for (int i = 0; i < 4; i++) {
		pthread_mutex_t *expect = NULL;
		if (atomic_compare_exchange_strong(&dead[i], &expect, m) ||
		    expect == m)
			break;
	}
	heapprof__warn("a lock of the sampled-object range was abandoned (a "
	               "longjmp out of a signal handler?): samples are dropped");
fail:
	atomic_signal_fence(memory_order_seq_cst);
	heapprof__range_in_lock--;
	return false;
locked:
	for (int i = 0; i < 4; i++)
		if (atomic_load_explicit(&dead[i], memory_order_relaxed) == m)
			atomic_store_explicit(&dead[i], NULL, memory_order_relaxed);
	return true;
}

void
heapprof__runlock(pthread_mutex_t *m)
{
	atomic_fetch_sub(&inflight, 1);
	self_inflight--;
	pthread_mutex_unlock(m);
	atomic_signal_fence(memory_order_seq_cst);
	heapprof__range_in_lock--;
}

bool
heapprof__rlock_forking(void)
{
	return atomic_load(&forking);
}

/* Before fork (init.c, through range.c): no section in flight, but this
 * thread's own (a fork from a signal handler). Bounded: a thread that left
 * a section by longjmp never ends it, and fork must not hang on it. */
HP_RARE void
heapprof__rlock_fork_prepare(void)
{
	atomic_fetch_add(&forking, 1);
	int64_t until = mono_now_ms() + FORK_WAIT_MS;
	while (atomic_load(&inflight) > self_inflight && mono_now_ms() <= until)
		sched_yield();
}

HP_RARE void
heapprof__rlock_fork_release(void)
{
	atomic_fetch_sub(&forking, 1);
}

HP_RARE void
heapprof__rlock_fork_child(void)
{
	atomic_store(&forking, 0);
	atomic_store(&inflight, self_inflight);
}
