// ParallelFor (cpu/threads.h): every item exactly once in disjoint blocks whatever the budget and the
// work, the first exception a block throws rethrown on the caller, and loops that want different numbers
// of threads reusing one pool of OpenMP threads rather than ending and creating threads between them.
#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>
#include "test_util.h"
#if defined(__linux__)
#include <dirent.h>
#include <cstdlib>
#endif

namespace {
using namespace te_test;

// Runs ParallelFor(n, cost) under a budget of `threads` and counts how often each item was visited.
std::vector<int> Visits(index_t n, index_t cost, int threads) {
  const ScopedThreadLimit limit(threads);
  std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
  for (auto& s : seen) s = 0;
  std::atomic<bool> bad_block{false};  // Catch2's assertions are not for worker threads
  ParallelFor(n, cost, [&](index_t begin, index_t end) {
    if (begin < 0 || begin >= end || end > n) bad_block = true;
    for (index_t i = std::max<index_t>(begin, 0); i < std::min(end, n); ++i) ++seen[static_cast<size_t>(i)];
  });
  CHECK_FALSE(bad_block.load());
  std::vector<int> counts;
  for (auto& s : seen) counts.push_back(s.load());
  return counts;
}

#if defined(__linux__)
// The ids of this process's threads now.
std::set<long> ThreadIds() {
  std::set<long> ids;
  DIR* dir = opendir("/proc/self/task");
  REQUIRE(dir != nullptr);
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ids.insert(std::atol(e->d_name));
  closedir(dir);
  return ids;
}
#endif

TEST_CASE("ParallelFor visits every item once, for any budget and amount of work", "[cpu][threads]") {
  for (int threads : {1, 2, 3, 8})
    for (index_t n : {1, 2, 7, 100, 4099})
      for (index_t cost : {1, 1000, 1 << 20}) {
        INFO("threads " << threads << " n " << n << " cost per item " << cost);
        const std::vector<int> counts = Visits(n, cost, threads);
        CHECK(std::count(counts.begin(), counts.end(), 1) == n);
      }
}

TEST_CASE("ParallelFor inside a ParallelFor body visits every item once", "[cpu][threads]") {
  const ScopedThreadLimit limit(4);
  std::vector<std::atomic<int>> seen(64 * 300);
  for (auto& s : seen) s = 0;
  ParallelFor(64, 1 << 16, [&](index_t begin, index_t end) {
    for (index_t row = begin; row < end; ++row)
      ParallelFor(300, 1 << 10, [&](index_t b, index_t e) {
        for (index_t i = b; i < e; ++i) ++seen[static_cast<size_t>(row * 300 + i)];
      });
  });
  index_t once = 0;
  for (auto& s : seen) once += s.load() == 1;
  CHECK(once == 64 * 300);
}

TEST_CASE("ParallelFor rethrows a block's exception on the calling thread", "[cpu][threads]") {
  const ScopedThreadLimit limit(4);
  std::atomic<index_t> done{0};
  auto failing = [&](index_t begin, index_t end) {
    if (begin <= 500 && 500 < end) throw std::runtime_error("item 500 failed");
    done += end - begin;
  };
  CHECK_THROWS_WITH(ParallelFor(1000, 1 << 16, failing), Catch::Contains("item 500 failed"));
  CHECK(done.load() < 1000);
  // The threads are usable afterwards.
  const std::vector<int> counts = Visits(1000, 1 << 16, 4);
  CHECK(std::count(counts.begin(), counts.end(), 1) == 1000);
}

TEST_CASE("loops that want few threads and loops that want many share one pool of threads", "[cpu][threads]") {
#if defined(__linux__) && defined(_OPENMP)
  const ScopedThreadLimit limit(8);
  std::vector<float> data(1 << 16, 1.0f);
  auto loop = [&](index_t n, index_t cost) {
    ParallelFor(n, cost, [&](index_t begin, index_t end) {
      for (index_t i = begin; i < end; ++i) data[static_cast<size_t>(i)] += 1.0f;
    });
  };
  loop(1 << 16, 64);  // the whole budget: the pool grows to 8 threads
  const std::set<long> before = ThreadIds();
  for (int r = 0; r < 20; ++r) {
    loop(1 << 16, 64);       // 8 threads
    loop(3, kSerialCutoff);  // 3 shares
    loop(2, kSerialCutoff);  // 2 shares
  }
  // A region smaller than the last used to end libgomp's surplus threads, and the next larger one made new
  // ones. (Threads an earlier, larger budget left may still be ending: only new ids count.)
  const std::set<long> after = ThreadIds();
  CHECK(std::includes(before.begin(), before.end(), after.begin(), after.end()));
  CHECK(data[0] == 1.0f + 1.0f + 3.0f * 20);
#else
  WARN("skipped: counts threads through Linux's /proc/self/task, in an OpenMP build");
#endif
}

}  // namespace
