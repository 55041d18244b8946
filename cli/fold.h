/*
 * fold.h: folded stacks for collapse and flame. Samples of one or more
 * decoded profiles are turned into root-first sequences of frame names
 * (inlined frames expanded, outermost first), interned by their names, and
 * their values summed per identical sequence: several value slots per
 * stack, so that all sample types of a profile (and of a --base profile)
 * can sit side by side.
 */
#ifndef HEAPPROF_CLI_FOLD_H
#define HEAPPROF_CLI_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "pprof_dec.h"
#include "prof_names.h"

/* Name of the single frame given to samples without any location. */
#define CLI_FOLD_NO_STACK "[no stack]"

typedef struct cli_fold_stack {
	uint32_t first, n; /* frames[first .. first+n), root first */
} cli_fold_stack;

typedef struct cli_fold {
	size_t nvals;  /* value slots per stack */
	int sanitize;  /* names: ';' -> ':', '\n' '\r' -> ' ' (folded text) */
	cli_names names; /* interned names (only v/n/slots used) */
	uint32_t *frames;
	size_t nframes, frames_cap;
	cli_fold_stack *stk;
	size_t nstk, stk_cap;
	int64_t *vals; /* nstk * nvals */
	size_t vals_cap;
	uint32_t *slots; /* stack hash -> index + 1 */
	size_t nslots;
	uint32_t *scratch; /* one stack being built */
	size_t scratch_cap;
} cli_fold;

void cli_fold_init(cli_fold *f, size_t nvals, int sanitize);
void cli_fold_free(cli_fold *f);

/* Adds every sample of the opened decoder d, named by nm: for each sample
 * type i with slot[i] >= 0, its value goes to value slot slot[i] of the
 * sample's stack. Samples whose values in those slots are all zero add
 * nothing. 0 or a negative error. */
int cli_fold_profile(cli_fold *f, pprof_dec *d, const cli_names *nm,
                     const long *slot);

/* Frame names of stack i (root first) and its values. */
static inline const uint32_t *
cli_fold_frames(const cli_fold *f, size_t i, size_t *n)
{
	*n = f->stk[i].n;
	return f->frames + f->stk[i].first;
}

static inline const int64_t *
cli_fold_values(const cli_fold *f, size_t i)
{
	return f->vals + i * f->nvals;
}

/* Stack indexes sorted by their folded names (for a stable output order);
 * malloc'd, NULL if no memory. */
uint32_t *cli_fold_sorted(const cli_fold *f);

#endif
