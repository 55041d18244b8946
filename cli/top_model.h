/*
 * top_model.h: what `heapprof top` builds from a profile (top_model.c):
 * one node per function, the samples merged as pprof's profile.Merge
 * merges them, their flat and cum sums, and which edges are inlined. The
 * printing and options stay in cmd_top.c.
 */
#ifndef HEAPPROF_TOP_MODEL_H
#define HEAPPROF_TOP_MODEL_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof_dec.h"
#include "prof_names.h"
#include "top_err.h"

/* One function (pprof "node" at functions granularity). */
typedef struct node {
	const char *name; /* borrowed from the names table */
	size_t len;
	int64_t flat, cum;
	size_t stamp; /* last sample that added to cum, plus one */
	int kept;     /* printed: takes part in the edge pass */
	int focus;    /* the name matches --focus */
	int in_inline, in_call; /* kinds of incoming edges among kept nodes */
	double flat_var, cum_var; /* --error: the estimators' variances */
} node;

/* A merged sample: its key at keys[key .. key + klen) starts with the
 * location count and indexes; v is the sum of the chosen value. */
typedef struct msample {
	size_t key;
	uint32_t klen;
	int is_base; /* labelled pprof::base=true (a -diff_base sample) */
	int young;   /* --min-age: no age_s label of at least min_age;
	              * --tagfocus: no label that matches */
	int64_t v;
	double var; /* --error: the variance of v (top_err.c) */
} msample;

typedef struct top {
	pprof_dec d;
	regex_t *focus; /* --focus, or NULL */
	const char *focus_text;
	int64_t min_age; /* --min-age in seconds, or -1 */
	const char *tag_text; /* --tagfocus, or NULL */
	size_t tag_keylen;    /* its key: tag_text[0 .. tag_keylen) */
	regex_t tag_re[16];   /* its regular expressions */
	int ntag;
	int tag_range;        /* its value is a number range to pprof */
	size_t tag_numeric;   /* samples with a numeric label of its key */
	size_t aged;     /* samples with an age_s label */
	top_err *err;    /* --error, or NULL */
	int err_base;    /* --error with --base: no intervals */
	double total_var, sampled; /* --error: of the total; objects sampled */
	cli_names nm;
	node *nodes; /* one per name id of nm */
	size_t nnodes;
	/* The samples merged as pprof's profile.Merge merges them before
	 * anything is summed: one per (locations, labels), values added. */
	msample *ms;
	size_t nms, ms_cap;
	uint64_t *keys; /* arena: each sample's key, see sample_key */
	size_t nkeys, keys_cap;
	uint32_t *slots; /* key hash -> ms index + 1 */
	size_t nslots;
} top;

/* Sums and absolute values wrap as Go's int64 arithmetic does in pprof
 * (no undefined behaviour in C at INT64_MIN or on overflow). */
static inline int64_t
abs64(int64_t v)
{
	return (int64_t)(v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

static inline int64_t
add64(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* One node per frame name, in name id order. 0 or a negative code. */
int top_build_nodes(top *t);
/* Every sample merged into t->ms, with value index vi. */
int top_merge_samples(top *t, size_t vi);
/* Flat and cum of every node; *total: the sum of the samples. */
int top_accumulate(top *t, int64_t *total);
/* Marks the nodes reached only through inlined edges among those kept
 * (flat above cutoff), as pprof's -top does. */
int top_mark_inline(top *t, int64_t cutoff);
/* qsort order of the printed nodes: flat, then cum, descending. */
int top_cmp_nodes(const void *pa, const void *pb);
void top_free(top *t);

#endif
