/*
 * maps.c: parses /proc/PID/maps text into a sorted mapping list, and reads
 * /proc/self/maps with plain read(2). No stdio, no globals, no locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapprof.h"
#include "maps.h"

static const char deleted_suffix[] = " (deleted)";

static int
is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int
hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads at least one hex digit at *pp (before end); no overflow allowed. */
static int
parse_hex(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int nd = 0, d;
	while (p < end && (d = hex_val(*p)) >= 0) {
		if (v >> 60)
			return -1;
		v = v << 4 | (uint64_t)d;
		p++;
		nd++;
	}
	if (!nd)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

static int
parse_dec(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int nd = 0;
	while (p < end && *p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		p++;
		nd++;
	}
	if (!nd)
		return -1;
	*pp = p;
	*out = v;
	return 0;
}

/* Needs at least one blank, then skips every blank. */
static int
skip_blanks(const char **pp, const char *end)
{
	const char *p = *pp;
	if (p >= end || !is_space(*p))
		return -1;
	while (p < end && is_space(*p))
		p++;
	*pp = p;
	return 0;
}

/* One line [p, end) without its newline. The path is copied to *pool. */
static int
parse_line(const char *p, const char *end, heapprof_maps_entry *e,
           char **pool)
{
	uint64_t maj, min;
	memset(e, 0, sizeof(*e));
	if (parse_hex(&p, end, &e->start) || p >= end || *p++ != '-' ||
	    parse_hex(&p, end, &e->limit) || e->limit < e->start ||
	    skip_blanks(&p, end))
		return -1;
	if (end - p < 4)
		return -1;
	static const char want[4] = {'r', 'w', 'x', 'p'};
	for (int i = 0; i < 4; i++, p++) {
		if (*p == want[i])
			e->perms |= 1u << i;
		else if (!(*p == '-' || (i == 3 && *p == 's')))
			return -1;
	}
	if (skip_blanks(&p, end) || parse_hex(&p, end, &e->offset) ||
	    skip_blanks(&p, end) || parse_hex(&p, end, &maj) || p >= end ||
	    *p++ != ':' || parse_hex(&p, end, &min) || skip_blanks(&p, end) ||
	    parse_dec(&p, end, &e->inode))
		return -1;
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -1;
	e->dev_major = (uint32_t)maj;
	e->dev_minor = (uint32_t)min;
	if (p < end && !is_space(*p))
		return -1;
	while (p < end && is_space(*p))
		p++;
	size_t n = (size_t)(end - p);
	size_t sl = sizeof(deleted_suffix) - 1;
	if (n >= sl && memcmp(end - sl, deleted_suffix, sl) == 0) {
		n -= sl;
		e->deleted = 1;
	}
	char *dst = *pool;
	memcpy(dst, p, n);
	dst[n] = '\0';
	e->path = dst;
	*pool = dst + n + 1;
	return 0;
}

void
heapprof__maps_free(heapprof_maps *m)
{
	free(m->v);
	free(m->strs);
	m->v = NULL;
	m->strs = NULL;
	m->n = 0;
}

int
heapprof__maps_parse(const char *buf, size_t len, heapprof_maps *out)
{
	size_t lines = 1;
	out->v = NULL;
	out->strs = NULL;
	out->n = 0;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	/* Every path fits in its line, plus one NUL each. */
	if (len > SIZE_MAX - lines - 1 ||
	    lines > SIZE_MAX / sizeof(heapprof_maps_entry))
		return -ENOMEM;
	out->v = malloc(lines * sizeof(heapprof_maps_entry));
	out->strs = malloc(len + lines + 1);
	if (!out->v || !out->strs) {
		heapprof__maps_free(out);
		return -ENOMEM;
	}
	char *pool = out->strs;
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *q = p;
		while (q < le && (is_space(*q) || *q == '\r'))
			q++;
		if (q < le) {
			const char *lend = le;
			if (lend > q && lend[-1] == '\r')
				lend--;
			if (parse_line(q, lend, &out->v[out->n], &pool)) {
				heapprof__maps_free(out);
				return HEAPPROF_EFORMAT;
			}
			out->n++;
		}
		p = nl ? nl + 1 : end;
	}
	/* The kernel's output is sorted: insertion sort is linear then, and
	 * unlike qsort it never allocates. */
	for (size_t i = 1; i < out->n; i++) {
		heapprof_maps_entry e = out->v[i];
		size_t j = i;
		while (j > 0 && out->v[j - 1].start > e.start) {
			out->v[j] = out->v[j - 1];
			j--;
		}
		out->v[j] = e;
	}
	return 0;
}

int
heapprof__maps_read_fd(int fd, heapprof_maps *out)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	out->v = NULL;
	out->strs = NULL;
	out->n = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(buf);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	int rc = heapprof__maps_parse(buf, n, out);
	free(buf);
	return rc;
}

int
heapprof__maps_read_self(heapprof_maps *out)
{
	int fd;
	do
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		out->v = NULL;
		out->strs = NULL;
		out->n = 0;
		return -errno;
	}
	int rc = heapprof__maps_read_fd(fd, out);
	close(fd);
	return rc;
}

size_t
heapprof__maps_keep_exec(heapprof_maps *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].perms & HEAPPROF_MAP_X)
			m->v[k++] = m->v[i];
	m->n = k;
	return k;
}

const heapprof_maps_entry *
heapprof__maps_find(const heapprof_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n; /* first entry with start > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const heapprof_maps_entry *e = &m->v[lo - 1];
	return addr < e->limit ? e : NULL;
}
