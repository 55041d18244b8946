/*
 * strtab.h: a string interning table for pprof writers: each distinct
 * string gets the next index, index 0 is always "". Strings are copied into
 * one growing byte arena; lookups go through an open-addressing hash.
 */
#ifndef HEAPPROF_STRTAB_H
#define HEAPPROF_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct strtab {
	char *bytes;      /* all strings, back to back */
	size_t blen, bcap;
	size_t *off;      /* string i starts at bytes + off[i] */
	uint32_t *len;    /* and is len[i] bytes long */
	uint32_t n, ncap;
	uint32_t *slots;  /* hash slots: string index + 1, 0 = empty */
	size_t nslots;
} strtab;

int heapprof__strtab_init(strtab *t); /* interns "" as 0 */
void heapprof__strtab_free(strtab *t);
/* Returns 0 and the index of s (adding it if new), or -ENOMEM. */
int heapprof__strtab_intern(strtab *t, const char *s, size_t len, uint32_t *id);
const char *heapprof__strtab_get(const strtab *t, uint32_t id, size_t *len);

#endif
