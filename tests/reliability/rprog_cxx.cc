// rprog_cxx.cc: every global operator new/delete variant (plain, array,
// nothrow, C++17 aligned, C++14 sized, and their combinations: 8 news and
// 12 deletes, called explicitly), allocation failure (bad_alloc, nullptr
// from nothrow, the new_handler called), and thread_local destructors that
// allocate. Prints one deterministic line per check (compared with the run
// without the profiler) and EXPECT lines of the live objects per site for
// the rate-1 profile. Mirrors DynamoRIO#4178, jemalloc#1660 and
// cpp/infallible_new, jemalloc tsd.c reincarnation (plan T5, T11).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

static long ao[3], ab[3], fo[3], fb[3];
static volatile size_t huge = SIZE_MAX / 2; // volatile: no folding

static bool
aligned(void *p, size_t a)
{
	return reinterpret_cast<uintptr_t>(p) % a == 0;
}

static void
touch(void *p, size_t n)
{
	std::memset(p, 0x3c, n);
}

#define NOTE_ALLOC(k, n) (ao[k]++, ab[k] += (long)(n))
#define NOTE_FREE(k, n) (fo[k]++, fb[k] += (long)(n))
// libstdc++'s aligned new asks aligned_alloc for the size rounded up to a
// multiple of the alignment; that is what malloc (and the profile) sees.
#define RUP(n, a) (((n) + (a)-1) / (a) * (a))
static int misaligned;

// Every variant, each allocation freed by its matching operator. Sizes
// differ per variant so the buckets are distinct.
extern "C" __attribute__((noinline)) void
site_cxx_variants(void)
{
	const std::align_val_t a64{64}, a4k{4096};
	for (int i = 0; i < 10; i++) {
		void *p = ::operator new(101);
		NOTE_ALLOC(0, 101);
		touch(p, 101);
		::operator delete(p);
		NOTE_FREE(0, 101);

		p = ::operator new[](102);
		NOTE_ALLOC(0, 102);
		touch(p, 102);
		::operator delete[](p);
		NOTE_FREE(0, 102);

		p = ::operator new(103, std::nothrow);
		NOTE_ALLOC(0, 103);
		touch(p, 103);
		::operator delete(p, std::nothrow);
		NOTE_FREE(0, 103);

		p = ::operator new[](104, std::nothrow);
		NOTE_ALLOC(0, 104);
		touch(p, 104);
		::operator delete[](p, std::nothrow);
		NOTE_FREE(0, 104);

		p = ::operator new(105, a64);
		NOTE_ALLOC(0, RUP(105, 64));
		misaligned += !aligned(p, 64);
		touch(p, 105);
		::operator delete(p, a64);
		NOTE_FREE(0, RUP(105, 64));

		p = ::operator new[](106, a4k);
		NOTE_ALLOC(0, RUP(106, 4096));
		misaligned += !aligned(p, 4096);
		touch(p, 106);
		::operator delete[](p, a4k);
		NOTE_FREE(0, RUP(106, 4096));

		p = ::operator new(107, a64, std::nothrow);
		NOTE_ALLOC(0, RUP(107, 64));
		touch(p, 107);
		::operator delete(p, a64, std::nothrow);
		NOTE_FREE(0, RUP(107, 64));

		p = ::operator new[](108, a4k, std::nothrow);
		NOTE_ALLOC(0, RUP(108, 4096));
		misaligned += !aligned(p, 4096);
		touch(p, 108);
		::operator delete[](p, a4k, std::nothrow);
		NOTE_FREE(0, RUP(108, 4096));

		p = ::operator new(109);
		NOTE_ALLOC(0, 109);
		::operator delete(p, 109); // sized
		NOTE_FREE(0, 109);

		p = ::operator new[](110);
		NOTE_ALLOC(0, 110);
		::operator delete[](p, 110); // sized array
		NOTE_FREE(0, 110);

		p = ::operator new(111, a64);
		NOTE_ALLOC(0, RUP(111, 64));
		misaligned += !aligned(p, 64);
		::operator delete(p, 111, a64); // sized aligned
		NOTE_FREE(0, RUP(111, 64));

		p = ::operator new[](112, a64);
		NOTE_ALLOC(0, RUP(112, 64));
		::operator delete[](p, 112, a64); // sized aligned array
		NOTE_FREE(0, RUP(112, 64));

		// Placement forms allocate nothing.
		alignas(16) char buf[64];
		void *q = ::operator new(16, static_cast<void *>(buf));
		void *r = ::operator new[](16, static_cast<void *>(buf));
		::operator delete(q, static_cast<void *>(buf));
		::operator delete[](r, static_cast<void *>(buf));
	}
	std::printf("variants: done, misaligned %d\n", misaligned);
}

// Objects that stay live, through plain, array and aligned new.
struct alignas(64) Wide {
	char c[192];
};
extern "C" __attribute__((noinline)) void
site_cxx_keep(std::vector<void *> &keep)
{
	for (int i = 0; i < 40; i++) {
		keep.push_back(new Wide());
		NOTE_ALLOC(1, sizeof(Wide));
		keep.push_back(new char[333]);
		NOTE_ALLOC(1, 333);
	}
}

static int handler_calls;
static void
handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // the next failure throws
}

static void
failures(void)
{
	try {
		void *p = ::operator new(huge);
		std::printf("new(huge): returned %s\n", p ? "ptr" : "null");
	} catch (const std::bad_alloc &) {
		std::printf("new(huge): bad_alloc\n");
	}
	try {
		void *p = ::operator new[](huge, std::align_val_t{64});
		std::printf("new[](huge,a64): returned %s\n", p ? "ptr" : "null");
	} catch (const std::bad_alloc &) {
		std::printf("new[](huge,a64): bad_alloc\n");
	}
	void *p = ::operator new(huge, std::nothrow);
	std::printf("new(huge,nothrow): %s\n", p ? "ptr" : "nullptr");
	p = ::operator new[](huge, std::align_val_t{4096}, std::nothrow);
	std::printf("new[](huge,a4k,nothrow): %s\n", p ? "ptr" : "nullptr");
	std::set_new_handler(handler);
	try {
		p = ::operator new(huge);
		std::printf("new(huge) with handler: returned\n");
	} catch (const std::bad_alloc &) {
		std::printf("new(huge) with handler: bad_alloc, handler calls %d\n",
		            handler_calls);
	}
}

// thread_local destructors that allocate: one frees what it allocates,
// one hands a block to the main thread (which frees it).
static std::atomic<void *> handed[8];
struct TlsGuard {
	int id;
	void *mine;
	TlsGuard() : id(-1), mine(std::malloc(50)) {}
	~TlsGuard()
	{
		std::free(mine);
		void *tmp = std::malloc(4000); // allocate during thread exit
		touch(tmp, 4000);
		std::free(tmp);
		handed[id].store(std::malloc(777));
	}
};
static thread_local TlsGuard guard;

extern "C" __attribute__((noinline)) void
site_cxx_threads(void)
{
	for (int round = 0; round < 25; round++) {
		std::vector<std::thread> ts;
		for (int i = 0; i < 8; i++)
			ts.emplace_back([i] {
				guard.id = i;
				std::vector<int> v(1000, i);
				(void)v;
			});
		for (auto &t : ts)
			t.join();
		for (int i = 0; i < 8; i++)
			std::free(handed[i].exchange(nullptr));
	}
	std::printf("thread_local destructors: done\n");
}

int
main(void)
{
	std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16); // before any site
	site_cxx_variants();
	std::vector<void *> keep;
	keep.reserve(100);
	site_cxx_keep(keep);
	failures();
	site_cxx_threads();
	std::printf("EXPECT site_cxx_variants %ld %ld %ld %ld\n", ao[0], ab[0],
	            ao[0] - fo[0], ab[0] - fb[0]);
	std::printf("EXPECT site_cxx_keep %ld %ld %ld %ld\n", ao[1], ab[1],
	            ao[1] - fo[1], ab[1] - fb[1]);
	std::fflush(stdout);
	return 0;
}
