// rprog_unwindxx.cc: a C++ call chain for the unwinder (rel_unwind.sh),
// built -O2 without frame pointers: a virtual call, a template and a
// lambda between main and operator new, an exception thrown and caught on
// the way (the profiler must not disturb C++ unwinding).
//   rprog_unwindxx N    N allocations kept live; prints a checksum
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static volatile unsigned long sink;

struct UnwShape {
	virtual ~UnwShape() = default;
	virtual std::string *unw_make(size_t n) = 0;
};

template <int K> __attribute__((noinline)) std::string *
unw_tmpl(size_t n)
{
	volatile char pad[32 + K * 8];
	pad[0] = static_cast<char>(n);
	auto *s = new std::string(n + K, 'x');
	sink = sink + static_cast<unsigned long>(pad[0]);
	return s;
}

struct UnwSquare : UnwShape {
	__attribute__((noinline)) std::string *unw_make(size_t n) override
	{
		std::function<std::string *(size_t)> f = [](size_t m) {
			return unw_tmpl<3>(m);
		};
		std::string *s = f(n + 40);
		sink = sink + s->size();
		return s;
	}
};

__attribute__((noinline)) static void
unw_thrower(int i)
{
	if (i % 7 == 0)
		throw std::runtime_error("unw");
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	std::unique_ptr<UnwShape> shape(new UnwSquare);
	std::vector<std::string *> keep;
	unsigned long caught = 0;
	for (long i = 0; i < n; i++) {
		keep.push_back(shape->unw_make(static_cast<size_t>(i % 64)));
		try {
			unw_thrower(static_cast<int>(i));
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("ok %zu %lu\n", keep.size(), caught);
	return 0; // keep stays live for the exit dump
}
