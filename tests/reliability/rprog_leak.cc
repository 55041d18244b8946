// rprog_leak: a leaking C++ service for rel_oom.sh. It allocates 1 MiB
// blocks at MB_PER_S megabytes a second (paced by the clock), from three
// call sites: site_leak_sessions keeps every block (the leak),
// site_cache_fill keeps the last 8 (a bounded cache), and
// site_request_buffer frees each at once (churn). Each block is touched
// whole, so that the memory is charged to the cgroup. After each block it
// writes "heap N" (the bytes it holds, leak + cache) to PROGRESS_FD with
// write(2) (no buffering: the last line on disk is the heap at a kill).
//
//   rprog_leak MB_PER_S PROGRESS_FD [MAX_MB [READ_FILE STOP_FILE]]
// MAX_MB: stop leaking after it (and exit 0). READ_FILE: then read that
// file over and over, its cached pages dropped first, until STOP_FILE
// exists (60 s at most): in a memory cgroup whose limit leaves less room
// than the file, the kernel reclaims all along, which PSI counts as
// memory stalls (rel_oom.sh's pressure check).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <ctime>
#include <unistd.h>
#include <vector>

static const size_t BLOCK = 1 << 20;

__attribute__((noinline)) static char *
site_leak_sessions()
{
	char *p = new char[BLOCK];
	memset(p, 1, BLOCK);
	return p;
}

__attribute__((noinline)) static char *
site_cache_fill()
{
	char *p = new char[BLOCK / 4];
	memset(p, 2, BLOCK / 4);
	return p;
}

__attribute__((noinline)) static void
site_request_buffer()
{
	char *p = new char[BLOCK];
	memset(p, 3, BLOCK);
	__asm__ volatile("" : : "r"(p) : "memory");
	delete[] p;
}

static double
now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rprog_leak MB_PER_S PROGRESS_FD [MAX_MB]\n");
		return 2;
	}
	double rate = atof(argv[1]) * 1e6;
	int fd = atoi(argv[2]);
	long max_mb = argc > 3 ? atol(argv[3]) : 0;
	std::vector<char *> leak;
	leak.reserve(1 << 16);
	char *cache[8] = {};
	size_t held = 0;
	double t0 = now_s();
	for (long i = 0; max_mb == 0 || i < max_mb; i++) {
		site_request_buffer();
		leak.push_back(site_leak_sessions());
		held += BLOCK;
		char *&c = cache[i % 8];
		if (c)
			held -= BLOCK / 4;
		delete[] c;
		c = site_cache_fill();
		held += BLOCK / 4;
		char line[64];
		int n = snprintf(line, sizeof(line), "heap %zu\n", held);
		if (write(fd, line, (size_t)n) != n)
			return 3;
		double due = t0 + (double)(i + 1) * BLOCK / rate;
		double wait = due - now_s();
		if (wait > 0) {
			timespec ts = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
			nanosleep(&ts, nullptr);
		}
	}
	if (argc > 5) {
		int rf = open(argv[4], O_RDONLY);
		if (rf < 0)
			return 4;
		posix_fadvise(rf, 0, 0, POSIX_FADV_DONTNEED);
		static char buf[1 << 16];
		double end = now_s() + 60;
		while (access(argv[5], F_OK) != 0 && now_s() < end) {
			if (pread(rf, buf, sizeof(buf), 0) < 0)
				return 5;
			while (read(rf, buf, sizeof(buf)) > 0)
				;
			lseek(rf, 0, SEEK_SET);
		}
		if (write(fd, "read done\n", 10) != 10)
			return 3;
	}
	return 0;
}
