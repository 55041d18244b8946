/*
 * http_req.h: the HTTP/1.x request parser of the profile endpoint: pure
 * (bytes in, a parsed request out), bounded, allocation-free, fuzzable.
 * Only what the endpoint needs: method, path, and the query parameters
 * net/http/pprof reads (debug, gc, seconds), heapprof's peak and age, and the Host header (the
 * endpoint answers only requests addressed to a loopback name).
 */
#ifndef HEAPPROF_HTTP_REQ_H
#define HEAPPROF_HTTP_REQ_H

#include <stddef.h>

#define HTTP_MAX_PATH 256
#define HTTP_MAX_VALUE 32
#define HTTP_MAX_HOST 256

typedef struct http_req {
	char method[16];
	char path[HTTP_MAX_PATH];      /* percent-decoded, without the query */
	char debug[HTTP_MAX_VALUE];    /* raw parameter values ("" if absent) */
	char gc[HTTP_MAX_VALUE];
	char peak[HTTP_MAX_VALUE];     /* ours: "1" adds the peak types */
	char seconds[HTTP_MAX_VALUE];
	int has_seconds;
	char age[HTTP_MAX_VALUE];      /* heapprof's own: age=1, age_s labels */
	char host[HTTP_MAX_HOST];      /* the Host header, trimmed ("" if absent) */
	int has_host;
	size_t head_len;               /* bytes up to and including the blank line */
} http_req;

enum {
	HTTP_REQ_OK = 0,
	HTTP_REQ_MORE = 1,     /* the head is not complete yet */
	HTTP_REQ_BAD = -1,     /* malformed: answer 400 */
	HTTP_REQ_TOO_LONG = -2 /* a field is longer than we accept: answer 414 */
};

/* Parses the request head in buf[0..len). */
int heapprof__http_parse(const char *buf, size_t len, http_req *r);

/* strconv.Atoi as Go's handlers use it: an optional sign and decimal
 * digits, fitting in 64 bits. Returns 0 and *out, or -1. */
int heapprof__http_atoi(const char *s, long long *out);

#endif
