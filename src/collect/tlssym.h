/*
 * tlssym.h: thread-local variables that a loaded object exports in its
 * .dynsym, found without dlsym (tlssym.c), and the thread pointer they
 * are read from on the sampled path (otel.c, customlabels.c).
 */
#ifndef HEAPPROF_TLSSYM_H
#define HEAPPROF_TLSSYM_H

#include <stddef.h>
#include <stdint.h>

static inline uintptr_t
heapprof__thread_pointer(void)
{
	uintptr_t tp = 0;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return tp;
}

/* A data symbol found next to a TLS variable, in the same object. */
typedef struct {
	const char *name;  /* in: its name */
	const void *addr;  /* out: its address, NULL if not defined there */
	size_t size;       /* out: its st_size */
} heapprof_tls_peer;

/* The offset from the thread pointer of the thread-local variable `name`,
 * defined in a loaded object's .dynsym (the first in load order, as the
 * loader would bind it), into *off: 1 if found and in static TLS, else 0.
 * peer (optional): a data symbol looked up in that same object. startup:
 * called by the constructor (every object's TLS is static); else checked
 * against the loader's static TLS size. Never inside malloc (otel.c says
 * why); errno preserved. */
int heapprof__tls_static_off(const char *name, int startup,
                             heapprof_tls_peer *peer, intptr_t *off);

#endif
