/*
 * heap_encode.h: internal entry points of the heap profile writers
 * (heap_encode.c: pprof; heap_text.c: legacy text).
 */
#ifndef HEAPPROF_HEAP_ENCODE_H
#define HEAPPROF_HEAP_ENCODE_H

#include "heapprof.h"
#include "pb.h"

/* Encodes uncompressed profile.proto into `sink`. */
int heapprof__encode_heap_to(const heapprof_heap_profile *p, unsigned flags,
                             pb_sink_fn *sink, void *sink_ctx);

/* Age split (heap_age.c, collect/age.c): in-use values of some records
 * written as separate samples, one per age class, with a numeric label
 * age_s (num_unit "seconds") holding the class's lower bound. */
#define HEAPPROF_AGE_NCLASS 19
/* The lower bound, in seconds, of age class c (0 <= c < NCLASS). */
int64_t heapprof__age_class_floor(unsigned c);
/* The class of an age in milliseconds (negative: class 0). */
unsigned heapprof__age_class_of_ms(int64_t ms);

typedef struct heapprof__age_part {
	int64_t objects; /* sampled objects of the record in this class */
	unsigned cls;    /* age class */
} heapprof__age_part;

typedef struct heapprof__age_split {
	size_t *first;             /* nrecords + 1 entries: record i's parts
	                            * are parts[first[i] .. first[i + 1]),
	                            * youngest class first */
	heapprof__age_part *parts;
	size_t nparts;
} heapprof__age_split;

/* The in-use values of record r (unsampled, pair `*objects, *bytes`) less
 * what its age parts take, written as age-labelled samples by the encoder;
 * see heap_age.c. Each part gets S(K_j) - S(K_j-1) of the cumulative
 * unsampled count, so the parts and the remainder add up exactly. */
void heapprof__age_part_values(const heapprof_record *r, int64_t rate,
                               const heapprof__age_part *parts, size_t n,
                               int64_t *out /* 2 * n */, int64_t *rest_objects,
                               int64_t *rest_bytes);

/* heapprof_encode_heap with in-use values split by age (ages may be
 * NULL: heapprof_encode_heap). */
int heapprof__encode_heap_age(const heapprof_heap_profile *p, unsigned flags,
                              const heapprof__age_split *ages,
                              heapprof_write_fn *write, void *arg);

#endif
