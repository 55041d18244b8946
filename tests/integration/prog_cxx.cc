// prog_cxx.cc: C++ allocation through libstdc++'s operator new/delete
// (scalar, array, nothrow, aligned) and a std::vector, with a thrown and
// caught exception on the way (the profiler must not disturb C++ unwinding).
// Prints the truth as EXPECT lines, like prog_pattern.
#include <cstdio>
#include <new>
#include <stdexcept>
#include <vector>

struct Obj {
	long a[6]; // 48 bytes
};
struct alignas(64) Wide {
	char c[128];
};

static long ao[4], ab[4], fo[4], fb[4];

extern "C" __attribute__((noinline)) void
site_new(void)
{
	Obj *keep[1000];
	for (int i = 0; i < 1000; i++) {
		keep[i] = new Obj();
		ao[0]++, ab[0] += sizeof(Obj);
	}
	for (int i = 0; i < 1000; i += 2) {
		delete keep[i];
		fo[0]++, fb[0] += sizeof(Obj);
	}
}

extern "C" __attribute__((noinline)) void
site_new_array(void)
{
	for (int i = 0; i < 100; i++) {
		char *p = new char[1000];
		p[999] = 1;
		ao[1]++, ab[1] += 1000;
		if (i % 4 == 0) {
			delete[] p;
			fo[1]++, fb[1] += 1000;
		}
	}
	for (int i = 0; i < 50; i++) {
		Obj *o = new (std::nothrow) Obj();
		ao[1]++, ab[1] += sizeof(Obj);
		(void)o;
	}
}

extern "C" __attribute__((noinline)) void
site_aligned_new(void)
{
	for (int i = 0; i < 64; i++) {
		Wide *w = new Wide();
		if (reinterpret_cast<unsigned long>(w) % 64) {
			std::fprintf(stderr, "aligned new: misaligned\n");
			throw std::runtime_error("misaligned");
		}
		ao[2]++, ab[2] += sizeof(Wide);
		delete w;
		fo[2]++, fb[2] += sizeof(Wide);
	}
}

extern "C" __attribute__((noinline)) void
site_throw(int depth)
{
	if (depth == 0)
		throw std::runtime_error("deep");
	site_throw(depth - 1);
}

int
main()
{
	site_new();
	site_new_array();
	site_aligned_new();
	int caught = 0;
	for (int i = 0; i < 100; i++) {
		try {
			site_throw(10);
		} catch (const std::runtime_error &) {
			caught++;
		}
	}
	if (caught != 100) {
		std::fprintf(stderr, "exceptions: caught %d of 100\n", caught);
		return 1;
	}
	std::vector<int> v;
	for (int i = 0; i < 100000; i++)
		v.push_back(i);
	const char *names[3] = {"site_new", "site_new_array", "site_aligned_new"};
	for (int i = 0; i < 3; i++)
		std::printf("EXPECT %s %ld %ld %ld %ld\n", names[i], ao[i], ab[i],
		            ao[i] - fo[i], ab[i] - fb[i]);
	return 0;
}
