// rprog_attachxx.cc: a C++ program with std::threads for
// tests/cli/attach_real.sh (heapprof attach, issue 32). Reads commands on
// stdin, one a line, and answers each on stdout with "ok", a checksum and
// the number of objects kept, all independent of timing and addresses,
// so a run with attaches and one without print the same:
//   work T N   starts T std::threads, each N rounds of new/delete,
//              std::string and std::vector churn, keeping some objects
//              (site_str, site_vec, site_arr); joins them
//   pool N     N jobs of the same kind for the two threads started at
//              the beginning, which live across every attach and detach
//   free       deletes every other kept object
//   zlib N     N times: dlopen libz.so.1 (loaded after the attach: its
//              allocations are seen from the next sample on, hence an
//              allocation before its use), compress 64 KiB with it,
//              dlclose it
//   mark       starts the window that "truth" reports
//   truth      prints on stderr, per site, what it allocated since the
//              mark and what of that is still kept (profsum.py's EXPECT
//              lines: objects and bytes, as the allocator is asked)
//   quit       prints "end" and leaves
// A third thread churns all the time (strings, vectors, maps), between
// start-up and quit, so every attach and detach lands among allocations.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <dlfcn.h>
#include <zlib.h>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

enum { S_STR, S_VEC, S_ARR, NSITE };
static const char *const site_name[NSITE] = {"site_str", "site_vec", "site_arr"};

// Since the mark, per site: objects and bytes allocated (ao, ab) and
// still kept (io, ib). Relaxed atomics: read after the threads are joined.
static std::atomic<long> ao[NSITE], ab[NSITE], io[NSITE], ib[NSITE];
static std::atomic<bool> marked;

struct Kept {
	int site;
	void *p;
	long objs, bytes;
	bool in_window;
};

static void
count(Kept &k)
{
	k.in_window = marked.load(std::memory_order_relaxed);
	if (!k.in_window)
		return;
	ao[k.site] += k.objs;
	ab[k.site] += k.bytes;
	io[k.site] += k.objs;
	ib[k.site] += k.bytes;
}

// The three allocation sites. Each asks the allocator for exactly what
// it records: the object new makes, and its buffer.
__attribute__((noinline)) static Kept
site_str(size_t len, char c)
{
	Kept k{S_STR, new std::string(len, c), 1, (long)sizeof(std::string), false};
	if (len > 15) // longer than the small-string buffer: one more block
		k.objs++, k.bytes += (long)len + 1;
	count(k);
	return k;
}

__attribute__((noinline)) static Kept
site_vec(size_t n)
{
	Kept k{S_VEC, new std::vector<unsigned>(n, 7u), 1,
	       (long)sizeof(std::vector<unsigned>), false};
	if (n)
		k.objs++, k.bytes += (long)(n * sizeof(unsigned));
	count(k);
	return k;
}

__attribute__((noinline)) static Kept
site_arr(size_t n)
{
	char *p = new char[n];
	std::memset(p, (int)(n & 0x7f), n);
	Kept k{S_ARR, p, 1, (long)n, false};
	count(k);
	return k;
}

static unsigned long
value_of(const Kept &k)
{
	switch (k.site) {
	case S_STR: return static_cast<std::string *>(k.p)->size();
	case S_VEC: {
		auto *v = static_cast<std::vector<unsigned> *>(k.p);
		return v->size() * 3 + (v->empty() ? 0 : (*v)[0]);
	}
	default: return (unsigned char)static_cast<char *>(k.p)[0];
	}
}

static void
release(Kept &k)
{
	if (k.in_window) {
		io[k.site] -= k.objs;
		ib[k.site] -= k.bytes;
	}
	switch (k.site) {
	case S_STR: delete static_cast<std::string *>(k.p); break;
	case S_VEC: delete static_cast<std::vector<unsigned> *>(k.p); break;
	default: delete[] static_cast<char *>(k.p); break;
	}
}

struct alignas(256) Aligned {
	char c[300];
};
static std::atomic<long> misaligned;

static std::vector<Kept> kept; // main thread only
static std::atomic<unsigned long> sum;

// One job: churn, and keep a few objects (returned in order).
static unsigned long
job(unsigned seed, long rounds, std::vector<Kept> &out)
{
	unsigned long acc = 0;
	for (long r = 0; r < rounds; r++) {
		unsigned x = seed * 2654435761u + (unsigned)r * 40503u;
		std::string s = "attach-" + std::to_string(x % 100000);
		for (int i = 0; i < 4; i++)
			s += s.substr(0, 5 + i);
		std::vector<int> v;
		for (unsigned i = 0; i < 20 + x % 50; i++)
			v.push_back((int)(i * x));
		auto *node = new std::pair<long, std::string>(r, s);
		acc += s.size() + v.size() + (unsigned long)node->first;
		delete node;
		// operator new with an alignment: aligned_alloc underneath
		auto *a = new Aligned[1 + x % 4];
		if ((uintptr_t)a % alignof(Aligned) != 0)
			misaligned++;
		a[0].c[0] = (char)x;
		acc += (unsigned char)a[0].c[0];
		delete[] a;
		switch (r % 8) {
		case 0: out.push_back(site_str(8 + x % 200, 'a' + (char)(x % 26))); break;
		case 3: out.push_back(site_vec(x % 64)); break;
		case 5: out.push_back(site_arr(1 + x % 3000)); break;
		default: break;
		}
	}
	return acc;
}

// The two long-lived threads: a queue of jobs.
static std::mutex pool_mu;
static std::condition_variable pool_cv, done_cv;
static std::deque<unsigned> pool_q;
static std::vector<std::pair<unsigned, std::vector<Kept>>> pool_out;
static long pool_pending;
static bool pool_quit;

static void
pool_thread()
{
	std::unique_lock<std::mutex> l(pool_mu);
	for (;;) {
		pool_cv.wait(l, [] { return pool_quit || !pool_q.empty(); });
		if (pool_q.empty())
			return;
		unsigned seed = pool_q.front();
		pool_q.pop_front();
		l.unlock();
		std::vector<Kept> out;
		sum += job(seed, 200, out);
		l.lock();
		pool_out.emplace_back(seed, std::move(out));
		if (--pool_pending == 0)
			done_cv.notify_all();
	}
}

static std::atomic<bool> bg_quit;

static void
background()
{
	std::map<int, std::string> m;
	unsigned long n = 0;
	while (!bg_quit.load(std::memory_order_relaxed)) {
		for (int i = 0; i < 200; i++, n++) {
			m[(int)(n % 512)] = std::string(16 + n % 300, 'b');
			std::vector<long> v(n % 100);
			if (n % 1000 == 0)
				m.clear();
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
}

static void
add_kept(std::vector<Kept> &from)
{
	for (Kept &k : from) {
		sum += value_of(k);
		kept.push_back(k);
	}
}

int
main()
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	std::thread bg(background);
	std::vector<std::thread> pool;
	for (int i = 0; i < 2; i++)
		pool.emplace_back(pool_thread);
	unsigned seed = 1;
	char line[256];
	std::printf("ready\n");
	while (std::fgets(line, sizeof(line), stdin)) {
		long a = 0, b = 0;
		if (std::sscanf(line, "work %ld %ld", &a, &b) == 2) {
			std::vector<std::thread> ts;
			std::vector<std::vector<Kept>> outs((size_t)a);
			std::vector<unsigned long> accs((size_t)a);
			for (long i = 0; i < a; i++) {
				unsigned s = seed++;
				ts.emplace_back([&, i, s] { accs[(size_t)i] = job(s, b, outs[(size_t)i]); });
			}
			for (long i = 0; i < a; i++) {
				ts[(size_t)i].join();
				sum += accs[(size_t)i];
				add_kept(outs[(size_t)i]);
			}
		} else if (std::sscanf(line, "pool %ld", &a) == 1) {
			std::unique_lock<std::mutex> l(pool_mu);
			pool_pending = a;
			for (long i = 0; i < a; i++)
				pool_q.push_back(seed++);
			pool_cv.notify_all();
			done_cv.wait(l, [] { return pool_pending == 0; });
			// in the order of the seeds, not of the threads' finishing
			std::sort(pool_out.begin(), pool_out.end(),
			          [](const auto &x, const auto &y) { return x.first < y.first; });
			for (auto &o : pool_out)
				add_kept(o.second);
			pool_out.clear();
		} else if (std::sscanf(line, "zlib %ld", &a) == 1) {
			std::vector<unsigned char> in(65536), out(70000);
			for (size_t i = 0; i < in.size(); i++)
				in[i] = (unsigned char)("heapprof attach "[i % 16] + (i / 4096));
			for (long i = 0; i < a; i++) {
				void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
				// no allocation between the load and the use: the
				// loader binds libz's malloc to heapprof while attached
				// (attach_symval.c), not the first sample after the load
				auto comp = z ? (decltype(&compress2))dlsym(z, "compress2") : nullptr;
				uLongf n = out.size();
				if (!comp || comp(out.data(), &n, in.data(), in.size(), 6) != Z_OK) {
					std::printf("zlib failed\n");
					n = 0;
				}
				sum += n;
				if (z)
					dlclose(z);
			}
		} else if (std::strncmp(line, "free", 4) == 0) {
			size_t j = 0;
			for (size_t i = 0; i < kept.size(); i++) {
				if (i % 2 == 0)
					release(kept[i]);
				else
					kept[j++] = kept[i];
			}
			kept.resize(j);
		} else if (std::strncmp(line, "mark", 4) == 0) {
			for (int s = 0; s < NSITE; s++)
				ao[s] = ab[s] = io[s] = ib[s] = 0;
			marked = true;
		} else if (std::strncmp(line, "truth", 5) == 0) {
			for (int s = 0; s < NSITE; s++)
				std::fprintf(stderr, "EXPECT %s %ld %ld %ld %ld\n", site_name[s],
				             ao[s].load(), ab[s].load(), io[s].load(), ib[s].load());
			std::fflush(stderr);
		} else if (std::strncmp(line, "quit", 4) == 0) {
			break;
		}
		std::printf("ok %lu %zu%s\n", sum.load(), kept.size(),
		            misaligned.load() ? " MISALIGNED" : "");
	}
	{
		std::lock_guard<std::mutex> l(pool_mu);
		pool_quit = true;
	}
	pool_cv.notify_all();
	for (auto &t : pool)
		t.join();
	bg_quit = true;
	bg.join();
	for (Kept &k : kept)
		release(k);
	std::printf("end %lu\n", sum.load());
	return 0;
}
