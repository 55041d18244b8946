/*
 * http.c: the /debug/pprof endpoint inside the profiled process, with
 * Go's net/http/pprof paths, parameters, headers and error texts, so that
 * `go tool pprof http://...`, Parca, Grafana Alloy and the OpenTelemetry
 * collector scrape a C program as they scrape a Go one.
 *
 *   /debug/pprof/             an HTML index
 *   /debug/pprof/heap         heap profile (default type inuse_space)
 *   /debug/pprof/allocs       the same data, default type alloc_space
 *   ?debug=N (N != 0)         legacy text instead of pprof
 *   ?seconds=N                a delta over the next N seconds ("heap-delta")
 *   ?gc=N                     accepted and ignored (there is no GC)
 *   ?peak=1                   ours: also peak_objects / peak_space
 *   ?age=1                    in-use values split by allocation age (age_s
 *                             labels); not with seconds=N
 *   /debug/pprof/cmdline      the program's arguments, NUL-separated
 *
 * Everything runs on the endpoint's own thread (started only when the
 * endpoint is on, all signals blocked), non-blocking: a delta request is a
 * baseline taken now and a deadline, not a sleeping thread, so other
 * requests are served while it waits. Bounds: HTTP_MAX_CONN connections
 * (more wait in the kernel's listen backlog), a request head of at most
 * sizeof(conn.req) bytes read within HTTP_READ_MS, a response written
 * within HTTP_WRITE_MS. Profiles are made on request from a snapshot,
 * never cached: never stale, never torn. The program's allocations are
 * never stopped (snapshots read counters). The thread also takes periodic
 * and signal dumps when they are due (dump.c), so an idle program gets
 * them too.
 *
 * The program's descriptors are never touched: ours are kept high and
 * checked before use (fdkeep.c); if the program closed the listening
 * socket (a daemon's closefrom) the endpoint turns off with one warning.
 * A forked child closes its copies (no thread serves them there). Only
 * requests whose Host is a loopback name or address are answered unless
 * remote access is allowed: a web page cannot read the endpoint through
 * DNS rebinding.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "http_req.h"
#include "serve.h"

#define HTTP_MAX_CONN 64
#define HTTP_READ_MS 10000
#define HTTP_WRITE_MS 60000
#define HTTP_MAX_SECONDS 600 /* our "WriteTimeout" for seconds=N */
#define HTTP_CHECK_MS 2000   /* our descriptors are checked this often */

enum conn_state { C_FREE, C_READ, C_WAIT, C_WRITE };

typedef struct conn {
	hp_kept_fd k;
	enum conn_state state;
	int64_t deadline_ms; /* read / write deadline, or the delta's end */
	size_t req_len;
	char req[4096];
	/* delta requests */
	hp_baseline base;
	int allocs;          /* /allocs rather than /heap */
	int peak;            /* ?peak=1: the peak types too */
	int head_only;       /* HEAD: headers without the body */
	/* the response */
	char *out;
	size_t out_len, out_off, out_cap;
} conn;

/* All of this is touched by the endpoint's thread only, but for the set
 * up (before the thread starts) and a forked child's clean up (the thread
 * does not exist there). */
static hp_kept_fd listen_k = {-1, 0, 0};
static int allow_any_host;
static conn conns[HTTP_MAX_CONN] HP_BIG_BSS;
/* The endpoint was set up here or in a process this one forked from:
 * until then conns (270 KB) is never touched, not even by a fork child,
 * where reading each state faulted in 66 zero pages per fork (issue 15). */
static int conns_used;
static int64_t max_seconds = HTTP_MAX_SECONDS;
/* The endpoint's thread, joinable so that a seccomp filter goes in only
 * once it is gone (heapprof__http_stop), and the process it runs in (0:
 * none; a fork child has none). Written before it starts, and by
 * http_stop and the fork child. */
static pthread_t http_th;
static long http_pid;
/* Set by whichever ends the thread's joinability first: the thread
 * leaving on its own (it detaches itself: no thread left unjoined) or
 * heapprof__http_stop (which joins it). */
static _Atomic int http_claimed;
/* Set by heapprof__http_stop (before it wakes the thread): the thread
 * leaves at its next turn and leaves its joining to http_stop. Reset by
 * heapprof__http_start (an attach's endpoint may start again). */
static _Atomic int http_quit;

/* ------------------------------------------------------------ responses */

static int
out_append(void *arg, const void *p, size_t n)
{
	conn *c = arg;
	if (c->out_cap - c->out_len < n) {
		size_t cap = c->out_cap ? c->out_cap : 16384;
		while (cap - c->out_len < n)
			cap *= 2;
		char *nb = realloc(c->out, cap);
		if (!nb)
			return -ENOMEM;
		c->out = nb;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return 0;
}

static const char *
status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 301: return "Moved Permanently";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* Puts the status line and headers in front of the body already in
 * c->out, and arms the write. `extra` holds more header lines. */
static void
respond(conn *c, int status, const char *ctype, const char *extra,
        int64_t now_ms)
{
	char head[1024];
	size_t body = c->out_len;
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %d %s\r\n"
	                 "Content-Type: %s\r\n"
	                 "X-Content-Type-Options: nosniff\r\n"
	                 "%s"
	                 "Content-Length: %zu\r\n"
	                 "Connection: close\r\n\r\n",
	                 status, status_text(status), ctype, extra ? extra : "",
	                 body);
	if (n < 0 || (size_t)n >= sizeof(head) || out_append(c, head, (size_t)n)) {
		c->state = C_FREE; /* no memory: drop the connection */
		return;
	}
	/* Rotate the head in front of the body. */
	memmove(c->out + n, c->out, body);
	memcpy(c->out, head, (size_t)n);
	if (c->head_only)
		c->out_len = (size_t)n;
	c->out_off = 0;
	c->state = C_WRITE;
	c->deadline_ms = now_ms + HTTP_WRITE_MS;
}

/* Go's serveError: text/plain, X-Go-Pprof: 1, the message and a newline. */
static void
respond_error(conn *c, int status, const char *msg, int64_t now_ms)
{
	c->out_len = 0;
	if (out_append(c, msg, strlen(msg)) || out_append(c, "\n", 1)) {
		c->state = C_FREE;
		return;
	}
	respond(c, status, "text/plain; charset=utf-8", "X-Go-Pprof: 1\r\n",
	        now_ms);
}

static void
respond_profile(conn *c, const hp_snap_opts *o, const char *filename,
                int64_t now_ms)
{
	c->out_len = 0;
	int rc = heapprof__serve_snapshot(out_append, c, o);
	if (rc != 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "could not write profile: %s",
		         heapprof_strerror(rc));
		respond_error(c, 500, msg, now_ms);
		return;
	}
	if (o->text) {
		respond(c, 200, "text/plain; charset=utf-8", NULL, now_ms);
		return;
	}
	char disp[128];
	snprintf(disp, sizeof(disp),
	         "Content-Disposition: attachment; filename=\"%s\"\r\n", filename);
	respond(c, 200, "application/octet-stream", disp, now_ms);
}

static void
respond_index(conn *c, int64_t now_ms)
{
	char body[2048];
	unsigned long long nb = (unsigned long long)heapprof__bucket_count();
	int n = snprintf(
		body, sizeof(body),
		"<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n"
		"/debug/pprof/\n<br>\n<p>Set debug=1 as a query parameter to export "
		"in legacy text format</p>\n<br>\nTypes of profiles available:\n"
		"<table>\n<thead><td>Count</td><td>Profile</td></thead>\n"
		"<tr><td>%llu</td><td><a href='allocs?debug=1'>allocs</a></td></tr>\n"
		"<tr><td>%llu</td><td><a href='heap?debug=1'>heap</a></td></tr>\n"
		"<tr><td></td><td><a href='cmdline'>cmdline</a></td></tr>\n"
		"</table>\n<br>\n<p>Profile Descriptions:</p>\n<ul>\n"
		"<li><div class=profile-name>allocs: </div> A sampling of all past "
		"memory allocations (heapprof, mean %lld bytes between samples)</li>\n"
		"<li><div class=profile-name>heap: </div> A sampling of memory "
		"allocations of live objects. The gc GET parameter is accepted and "
		"ignored.</li>\n"
		"<li><div class=profile-name>cmdline: </div> The command line "
		"invocation of the current program</li>\n</ul>\n</body>\n</html>\n",
		nb, nb, (long long)atomic_load(&heapprof__cfg.rate));
	c->out_len = 0;
	if (n < 0 || out_append(c, body, (size_t)n)) {
		c->state = C_FREE;
		return;
	}
	respond(c, 200, "text/html; charset=utf-8", NULL, now_ms);
}

static void
respond_cmdline(conn *c, int64_t now_ms)
{
	c->out_len = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char b[4096];
		ssize_t r;
		while ((r = read(fd, b, sizeof(b))) > 0)
			out_append(c, b, (size_t)r);
		close(fd);
	}
	/* Go writes the arguments joined by NUL bytes, with no NUL at the end. */
	if (c->out_len && c->out[c->out_len - 1] == 0)
		c->out_len--;
	respond(c, 200, "text/plain; charset=utf-8", NULL, now_ms);
}

/* ------------------------------------------------------------- routing */

static void
serve_profile(conn *c, const http_req *r, int allocs, int64_t now_ms)
{
	c->allocs = allocs;
	c->peak = !strcmp(r->peak, "1");
	long long debug = 0;
	if (r->debug[0] && heapprof__http_atoi(r->debug, &debug) != 0)
		debug = 0; /* Go: strconv.Atoi error ignored */
	if (r->has_seconds && r->seconds[0]) {
		long long sec;
		if (heapprof__http_atoi(r->seconds, &sec) != 0 || sec <= 0) {
			respond_error(c, 400, "invalid value for \"seconds\" - must "
			                      "be a positive integer", now_ms);
			return;
		}
		if (sec >= max_seconds) {
			respond_error(c, 400, "profile duration exceeds server's "
			                      "WriteTimeout", now_ms);
			return;
		}
		if (debug != 0) {
			respond_error(c, 400, "seconds and debug params are "
			                      "incompatible", now_ms);
			return;
		}
		if (heapprof__baseline_take(&c->base) != 0) {
			respond_error(c, 500, "out of memory", now_ms);
			return;
		}
		c->state = C_WAIT;
		c->deadline_ms = now_ms + sec * 1000;
		return;
	}
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.text = debug != 0;
	o.kind = HP_SNAP_FULL;
	o.default_type = allocs ? "alloc_space" : NULL;
	o.peak = c->peak;
	/* Go's shape (one sample per stack) unless asked: ?age=1. */
	long long age = 0;
	o.age = r->age[0] && heapprof__http_atoi(r->age, &age) == 0 && age != 0;
	respond_profile(c, &o, allocs ? "allocs" : "heap", now_ms);
}

/* DNS rebinding: a page from attacker.example whose name later resolves
 * to 127.0.0.1 reaches us with "Host: attacker.example". Browsers always
 * send Host; clients without one (HTTP/1.0 tools) are not browsers. */
static int
host_allowed(const http_req *r)
{
	if (allow_any_host || !r->has_host)
		return 1;
	char h[HTTP_MAX_HOST];
	const char *s = r->host;
	size_t n;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb)
			return 0;
		s++;
		n = (size_t)(rb - s);
	} else {
		const char *colon = strchr(s, ':');
		n = colon ? (size_t)(colon - s) : strlen(s);
	}
	memcpy(h, s, n);
	h[n] = 0;
	if (!strcasecmp(h, "localhost") || !strcasecmp(h, "localhost."))
		return 1;
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, h, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) ||
		       (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return 0;
}

static void
dispatch(conn *c, int64_t now_ms)
{
	http_req r;
	int rc = heapprof__http_parse(c->req, c->req_len, &r);
	if (rc == HTTP_REQ_MORE) {
		if (c->req_len == sizeof(c->req))
			respond_error(c, 431, "431 Request Header Fields Too Large",
			              now_ms);
		return;
	}
	if (rc == HTTP_REQ_TOO_LONG) {
		respond_error(c, 414, "414 URI Too Long", now_ms);
		return;
	}
	if (rc != HTTP_REQ_OK) {
		respond_error(c, 400, "400 Bad Request", now_ms);
		return;
	}
	if (!host_allowed(&r)) {
		respond_error(c, 403, "403 Forbidden: the Host header must be a "
		              "loopback name or address", now_ms);
		return;
	}
	c->head_only = !strcmp(r.method, "HEAD");
	if (strcmp(r.method, "GET") && !c->head_only) {
		c->out_len = 0;
		static const char m[] = "Method Not Allowed\n";
		out_append(c, m, sizeof(m) - 1);
		respond(c, 405, "text/plain; charset=utf-8", "Allow: GET, HEAD\r\n",
		        now_ms);
		return;
	}
	const char *pre = "/debug/pprof/";
	size_t pl = strlen(pre);
	if (!strcmp(r.path, "/debug/pprof")) {
		c->out_len = 0;
		respond(c, 301, "text/html; charset=utf-8",
		        "Location: /debug/pprof/\r\n", now_ms);
		return;
	}
	if (strncmp(r.path, pre, pl) != 0) {
		/* Go's http.NotFound: not a pprof error, no X-Go-Pprof. */
		c->out_len = 0;
		static const char nf[] = "404 page not found\n";
		out_append(c, nf, sizeof(nf) - 1);
		respond(c, 404, "text/plain; charset=utf-8", NULL, now_ms);
		return;
	}
	const char *name = r.path + pl;
	if (!*name)
		respond_index(c, now_ms);
	else if (!strcmp(name, "heap"))
		serve_profile(c, &r, 0, now_ms);
	else if (!strcmp(name, "allocs"))
		serve_profile(c, &r, 1, now_ms);
	else if (!strcmp(name, "cmdline"))
		respond_cmdline(c, now_ms);
	else
		respond_error(c, 404, "Unknown profile", now_ms);
}

static void
finish_delta(conn *c, int64_t now_ms)
{
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.kind = HP_SNAP_DELTA;
	o.base = &c->base;
	o.default_type = c->allocs ? "alloc_space" : NULL;
	o.peak = c->peak;
	respond_profile(c, &o, c->allocs ? "allocs-delta" : "heap-delta", now_ms);
	heapprof__baseline_free(&c->base);
}

/* ------------------------------------------------------------ the loop */

static conn *
free_conn(void)
{
	for (int i = 0; i < HTTP_MAX_CONN; i++)
		if (conns[i].state == C_FREE)
			return &conns[i];
	return NULL;
}


static void
conn_close(conn *c)
{
	heapprof__fd_release(&c->k);
	heapprof__baseline_free(&c->base);
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_cap = c->out_off = 0;
	c->req_len = 0;
	c->state = C_FREE;
}

int
heapprof__http_init(const char *spec, int allow_remote)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	long long port;
	if (heapprof__http_atoi(colon + 1, &port) != 0 || port < 0 || port > 65535)
		return -EINVAL;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	socklen_t sl;
	int fam;
	char *h = host;
	if (h[0] == '[' && h[strlen(h) - 1] == ']') {
		h[strlen(h) - 1] = 0;
		h++;
	}
	if (!strcmp(h, "localhost"))
		h = "127.0.0.1";
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, h, &s4->sin_addr) == 1) {
		fam = AF_INET;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		sl = sizeof(*s4);
		if (!allow_remote && (ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return -EPERM;
	} else if (inet_pton(AF_INET6, h, &s6->sin6_addr) == 1) {
		fam = AF_INET6;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		sl = sizeof(*s6);
		if (!allow_remote && !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return -EPERM;
	} else {
		return -EINVAL;
	}
	int fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	hp_kept_fd k;
	int rc = heapprof__fd_keep(fd, &k);
	if (rc != 0)
		return rc;
	int one = 1;
	setsockopt(k.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(k.fd, (struct sockaddr *)&ss, sl) != 0 || listen(k.fd, 512) != 0) {
		int e = -errno;
		close(k.fd);
		return e;
	}
	for (int i = 0; i < HTTP_MAX_CONN; i++)
		conns[i].k.fd = -1;
	conns_used = 1;
	allow_any_host = allow_remote;
	listen_k = k;
	return 0;
}

int
heapprof__http_port(void)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (listen_k.fd < 0 || getsockname(listen_k.fd, (struct sockaddr *)&ss, &sl))
		return -1;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* The descriptors to poll: the listening socket (while a slot is free)
 * and every connection; lowers *timeout_ms to the nearest deadline. */
static int
http_fds(struct pollfd *p, int64_t now_ms, int *timeout_ms)
{
	int n = 0;
	if (free_conn())
		p[n++] = (struct pollfd){listen_k.fd, POLLIN, 0};
	for (int i = 0; i < HTTP_MAX_CONN; i++) {
		conn *c = &conns[i];
		if (c->state == C_FREE)
			continue;
		short ev = c->state == C_WRITE ? POLLOUT : POLLIN;
		p[n++] = (struct pollfd){c->k.fd, ev, 0};
		int left = heapprof__poll_timeout(c->deadline_ms - now_ms);
		if (*timeout_ms < 0 || left < *timeout_ms)
			*timeout_ms = left;
	}
	return n;
}

/* Accepts while there is a free slot. When all are busy the listening
 * socket is not polled: further clients wait in the kernel's backlog
 * until a slot frees, bounded and without being refused. */
static void
accept_all(int64_t now_ms)
{
	while (free_conn()) {
		int fd = accept4(listen_k.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		hp_kept_fd k;
		if (heapprof__fd_keep(fd, &k) != 0)
			continue;
		conn *c = free_conn();
		memset(c, 0, sizeof(*c));
		c->k = k;
		c->state = C_READ;
		c->deadline_ms = now_ms + HTTP_READ_MS;
	}
}

static void
step(conn *c, short revents, int64_t now_ms)
{
	if ((revents & POLLNVAL) || !heapprof__fd_ours(&c->k)) {
		/* The program closed it (and may have reused the number):
		 * forget it, never close it. */
		c->k.fd = -1;
		conn_close(c);
		return;
	}
	if (c->state == C_READ && (revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t r = recv(c->k.fd, c->req + c->req_len,
		                 sizeof(c->req) - c->req_len, 0);
		if (r <= 0) {
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			conn_close(c);
			return;
		}
		c->req_len += (size_t)r;
		dispatch(c, now_ms);
		if (c->state == C_FREE)
			conn_close(c);
	} else if (c->state == C_WAIT && (revents & (POLLIN | POLLHUP | POLLERR))) {
		/* The client may only close while it waits for a delta. */
		char b[256];
		ssize_t r = recv(c->k.fd, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(c);
	} else if (c->state == C_WRITE && (revents & (POLLOUT | POLLHUP | POLLERR))) {
		ssize_t w = send(c->k.fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += (size_t)w;
		if (c->out_off == c->out_len) {
			shutdown(c->k.fd, SHUT_WR);
			conn_close(c);
		}
	}
}

static void
http_process(const struct pollfd *p, int n, int64_t now_ms)
{
	for (int k = 0; k < n; k++) {
		if (!p[k].revents)
			continue;
		if (p[k].fd == listen_k.fd) {
			accept_all(now_ms);
			continue;
		}
		for (int i = 0; i < HTTP_MAX_CONN; i++)
			if (conns[i].state != C_FREE && conns[i].k.fd == p[k].fd) {
				step(&conns[i], p[k].revents, now_ms);
				break;
			}
	}
	for (int i = 0; i < HTTP_MAX_CONN; i++) {
		conn *c = &conns[i];
		if (c->state == C_FREE || now_ms < c->deadline_ms)
			continue;
		if (c->state == C_WAIT) {
			finish_delta(c, now_ms);
			if (c->state == C_FREE)
				conn_close(c);
		} else {
			conn_close(c); /* a slow client: read or write timed out */
		}
	}
}

/* The endpoint is off for good: the program closed our listening socket. */
static void
http_off(void)
{
	heapprof__warn("the program closed the endpoint's listening socket "
	               "(closefrom?): the endpoint is off");
	listen_k.fd = -1; /* not ours any more: never closed */
	for (int i = 0; i < HTTP_MAX_CONN; i++)
		if (conns[i].state != C_FREE)
			conn_close(&conns[i]);
}

static void *
http_main(void *arg)
{
	(void)arg;
	hp_tls *t = &heapprof__tls;
	hp_enter(t); /* nothing this thread allocates is the program's */
	struct pollfd pfd[1 + HTTP_MAX_CONN];
	for (;;) {
		/* A seccomp filter is going in (sandbox.c): gone at once;
		 * heapprof__http_stop closes the descriptors once it is. */
		if (atomic_load(&heapprof__sandbox) || atomic_load(&http_quit))
			break;
		int timeout = heapprof__serve_thread_due();
		if (!heapprof__fd_ours(&listen_k)) {
			http_off();
			break;
		}
		int64_t now = heapprof__mono_ms();
		/* Wake at least every HTTP_CHECK_MS: a listening socket the
		 * program closed under our poll() stays bound (and takes
		 * connections nobody accepts) until poll() lets it go. */
		if (timeout < 0 || timeout > HTTP_CHECK_MS)
			timeout = HTTP_CHECK_MS;
		int n = http_fds(pfd, now, &timeout);
		int r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR && errno != ENOMEM)
			break;
		if (r > 0 && pfd[0].fd == listen_k.fd && (pfd[0].revents & POLLNVAL)) {
			http_off();
			break;
		}
		http_process(pfd, r > 0 ? n : 0, heapprof__mono_ms());
	}
	if (!atomic_load(&heapprof__sandbox) && !atomic_load(&http_quit) &&
	    !atomic_exchange(&http_claimed, 1))
		pthread_detach(pthread_self());
	return NULL;
}

int
heapprof__http_start(void)
{
	/* The thread starts with every signal blocked, so the program's
	 * signals are never delivered to it. */
	sigset_t all, old;
	sigfillset(&all);
	atomic_store(&http_quit, 0);
	atomic_store(&http_claimed, 0);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	int rc = pthread_create(&th, &a, http_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		http_th = th;
		http_pid = (long)getpid();
	}
	if (rc != 0) {
		heapprof__warn("cannot start the endpoint's thread: the endpoint "
		               "is off");
		heapprof__fd_release(&listen_k);
		return -rc;
	}
	return 0;
}

HP_RARE void
heapprof__http_stop(void)
{
	if (!http_pid || http_pid != (long)getpid())
		return;
	/* Wakes its poll() at once rather than within HTTP_CHECK_MS: the
	 * listening socket is shut down (if it is still ours; the thread
	 * closes nothing on its way out, so the number cannot have been
	 * given to the program meanwhile). */
	atomic_store(&http_quit, 1);
	if (heapprof__fd_ours(&listen_k))
		shutdown(listen_k.fd, SHUT_RDWR);
	if (!atomic_exchange(&http_claimed, 1))
		pthread_join(http_th, NULL);
	http_pid = 0;
	/* Ours alone now: no thread uses them any more. Freed as the
	 * thread would have (inside the profiler: its private memory). */
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	heapprof__fd_release(&listen_k);
	for (int i = 0; i < HTTP_MAX_CONN; i++)
		if (conns[i].state != C_FREE)
			conn_close(&conns[i]);
	hp_leave(t);
}

int
heapprof__http_running(void)
{
	return http_pid && http_pid == (long)getpid();
}

HP_RARE void
heapprof__http_atfork_child(void)
{
	http_pid = 0; /* its thread is the parent's */
	/* No thread serves these here: a daemon (fork, the parent exits)
	 * must not keep a port nobody answers, nor the parent's clients'
	 * connections open. The buffers are left allocated (the thread may
	 * have been using them). */
	heapprof__fd_release(&listen_k);
	for (int i = 0; conns_used && i < HTTP_MAX_CONN; i++) {
		conn *c = &conns[i];
		if (c->state == C_FREE)
			continue;
		heapprof__fd_release(&c->k);
		c->out = NULL;
		c->out_len = c->out_cap = c->out_off = 0;
		memset(&c->base, 0, sizeof(c->base));
		c->state = C_FREE;
	}
}
