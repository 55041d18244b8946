/*
 * otel_procctx.c: the key names of the OpenTelemetry thread context's
 * attributes, read from the process context (OTEP 4719, as merged in
 * opentelemetry-specification 34f27fd; the threadlocal.* keys of OTEP 4947,
 * 631bbb4), so that otel.c names a label http_route rather than otel.attr.0.
 *
 * The context: a mapping (memfd_create("OTEL_CTX"), or anonymous) whose
 * first 32 bytes are the header: signature "OTEL_CTX" (8 bytes, no NUL),
 * version (u32, 2), payload_size (u32), monotonic_published_at_ns (u64,
 * CLOCK_BOOTTIME; 0 while the publisher updates it), payload (u64, a
 * pointer in this process). The payload is a protobuf
 * opentelemetry.proto.processcontext.v1development.ProcessContext: field 1
 * the Resource, field 2 repeated KeyValue (key 1, AnyValue value 2). Among
 * those, threadlocal.schema_version (a string: tls_v1, or tlsdesc_v1_dev
 * before the OTEP was merged) and threadlocal.attribute_key_map (AnyValue
 * array_value 5 -> ArrayValue values 1 -> AnyValue string_value 1): entry i
 * names key index i.
 *
 * Read as the OTEP's reading protocol says: signature and version 2, a
 * non-zero timestamp, a fence, the payload copied, a fence, the timestamp
 * again: changed (or 0) means the publisher was updating it, and the read
 * is tried again (4 times, then left to the next occasion, the table
 * already made staying). Every byte is read with process_vm_readv on this
 * process, so a header or payload pointer to unmapped memory is an error
 * (EFAULT), never a fault. A header without the signature or version 2
 * is not a context (the names made so far stay: the key map is
 * append-only); a consistent one whose payload does not parse (its size,
 * its protobuf, another schema, no key map) drops the table: labels are
 * numeric (otel.attr.K) again, as with no context. A key index past the
 * map, or whose entry is not a usable string (empty, a NUL, 128 bytes or
 * more), keeps its numeric name too (the OTEP says to ignore it; a label
 * that is there is more use than one that is not).
 *
 * When (never on the malloc path, never under a seccomp filter):
 *   - the constructor or heapprof_attach_start, once otel.c found
 *     otel_thread_ctx_v1 (a process without it pays nothing): the context
 *     is looked for in /proc/self/maps (names starting with
 *     "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX");
 *   - the publisher's prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, addr, len,
 *     "OTEL_CTX"), which the OTEP makes the last step of a publication
 *     and of every update, whether or not the kernel can name mappings:
 *     sandbox.c's interposer calls here after the call (x86_64);
 *   - each dump: the known header's timestamp is read again (32 bytes);
 *     if none is known yet, /proc/self/maps is read (a publisher that
 *     named its mapping by a raw system call, or the aarch64 build).
 * So names apply to samples taken after the publisher's prctl, or after
 * the next dump; earlier samples keep their numeric names.
 *
 * The sampled path reads one pointer (heapprof__otel_keymap, acquire) and
 * indexes it. A table is made in the arena, never freed nor changed, and
 * replaced by a release store; a new one only when the names differ from
 * every table made so far (one made before is used again), at most
 * TABLES_MAX of them (~0.6 MiB); past that, a map never seen gets numeric
 * names, not those of another map.
 *
 * Shared state: `hdr` (the header's address; written by prctl, the maps
 * scan and a failed read, atomically), `req`/`busy` (one reader at a time:
 * a caller that finds another reading asks it to read again; `busy` holds
 * the reader's pid, so a fork child is not locked out by a parent's
 * reader), `last_ts`, `tables` and `made` (the reader's own, under `busy`).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collect.h"
#include "otel_procctx.h"

#define HDR_SIZE 32
#define PAYLOAD_MAX (1u << 20)
#define NAME_MAX_LEN 128
#define TABLES_MAX 256
#define TRIES 4

HP_HIDDEN _Atomic(const hp_keymap *) heapprof__otel_keymap;

static _Atomic uintptr_t hdr;
static _Atomic int enabled;
static _Atomic unsigned req;
static _Atomic int busy;
static uint64_t last_ts; /* the timestamp of the payload last parsed */
static unsigned tables;
/* the tables made, tables of them (HP_BIG_BSS: 2 KiB kept off the pages
 * of the small state every process touches) */
HP_BIG_BSS static const hp_keymap *made[TABLES_MAX];

/* n bytes at addr in this process, or -1 (unmapped, unreadable). */
static int
safe_read(void *dst, uintptr_t addr, size_t n)
{
	struct iovec l = {dst, n}, r = {(void *)addr, n};
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* ---------------------------------------------------------- protobuf */

static int
varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64; s += 7) {
		if (*p >= end)
			return -1;
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, and for a LEN field its bytes (others are
 * skipped: *len = -1). -1: malformed. */
static int
field(const uint8_t **p, const uint8_t *end, uint64_t *num,
      const uint8_t **val, int64_t *len)
{
	uint64_t tag, v;
	if (varint(p, end, &tag) || !(tag >> 3))
		return -1;
	*num = tag >> 3;
	*len = -1;
	switch (tag & 7) {
	case 0:
		return varint(p, end, &v);
	case 1:
	case 5: {
		size_t w = (tag & 7) == 1 ? 8 : 4;
		if ((size_t)(end - *p) < w)
			return -1;
		*p += w;
		return 0;
	}
	case 2:
		if (varint(p, end, &v) || v > (uint64_t)(end - *p))
			return -1;
		*val = *p;
		*len = (int64_t)v;
		*p += v;
		return 0;
	default:
		return -1; /* groups (3, 4) and 6, 7: not in these messages */
	}
}

/* AnyValue's string_value (field 1): its bytes, or -1 (another kind). */
static int64_t
any_string(const uint8_t *p, const uint8_t *end, const uint8_t **s)
{
	int64_t got = -1, len;
	uint64_t num;
	const uint8_t *v = NULL;
	while (p < end) {
		if (field(&p, end, &num, &v, &len))
			return -2;
		if (num == 1 && len >= 0) {
			*s = v;
			got = len;
		}
	}
	return got;
}

typedef struct {
	const uint8_t *s[256];
	uint16_t len[256]; /* 0: no usable name */
	uint32_t n;
	int have_map, bad_schema;
} keys;

static int
span_is(const uint8_t *s, int64_t len, const char *lit)
{
	return len == (int64_t)strlen(lit) && !memcmp(s, lit, (size_t)len);
}

/* threadlocal.attribute_key_map's AnyValue: array_value (5) of values (1). */
static int
key_map(const uint8_t *p, const uint8_t *end, keys *k)
{
	uint64_t num, num2;
	int64_t len, len2;
	const uint8_t *v = NULL, *arr = NULL, *aend = NULL;
	while (p < end) {
		if (field(&p, end, &num, &v, &len))
			return -1;
		if (num == 5 && len >= 0) {
			arr = v;
			aend = v + len;
		}
	}
	k->n = 0;
	k->have_map = 1;
	while (arr && arr < aend) {
		if (field(&arr, aend, &num2, &v, &len2))
			return -1;
		if (num2 != 1 || len2 < 0)
			continue;
		const uint8_t *s = NULL;
		int64_t sl = any_string(v, v + len2, &s);
		if (sl == -2)
			return -1;
		if (k->n == 256)
			continue; /* a u8 index reaches 256 entries at most */
		k->len[k->n] = 0;
		if (sl > 0 && sl < NAME_MAX_LEN && !memchr(s, 0, (size_t)sl)) {
			k->s[k->n] = s;
			k->len[k->n] = (uint16_t)sl;
		}
		k->n++;
	}
	return 0;
}

/* ProcessContext: its attributes (field 2), each a KeyValue. */
static int
parse(const uint8_t *p, const uint8_t *end, keys *k)
{
	uint64_t num;
	int64_t len;
	const uint8_t *v = NULL;
	while (p < end) {
		if (field(&p, end, &num, &v, &len))
			return -1;
		if (num != 2 || len < 0)
			continue;
		const uint8_t *q = v, *qend = v + len, *key = NULL, *val = NULL;
		int64_t klen = -1, vlen = -1, l;
		uint64_t n2;
		const uint8_t *w = NULL;
		while (q < qend) {
			if (field(&q, qend, &n2, &w, &l))
				return -1;
			if (n2 == 1 && l >= 0) {
				key = w;
				klen = l;
			} else if (n2 == 2 && l >= 0) {
				val = w;
				vlen = l;
			}
		}
		if (klen < 0 || vlen < 0)
			continue;
		if (span_is(key, klen, "threadlocal.attribute_key_map")) {
			if (key_map(val, val + vlen, k))
				return -1;
		} else if (span_is(key, klen, "threadlocal.schema_version")) {
			const uint8_t *s = NULL;
			int64_t sl = any_string(val, val + vlen, &s);
			k->bad_schema = !(span_is(s, sl, "tls_v1") ||
			                  span_is(s, sl, "tlsdesc_v1_dev"));
		}
	}
	return 0;
}

/* ------------------------------------------------------------ tables */

static int
same(const hp_keymap *m, const keys *k)
{
	if (!m || m->n != k->n)
		return 0;
	for (uint32_t i = 0; i < k->n; i++) {
		const char *a = m->name[i];
		if (!a != !k->len[i] ||
		    (a && (strlen(a) != k->len[i] || memcmp(a, k->s[i], k->len[i]))))
			return 0;
	}
	return 1;
}

static void
publish(const keys *k)
{
	if (!k || !k->have_map || k->bad_schema) {
		atomic_store_explicit(&heapprof__otel_keymap, NULL,
		                      memory_order_release);
		return;
	}
	const hp_keymap *cur =
		atomic_load_explicit(&heapprof__otel_keymap, memory_order_acquire);
	if (same(cur, k))
		return;
	/* A map made before (a publisher that rewrites its map back and
	 * forth): that table again. None, and no room for one more: numeric
	 * names, never the names of another map (before, the last table
	 * made stayed: otel_review.tables labelled tenant what the map
	 * called http_route once 256 tables were made). */
	for (unsigned i = 0; i < tables; i++)
		if (same(made[i], k)) {
			atomic_store_explicit(&heapprof__otel_keymap, made[i],
			                      memory_order_release);
			return;
		}
	if (tables >= TABLES_MAX) {
		atomic_store_explicit(&heapprof__otel_keymap, NULL,
		                      memory_order_release);
		return;
	}
	size_t text = 0;
	for (uint32_t i = 0; i < k->n; i++)
		text += k->len[i] ? k->len[i] + 1u : 0;
	hp_keymap *m = heapprof__arena_alloc(sizeof(*m) + text);
	if (!m)
		return;
	made[tables++] = m;
	char *t = (char *)(m + 1);
	m->n = k->n;
	for (uint32_t i = 0; i < 256; i++)
		m->name[i] = NULL;
	for (uint32_t i = 0; i < k->n; i++) {
		if (!k->len[i])
			continue;
		memcpy(t, k->s[i], k->len[i]);
		t[k->len[i]] = 0;
		m->name[i] = t;
		t += k->len[i] + 1u;
	}
	atomic_store_explicit(&heapprof__otel_keymap, m, memory_order_release);
}

/* ----------------------------------------------------------- reading */

typedef struct {
	char sig[8];
	uint32_t version, size;
	uint64_t ts, payload;
} header;

static int
header_ok(uintptr_t a, header *h)
{
	return a && !safe_read(h, a, HDR_SIZE) && !memcmp(h->sig, "OTEL_CTX", 8) &&
	       h->version == 2;
}

/* The header of the context named in /proc/self/maps, or 0. */
static uintptr_t
maps_find(void)
{
	static const char *const names[] = {"[anon_shmem:OTEL_CTX]",
	                                    "[anon:OTEL_CTX]", "/memfd:OTEL_CTX"};
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	size_t have = 0;
	uintptr_t found = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = 0;
			/* start-end perms offset dev inode   name */
			char *f = line;
			for (int i = 0; i < 5 && f; i++) {
				f = strchr(f, ' ');
				while (f && *f == ' ')
					f++;
			}
			for (size_t i = 0; f && i < 3 && !found; i++)
				if (!strncmp(f, names[i], strlen(names[i]))) {
					uintptr_t a = 0;
					for (const char *c = line; *c && *c != '-'; c++)
						a = a * 16 + (uintptr_t)(*c <= '9' ? *c - '0'
						                                  : (*c | 32) - 'a' + 10);
					header h;
					if (header_ok(a, &h))
						found = a;
				}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* a line longer than the buffer: not ours */
		if (found)
			break;
	}
	close(fd);
	return found;
}

/* One reading of the context (the caller holds `busy`). */
static void
read_once(int scan)
{
	uintptr_t a = atomic_load(&hdr);
	header h;
	if (a && !header_ok(a, &h)) {
		/* gone (unmapped, a fork child: MADV_DONTFORK) or not a
		 * context: keep the names made so far, look for another */
		atomic_compare_exchange_strong(&hdr, &a, 0);
		a = 0;
	}
	if (!a && scan && (a = maps_find()))
		atomic_store(&hdr, a);
	if (!a)
		return;
	for (int tries = 0; tries < TRIES; tries++) {
		if (!header_ok(a, &h))
			return;
		if (!h.ts)
			continue; /* being updated */
		if (h.ts == last_ts)
			return; /* parsed already */
		if (!h.size || h.size > PAYLOAD_MAX) {
			last_ts = h.ts;
			publish(NULL);
			return;
		}
		atomic_thread_fence(memory_order_seq_cst);
		size_t len = (h.size + 4095u) & ~4095u;
		uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return;
		int copied = !safe_read(buf, (uintptr_t)h.payload, h.size);
		atomic_thread_fence(memory_order_seq_cst);
		uint64_t ts2 = 0;
		if (safe_read(&ts2, a + 16, 8) || ts2 != h.ts) {
			munmap(buf, len);
			continue; /* changed while read: again */
		}
		keys *k = mmap(NULL, sizeof(keys), PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (k != MAP_FAILED) {
			memset(k, 0, sizeof(*k));
			int ok = copied && !parse(buf, buf + h.size, k);
			last_ts = h.ts;
			publish(ok ? k : NULL);
			munmap(k, sizeof(keys));
		}
		munmap(buf, len);
		return;
	}
}

static void
refresh(int scan)
{
	if (atomic_load(&heapprof__sandbox))
		return; /* a filter may forbid what reading needs */
	int saved = errno;
	atomic_fetch_add(&req, 1);
	int me = (int)getpid();
	for (;;) {
		int held = atomic_load(&busy);
		if ((held && held == me) ||
		    !atomic_compare_exchange_strong(&busy, &held, me))
			break; /* another thread reads: it reads again for us */
		unsigned r = atomic_load(&req);
		read_once(scan);
		atomic_store(&busy, 0);
		if (atomic_load(&req) == r)
			break;
	}
	errno = saved;
}

void
heapprof__procctx_enable(void)
{
	int saved = errno;
	atomic_store(&enabled, 1);
	refresh(1);
	errno = saved;
}

void
heapprof__procctx_prctl(unsigned long addr, unsigned long name)
{
	/* Before otel.c found its variable (the constructor: a context
	 * published earlier is found in the maps then) or under a seccomp
	 * filter (which may forbid process_vm_readv): nothing. */
	if (!atomic_load(&enabled) || atomic_load(&heapprof__sandbox) || !addr)
		return;
	char n[9];
	int saved = errno;
	if (!safe_read(n, name, sizeof(n)) && !memcmp(n, "OTEL_CTX", 9)) {
		atomic_store(&hdr, (uintptr_t)addr);
		refresh(0);
	}
	errno = saved;
}

void
heapprof__procctx_poll(void)
{
	if (atomic_load(&enabled))
		refresh(1);
}
