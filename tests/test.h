/*
 * test.h: the unit-test harness. TEST(name) defines a case, RUN(name) runs
 * it; CHECK* record a failure and go on, REQUIRE* end the case. Each case
 * prints "PASS name" or "FAIL name"; tests/run.sh counts those lines.
 */
#ifndef HEAPPROF_TEST_H
#define HEAPPROF_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failed_total, t_passed_total, t_case_failed;

#define TEST(name) static void test_##name(void)

#define RUN(name)                                                              \
	do {                                                                   \
		t_case_failed = 0;                                             \
		test_##name();                                                 \
		if (t_case_failed) {                                           \
			t_failed_total++;                                      \
			printf("FAIL %s\n", #name);                            \
		} else {                                                       \
			t_passed_total++;                                      \
			printf("PASS %s\n", #name);                            \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

#define T_FAIL(...)                                                            \
	do {                                                                   \
		fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);              \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		t_case_failed = 1;                                             \
	} while (0)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			T_FAIL("check failed: %s", #cond);                     \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long t_a_ = (long long)(a), t_b_ = (long long)(b);        \
		if (t_a_ != t_b_)                                              \
			T_FAIL("%s == %s: %lld != %lld", #a, #b, t_a_, t_b_);  \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *t_a_ = (a), *t_b_ = (b);                           \
		if (!t_a_ || !t_b_ || strcmp(t_a_, t_b_) != 0)                 \
			T_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b,           \
			       t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");\
	} while (0)

#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			T_FAIL("required: %s", #cond);                         \
			return;                                                \
		}                                                              \
	} while (0)

#define REQUIRE_OK(expr)                                                       \
	do {                                                                   \
		int t_rc_ = (expr);                                            \
		if (t_rc_ < 0) {                                               \
			T_FAIL("%s failed: %d", #expr, t_rc_);                 \
			return;                                                \
		}                                                              \
	} while (0)

#define TEST_MAIN_END() return t_failed_total ? 1 : 0

/* The profile corpus: $HEAPPROF_CORPUS, else ../shared/corpus (tests run
 * from the repository root) if it is there, else build/corpus, which
 * tests/corpus/gen.sh generates (tests/run.sh runs it) and which lacks
 * what only the shared corpus has (tests/README.md). */
static inline const char *
t_corpus(void)
{
	const char *c = getenv("HEAPPROF_CORPUS");
	if (c)
		return c;
	FILE *f = fopen("../shared/corpus/README.md", "r");
	if (f) {
		fclose(f);
		return "../shared/corpus";
	}
	return "build/corpus";
}

/* 1 if t_corpus() is the generated one (its files differ from the shared
 * corpus's: no exact counts of those files hold). */
static inline int
t_corpus_generated(void)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/GENERATED", t_corpus());
	FILE *f = fopen(p, "r");
	if (f)
		fclose(f);
	return f != NULL;
}

/* The skip lines (tests/README.md). A test that cannot run because a tool
 * is not installed says "missing tool T": tests/run.sh counts that as a
 * failure under CI=true (make test installs every tool: DEBS_TEST). */
#define T_SKIP_TOOL(name, tool, pkg)                                           \
	printf("SKIP %s: missing tool %s (Debian package %s; make test "       \
	       "installs it)\n", (name), (tool), (pkg))
/* What only ../shared/corpus has. */
#define T_SKIP_CORPUS(name, what)                                              \
	printf("SKIP %s: corpus absent: ../shared/corpus (%s), see "           \
	       "tests/README.md\n", (name), (what))

/* Reads a whole file into a malloc'd buffer: 0, or -1 if it cannot. */
static inline int
t_read_file(const char *path, uint8_t **p, size_t *len)
{
	FILE *f = fopen(path, "rb");
	*p = NULL;
	*len = 0;
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	*p = malloc(n > 0 ? (size_t)n + 1 : 1);
	*len = n > 0 ? fread(*p, 1, (size_t)n, f) : 0;
	fclose(f);
	return n >= 0 && *len == (size_t)n ? 0 : -1;
}

/* A growing in-memory output for the writers (heapprof_write_fn), kept
 * NUL-terminated for the text ones. */
typedef struct outbuf {
	uint8_t *p;
	size_t len, cap;
} outbuf;

static inline int
out_write(void *arg, const void *p, size_t n)
{
	outbuf *o = arg;
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->p = realloc(o->p, o->cap);
	}
	memcpy(o->p + o->len, p, n);
	o->len += n;
	o->p[o->len] = 0;
	return 0;
}

/* A xorshift64 step: the tests' reproducible pseudo-random numbers. */
static inline uint64_t
t_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
