// first_cache.cc: the C++ program of tests/oracle/firstminute.sh and of the
// README's "What you will see": a template class in a namespace (mangled
// names), operator new and new[]; -DREBUILT makes another binary of it.
#include <cstdio>
#include <map>
#include <string>
#include <vector>
namespace store {
template <class K, class V> class Cache {
public:
	__attribute__((noinline)) void put(const K &k, const V &v) { m_[k] = v; }
	__attribute__((noinline)) std::vector<char> *blob(size_t n)
	{
		return new std::vector<char>(n);
	}
#ifdef REBUILT
	__attribute__((noinline)) int extra(int x) { return x * 3 + (int)m_.size(); }
#endif
private:
	std::map<K, V> m_;
};
}
__attribute__((noinline)) static int *make_array(int n) { return new int[n]; }
int main()
{
	store::Cache<std::string, std::string> c;
	std::vector<std::vector<char> *> keep;
	std::vector<int *> arrs;
	for (int i = 0; i < 20000; i++) {
		c.put("key" + std::to_string(i), std::string(100, 'x'));
		if (i % 10 == 0) {
			keep.push_back(c.blob(4096));
			arrs.push_back(make_array(1000));
		}
	}
#ifdef REBUILT
	std::printf("%d\n", c.extra(2));
#endif
	std::printf("%zu %zu\n", keep.size(), arrs.size());
	return 0;
}
