/*
 * limits.c: the memory limit that will end this process, and what it is
 * measured against: the smallest of its cgroups' limits (v1
 * memory.limit_in_bytes; v2 memory.max and memory.high, the group and its
 * ancestors) and RLIMIT_AS (`ulimit -v`). Read by the constructor
 * (--dump-limit's threshold for the in-use estimate, peak.c) and, when
 * --dump-usage or --dump-pressure is on, again by the watcher's thread
 * (serve/watch.c), which also reads the limiting group's usage
 * (memory.usage_in_bytes, memory.current) or the process's address space
 * (/proc/self/statm) and its pressure file. Never on the malloc path.
 *
 * Also the flag a sampled allocation sets when the --peak-file write is
 * wanted (peak.c sets it, serve/rolling.c clears it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collect.h"

_Atomic int heapprof__rolling_want;

/* Reads a whole (small) file into buf, NUL-terminated; its length or -1. */
static ssize_t
slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, buf + n, cap - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == cap - 1)
			break;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The smallest limit in `file` (memory.max, memory.high,
 * memory.limit_in_bytes) of the group mnt + rel and its ancestors up to
 * the mount, or INT64_MAX; the group's directory that sets it in `where`.
 * v1's "no limit" is a huge number: anything from 2^62 up is none. */
static int64_t
walk_limit(const char *mnt, const char *rel, const char *file, char *where,
           size_t cap)
{
	char dir[4096], path[4200], v[64];
	snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	size_t base = strlen(mnt);
	int64_t best = INT64_MAX;
	for (;;) {
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (slurp(path, v, sizeof(v)) > 0 && v[0] >= '0' && v[0] <= '9') {
			long long x = strtoll(v, NULL, 10);
			if (x > 0 && x < ((long long)1 << 62) && x < best) {
				best = x;
				snprintf(where, cap, "%s", dir);
			}
		}
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < base)
			break;
		*slash = 0;
	}
	return best;
}

/* The process's group path of one hierarchy from /proc/self/cgroup: v2
 * ("0::/path") if v1ctl is NULL, else the v1 line listing that controller. */
static int
cgroup_path(const char *cg, const char *v1ctl, char *out, size_t cap)
{
	for (const char *l = cg; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *c1 = memchr(l, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
		if (c2) {
			size_t cl = (size_t)(c2 - c1 - 1), pl = len - (size_t)(c2 + 1 - l);
			int match = 0;
			if (!v1ctl) {
				match = cl == 0 && c1 - l == 1 && l[0] == '0';
			} else {
				for (const char *t = c1 + 1; t < c2;) {
					const char *te = memchr(t, ',', (size_t)(c2 - t));
					size_t tl = te ? (size_t)(te - t) : (size_t)(c2 - t);
					if (tl == strlen(v1ctl) && !memcmp(t, v1ctl, tl))
						match = 1;
					t += tl + 1;
				}
			}
			if (match && pl < cap) {
				memcpy(out, c2 + 1, pl);
				out[pl] = 0;
				return 0;
			}
		}
		l += len + (e ? 1 : 0);
	}
	return -1;
}

/* Is w one of the space-separated words of s? */
static int
has_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; (p = strstr(p, w)); p += n)
		if ((p == s || p[-1] == ' ') && (!p[n] || p[n] == ' ' || p[n] == '\n'))
			return 1;
	return 0;
}

/* The smallest memory limit of this process's cgroups (v2 memory.max and
 * memory.high, v1 memory.limit_in_bytes), its group and ancestors, found
 * through /proc/self/mountinfo (a mount may show a subtree: its root is
 * cut from the group's path); INT64_MAX if none. The group that sets it
 * goes to g (its directory, and whether v2); where the process's own v2
 * group is, to g->v2_own (its memory.pressure). */
static int64_t
cgroup_limit(hp_memlimit *g)
{
	static char cg[8192] HP_BIG_BSS, mi[65536] HP_BIG_BSS;
	char v2[1024], v1[1024], where[4096];
	if (slurp("/proc/self/cgroup", cg, sizeof(cg)) <= 0 ||
	    slurp("/proc/self/mountinfo", mi, sizeof(mi)) <= 0)
		return INT64_MAX;
	int has2 = cgroup_path(cg, NULL, v2, sizeof(v2)) == 0;
	int has1 = cgroup_path(cg, "memory", v1, sizeof(v1)) == 0;
	int64_t best = INT64_MAX;
	for (char *l = mi, *e; *l; l = e ? e + 1 : l + strlen(l)) {
		e = strchr(l, '\n');
		if (e)
			*e = 0;
		char *f[6] = {0};
		char *sv = NULL, *tok = strtok_r(l, " ", &sv);
		for (int i = 0; tok && i < 6; i++, tok = strtok_r(NULL, " ", &sv))
			f[i] = tok;
		if (!f[4])
			continue;
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " ", &sv); /* optional fields */
		char *fstype = tok ? strtok_r(NULL, " ", &sv) : NULL;
		if (fstype)
			strtok_r(NULL, " ", &sv); /* source */
		char *opts = fstype ? strtok_r(NULL, " ", &sv) : NULL;
		if (!fstype || !opts)
			continue;
		const char *root = f[3], *mnt = f[4], *path = NULL;
		int is2 = 0;
		if (!strcmp(fstype, "cgroup2") && has2) {
			path = v2;
			is2 = 1;
		} else if (!strcmp(fstype, "cgroup") && has1 &&
		           (strstr(opts, ",memory") || !strncmp(opts, "memory", 6))) {
			path = v1;
		}
		if (!path)
			continue;
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;
		if (rl && (strncmp(path, root, rl) || (path[rl] && path[rl] != '/')))
			continue; /* the group is outside this mount */
		const char *rel = path[rl] ? path + rl : "/";
		if (is2 && g && strcmp(rel, "/")) {
			/* The own group's memory.pressure, if the hierarchy
			 * has the memory controller (the file is there in
			 * every group; a root's takes no trigger). */
			char pp[4200], ctl[512];
			snprintf(pp, sizeof(pp), "%s/cgroup.controllers", mnt);
			if (slurp(pp, ctl, sizeof(ctl)) > 0 && has_word(ctl, "memory")) {
				snprintf(pp, sizeof(pp), "%s%s/memory.pressure", mnt, rel);
				if (access(pp, R_OK) == 0)
					snprintf(g->pressure, sizeof(g->pressure), "%s", pp);
			}
		}
		static const char *const files2[] = {"memory.max", "memory.high"};
		for (int i = 0; i < (is2 ? 2 : 1); i++) {
			int64_t x = walk_limit(mnt, rel,
			                       is2 ? files2[i] : "memory.limit_in_bytes",
			                       where, sizeof(where));
			if (x < best) {
				best = x;
				if (g) {
					g->kind = is2 ? HP_LIMIT_V2 : HP_LIMIT_V1;
					snprintf(g->group, sizeof(g->group), "%s", where);
				}
			}
		}
	}
	return best;
}

int64_t
heapprof__mem_limit_ex(hp_memlimit *g)
{
	if (g)
		memset(g, 0, sizeof(*g));
	int64_t best = cgroup_limit(g);
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (int64_t)rl.rlim_cur > 0 && (int64_t)rl.rlim_cur < best) {
		best = (int64_t)rl.rlim_cur;
		if (g) {
			g->kind = HP_LIMIT_AS;
			g->group[0] = 0;
		}
	}
	if (g)
		g->limit = best;
	return best;
}

int64_t
heapprof__mem_limit(void)
{
	return heapprof__mem_limit_ex(NULL);
}

int64_t
heapprof__mem_usage(const hp_memlimit *g)
{
	char path[4200], v[128];
	if (g->kind == HP_LIMIT_AS) {
		/* statm's first field: the address space, in pages */
		if (slurp("/proc/self/statm", v, sizeof(v)) <= 0)
			return -1;
		return strtoll(v, NULL, 10) * (int64_t)sysconf(_SC_PAGESIZE);
	}
	if (g->kind == HP_LIMIT_NONE)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", g->group,
	         g->kind == HP_LIMIT_V2 ? "memory.current" : "memory.usage_in_bytes");
	if (slurp(path, v, sizeof(v)) <= 0 || v[0] < '0' || v[0] > '9')
		return -1;
	return strtoll(v, NULL, 10);
}
