/*
 * legacy_text.c: a pprof heap profile (profile.proto) -> legacy heap text,
 * heapprof_pprof_to_legacy().
 *
 * Proto values are unsampled estimates; the inverse of the unsampling is
 * not exact (it truncates), so raw sampled counts cannot be recovered and
 * writing `heap_v2/RATE` text would not read back to the same numbers. The
 * text is therefore written with the `heapprofile` sampler (gperftools'
 * "every allocation recorded": period 1, values taken as they are), which
 * `go tool pprof`, `google-pprof` and `jeprof` all read without scaling: the
 * totals per sample type and per stack come back exactly. The original
 * period and sample types are recorded in a '#' comment. (heap_text.c's
 * heapprof_encode_heap_text() writes `heap_v2/RATE` with raw sampled
 * counts, the right form for heapprof's own records, which this input no
 * longer has.)
 *
 *   - Sample types are found by name: alloc_objects, alloc_space,
 *     inuse_objects, inuse_space (four types back), or inuse_* alone /
 *     objects + space (two types back: the allocation pair is written equal
 *     to the in-use pair, or "0: 0" where that is negative, since two-type
 *     readers take the in-use pair only). pprof chooses four types only
 *     when the header's allocation totals differ from the in-use ones as
 *     text and are not "0";
 *     for a four-type profile where they coincide, the allocation count in
 *     the header gets a leading zero ("01204" is the same number) so that
 *     the four types survive.
 *   - Each sample is one line, values in the profile's order; addresses are
 *     written as return addresses (location address + 1: readers subtract
 *     one); symbolized locations add Go-style "#\t0xADDR\tfunc\tfile:line"
 *     comment lines, which readers skip. Labels other than pprof's implicit
 *     "bytes" (recomputed by readers from the in-use pair) are not kept.
 *   - Mappings go to a MAPPED_LIBRARIES: section in /proc/self/maps form
 *     (what every reader parses; build ids are not kept), in the profile's
 *     order so the main binary stays first. Fake mappings (no file, start 0)
 *     are left out: readers recreate them.
 *
 * Refused (HEAPPROF_ETEXTVALUE): a negative allocation value in a
 * four-type profile (the grammar has no sign there), a count of 0 with
 * nonzero bytes (readers reject it),
 * and a location with address 0 (text identifies frames by address only).
 * A negative in-use total (a delta) cannot be printed in the header either:
 * it is written as 0 there; the sample lines keep their signs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"

typedef struct out {
	heapprof_write_fn *write;
	void *arg;
	int err;
	size_t len;
	char buf[16384];
} out;

static void
flush(out *o)
{
	if (o->len && !o->err)
		o->err = o->write(o->arg, o->buf, o->len);
	o->len = 0;
}

static void
put(out *o, const char *s, size_t n)
{
	while (n && !o->err) {
		if (o->len == sizeof(o->buf))
			flush(o);
		size_t k = sizeof(o->buf) - o->len < n ? sizeof(o->buf) - o->len : n;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

static void outf(out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
outf(out *o, const char *fmt, ...)
{
	char tmp[160];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A string from the profile with control characters (which would break
 * the line structure) replaced by '?'. */
static void
put_clean(out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
		put(o, &c, 1);
	}
}

typedef struct idx {
	int an, ab, in, ib; /* value indexes; -1 absent */
	int four;
} idx;

static int
find_type(const pprof_dec *d, const char *name)
{
	for (size_t i = 0; i < d->ntypes; i++)
		if (heapprof__pprof_string_eq(d, d->types[i].type, name))
			return (int)i;
	return -1;
}

static int
types(const pprof_dec *d, idx *x)
{
	x->an = find_type(d, "alloc_objects");
	x->ab = find_type(d, "alloc_space");
	x->in = find_type(d, "inuse_objects");
	x->ib = find_type(d, "inuse_space");
	if (x->in < 0 && x->ib < 0) {
		x->in = find_type(d, "objects");
		x->ib = find_type(d, "space");
	}
	if (x->in < 0 || x->ib < 0)
		return HEAPPROF_ENOTHEAP;
	x->four = x->an >= 0 && x->ab >= 0;
	if (!x->four) {
		x->an = x->in;
		x->ab = x->ib;
	}
	return 0;
}

static int
add_ov(int64_t *acc, int64_t v)
{
	return __builtin_add_overflow(*acc, v, acc) ? HEAPPROF_EOVERFLOW : 0;
}

/* Pass 1: validation and header totals. */
static int
scan(pprof_dec *d, const idx *x, int64_t tot[4])
{
	pprof_sample_iter it;
	pprof_sample s;
	int rc;
	heapprof__pprof_samples(d, &it);
	while ((rc = heapprof__pprof_sample_next(d, &it, &s)) == 0) {
		int64_t an = s.values[x->an], ab = s.values[x->ab];
		int64_t in = s.values[x->in], ib = s.values[x->ib];
		if ((in == 0 && ib != 0) ||
		    (x->four && (an < 0 || ab < 0 || (an == 0 && ab != 0))))
			return HEAPPROF_ETEXTVALUE;
		HP_TRY(add_ov(&tot[0], in));
		HP_TRY(add_ov(&tot[1], ib));
		HP_TRY(add_ov(&tot[2], an));
		HP_TRY(add_ov(&tot[3], ab));
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < d->nlocs; i++)
		if (d->loc_addr[i] == 0)
			return HEAPPROF_ETEXTVALUE;
	return 0;
}

static void
header(out *o, const pprof_dec *d, const idx *x, const int64_t tot[4])
{
	char in[2][24], al[2][25];
	for (int i = 0; i < 2; i++) {
		snprintf(in[i], sizeof(in[i]), "%" PRId64, tot[i] < 0 ? 0 : tot[i]);
		if (x->four)
			snprintf(al[i], sizeof(al[i]), "%" PRId64, tot[2 + i]);
		else
			strcpy(al[i], in[i]); /* equal: two types back */
	}
	if (x->four) {
		/* Keep pprof's four-type reading (see the file comment). */
		int same_n = !strcmp(al[0], in[0]) || !strcmp(al[0], "0");
		int same_b = !strcmp(al[1], in[1]) || !strcmp(al[1], "0");
		if (same_n && same_b) {
			memmove(al[0] + 1, al[0], strlen(al[0]) + 1);
			al[0][0] = '0';
		}
	}
	outf(o, "heap profile: %s: %s [%s: %s] @ heapprofile\n", in[0], in[1],
	     al[0], al[1]);
	size_t n;
	const char *pt = heapprof__pprof_string(d, d->period_type.type, &n);
	outf(o, "# converted from profile.proto by heapprof: values are the "
	        "profile's own (already unsampled), period %" PRId64 " ",
	     d->period);
	put_clean(o, pt, n);
	outf(o, "; sample types:");
	for (size_t i = 0; i < d->ntypes; i++) {
		const char *t = heapprof__pprof_string(d, d->types[i].type, &n);
		put(o, " ", 1);
		put_clean(o, t, n);
	}
	put(o, "\n", 1);
}

/* Go-style comment lines naming a symbolized location's frames. */
static int
frames(out *o, pprof_dec *d, uint32_t li)
{
	pprof_location l;
	HP_TRY(heapprof__pprof_location(d, li, &l));
	for (size_t k = 0; k < l.nlines; k++) {
		long fi = heapprof__pprof_find_function(d, l.lines[k].function_id);
		if (fi < 0)
			continue;
		pprof_function f;
		HP_TRY(heapprof__pprof_function(d, (size_t)fi, &f));
		size_t nn, fn;
		const char *name = heapprof__pprof_string(d, f.name, &nn);
		const char *file = heapprof__pprof_string(d, f.filename, &fn);
		outf(o, "#\t0x%" PRIx64 "\t", l.address);
		put_clean(o, name, nn);
		put(o, "\t", 1);
		put_clean(o, file, fn);
		outf(o, ":%" PRId64 "\n", l.lines[k].line);
	}
	return 0;
}

static int
samples(out *o, pprof_dec *d, const idx *x)
{
	pprof_sample_iter it;
	pprof_sample s;
	int rc;
	heapprof__pprof_samples(d, &it);
	while ((rc = heapprof__pprof_sample_next(d, &it, &s)) == 0 && !o->err) {
		int64_t an = s.values[x->an], ab = s.values[x->ab];
		if (!x->four && (an < 0 || ab < 0))
			an = ab = 0; /* unread by pprof; the grammar has no sign */
		outf(o, "%" PRId64 ": %" PRId64 " [%" PRId64 ": %" PRId64 "] @",
		     s.values[x->in], s.values[x->ib], an, ab);
		for (size_t k = 0; k < s.nlocations; k++)
			outf(o, " 0x%" PRIx64, d->loc_addr[s.location_index[k]] + 1);
		put(o, "\n", 1);
		/* (location decoding has its own scratch: s stays valid) */
		for (size_t k = 0; k < s.nlocations; k++)
			HP_TRY(frames(o, d, s.location_index[k]));
	}
	return rc < 0 ? rc : 0;
}

static int
mappings(out *o, const pprof_dec *d)
{
	put(o, "\nMAPPED_LIBRARIES:\n", 19);
	for (size_t i = 0; i < d->nmaps; i++) {
		pprof_mapping m;
		HP_TRY(heapprof__pprof_mapping(d, i, &m));
		size_t n;
		const char *file = heapprof__pprof_string(d, m.filename, &n);
		if (m.memory_start == 0 && !n &&
		    (m.memory_limit == 0 || m.memory_limit == UINT64_MAX))
			continue; /* a fake mapping */
		outf(o, "%08" PRIx64 "-%08" PRIx64 " r-xp %08" PRIx64 " 00:00 0 ",
		     m.memory_start, m.memory_limit, m.file_offset);
		put_clean(o, file, n);
		put(o, "\n", 1);
	}
	return 0;
}

HP_EXPORT int
heapprof_pprof_to_legacy(const void *data, size_t len, heapprof_write_fn *write,
                         void *arg)
{
	if (!data || !write)
		return -EINVAL;
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	out *o = malloc(sizeof(*o));
	int rc = o ? heapprof__pprof_dec_open(&d, data, len) : -ENOMEM;
	idx x;
	int64_t tot[4] = {0, 0, 0, 0};
	if (!rc)
		rc = types(&d, &x);
	if (!rc)
		rc = scan(&d, &x, tot);
	if (!rc) {
		o->write = write;
		o->arg = arg;
		o->err = 0;
		o->len = 0;
		header(o, &d, &x, tot);
		rc = samples(o, &d, &x);
		if (!rc)
			rc = mappings(o, &d);
		flush(o);
		if (!rc)
			rc = o->err;
	}
	free(o);
	heapprof__pprof_dec_free(&d);
	return rc;
}
