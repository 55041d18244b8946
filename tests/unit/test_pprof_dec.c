/*
 * test_pprof_dec.c: unit tests of the streaming pprof decoder
 * (src/format/pprof_dec.c, pprof_inflate.c): every error code from a
 * crafted input, packed and unpacked fields, id tables, gzip limits,
 * truncation at every length, and the real profiles of the corpus.
 */
#include "heapprof.h"
#include "gz.h"
#include "pb.h"
#include "pprof_dec.h"
#include "pb_build.h"
#include "test.h"

/* ------------------------------------------------------------ builders */

typedef struct buf {
	uint8_t *p;
	size_t len;
} buf;

/* Finishes a writer with no sink: its buffer is the profile. */
static buf
take(pb_writer *w)
{
	buf b = {w->buf, w->len};
	return b;
}

static const char *const S[] = {"", "alloc_objects", "count", "main", "f.c",
                                "key", "val"};

/* Knobs for the one builder every error case bends. */
typedef struct spec {
	int ntypes;          /* sample types (type 1/unit 2) */
	int nvalues;         /* values per sample */
	uint64_t loc_id;     /* id of the single location */
	uint64_t sample_loc; /* location id the sample names */
	uint64_t func_id, line_func;
	uint64_t dup_func;   /* nonzero: a second function with this id */
	uint64_t type_str;   /* string index of the sample type */
	uint64_t label_key;  /* 0: no label */
	int ntimes;          /* time_nanos fields */
	int unpacked;        /* location ids / values unpacked */
	const char *s0;      /* string_table[0] */
	int nostrings;
} spec;

static spec
good(void)
{
	spec s = {1, 1, 1, 1, 7, 7, 0, 1, 5, 1, 0, "", 0};
	return s;
}

static buf
build(spec sp)
{
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, NULL, NULL);
	for (int i = 0; i < sp.ntypes; i++)
		vt(&w, 1, sp.type_str, 2);
	heapprof__pb_begin(&w, 2);
	if (sp.unpacked) {
		heapprof__pb_varint_field(&w, 1, sp.sample_loc);
		for (int i = 0; i < sp.nvalues; i++)
			heapprof__pb_varint_field(&w, 2, (uint64_t)(i + 40));
	} else {
		int64_t v[8] = {40, 41, 42, 43, 44, 45, 46, 47};
		heapprof__pb_packed_u64(&w, 1, &sp.sample_loc, 1);
		heapprof__pb_packed_i64(&w, 2, v, (size_t)sp.nvalues);
	}
	if (sp.label_key) {
		heapprof__pb_begin(&w, 3);
		heapprof__pb_uint_opt(&w, 1, sp.label_key);
		heapprof__pb_uint_opt(&w, 2, 6);
		heapprof__pb_end(&w);
	}
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 3); /* mapping */
	heapprof__pb_uint_opt(&w, 1, 1);
	heapprof__pb_uint_opt(&w, 2, 0x1000);
	heapprof__pb_uint_opt(&w, 3, 0x2000);
	heapprof__pb_uint_opt(&w, 5, 4);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 4); /* location */
	heapprof__pb_uint_opt(&w, 1, sp.loc_id);
	heapprof__pb_uint_opt(&w, 2, 1);
	heapprof__pb_uint_opt(&w, 3, 0x1234);
	heapprof__pb_begin(&w, 4);
	heapprof__pb_uint_opt(&w, 1, sp.line_func);
	heapprof__pb_uint_opt(&w, 2, 12);
	heapprof__pb_end(&w);
	heapprof__pb_end(&w);
	heapprof__pb_begin(&w, 5); /* function */
	heapprof__pb_uint_opt(&w, 1, sp.func_id);
	heapprof__pb_uint_opt(&w, 2, 3);
	heapprof__pb_uint_opt(&w, 4, 4);
	heapprof__pb_end(&w);
	if (sp.dup_func) {
		heapprof__pb_begin(&w, 5);
		heapprof__pb_uint_opt(&w, 1, sp.dup_func);
		heapprof__pb_end(&w);
	}
	for (int i = 0; i < sp.ntimes; i++)
		heapprof__pb_varint_field(&w, 9, 1000 + (uint64_t)i);
	vt(&w, 11, 1, 2);
	heapprof__pb_varint_field(&w, 12, 512);
	if (!sp.nostrings) {
		heapprof__pb_bytes_field(&w, 6, sp.s0, strlen(sp.s0));
		strs(&w, S + 1, HP_ARRAY_LEN(S) - 1);
	}
	return take(&w);
}

static int
open_spec(spec sp)
{
	buf b = build(sp);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int rc = heapprof__pprof_check(&d, b.p, b.len);
	heapprof__pprof_dec_free(&d);
	free(b.p);
	return rc;
}

static int
open_bytes(const void *p, size_t n)
{
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int rc = heapprof__pprof_check(&d, p, n);
	heapprof__pprof_dec_free(&d);
	return rc;
}

/* ------------------------------------------------------------ tests */

TEST(good_profile_decodes)
{
	buf b = build(good());
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, b.p, b.len));
	CHECK_EQ(d.ntypes, 1);
	CHECK_EQ(d.nsamples, 1);
	CHECK_EQ(d.nlocs, 1);
	CHECK_EQ(d.nfuncs, 1);
	CHECK_EQ(d.nmaps, 1);
	CHECK_EQ(d.nstrings, HP_ARRAY_LEN(S));
	CHECK_EQ(d.period, 512);
	CHECK_EQ(d.time_nanos, 1000);
	CHECK(heapprof__pprof_string_eq(&d, d.types[0].type, "alloc_objects"));
	CHECK(heapprof__pprof_string_eq(&d, d.period_type.unit, "count"));
	CHECK_EQ(heapprof__pprof_find_location(&d, 1), 0);
	CHECK_EQ(heapprof__pprof_find_location(&d, 2), -1);
	CHECK_EQ(heapprof__pprof_find_function(&d, 7), 0);
	pprof_location l;
	REQUIRE_OK(heapprof__pprof_location(&d, 0, &l));
	CHECK_EQ(l.address, 0x1234);
	CHECK_EQ(l.mapping_id, 1);
	CHECK_EQ(l.nlines, 1);
	CHECK_EQ(l.lines[0].function_id, 7);
	CHECK_EQ(l.lines[0].line, 12);
	pprof_function f;
	REQUIRE_OK(heapprof__pprof_function(&d, 0, &f));
	CHECK(heapprof__pprof_string_eq(&d, f.name, "main"));
	pprof_mapping m;
	REQUIRE_OK(heapprof__pprof_mapping(&d, 0, &m));
	CHECK_EQ(m.memory_limit, 0x2000);
	CHECK(heapprof__pprof_string_eq(&d, m.filename, "f.c"));
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&d, &it);
	REQUIRE(heapprof__pprof_sample_next(&d, &it, &s) == 0);
	CHECK_EQ(s.nlocations, 1);
	CHECK_EQ(s.location_ids[0], 1);
	CHECK_EQ(s.location_index[0], 0);
	CHECK_EQ(s.nvalues, 1);
	CHECK_EQ(s.values[0], 40);
	CHECK_EQ(s.nlabels, 1);
	CHECK(heapprof__pprof_string_eq(&d, s.labels[0].str, "val"));
	CHECK_EQ(heapprof__pprof_sample_next(&d, &it, &s), 1);
	pprof_sample s2;
	REQUIRE_OK(heapprof__pprof_sample_at(&d, s.offset, s.len, &s2));
	CHECK_EQ(s2.values[0], 40);
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

TEST(unpacked_equals_packed)
{
	spec sp = good();
	sp.ntypes = 3;
	sp.nvalues = 3;
	sp.unpacked = 1;
	buf b = build(sp);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	REQUIRE_OK(heapprof__pprof_dec_open(&d, b.p, b.len));
	pprof_sample_iter it;
	pprof_sample s;
	heapprof__pprof_samples(&d, &it);
	REQUIRE(heapprof__pprof_sample_next(&d, &it, &s) == 0);
	CHECK_EQ(s.nvalues, 3);
	CHECK_EQ(s.values[0], 40);
	CHECK_EQ(s.values[2], 42);
	CHECK_EQ(s.location_ids[0], 1);
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

TEST(sparse_ids_use_hash_table)
{
	spec sp = good();
	sp.loc_id = sp.sample_loc = 1ull << 40;
	sp.func_id = sp.line_func = 123456789;
	CHECK_EQ(open_spec(sp), 0);
}

TEST(error_empty)
{
	CHECK_EQ(open_bytes("", 0), HEAPPROF_EEMPTY);
}

TEST(error_trunc)
{
	const uint8_t b1[] = {0x08}; /* tag, no value */
	CHECK_EQ(open_bytes(b1, sizeof(b1)), HEAPPROF_ETRUNC);
	const uint8_t b2[] = {0x60, 0x80}; /* varint cut short */
	CHECK_EQ(open_bytes(b2, sizeof(b2)), HEAPPROF_ETRUNC);
}

TEST(error_varint)
{
	const uint8_t b[] = {0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	                     0xff, 0xff, 0xff, 0xff, 0x01};
	CHECK_EQ(open_bytes(b, sizeof(b)), HEAPPROF_EVARINT);
}

TEST(error_wiretype)
{
	const uint8_t b1[] = {0x0b}; /* field 1, group start */
	CHECK_EQ(open_bytes(b1, sizeof(b1)), HEAPPROF_EWIRETYPE);
	const uint8_t b2[] = {0x08, 0x01}; /* sample_type as a varint */
	CHECK_EQ(open_bytes(b2, sizeof(b2)), HEAPPROF_EWIRETYPE);
	const uint8_t b3[] = {0x4a, 0x00}; /* time_nanos as bytes */
	CHECK_EQ(open_bytes(b3, sizeof(b3)), HEAPPROF_EWIRETYPE);
}

TEST(error_length)
{
	const uint8_t b[] = {0x32, 0x05, 'a'}; /* string runs past the end */
	CHECK_EQ(open_bytes(b, sizeof(b)), HEAPPROF_ELENGTH);
	/* a nested length past its message but inside the buffer */
	const uint8_t b2[] = {0x0a, 0x02, 0x12, 0x05, 0x32, 0x00, 0, 0, 0};
	CHECK_EQ(open_bytes(b2, sizeof(b2)), HEAPPROF_ELENGTH);
}

TEST(error_index)
{
	spec sp = good();
	sp.type_str = 99;
	CHECK_EQ(open_spec(sp), HEAPPROF_EINDEX);
	sp = good();
	sp.label_key = 7; /* == nstrings */
	CHECK_EQ(open_spec(sp), HEAPPROF_EINDEX);
}

TEST(error_id)
{
	spec sp = good();
	sp.loc_id = sp.sample_loc = 0; /* reserved id */
	CHECK_EQ(open_spec(sp), HEAPPROF_EID);
	sp = good();
	sp.sample_loc = 2; /* unresolvable sample location */
	CHECK_EQ(open_spec(sp), HEAPPROF_EID);
	sp = good();
	sp.line_func = 8; /* line names a missing function */
	CHECK_EQ(open_spec(sp), HEAPPROF_EID);
	sp = good();
	sp.dup_func = 7; /* duplicate function id */
	CHECK_EQ(open_spec(sp), HEAPPROF_EID);
	sp = good();
	sp.func_id = sp.line_func = sp.dup_func = 1ull << 50; /* dup, hashed */
	CHECK_EQ(open_spec(sp), HEAPPROF_EID);
}

static int
discard_out(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

/* The input of sp fails with `code`, and the decoder's fault and the
 * delta computer's (heapprof_delta_fault) contain `want`. */
static void
fault_is(spec sp, int code, const char *want)
{
	buf b = build(sp);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	CHECK_EQ(heapprof__pprof_check(&d, b.p, b.len), code);
	if (!strstr(d.fault, want))
		T_FAIL("decoder fault '%s', want '%s'", d.fault, want);
	heapprof__pprof_dec_free(&d);
	heapprof_delta *dc;
	REQUIRE_OK(heapprof_delta_new(&dc, NULL));
	CHECK_EQ(heapprof_delta_compute(dc, b.p, b.len, 0, discard_out, NULL),
	         code);
	if (!strstr(heapprof_delta_fault(dc), want))
		T_FAIL("delta fault '%s', want '%s'", heapprof_delta_fault(dc),
		       want);
	heapprof_delta_free(dc);
	free(b.p);
}

/* Errors that name the fault: which record, what was wrong. */
TEST(faults_name_the_record)
{
	spec sp = good();
	sp.line_func = 0;
	fault_is(sp, HEAPPROF_EID, "location id 1: line has function 0");
	sp = good();
	sp.line_func = 8;
	fault_is(sp, HEAPPROF_EID,
	         "location id 1: line has function 8, which does not exist");
	sp = good();
	sp.dup_func = 7;
	fault_is(sp, HEAPPROF_EID, "function id 7: duplicate");
	sp = good();
	sp.loc_id = sp.sample_loc = 0;
	fault_is(sp, HEAPPROF_EID, "location 1 of 1 has id 0");
	sp = good();
	sp.sample_loc = 2;
	fault_is(sp, HEAPPROF_EID, ": location id 2 does not exist");
	sp = good();
	sp.ntypes = 2;
	fault_is(sp, HEAPPROF_EVALUES, ": 1 values for 2 sample types");
	/* a good profile has no fault */
	sp = good();
	buf b = build(sp);
	heapprof_delta *dc;
	REQUIRE_OK(heapprof_delta_new(&dc, NULL));
	REQUIRE_OK(heapprof_delta_compute(dc, b.p, b.len, 0, discard_out, NULL));
	CHECK_EQ(strlen(heapprof_delta_fault(dc)), 0);
	heapprof_delta_free(dc);
	free(b.p);
}

TEST(error_values)
{
	spec sp = good();
	sp.ntypes = 2; /* one value, two types */
	CHECK_EQ(open_spec(sp), HEAPPROF_EVALUES);
	sp = good();
	sp.ntypes = 0; /* samples without sample types */
	CHECK_EQ(open_spec(sp), HEAPPROF_EVALUES);
}

TEST(error_string0)
{
	spec sp = good();
	sp.s0 = "x";
	CHECK_EQ(open_spec(sp), HEAPPROF_ESTRING0);
	const uint8_t b[] = {0x60, 0x01}; /* period only: no string table */
	CHECK_EQ(open_bytes(b, sizeof(b)), HEAPPROF_ESTRING0);
}

TEST(error_concat)
{
	spec sp = good();
	sp.ntimes = 2;
	CHECK_EQ(open_spec(sp), HEAPPROF_ECONCAT);
}

static int
mem_sink(void *ctx, const uint8_t *p, size_t n)
{
	buf *b = ctx;
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static buf
gzip_of(const void *p, size_t n)
{
	buf out = {NULL, 0};
	gz_writer g;
	heapprof__gz_writer_init(&g, 1, mem_sink, &out, NULL, NULL, NULL);
	heapprof__gz_write(&g, p, n);
	heapprof__gz_writer_finish(&g);
	return out;
}

TEST(gzip_input_and_limits)
{
	buf b = build(good());
	buf z = gzip_of(b.p, b.len);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	CHECK_EQ(heapprof__pprof_check(&d, z.p, z.len), 0);
	CHECK(d.was_gzip);
	CHECK_EQ(d.nsamples, 1);
	/* reused stream and buffer: same result again */
	CHECK_EQ(heapprof__pprof_check(&d, z.p, z.len), 0);
	/* truncated gzip */
	CHECK_EQ(heapprof__pprof_dec_open(&d, z.p, z.len - 12), HEAPPROF_EGZIP);
	/* corrupt gzip */
	uint8_t bad[32] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff};
	CHECK_EQ(heapprof__pprof_dec_open(&d, bad, sizeof(bad)), HEAPPROF_EGZIP);
	/* a bomb: 8 MiB of zeros, limit 1 MiB */
	size_t big = 8u << 20;
	uint8_t *zeros = calloc(1, big);
	buf zb = gzip_of(zeros, big);
	d.limit = 1u << 20;
	CHECK_EQ(heapprof__pprof_dec_open(&d, zb.p, zb.len), HEAPPROF_ETOOBIG);
	/* gzip'd input in a buffer inflates into the stream's window, which
	 * stops one byte past the limit (plus the window's 2) */
	CHECK(d.st.win_cap <= (1u << 20) + 2);
	/* raw input over the limit */
	CHECK_EQ(heapprof__pprof_dec_open(&d, zeros, (2u << 20)), HEAPPROF_ETOOBIG);
	/* still usable after errors */
	d.limit = PPROF_DEC_DEFAULT_LIMIT;
	CHECK_EQ(heapprof__pprof_check(&d, z.p, z.len), 0);
	heapprof__pprof_dec_free(&d);
	CHECK_EQ(heapprof_pprof_check(zb.p, zb.len, 1u << 20), HEAPPROF_ETOOBIG);
	free(zeros);
	free(zb.p);
	free(z.p);
	free(b.p);
}

/* ------------------------------------------------------------ corpus */

static int have_corpus;

TEST(corpus_parses)
{
	static const struct {
		const char *file;
		size_t samples, locs, types;
	} want[] = {
		{"fastdelta/big-heap.pprof", 5676, 2040, 4},
		{"fastdelta/heap.pprof", 497, 216, 4},
		{"fastdelta/block.after.pprof", 3, 18, 2},
		{"fastdelta/stress-failure.2.after.pprof", 17655, 341, 4},
		{"go/go_heap_delta_2.pb.gz", 34, 45, 4},
		{"go/go_cpu_labels.pb.gz", 2, 6, 2},
		{"go/go_goroutine_labels.pb.gz", 3, 13, 1},
		{"go/go_heap_delta_2_minus_1.cli.pb.gz", 20, 38, 4},
	};
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	for (size_t i = 0; i < HP_ARRAY_LEN(want); i++) {
		char path[512];
		buf b;
		snprintf(path, sizeof(path), "%s/%s", t_corpus(), want[i].file);
		if (t_read_file(path, &b.p, &b.len) < 0) {
			T_FAIL("cannot read %s", path);
			continue;
		}
		int rc = heapprof__pprof_check(&d, b.p, b.len);
		if (rc != 0)
			T_FAIL("%s: %s", want[i].file, heapprof_strerror(rc));
		/* the counts are those of the shared corpus's files; the
		 * generated ones must decode, with samples and locations */
		if (t_corpus_generated()) {
			CHECK(d.nsamples > 0);
			CHECK(d.nlocs > 0);
			CHECK(d.ntypes > 0);
		} else {
			CHECK_EQ(d.nsamples, want[i].samples);
			CHECK_EQ(d.nlocs, want[i].locs);
			CHECK_EQ(d.ntypes, want[i].types);
		}
		free(b.p);
	}
	/* legacy text is not profile.proto: rejected with a wire error */
	char path[512];
	buf b;
	snprintf(path, sizeof(path), "%s/go/go_heap_basic.txt", t_corpus());
	if (t_read_file(path, &b.p, &b.len) == 0) {
		CHECK(heapprof__pprof_check(&d, b.p, b.len) < 0);
		free(b.p);
	}
	heapprof__pprof_dec_free(&d);
}

/* Every prefix and many single-byte corruptions of a real profile: an
 * error or success, never a crash or an out-of-bounds read (run under
 * valgrind/ASan to see the latter). */
TEST(corpus_truncation_and_corruption)
{
	char path[512];
	buf b;
	snprintf(path, sizeof(path), "%s/fastdelta/heap.after.pprof",
	         t_corpus());
	REQUIRE(t_read_file(path, &b.p, &b.len) == 0);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	size_t ok = 0;
	for (size_t n = 0; n < b.len; n++) {
		/* copy so a read past n is past the allocation */
		uint8_t *c = malloc(n ? n : 1);
		memcpy(c, b.p, n);
		ok += heapprof__pprof_check(&d, c, n) == 0;
		free(c);
	}
	CHECK(ok < b.len / 4); /* most prefixes are broken */
	uint32_t seed = 1;
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245 + 12345;
		size_t at = (seed >> 8) % b.len;
		uint8_t old = b.p[at];
		b.p[at] ^= (uint8_t)(1u << (seed % 8));
		int rc = heapprof__pprof_check(&d, b.p, b.len);
		CHECK(rc <= 0);
		b.p[at] = old;
	}
	CHECK_EQ(heapprof__pprof_check(&d, b.p, b.len), 0);
	heapprof__pprof_dec_free(&d);
	free(b.p);
}

int
main(void)
{
	RUN(good_profile_decodes);
	RUN(unpacked_equals_packed);
	RUN(sparse_ids_use_hash_table);
	RUN(error_empty);
	RUN(error_trunc);
	RUN(error_varint);
	RUN(error_wiretype);
	RUN(error_length);
	RUN(error_index);
	RUN(error_id);
	RUN(error_values);
	RUN(faults_name_the_record);
	RUN(error_string0);
	RUN(error_concat);
	RUN(gzip_input_and_limits);
	char path[512];
	snprintf(path, sizeof(path), "%s/fastdelta/big-heap.pprof", t_corpus());
	FILE *f = fopen(path, "rb");
	have_corpus = f != NULL;
	if (f)
		fclose(f);
	if (have_corpus) {
		RUN(corpus_parses);
		RUN(corpus_truncation_and_corruption);
		if (t_corpus_generated())
			T_SKIP_CORPUS("corpus_parses.counts",
			              "sample and location counts of its files");
	} else {
		T_SKIP_CORPUS("corpus_parses",
		              "nor build/corpus: sh tests/corpus/gen.sh");
		T_SKIP_CORPUS("corpus_truncation_and_corruption",
		              "nor build/corpus: sh tests/corpus/gen.sh");
	}
	TEST_MAIN_END();
}
