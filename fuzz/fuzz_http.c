/*
 * fuzz_http.c: libFuzzer target for the profile endpoint's request parser
 * (src/serve/http_req.c), which reads bytes from any local client. Every
 * input must parse or be refused without reading out of bounds, and a
 * parsed request must be self-consistent.
 */
#include <string.h>

#include "fuzz_util.h"
#include "../src/serve/http_req.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The server parses its whole buffer each time more bytes arrive:
	 * parse every prefix of a short input, and the whole of a long one. */
	size_t step = size > 512 ? size : 1;
	for (size_t n = size > 512 ? size : 0; n <= size; n += step) {
		http_req r;
		int rc = heapprof__http_parse((const char *)data, n, &r);
		FUZZ_ASSERT(rc >= -2 && rc <= 1, "rc %d", rc);
		if (rc != HTTP_REQ_OK)
			continue;
		FUZZ_ASSERT(r.head_len <= n, "head_len %zu > %zu", r.head_len, n);
		FUZZ_ASSERT(r.path[0] == '/', "path '%s'", r.path);
		FUZZ_ASSERT(memchr(r.path, 0, sizeof(r.path)), "path unterminated");
		FUZZ_ASSERT(memchr(r.seconds, 0, sizeof(r.seconds)), "seconds");
		FUZZ_ASSERT(memchr(r.debug, 0, sizeof(r.debug)), "debug");
		FUZZ_ASSERT(memchr(r.method, 0, sizeof(r.method)), "method");
		long long v;
		(void)heapprof__http_atoi(r.seconds, &v);
		(void)heapprof__http_atoi(r.debug, &v);
	}
	return 0;
}
