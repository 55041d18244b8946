/*
 * parse.c: parsing of option values shared by the library's environment
 * variables and the CLI's flags (byte counts, signal names), so both accept
 * exactly the same spellings; and the text of a command line, as profiles
 * name it.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler.h"
#include "parse.h"

/* A non-negative integer with an optional k/m/g suffix (powers of 1024). */
HP_HIDDEN int
heapprof__parse_size(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	unsigned shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	else if (*end == 'g' || *end == 'G')
		shift = 30, end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || v > ((unsigned long long)INT64_MAX >> shift))
		return -EINVAL;
	*out = (int64_t)(v << shift);
	return 0;
}

HP_HIDDEN int
heapprof__parse_signal(const char *s, int *out)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"PROF", SIGPROF},
	             {"HUP", SIGHUP},   {"URG", SIGURG},   {"WINCH", SIGWINCH},
	             {"TERM", SIGTERM}, {"INT", SIGINT}};
	if (!s || !*s)
		return -EINVAL;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < HP_ARRAY_LEN(names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*out = names[i].sig;
			return 0;
		}
	if (strncasecmp(s, "RTMIN+", 6) == 0) {
		int64_t k;
		if (heapprof__parse_size(s + 6, &k) == 0 && SIGRTMIN + k <= SIGRTMAX) {
			*out = SIGRTMIN + (int)k;
			return 0;
		}
		return -EINVAL;
	}
	int64_t v;
	if (heapprof__parse_size(s, &v) != 0 || v < 1 || v >= NSIG ||
	    v == SIGKILL || v == SIGSTOP || v == SIGSEGV || v == SIGBUS ||
	    v == SIGFPE || v == SIGILL)
		return -EINVAL;
	*out = (int)v;
	return 0;
}


HP_HIDDEN int
heapprof__tmpl_add_seq(char *t, size_t cap)
{
	/* A stream takes every dump as it is, one after another. */
	if (heapprof__out_stream(t) != HP_OUT_FILE)
		return 0;
	size_t n = strlen(t);
	for (size_t i = 0; i < n; i++) {
		if (t[i] != '%')
			continue;
		if (t[i + 1] == 'n' || t[i + 1] == 'N')
			return 0;
		if (t[i + 1])
			i++; /* %%, %p, ...: skip the pair */
	}
	if (n + 4 > cap)
		return -ENAMETOOLONG;
	/* Before the extension: a known one (".pb.gz" is two dots), else
	 * the last dot that does not start the base name, else the end. */
	static const char *const exts[] = {".pb.gz", ".heap", ".pb", ".gz"};
	char *base = strrchr(t, '/');
	base = base ? base + 1 : t;
	size_t bl = strlen(base), at = n;
	for (size_t i = 0; i < sizeof(exts) / sizeof(*exts) && at == n; i++) {
		size_t el = strlen(exts[i]);
		if (bl > el && !strcmp(base + bl - el, exts[i]))
			at = n - el;
	}
	char *dot = strrchr(base, '.');
	if (at == n && dot && dot != base)
		at = (size_t)(dot - t);
	memmove(t + at + 3, t + at, n - at + 1);
	memcpy(t + at, ".%n", 3);
	return 1;
}

HP_HIDDEN int
heapprof__many_files(int64_t interval, int sig, int other_dumps)
{
	return interval > 0 || (sig > 0 && sig != SIGTERM && sig != SIGINT) ||
	       other_dumps;
}

HP_HIDDEN void
heapprof__join_args(char *buf, size_t cap, int argc, char *const *argv)
{
	int last = 0;
	for (int i = 0; i < argc && argv[i]; i++)
		if (*argv[i])
			last = i + 1;
	size_t n = 0;
	for (int i = 0; i < last && n + 1 < cap; i++) {
		if (i)
			buf[n++] = ' ';
		for (const char *a = argv[i]; *a && n + 1 < cap; a++)
			buf[n++] = *a == '\n' ? ' ' : *a;
	}
	if (cap)
		buf[n] = 0;
}
