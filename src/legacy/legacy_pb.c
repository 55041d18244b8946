/*
 * legacy_pb.c: a parsed legacy heap profile (legacy_parse.h) ->
 * profile.proto, through the shared streaming writer (pb.h), string table
 * (strtab.h) and gzip sink (gz.h).
 *
 * The values are already unsampled by the reader (per line, as pprof's
 * legacy parser does), so heap_encode.c, which unsamples raw records the
 * way Go's runtime does, does not fit; this writer emits the values as they
 * are. It writes what pprof's own encoder writes for the profile its legacy
 * parser builds: the same fields in the same order, strings interned in the
 * same order, short repeated fields unpacked, the "bytes" numeric label
 * without unit, locations with address and mapping only, drop_frames /
 * keep_frames set to pprof's allocator patterns, no time. A jemalloc dump
 * also gets a comment saying how its values were computed.
 *
 * Owns heapprof_legacy_to_pprof() (gzip'd input accepted, as pprof does).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gz.h"
#include "legacy_parse.h"
#include "pb.h"
#include "strtab.h"

/* pprof's drop_frames for legacy heap profiles: allocator entry points
 * (libc, tcmalloc, macOS zones, the Go runtime, C++ operator new and
 * allocator templates), joined with '|'. */
static const char drop_frames[] =
	"calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|"
	"pvalloc|valloc|realloc|"
	"tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|tc_free|tc_memalign|"
	"tc_posix_memalign|tc_pvalloc|tc_valloc|tc_realloc|tc_new|tc_delete|"
	"tc_newarray|tc_deletearray|tc_new_nothrow|tc_newarray_nothrow|"
	"malloc_zone_malloc|malloc_zone_calloc|malloc_zone_valloc|"
	"malloc_zone_realloc|malloc_zone_memalign|malloc_zone_free|"
	"runtime\\..*|"
	"BaseArena::.*|(::)?do_malloc_no_errno|(::)?do_malloc_pages|"
	"(::)?do_malloc|DoSampledAllocation|MallocedMemBlock::MallocedMemBlock|"
	"_M_allocate|__builtin_(vec_)?delete|__builtin_(vec_)?new|"
	"__gnu_cxx::new_allocator::allocate|__libc_malloc|"
	"__malloc_alloc_template::allocate|allocate|cpp_alloc|"
	"operator new(\\[\\])?|simple_alloc::allocate";
/* ... and keep_frames: Go runtime frames that are not allocation. */
static const char keep_frames[] =
	"runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";

typedef struct wctx {
	const hp_legacy *p;
	pb_writer w;
	strtab st;
	uint32_t types[4][2];
	uint32_t s_bytes_key, s_space, s_bytes, s_drop, s_keep, s_comment;
	uint32_t *map_file, *map_bid;
	char comment[224];
} wctx;

static int
intern(wctx *x, const char *s, uint32_t *id)
{
	return heapprof__strtab_intern(&x->st, s, strlen(s), id);
}

/* pprof's encodeInt64s: packed when more than two, else one field each. */
static void
int64s(pb_writer *w, uint32_t field, const int64_t *v, size_t n)
{
	if (n > 2) {
		heapprof__pb_packed_i64(w, field, v, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		heapprof__pb_varint_field(w, field, (uint64_t)v[i]);
}

static int
strings_first(wctx *x)
{
	const hp_legacy *p = x->p;
	const char *const *names = heapprof__legacy_type_names(p->ntypes);
	for (int t = 0; t < p->ntypes; t++) {
		HP_TRY(intern(x, names[2 * t], &x->types[t][0]));
		HP_TRY(intern(x, names[2 * t + 1], &x->types[t][1]));
	}
	HP_TRY(intern(x, "bytes", &x->s_bytes_key));
	if (p->nmaps) {
		x->map_file = malloc(p->nmaps * sizeof(uint32_t));
		x->map_bid = malloc(p->nmaps * sizeof(uint32_t));
		if (!x->map_file || !x->map_bid)
			return -ENOMEM;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		const hp_legacy_map *m = &p->maps[i];
		HP_TRY(heapprof__strtab_intern(&x->st, m->file, m->file_len,
		                               &x->map_file[i]));
		HP_TRY(heapprof__strtab_intern(&x->st, m->build_id, m->build_id_len,
		                               &x->map_bid[i]));
	}
	HP_TRY(intern(x, drop_frames, &x->s_drop));
	HP_TRY(intern(x, keep_frames, &x->s_keep));
	HP_TRY(intern(x, "space", &x->s_space));
	HP_TRY(intern(x, "bytes", &x->s_bytes));
	x->s_comment = 0;
	if (p->kind == HP_LEGACY_JEMALLOC) {
		snprintf(x->comment, sizeof(x->comment),
		         "converted from a jemalloc heap_v2/%lld dump; values "
		         "unsampled as jeprof does, truncated; the allocator's "
		         "leading frames dropped",
		         (long long)p->period);
		HP_TRY(intern(x, x->comment, &x->s_comment));
	}
	return 0;
}

static int
body(wctx *x)
{
	const hp_legacy *p = x->p;
	pb_writer *w = &x->w;
	HP_TRY(strings_first(x));
	for (int t = 0; t < p->ntypes; t++) {
		heapprof__pb_begin(w, 1);
		heapprof__pb_varint_field(w, 1, x->types[t][0]);
		heapprof__pb_varint_field(w, 2, x->types[t][1]);
		heapprof__pb_end(w);
	}
	uint64_t *ids = NULL;
	size_t ids_cap = 0;
	for (size_t i = 0; i < p->nsamples && !w->err; i++) {
		size_t a = p->stack_at[i], n = p->stack_at[i + 1] - a;
		if (n > ids_cap) {
			uint64_t *ni = realloc(ids, n * 2 * sizeof(*ni));
			if (!ni) {
				free(ids);
				return -ENOMEM;
			}
			ids = ni;
			ids_cap = n * 2;
		}
		for (size_t k = 0; k < n; k++)
			ids[k] = (uint64_t)p->stack[a + k] + 1;
		heapprof__pb_begin(w, 2);
		if (n > 2) {
			heapprof__pb_packed_u64(w, 1, ids, n);
		} else {
			for (size_t k = 0; k < n; k++)
				heapprof__pb_varint_field(w, 1, ids[k]);
		}
		int64s(w, 2, p->values + i * (size_t)p->ntypes, (size_t)p->ntypes);
		heapprof__pb_begin(w, 3);
		heapprof__pb_uint_opt(w, 1, x->s_bytes_key);
		heapprof__pb_uint_opt(w, 3, (uint64_t)p->label[i]);
		heapprof__pb_end(w);
		heapprof__pb_end(w);
	}
	free(ids);
	for (size_t i = 0; i < p->nmaps; i++) {
		const hp_legacy_map *m = &p->maps[i];
		heapprof__pb_begin(w, 3);
		heapprof__pb_uint_opt(w, 1, i + 1);
		heapprof__pb_uint_opt(w, 2, m->start);
		heapprof__pb_uint_opt(w, 3, m->limit);
		heapprof__pb_uint_opt(w, 4, m->offset);
		heapprof__pb_uint_opt(w, 5, x->map_file[i]);
		heapprof__pb_uint_opt(w, 6, x->map_bid[i]);
		heapprof__pb_end(w);
	}
	for (size_t i = 0; i < p->nlocs; i++) {
		heapprof__pb_begin(w, 4);
		heapprof__pb_uint_opt(w, 1, i + 1);
		heapprof__pb_uint_opt(w, 2, p->loc_map[i]);
		heapprof__pb_uint_opt(w, 3, p->loc_addr[i]);
		heapprof__pb_end(w);
	}
	for (uint32_t i = 0; i < x->st.n; i++) {
		size_t len;
		const char *s = heapprof__strtab_get(&x->st, i, &len);
		heapprof__pb_bytes_field(w, 6, s, len);
	}
	heapprof__pb_uint_opt(w, 7, x->s_drop);
	heapprof__pb_uint_opt(w, 8, x->s_keep);
	heapprof__pb_begin(w, 11);
	heapprof__pb_varint_field(w, 1, x->s_space);
	heapprof__pb_varint_field(w, 2, x->s_bytes);
	heapprof__pb_end(w);
	heapprof__pb_uint_opt(w, 12, (uint64_t)p->period);
	if (x->s_comment)
		heapprof__pb_varint_field(w, 13, x->s_comment);
	heapprof__pb_varint_field(w, 14, 0); /* default_sample_type "" */
	return heapprof__pb_finish(w);
}

struct sink {
	heapprof_write_fn *write;
	void *arg;
};

static int
sink_write(void *ctx, const uint8_t *b, size_t n)
{
	struct sink *s = ctx;
	return s->write(s->arg, b, n);
}

static int
write_to(const hp_legacy *p, pb_sink_fn *out, void *out_ctx)
{
	wctx x;
	memset(&x, 0, sizeof(x));
	x.p = p;
	heapprof__pb_init(&x.w, NULL, NULL, out, out_ctx);
	int rc = heapprof__strtab_init_pprof(&x.st);
	if (!rc)
		rc = body(&x);
	heapprof__pb_free(&x.w);
	heapprof__strtab_free(&x.st);
	free(x.map_file);
	free(x.map_bid);
	return rc;
}

int
heapprof__legacy_write_pb(const hp_legacy *p, int gzip,
                          heapprof_write_fn *write, void *arg)
{
	struct sink s = {write, arg};
	if (!gzip)
		return write_to(p, sink_write, &s);
	gz_writer *g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc = heapprof__gz_writer_init(g, 1, sink_write, &s, NULL, NULL, NULL);
	if (!rc) {
		rc = write_to(p, heapprof__gz_write, g);
		if (!rc)
			rc = heapprof__gz_writer_finish(g);
		else
			heapprof__gz_writer_abort(g);
	}
	free(g);
	return rc;
}

HP_EXPORT int
heapprof_legacy_to_pprof(const void *data, size_t len, unsigned flags,
                         heapprof_write_fn *write, void *arg, size_t *err_line)
{
	if (err_line)
		*err_line = 0;
	if ((!data && len) || !write)
		return -EINVAL;
	uint8_t *plain = NULL;
	const char *buf = data;
	int rc = 0;
	if (heapprof__gz_is_gzip(data, len)) {
		rc = heapprof__gunzip(data, len, (size_t)1 << 30, NULL, NULL, &plain,
		                      &len);
		if (rc)
			return rc;
		buf = (const char *)plain;
	}
	hp_legacy p;
	hp_legacy_err e;
	rc = heapprof__legacy_parse(buf, len, &p, &e);
	if (!rc) {
		rc = heapprof__legacy_write_pb(&p, (flags & HEAPPROF_CONVERT_GZIP) != 0,
		                               write, arg);
		heapprof__legacy_free(&p);
	} else if (err_line) {
		*err_line = e.line;
	}
	free(plain);
	return rc;
}
