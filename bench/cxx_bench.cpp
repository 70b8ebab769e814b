// cxx_bench: a C++ program of the kind users profile: 4 threads share a std::map behind a mutex,
// build strings and vectors, and throw and catch exceptions on a few percent of the operations.
//
//   cxx_bench [THREADS [OPS_PER_THREAD]]      defaults: 4 threads, 200000 operations
//
// Output (stdout): one line with a checksum, the same for every run with the same arguments.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::map<std::string, std::vector<int>> table;
static std::mutex table_lock;

struct bad_key : std::runtime_error {
	using std::runtime_error::runtime_error;
};

static unsigned next_rand(unsigned &s)
{
	s ^= s << 13;
	s ^= s >> 17;
	s ^= s << 5;
	return s;
}

__attribute__((noinline)) static std::string make_key(unsigned r, int depth)
{
	if (depth > 0)
		return make_key(r / 3, depth - 1) + static_cast<char>('a' + r % 26);
	return "k";
}

__attribute__((noinline)) static long use_entry(const std::string &key, unsigned r)
{
	if (r % 37 == 0)
		throw bad_key("no such key: " + key);
	std::lock_guard<std::mutex> guard(table_lock);
	std::vector<int> &v = table[key];
	v.push_back(static_cast<int>(r));
	if (v.size() > 16)
		v.erase(v.begin(), v.begin() + 8);
	return static_cast<long>(v.size());
}

static void worker(unsigned seed, long ops, long *sum)
{
	unsigned s = seed * 2654435761u + 1;
	long total = 0;
	for (long i = 0; i < ops; i++) {
		unsigned r = next_rand(s);
		std::string key = make_key(r % 4096, 2 + static_cast<int>(r % 5));
		try {
			total += use_entry(key, r >> 8);
		} catch (const bad_key &e) {
			total += static_cast<long>(e.what()[0]);
		}
	}
	*sum = total;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long ops = argc > 2 ? std::atol(argv[2]) : 200000;
	std::vector<std::thread> pool;
	std::vector<long> sums(static_cast<size_t>(threads));
	for (int t = 0; t < threads; t++)
		pool.emplace_back(worker, static_cast<unsigned>(t + 1), ops, &sums[static_cast<size_t>(t)]);
	for (auto &t : pool)
		t.join();
	long total = 0;
	for (long s : sums)
		total += s;
	std::printf("cxx_bench: %d threads, %ld ops each, checksum %ld, %zu keys\n", threads, ops,
		    total, table.size());
	return 0;
}
