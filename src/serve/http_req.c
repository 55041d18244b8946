/*
 * http_req.c: the request parser of the profile endpoint (see http_req.h).
 * Accepts "METHOD SP target SP HTTP/1.x CRLF headers CRLF CRLF" (bare LF
 * line ends too); headers but Host are skipped (a second Host, or one
 * longer than HTTP_MAX_HOST, is a bad request), the body is never read (the
 * endpoint only serves GET and HEAD). The target's query is split on '&',
 * each key and value percent-decoded; unknown keys are ignored, as
 * net/http/pprof ignores them. Repeated keys: the first wins, as Go's
 * FormValue does.
 */
#include <string.h>
#include <strings.h>

#include "http_req.h"

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..n) into out (cap bytes, NUL-terminated). '+' is a
 * space in a query, not in a path. Returns the length, or -1 if the input
 * is malformed or does not fit. */
static int
decode(const char *s, size_t n, char *out, size_t cap, int plus_space)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -1;
			int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			c = (char)(h * 16 + l);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return -1;
		out[o++] = c;
	}
	out[o] = 0;
	return (int)o;
}

static int
query_param(http_req *r, const char *k, size_t kn, const char *v, size_t vn)
{
	char key[16];
	if (decode(k, kn, key, sizeof(key), 1) < 0)
		return 0; /* a key we could not hold is not one of ours */
	char *dst = NULL;
	if (!strcmp(key, "debug"))
		dst = r->debug;
	else if (!strcmp(key, "gc"))
		dst = r->gc;
	else if (!strcmp(key, "peak"))
		dst = r->peak;
	else if (!strcmp(key, "age"))
		dst = r->age;
	else if (!strcmp(key, "seconds")) {
		if (r->has_seconds)
			return 0;
		r->has_seconds = 1;
		dst = r->seconds;
	}
	if (!dst || (dst[0] && dst != r->seconds))
		return 0;
	if (decode(v, vn, dst, HTTP_MAX_VALUE, 1) < 0)
		return HTTP_REQ_TOO_LONG;
	return 0;
}

/* The Host header among the header lines in [p, end). */
static int
find_host(http_req *r, const char *p, const char *end)
{
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		const char *le = e > p && e[-1] == '\r' ? e - 1 : e;
		if (le - p >= 5 && !strncasecmp(p, "host:", 5)) {
			if (r->has_host)
				return HTTP_REQ_BAD;
			const char *v = p + 5;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = le;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if ((size_t)(ve - v) >= sizeof(r->host))
				return HTTP_REQ_BAD;
			memcpy(r->host, v, (size_t)(ve - v));
			r->host[ve - v] = 0;
			r->has_host = 1;
		}
		p = e + 1;
	}
	return 0;
}

int
heapprof__http_parse(const char *buf, size_t len, http_req *r)
{
	memset(r, 0, sizeof(*r));
	/* The head ends at the first empty line. */
	size_t end = 0;
	int found = 0;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (i + 1 < len && buf[i + 1] == '\n') {
			end = i + 2, found = 1;
			break;
		}
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
			end = i + 3, found = 1;
			break;
		}
	}
	if (!found)
		return HTTP_REQ_MORE;
	r->head_len = end;
	/* Request line. */
	const char *p = buf, *e = memchr(buf, '\n', len);
	if (!e)
		return HTTP_REQ_BAD;
	if (e > p && e[-1] == '\r')
		e--;
	const char *sp1 = memchr(p, ' ', (size_t)(e - p));
	if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(r->method))
		return HTTP_REQ_BAD;
	memcpy(r->method, p, (size_t)(sp1 - p));
	for (const char *c = p; c < sp1; c++)
		if (*c < 'A' || *c > 'Z')
			return HTTP_REQ_BAD;
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', (size_t)(e - t));
	if (!sp2 || sp2 == t)
		return HTTP_REQ_BAD;
	size_t vlen = (size_t)(e - sp2 - 1);
	if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return HTTP_REQ_BAD;
	if (*t != '/')
		return HTTP_REQ_BAD;
	const char *q = memchr(t, '?', (size_t)(sp2 - t));
	const char *path_end = q ? q : sp2;
	if ((size_t)(path_end - t) >= HTTP_MAX_PATH)
		return HTTP_REQ_TOO_LONG;
	if (decode(t, (size_t)(path_end - t), r->path, sizeof(r->path), 0) < 0)
		return HTTP_REQ_BAD;
	const char *line1 = memchr(buf, '\n', len);
	int hrc = find_host(r, line1 + 1, buf + end);
	if (hrc < 0)
		return hrc;
	if (q) {
		const char *s = q + 1;
		while (s < sp2) {
			const char *amp = memchr(s, '&', (size_t)(sp2 - s));
			const char *pe = amp ? amp : sp2;
			const char *eq = memchr(s, '=', (size_t)(pe - s));
			const char *ke = eq ? eq : pe;
			const char *vs = eq ? eq + 1 : pe;
			int rc = query_param(r, s, (size_t)(ke - s), vs,
			                     (size_t)(pe - vs));
			if (rc < 0)
				return rc;
			s = pe + 1;
		}
	}
	return HTTP_REQ_OK;
}

int
heapprof__http_atoi(const char *s, long long *out)
{
	const char *p = s;
	int neg = 0;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!*p)
		return -1;
	/* The magnitude may reach 2^63 only when negative. */
	unsigned long long limit = neg ? 9223372036854775808ULL
	                               : 9223372036854775807ULL;
	unsigned long long v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned d = (unsigned)(*p - '0');
		if (v > (limit - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}
