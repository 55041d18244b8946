/*
 * push.c: sends the profile of each interval to a Pyroscope-compatible
 * server (HEAPPROF_PUSH=http://host:port[/prefix]), as pyroscope-go does:
 * POST /ingest?name=APP&from=T0&until=T1&format=pprof, multipart/form-data
 * with the profile (field "profile") and a sample_type_config (field
 * "sample_type_config") that marks alloc_* as not cumulative, because each
 * profile holds only its interval's allocations (in-use values are the
 * state at the end, aggregated by average).
 *
 * Its own thread (all signals blocked) takes the snapshots and sends
 * them. Unsent profiles wait in a bounded queue and are retried with
 * exponential backoff; when the queue is full the oldest is dropped.
 * Failures are counted and warned about once. Each request has an overall
 * deadline (POST_DEADLINE_MS), so a server that answers a byte at a time
 * cannot hold the thread. At exit, the exiting thread takes the last
 * interval's profile and sends what is queued within EXIT_PUSH_MS, to the
 * address the thread last reached (or a literal one): no name lookup
 * there. The socket is kept high and checked before use (fdkeep.c). A
 * forked child pushes nothing (the thread does not exist there).
 *
 *   HEAPPROF_PUSH_INTERVAL  seconds between profiles (default 15)
 *   HEAPPROF_APP            application name (default: the program's name)
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
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
#define POST_DEADLINE_MS 10000 /* one request, connect to answer */
#define EXIT_LOCK_MS 3000      /* exit: waiting for the thread's request */
#define EXIT_PUSH_MS 5000      /* exit: sending */

typedef struct item {
	char *body;
	size_t len;
	int64_t from, until; /* unix seconds */
} item;

/* The queue, the interval's baseline and the last address reached:
 * push_lock (the push thread, and the exiting thread at exit). */
static pthread_mutex_t push_lock = PTHREAD_MUTEX_INITIALIZER;
/* The thread's sleep between rounds, cut short by heapprof__push_stop (a
 * seccomp filter going in waits for the thread to end). */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static item queue[QUEUE_MAX] HP_BIG_BSS;
static int qhead, qlen;
static hp_baseline base;
static struct sockaddr_storage last_addr;
static socklen_t last_addrlen;
/* Written once at start. */
static char host[256] HP_BIG_BSS, port[16], prefix[256] HP_BIG_BSS;
static char app[256] HP_BIG_BSS;
static pid_t push_pid; /* the process whose thread pushes; 0: push is off */
static pthread_t push_th; /* that thread: joinable (heapprof__push_stop) */
/* Set by whichever ends its joinability first: the thread leaving on its
 * own after the exit push (it detaches itself) or heapprof__push_stop. */
static _Atomic int push_claimed;
static _Atomic int stopped; /* the exit push ran: the thread sends no more */
static _Atomic uint64_t pushed, failed, dropped;
static int warned; /* push_lock */

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

/* Waits for fd until the request's deadline; the descriptor must still be
 * ours (the program may close it: closefrom). */
static int
wait_fd(const hp_kept_fd *k, short ev, int64_t deadline)
{
	struct pollfd p = {k->fd, ev, 0};
	int r;
	do {
		if (!heapprof__fd_ours(k))
			return -EBADF;
		int64_t left = deadline - heapprof__mono_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, heapprof__poll_timeout(left));
	} while (r < 0 && errno == EINTR);
	if (r > 0 && (p.revents & POLLNVAL))
		return -EBADF;
	return r > 0 ? 0 : -ETIMEDOUT;
}

/* Connects to one address within the deadline: 0 and *k, or -errno. */
static int
connect_addr(const struct sockaddr *a, socklen_t al, hp_kept_fd *k,
             int64_t deadline)
{
	int fd = socket(a->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = heapprof__fd_keep(fd, k);
	if (rc != 0)
		return rc;
	if (connect(k->fd, a, al) != 0) {
		rc = errno == EINPROGRESS ? wait_fd(k, POLLOUT, deadline) : -errno;
		if (rc == 0) {
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &el);
			rc = -err;
		}
	}
	if (rc != 0)
		heapprof__fd_release(k);
	return rc;
}

/* A literal address needs no lookup. */
static int
literal_addr(struct sockaddr_storage *ss, socklen_t *sl)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	long pn = strtol(port, NULL, 10);
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)pn);
		*sl = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)pn);
		*sl = sizeof(*s6);
		return 0;
	}
	return -EHOSTUNREACH;
}

/* Connects to the server (push_lock held). The push thread looks the name
 * up each time; at exit (`lookup` 0) only the last address reached or a
 * literal one is used: a name lookup may lock or load (NSS) and the
 * exiting thread may have interrupted one. */
static int
connect_to(hp_kept_fd *k, int64_t deadline, int lookup)
{
	if (!lookup) {
		struct sockaddr_storage ss;
		socklen_t sl = last_addrlen;
		if (sl)
			memcpy(&ss, &last_addr, sizeof(ss));
		else if (literal_addr(&ss, &sl) != 0)
			return -EHOSTUNREACH;
		return connect_addr((struct sockaddr *)&ss, sl, k, deadline);
	}
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
		return -EHOSTUNREACH;
	int rc = -ECONNREFUSED;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		rc = connect_addr(a->ai_addr, a->ai_addrlen, k, deadline);
		if (rc == 0) {
			if (a->ai_addrlen <= sizeof(last_addr)) {
				memcpy(&last_addr, a->ai_addr, a->ai_addrlen);
				last_addrlen = a->ai_addrlen;
			}
			break;
		}
		if (rc == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return rc;
}

static int
send_all(const hp_kept_fd *k, const char *p, size_t n, int64_t deadline)
{
	while (n) {
		int rc = wait_fd(k, POLLOUT, deadline);
		if (rc != 0)
			return rc;
		ssize_t w = send(k->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
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

/* One POST, done by `deadline` (CLOCK_MONOTONIC ms). 0 on a 2xx answer. */
static int
post(const item *it, int64_t deadline, int lookup)
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
	hp_kept_fd k;
	rc = connect_to(&k, deadline, lookup);
	if (rc != 0) {
		free(body.p);
		return rc;
	}
	rc = send_all(&k, head, (size_t)hn, deadline);
	rc = rc ? rc : send_all(&k, body.p, body.len, deadline);
	free(body.p);
	char resp[256];
	size_t got = 0;
	while (rc == 0 && got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
		rc = wait_fd(&k, POLLIN, deadline);
		if (rc != 0)
			break;
		ssize_t r = recv(k.fd, resp + got, sizeof(resp) - 1 - got, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			rc = r == 0 ? -ECONNRESET : -errno;
			break;
		}
		got += (size_t)r;
	}
	heapprof__fd_release(&k);
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

/* The interval's profile since `base`, queued (push_lock held). */
static void
take_interval(int wait_ms)
{
	buf b = {0};
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.kind = HP_SNAP_DELTA_ALLOC;
	o.base = &base;
	o.next_base = &base;
	o.age = heapprof__cfg.age > 0; /* Go's shape unless HEAPPROF_AGE=1 */
	int64_t from = base.time_nanos / 1000000000;
	if (heapprof__serve_snapshot_wait(buf_add, &b, &o, wait_ms) == 0)
		enqueue(b.p, b.len, from, base.time_nanos / 1000000000);
	else
		free(b.p);
}

static void
warn_failure(int rc)
{
	atomic_fetch_add(&failed, 1);
	if (warned)
		return;
	char msg[600];
	snprintf(msg, sizeof(msg),
	         "cannot push to %s: %s (retrying with backoff; further "
	         "failures are silent)", heapprof__cfg.push, heapprof_strerror(rc));
	heapprof__warn_dup(msg);
	warned = 1;
}

/* Sends the head of the queue: 0, or the error (push_lock held). */
static int
send_head(int64_t deadline, int lookup)
{
	int rc = post(&queue[qhead], deadline, lookup);
	if (rc != 0) {
		warn_failure(rc);
		return rc;
	}
	atomic_fetch_add(&pushed, 1);
	free(queue[qhead].body);
	qhead = (qhead + 1) % QUEUE_MAX;
	qlen--;
	return 0;
}

static void *
push_main(void *arg)
{
	int64_t period_ms = (int64_t)(intptr_t)arg;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	int64_t backoff = 0, retry_at = 0, waited = 0;
	while (!atomic_load(&stopped) && !atomic_load(&heapprof__sandbox)) {
		/* Sleep a second at a time: a period boundary or a retry. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_mutex_lock(&wake_lock);
		if (!atomic_load(&heapprof__sandbox))
			pthread_cond_clockwait(&wake_cond, &wake_lock,
			                       CLOCK_MONOTONIC, &ts);
		pthread_mutex_unlock(&wake_lock);
		waited += 1000;
		int64_t now_s = heapprof__now_nanos() / 1000000000;
		pthread_mutex_lock(&push_lock);
		if (atomic_load(&stopped) || atomic_load(&heapprof__sandbox)) {
			pthread_mutex_unlock(&push_lock);
			break;
		}
		if (waited >= period_ms) {
			waited = 0;
			take_interval(10000);
		}
		while (qlen && now_s >= retry_at && !atomic_load(&stopped)) {
			if (send_head(heapprof__mono_ms() + POST_DEADLINE_MS, 1) != 0) {
				backoff = backoff ? (backoff * 2 > 60 ? 60 : backoff * 2) : 1;
				retry_at = now_s + backoff;
				break;
			}
			backoff = 0;
		}
		pthread_mutex_unlock(&push_lock);
	}
	if (!atomic_load(&heapprof__sandbox) && !atomic_exchange(&push_claimed, 1))
		pthread_detach(pthread_self());
	return NULL;
}

HP_RARE void
heapprof__push_exit(void)
{
	if (!push_pid || push_pid != getpid())
		return;
	int64_t end = heapprof__mono_ms() + EXIT_LOCK_MS;
	int locked;
	while (!(locked = pthread_mutex_trylock(&push_lock) == 0) && heapprof__mono_ms() < end) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (!locked) {
		heapprof__warn("push: a request in progress did not end in time: "
		               "the last interval is not pushed");
		return;
	}
	atomic_store(&stopped, 1);
	take_interval(2000);
	int64_t deadline = heapprof__mono_ms() + EXIT_PUSH_MS;
	while (qlen && send_head(deadline, 0) == 0)
		;
	pthread_mutex_unlock(&push_lock);
}

/* A seccomp filter is going in (sandbox.c): the thread is woken from
 * its sleep, or ends its request in flight (POST_DEADLINE_MS at most), and
 * is waited for; nothing more is pushed, not even at exit. */
HP_RARE void
heapprof__push_stop(void)
{
	if (!push_pid || push_pid != getpid())
		return;
	pthread_mutex_lock(&wake_lock);
	pthread_cond_signal(&wake_cond);
	pthread_mutex_unlock(&wake_lock);
	if (!atomic_exchange(&push_claimed, 1))
		pthread_join(push_th, NULL);
	push_pid = 0;
}

HP_RARE void
heapprof__push_atfork_child(void)
{
	/* The pushing thread is the parent's. Without push, nothing to do
	 * (and no page of it written in every fork child). */
	if (!push_pid)
		return;
	hp_mutex_reset(&push_lock);
	push_pid = 0;
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
	pthread_attr_init(&a); /* joinable: heapprof__push_stop */
	base.time_nanos = heapprof__now_nanos();
	int rc = pthread_create(&th, &a, push_main, (void *)(intptr_t)(secs * 1000));
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		heapprof__warn("cannot start the push thread; push is off");
		return -rc;
	}
	push_th = th;
	push_pid = getpid();
	return 0;
}
