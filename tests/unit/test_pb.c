/* test_pb.c: unit tests of the protobuf wire writer and reader (pb_*.c). */
#include "heapprof.h"
#include "pb.h"
#include "test.h"

struct sinkbuf {
	uint8_t data[1 << 16];
	size_t len;
	int calls;
};

static int
sink(void *ctx, const uint8_t *p, size_t n)
{
	struct sinkbuf *s = ctx;
	if (s->len + n > sizeof(s->data))
		return -28;
	memcpy(s->data + s->len, p, n);
	s->len += n;
	s->calls++;
	return 0;
}

TEST(varint_sizes)
{
	uint8_t b[10];
	CHECK_EQ(heapprof__pb_put_varint(b, 0), 1);
	CHECK_EQ(heapprof__pb_put_varint(b, 127), 1);
	CHECK_EQ(heapprof__pb_put_varint(b, 128), 2);
	CHECK_EQ(b[0], 0x80);
	CHECK_EQ(b[1], 0x01);
	CHECK_EQ(heapprof__pb_put_varint(b, UINT64_MAX), 10);
	CHECK_EQ(heapprof__pb_varint_size(UINT64_MAX), 10);
	CHECK_EQ(heapprof__pb_varint_size(300), 2);
}

TEST(nested_roundtrip)
{
	/* A message whose body needs a 2-byte length exercises the move. */
	struct sinkbuf s = {0};
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, sink, &s);
	w.flush_at = 1; /* flush after every top-level field */
	heapprof__pb_varint_field(&w, 12, 524288);
	heapprof__pb_begin(&w, 2);
	uint64_t ids[200];
	for (int i = 0; i < 200; i++)
		ids[i] = (uint64_t)i * 1000;
	heapprof__pb_packed_u64(&w, 1, ids, 200);
	int64_t vals[2] = {-1, 5};
	heapprof__pb_packed_i64(&w, 2, vals, 2);
	heapprof__pb_begin(&w, 3);
	heapprof__pb_varint_field(&w, 1, 7);
	heapprof__pb_end(&w);
	heapprof__pb_end(&w);
	heapprof__pb_bytes_field(&w, 6, "", 0);
	REQUIRE_OK(heapprof__pb_finish(&w));
	heapprof__pb_free(&w);
	CHECK(s.calls >= 3);

	pb_reader r;
	pb_field f;
	heapprof__pb_reader_init(&r, s.data, s.len);
	REQUIRE_OK(heapprof__pb_next(&r, &f));
	CHECK_EQ(f.num, 12);
	CHECK_EQ(f.v, 524288);
	REQUIRE_OK(heapprof__pb_next(&r, &f));
	CHECK_EQ(f.num, 2);
	CHECK_EQ(f.wire, PB_LEN);
	pb_reader sr;
	heapprof__pb_reader_init(&sr, f.data, f.len);
	pb_field sf;
	REQUIRE_OK(heapprof__pb_next(&sr, &sf));
	pb_packed it;
	REQUIRE_OK(heapprof__pb_packed_start(&it, &sf));
	uint64_t v;
	int n = 0;
	while (heapprof__pb_packed_next(&it, &v) == 0) {
		CHECK_EQ(v, (uint64_t)n * 1000);
		n++;
	}
	CHECK_EQ(n, 200);
	REQUIRE_OK(heapprof__pb_next(&sr, &sf));
	REQUIRE_OK(heapprof__pb_packed_start(&it, &sf));
	REQUIRE(heapprof__pb_packed_next(&it, &v) == 0);
	CHECK_EQ((int64_t)v, -1);
	REQUIRE_OK(heapprof__pb_next(&sr, &sf));
	CHECK_EQ(sf.num, 3);
	CHECK_EQ(sf.len, 2);
	CHECK(!heapprof__pb_more(&sr));
	REQUIRE_OK(heapprof__pb_next(&r, &f));
	CHECK_EQ(f.num, 6);
	CHECK_EQ(f.len, 0);
	CHECK(!heapprof__pb_more(&r));
}

TEST(reader_errors)
{
	pb_reader r;
	pb_field f;
	uint8_t trunc[] = {0x08, 0x80};
	heapprof__pb_reader_init(&r, trunc, sizeof(trunc));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_ETRUNC);
	uint8_t longv[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
	                   0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	heapprof__pb_reader_init(&r, longv, sizeof(longv));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_EVARINT);
	uint8_t group[] = {0x0b};
	heapprof__pb_reader_init(&r, group, sizeof(group));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_EWIRETYPE);
	uint8_t past[] = {0x12, 0x05, 0x01};
	heapprof__pb_reader_init(&r, past, sizeof(past));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_ELENGTH);
	uint8_t zero[] = {0x00, 0x01};
	heapprof__pb_reader_init(&r, zero, sizeof(zero));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_EWIRETYPE);
	uint8_t fixed[] = {0x09, 1, 2, 3};
	heapprof__pb_reader_init(&r, fixed, sizeof(fixed));
	CHECK_EQ(heapprof__pb_next(&r, &f), HEAPPROF_ETRUNC);
}

int
main(void)
{
	RUN(varint_sizes);
	RUN(nested_roundtrip);
	RUN(reader_errors);
	TEST_MAIN_END();
}
