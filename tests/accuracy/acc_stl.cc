// acc_stl.cc: a C++ program with STL containers of known sizes, for the
// accuracy suite (acc_cxx.sh). Its own accounting: global operator new and
// delete are replaced by counting ones that call malloc and free, so the
// program knows the bytes it holds through operator new. It builds a
// vector<string>, a map<int, string> and a vector<vector<int>>, frees
// part of them, prints "live BYTES" and exits with the rest still held
// (a profile taken at exit sees them in use).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

static size_t live_bytes; // single thread
static size_t live_count;

void *operator new(size_t n)
{
	void *p = std::malloc(n ? n : 1);
	if (!p)
		throw std::bad_alloc();
	live_bytes += n ? n : 1;
	live_count++;
	return p;
}
void operator delete(void *p, size_t n) noexcept
{
	if (!p)
		return;
	live_bytes -= n ? n : 1;
	live_count--;
	std::free(p);
}
void operator delete(void *p) noexcept
{
	// every delete of this program is sized (C++14 containers); an
	// unsized one would make the count wrong, so it stops the program
	if (p)
		std::abort();
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 100000;
	auto *names = new std::vector<std::string>;
	auto *byid = new std::map<int, std::string>;
	auto *rows = new std::vector<std::vector<int>>;
	for (int i = 0; i < n; i++) {
		names->push_back(std::string(40 + i % 64, 'a' + i % 26));
		(*byid)[i] = std::string(24 + i % 100, 'x');
		rows->emplace_back(i % 50 + 1, i);
	}
	for (int i = 0; i < n; i += 2)
		byid->erase(i);
	rows->resize(n / 4);
	rows->shrink_to_fit();
	std::printf("live %zu objects %zu\n", live_bytes, live_count);
	return 0;
}
