/*
 * push.c: sends the profile of each interval to a Pyroscope-compatible
 * server (HEAPPROF_PUSH=http://host:port[/prefix]), as pyroscope-go does:
 * POST /ingest?name=APP&from=T0&until=T1&format=pprof, multipart/form-data
 * with the profile (field "profile") and a sample_type_config (field
 * "sample_type_config") that marks alloc_* as not cumulative, because each
 * profile holds only its interval's allocations (in-use values are the
 * state at the end, aggregated by average).
 *
 * Its own thread (all signals blocked) takes the snapshots, so nothing
 * here ever runs on a program thread. Unsent profiles wait in a bounded
 * queue and are retried with exponential backoff; when the queue is full
 * the oldest is dropped. Failures are counted and warned about once.
 *
 *   HEAPPROF_PUSH_INTERVAL  seconds between profiles (default 15)
 *   HEAPPROF_APP            application name (default: the program's name)
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "parse.h"
#include "serve.h"

#define QUEUE_MAX 8
#define IO_TIMEOUT_MS 10000

typedef struct item {
	char *body;
	size_t len;
	int64_t from, until; /* unix seconds */
} item;

/* Touched by the push thread only, but for the counters. */
static item queue[QUEUE_MAX];
static int qhead, qlen;
static char host[256], port[16], prefix[256];
static char app[256];
static _Atomic uint64_t pushed, failed, dropped;

typedef struct buf {
	char *p;
	size_t len, cap;
} buf;

static int
buf_add(void *arg, const void *p, size_t n)
{
	buf *b = arg;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap - b->len < n)
			cap *= 2;
		char *nb = realloc(b->p, cap);
		if (!nb)
			return -ENOMEM;
		b->p = nb;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static int
buf_str(buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

/* Parses http://host[:port][/prefix]. */
static int
parse_url(const char *url)
{
	const char *h = url + 7; /* after "http://" (checked by init.c) */
	const char *slash = strchr(h, '/');
	size_t hl = slash ? (size_t)(slash - h) : strlen(h);
	if (hl == 0 || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	strcpy(port, "80");
	char *colon = strrchr(host, ':');
	if (colon && !strchr(colon, ']')) {
		if (strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof(port))
			return -EINVAL;
		strcpy(port, colon + 1);
		*colon = 0;
	}
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	snprintf(prefix, sizeof(prefix), "%s", slash ? slash : "");
	size_t pl = strlen(prefix);
	if (pl && prefix[pl - 1] == '/')
		prefix[pl - 1] = 0;
	return 0;
}

/* URL query escaping of the application name. */
static void
escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *s && o + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_.~{}=,", c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = 0;
}

static int
wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = {fd, ev, 0};
	int r;
	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : -ETIMEDOUT;
}

static int
connect_to(void)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return -EHOSTUNREACH;
	int fd = -1, rc = -ECONNREFUSED;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		            a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 ||
		    (errno == EINPROGRESS && wait_fd(fd, POLLOUT, IO_TIMEOUT_MS) == 0)) {
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err == 0) {
				rc = 0;
				break;
			}
			rc = -err;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return rc == 0 ? fd : rc;
}

static int
send_all(int fd, const char *p, size_t n)
{
	while (n) {
		if (wait_fd(fd, POLLOUT, IO_TIMEOUT_MS) != 0)
			return -ETIMEDOUT;
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const char sample_type_config[] =
	"{\"alloc_objects\":{\"units\":\"objects\",\"cumulative\":false},"
	"\"alloc_space\":{\"units\":\"bytes\",\"cumulative\":false},"
	"\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\","
	"\"cumulative\":false},"
	"\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\","
	"\"cumulative\":false}}";

/* One POST. 0 on a 2xx answer. */
static int
post(const item *it)
{
	static const char boundary[] = "heapprof-7d1f0b9c5e2a4c36";
	buf body = {0};
	char part[512];
	snprintf(part, sizeof(part),
	         "--%s\r\nContent-Disposition: form-data; name=\"profile\"; "
	         "filename=\"profile.pprof\"\r\nContent-Type: "
	         "application/octet-stream\r\n\r\n", boundary);
	int rc = buf_str(&body, part);
	rc = rc ? rc : buf_add(&body, it->body, it->len);
	snprintf(part, sizeof(part),
	         "\r\n--%s\r\nContent-Disposition: form-data; "
	         "name=\"sample_type_config\"; filename=\"sample_type_config.json\""
	         "\r\nContent-Type: application/json\r\n\r\n", boundary);
	rc = rc ? rc : buf_str(&body, part);
	rc = rc ? rc : buf_str(&body, sample_type_config);
	snprintf(part, sizeof(part), "\r\n--%s--\r\n", boundary);
	rc = rc ? rc : buf_str(&body, part);
	if (rc) {
		free(body.p);
		return rc;
	}
	char name[600], head[1400];
	escape(app, name, sizeof(name));
	int hn = snprintf(head, sizeof(head),
	                  "POST %s/ingest?name=%s&from=%lld&until=%lld&format=pprof"
	                  "&spyName=heapprof HTTP/1.1\r\nHost: %s:%s\r\n"
	                  "User-Agent: heapprof/%d.%d\r\n"
	                  "Content-Type: multipart/form-data; boundary=%s\r\n"
	                  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                  prefix, name, (long long)it->from, (long long)it->until,
	                  host, port, HEAPPROF_VERSION_MAJOR, HEAPPROF_VERSION_MINOR,
	                  boundary, body.len);
	int fd = connect_to();
	if (fd < 0) {
		free(body.p);
		return fd;
	}
	rc = send_all(fd, head, (size_t)hn);
	rc = rc ? rc : send_all(fd, body.p, body.len);
	free(body.p);
	char resp[256];
	size_t got = 0;
	while (rc == 0 && got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
		if (wait_fd(fd, POLLIN, IO_TIMEOUT_MS) != 0) {
			rc = -ETIMEDOUT;
			break;
		}
		ssize_t r = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);
		if (r <= 0) {
			rc = r == 0 ? -ECONNRESET : -errno;
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	if (rc)
		return rc;
	resp[got] = 0;
	int status = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -EPROTO;
	return status >= 200 && status < 300 ? 0 : -EPROTO;
}

static void
enqueue(char *body, size_t len, int64_t from, int64_t until)
{
	if (qlen == QUEUE_MAX) {
		free(queue[qhead].body);
		qhead = (qhead + 1) % QUEUE_MAX;
		qlen--;
		atomic_fetch_add(&dropped, 1);
	}
	item *it = &queue[(qhead + qlen) % QUEUE_MAX];
	it->body = body;
	it->len = len;
	it->from = from;
	it->until = until;
	qlen++;
}

static void *
push_main(void *arg)
{
	int64_t period_ms = (int64_t)(intptr_t)arg;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	hp_baseline base;
	memset(&base, 0, sizeof(base));
	base.time_nanos = heapprof__now_nanos();
	int64_t backoff = 0, retry_at = 0, waited = 0;
	int warned = 0;
	for (;;) {
		/* Sleep a second at a time: a period boundary or a retry. */
		struct timespec ts = {1, 0};
		nanosleep(&ts, NULL);
		waited += 1000;
		int64_t now_s = heapprof__now_nanos() / 1000000000;
		if (waited >= period_ms) {
			waited = 0;
			buf b = {0};
			hp_snap_opts o;
			memset(&o, 0, sizeof(o));
			o.kind = HP_SNAP_DELTA_ALLOC;
			o.base = &base;
			o.next_base = &base;
			int64_t from = base.time_nanos / 1000000000;
			if (heapprof__serve_snapshot(buf_add, &b, &o) == 0)
				enqueue(b.p, b.len, from, base.time_nanos / 1000000000);
			else
				free(b.p);
		}
		while (qlen && now_s >= retry_at) {
			int rc = post(&queue[qhead]);
			if (rc != 0) {
				atomic_fetch_add(&failed, 1);
				if (!warned) {
					char msg[600];
					snprintf(msg, sizeof(msg),
					         "cannot push to %s: %s (retrying with "
					         "backoff; further failures are silent)",
					         heapprof__cfg.push, heapprof_strerror(rc));
					heapprof__warn_dup(msg);
					warned = 1;
				}
				backoff = backoff ? (backoff * 2 > 60 ? 60 : backoff * 2) : 1;
				retry_at = now_s + backoff;
				break;
			}
			atomic_fetch_add(&pushed, 1);
			free(queue[qhead].body);
			qhead = (qhead + 1) % QUEUE_MAX;
			qlen--;
			backoff = 0;
		}
	}
	return NULL;
}

int
heapprof__push_start(void)
{
	if (parse_url(heapprof__cfg.push) != 0) {
		heapprof__warn("HEAPPROF_PUSH: cannot parse the URL; push is off");
		return -EINVAL;
	}
	if (heapprof__cfg.app[0]) {
		snprintf(app, sizeof(app), "%s", heapprof__cfg.app);
	} else {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		const char *b = strrchr(exe, '/');
		snprintf(app, sizeof(app), "%.200s", b ? b + 1 : n > 0 ? exe : "heapprof");
	}
	int64_t secs = 15;
	const char *v = getenv("HEAPPROF_PUSH_INTERVAL");
	if (v && *v && (heapprof__parse_size(v, &secs) != 0 || secs < 1 ||
	                secs > 86400)) {
		heapprof__warn("HEAPPROF_PUSH_INTERVAL is not a number of seconds "
		               "in 1..86400; using 15");
		secs = 15;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &a, push_main, (void *)(intptr_t)(secs * 1000));
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		heapprof__warn("cannot start the push thread; push is off");
		return -rc;
	}
	return 0;
}
