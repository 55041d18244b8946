/*
 * driver_net.c: the network side of the sanitizer build's driver
 * (tests/sanitize/driver.c): a client of the profiler's HTTP endpoint and
 * a server for its pushes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver.h"

/* ------------------------------------------------------------------ http */

/* One GET of the endpoint; the body must follow a 200 status line. */
static void
http_get(int port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct timeval tv = {120, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		failf("http connect: %s", strerror(errno));
		close(fd);
		return;
	}
	char req[300];
	int n = snprintf(req, sizeof(req),
	                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	                 "Connection: close\r\n\r\n", path, port);
	if (write(fd, req, (size_t)n) != n)
		failf("http write: %s", strerror(errno));
	char resp[65536];
	size_t got = 0, total = 0;
	char rest[16384];
	for (;;) {
		/* the head in resp, the rest of the body counted only */
		int full = got == sizeof(resp) - 1;
		ssize_t r = full ? read(fd, rest, sizeof(rest))
		                 : read(fd, resp + got, sizeof(resp) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				failf("http read %s: %s", path, strerror(errno));
			break;
		}
		total += (size_t)r;
		if (!full)
			got += (size_t)r;
	}
	resp[got] = 0;
	if (strncmp(resp, "HTTP/1.1 200", 12) != 0 || !strstr(resp, "\r\n\r\n") ||
	    total <= (size_t)(strstr(resp, "\r\n\r\n") - resp) + 4)
	{
		const char *body = strstr(resp, "\r\n\r\n");
		failf("GET %s: '%.40s' (%zu bytes): %.200s", path, resp, total,
		      body ? body + 4 : "");
	}
	close(fd);
}

void *
http_client(void *arg)
{
	int port = (int)(intptr_t)arg;
	static const char *const paths[] = {
		"/debug/pprof/heap", "/debug/pprof/allocs?debug=1",
		"/debug/pprof/heap?seconds=1", "/debug/pprof/allocs",
	};
	for (unsigned i = 0; !atomic_load(&stop); i++)
		http_get(port, paths[i % 4]);
	return NULL;
}

/* ------------------------------------------------------------------ push */

/* Reads one request (head and Content-Length bytes of body), answers 200. */
static void
push_serve(int c)
{
	struct timeval tv = {60, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	static char req[1 << 25]; /* this thread only; rate-1 pushes pass 4 MiB */
	size_t got = 0, want = SIZE_MAX;
	while (got < want && got < sizeof(req) - 1) {
		ssize_t r = read(c, req + got, sizeof(req) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		req[got] = 0;
		char *end = strstr(req, "\r\n\r\n");
		char *cl = strstr(req, "Content-Length: ");
		if (end && cl && want == SIZE_MAX)
			want = (size_t)(end - req) + 4 + strtoull(cl + 16, NULL, 10);
	}
	if (got == want && !strncmp(req, "POST ", 5)) {
		atomic_fetch_add(&pushes, 1);
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
		                         "Connection: close\r\n\r\n";
		ssize_t w = write(c, ok, sizeof(ok) - 1);
		(void)w;
	} else {
		failf("push: a request of %zu bytes, %zu expected", got, want);
	}
	close(c);
}

void *
push_server(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	while (!atomic_load(&stop_push)) {
		struct pollfd p = {lfd, POLLIN, 0};
		if (poll(&p, 1, 100) == 1) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				push_serve(c);
		}
	}
	/* lfd stays open: a push after this waits in the backlog, not
	 * refused (which would warn). */
	return NULL;
}

/* SAN_PUSH=1: listen on a free port, then run again with HEAPPROF_PUSH
 * pointing there (the profiler reads it in its constructor). */
void
reexec_for_push(char **argv)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(fd, 16) != 0 || getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
		fprintf(stderr, "driver: cannot listen: %s\n", strerror(errno));
		exit(2);
	}
	char v[64];
	snprintf(v, sizeof(v), "http://127.0.0.1:%d", ntohs(a.sin_port));
	setenv("HEAPPROF_PUSH", v, 1);
	setenv("HEAPPROF_PUSH_INTERVAL", "1", 1);
	snprintf(v, sizeof(v), "%d", fd);
	setenv("SAN_PUSH_FD", v, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "driver: cannot re-execute: %s\n", strerror(errno));
	exit(2);
}
