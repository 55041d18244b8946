/* test_http_req.c: unit tests of the endpoint's request parser
 * (src/serve/http_req.c). */
#include <stdio.h>

#include "http_req.h"
#include "test.h"

static int
parse(const char *s, http_req *r)
{
	return heapprof__http_parse(s, strlen(s), r);
}

TEST(parses_go_client_request)
{
	http_req r;
	REQUIRE(parse("GET /debug/pprof/allocs?seconds=30&gc=1 HTTP/1.1\r\n"
	              "Host: 127.0.0.1\r\nAccept-Encoding: gzip\r\n\r\n", &r) == HTTP_REQ_OK);
	CHECK_STR(r.method, "GET");
	CHECK_STR(r.path, "/debug/pprof/allocs");
	CHECK_STR(r.seconds, "30");
	CHECK(r.has_seconds);
	CHECK_STR(r.gc, "1");
	CHECK_STR(r.debug, "");
}

TEST(age_param)
{
	http_req r;
	REQUIRE(parse("GET /debug/pprof/heap?age=1 HTTP/1.1\r\n\r\n", &r) == HTTP_REQ_OK);
	CHECK_STR(r.age, "1");
	REQUIRE(parse("GET /debug/pprof/heap?gc=1 HTTP/1.1\r\n\r\n", &r) == HTTP_REQ_OK);
	CHECK_STR(r.age, "");
}

TEST(incomplete_and_bare_lf)
{
	http_req r;
	CHECK_EQ(parse("GET /debug/pprof/heap HTTP/1.1\r\nHost: x\r\n", &r), HTTP_REQ_MORE);
	CHECK_EQ(parse("GET /debug/pprof/heap HTTP/1.0\n\n", &r), HTTP_REQ_OK);
	CHECK_EQ(r.head_len, strlen("GET /debug/pprof/heap HTTP/1.0\n\n"));
}

TEST(percent_decoding_and_first_value_wins)
{
	http_req r;
	REQUIRE(parse("GET /debug/pprof/%68eap?debug=%31&debug=2&seconds=+5 HTTP/1.1\r\n\r\n", &r) == HTTP_REQ_OK);
	CHECK_STR(r.path, "/debug/pprof/heap");
	CHECK_STR(r.debug, "1");
	CHECK_STR(r.seconds, " 5");
	long long v;
	CHECK(heapprof__http_atoi(r.seconds, &v) != 0); /* Go rejects " 5" */
}

TEST(malformed)
{
	http_req r;
	CHECK_EQ(parse("GET\r\n\r\n", &r), HTTP_REQ_BAD);
	CHECK_EQ(parse("get /x HTTP/1.1\r\n\r\n", &r), HTTP_REQ_BAD);
	CHECK_EQ(parse("GET x HTTP/1.1\r\n\r\n", &r), HTTP_REQ_BAD);
	CHECK_EQ(parse("GET /x HTTP/2.0\r\n\r\n", &r), HTTP_REQ_BAD);
	CHECK_EQ(parse("GET /%zz HTTP/1.1\r\n\r\n", &r), HTTP_REQ_BAD);
	CHECK_EQ(parse("GET /%00 HTTP/1.1\r\n\r\n", &r), HTTP_REQ_BAD);
	char longpath[600];
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "GET /", 5);
	strcpy(longpath + 500, " HTTP/1.1\r\n\r\n");
	CHECK_EQ(parse(longpath, &r), HTTP_REQ_TOO_LONG);
	CHECK_EQ(parse("GET /x?seconds=123456789012345678901234567890123 HTTP/1.1\r\n\r\n", &r),
	         HTTP_REQ_TOO_LONG);
}

TEST(atoi_like_go)
{
	long long v;
	CHECK(heapprof__http_atoi("30", &v) == 0 && v == 30);
	CHECK(heapprof__http_atoi("-7", &v) == 0 && v == -7);
	CHECK(heapprof__http_atoi("+7", &v) == 0 && v == 7);
	CHECK(heapprof__http_atoi("9223372036854775807", &v) == 0 && v == INT64_MAX);
	CHECK(heapprof__http_atoi("-9223372036854775808", &v) == 0 && v == INT64_MIN);
	CHECK(heapprof__http_atoi("9223372036854775808", &v) != 0);
	CHECK(heapprof__http_atoi("", &v) != 0);
	CHECK(heapprof__http_atoi("1.5", &v) != 0);
	CHECK(heapprof__http_atoi("-", &v) != 0);
}

/* The Host header (the endpoint's DNS-rebinding check reads it). */
TEST(host_header)
{
	http_req r;
	CHECK_EQ(parse("GET / HTTP/1.1\r\nAccept: */*\r\nhOsT: \t localhost:6060 \r\n\r\n", &r),
	         HTTP_REQ_OK);
	CHECK(r.has_host);
	CHECK_STR(r.host, "localhost:6060");
	CHECK_EQ(parse("GET / HTTP/1.0\r\n\r\n", &r), HTTP_REQ_OK);
	CHECK(!r.has_host);
	CHECK_STR(r.host, "");
	CHECK_EQ(parse("GET / HTTP/1.1\nHost: [::1]:80\n\n", &r), HTTP_REQ_OK);
	CHECK_STR(r.host, "[::1]:80");
	/* Two Host headers, or one too long to hold: a bad request. */
	CHECK_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", &r), HTTP_REQ_BAD);
	char big[600];
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: %0300d\r\n\r\n", 1);
	CHECK_EQ(parse(big, &r), HTTP_REQ_BAD);
	/* A header that merely contains "host:" is not Host. */
	CHECK_EQ(parse("GET / HTTP/1.1\r\nX-Host: evil\r\n\r\n", &r), HTTP_REQ_OK);
	CHECK(!r.has_host);
}

int
main(void)
{
	RUN(parses_go_client_request);
	RUN(age_param);
	RUN(incomplete_and_bare_lf);
	RUN(percent_decoding_and_first_value_wins);
	RUN(malformed);
	RUN(atoi_like_go);
	RUN(host_header);
	TEST_MAIN_END();
}
