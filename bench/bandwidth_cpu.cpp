// bench/bandwidth_cpu.cpp — the expression families (families.h) on the host CPU against memcpy at the
// same thread count, measured in this one run: x of (N, 256, 3136) fp32 (N = 32: 103 MB by default), each
// family alternating with a threaded memcpy of x (the threads each copy a contiguous share, as the
// library's ParallelFor splits work). Timing: std::chrono::steady_clock around each repetition, median.
// Every timed call, ours and memcpy's, follows an untimed threaded read of twice the last-level cache (the
// GPU bench's method): each starts with the caches holding nothing of its operands and no dirty lines of
// the call before, whose write-back would otherwise be charged to whatever runs next. --warm leaves that
// out: then a call finds what the one before left in cache, which moves the memcpy of a 103 MB tensor
// between 120 and 260 GB/s on a 300 MB L3 depending on the family it follows.
//
// Usage: bandwidth_cpu [--threads 16[,2...]] [--n 32] [--reps 10] [--isa best|baseline] [--warm]
// --isa baseline: the kernels' hand-written vector paths keep to SSE2 (cpu/isa.h), to compare with AVX2's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <unistd.h>
#include "families.h"

namespace {
using namespace tensorexpr;

// Reads a buffer of twice the last-level cache over the threads: afterwards the caches hold none of the
// benchmark's tensors and no dirty line of theirs.
class CacheFlush {
 public:
  CacheFlush() {
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    const size_t bytes = 2 * static_cast<size_t>(llc > 0 ? llc : 64L << 20);
    buffer_.assign(bytes / sizeof(float), 1.0f);
  }
  size_t bytes() const { return buffer_.size() * sizeof(float); }
  void operator()() const {
    const float* data = buffer_.data();
    ParallelFor(static_cast<index_t>(buffer_.size()), 1, [data](index_t begin, index_t end) {
      float s = 0.0f;
      for (index_t i = begin; i < end; i += 16) s += data[i];  // one load per 64-byte line
      volatile float keep = s;  // so that the loads are not optimised away
      (void)keep;
    });
  }

 private:
  std::vector<float> buffer_;
};

// Median milliseconds of `reps` runs of each function, alternating, after one warm-up run of each; with
// a flush, each timed run follows one.
std::vector<double> AlternatingMedians(int reps, const std::vector<std::function<void()>>& fs, const CacheFlush* flush) {
  for (const auto& f : fs) f();
  std::vector<std::vector<double>> times(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
      if (flush != nullptr) (*flush)();
      const auto start = std::chrono::steady_clock::now();
      fs[i]();
      times[i].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::vector<double> medians;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]));
  }
  return medians;
}

// memcpy of `bytes` split into one contiguous share per thread.
void ThreadedMemcpy(float* dst, const float* src, size_t bytes) {
  const index_t n = static_cast<index_t>(bytes / sizeof(float));
  ParallelFor(n, 1, [dst, src](index_t begin, index_t end) {
    std::memcpy(dst + begin, src + begin, sizeof(float) * static_cast<size_t>(end - begin));
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::string threads_arg = std::to_string(GetNumThreads());
  index_t n = 32;
  int reps = 10;
  bool baseline_isa = false, warm = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads_arg = argv[++i];
    else if (a == "--n" && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--isa" && i + 1 < argc && (std::string(argv[i + 1]) == "best" || std::string(argv[i + 1]) == "baseline"))
      baseline_isa = std::string(argv[++i]) == "baseline";
    else if (a == "--warm") warm = true;
    else {
      std::fprintf(stderr, "usage: %s [--threads 16[,2...]] [--n 32] [--reps 10] [--isa best|baseline] [--warm]\n", argv[0]);
      return 2;
    }
  }
  try {
    TE_CHECK(n >= 1 && reps >= 1, "need --n and --reps >= 1 (got ", n, ", ", reps, ")");
    const cpu_isa::ScopedIsaLimit isa(baseline_isa ? cpu_isa::Isa::kBaseline : cpu_isa::Isa::kAvx2);
    std::printf("vector paths: %s\n", cpu_isa::ActiveIsa() == cpu_isa::Isa::kAvx2 ? "AVX2" : "baseline (SSE2)");
    CacheFlush flush;
    if (warm) std::printf("caches: warm (each call finds what the one before left)\n");
    else std::printf("caches: flushed before each timed call (a read of %.0f MB)\n", flush.bytes() / 1e6);
    std::mt19937 rng(20241124u);
    const families::FamilyHooks<cpu> hooks{
        [&](Tensor<cpu, 1, float> t) {
          std::uniform_real_distribution<float> u(-1.0f, 1.0f);
          for (index_t i = 0; i < t.shape_[0]; ++i) t.dptr_[i] = u(rng);
        },
        [&](const std::vector<std::function<void()>>& fs) { return AlternatingMedians(reps, fs, warm ? nullptr : &flush); },
        &ThreadedMemcpy};
    bool ok = true;
    size_t pos = 0;
    while (pos <= threads_arg.size()) {
      const size_t comma = std::min(threads_arg.find(',', pos), threads_arg.size());
      const int threads = std::atoi(threads_arg.substr(pos, comma - pos).c_str());
      pos = comma + 1;
      TE_CHECK(threads >= 1, "--threads ", threads_arg, ": thread counts >= 1, separated by commas");
      SetNumThreads(threads);
      std::printf("\n=== %d threads ===", threads);
      const std::vector<families::FamilyResult> results = families::BenchFamilies<cpu>(nullptr, hooks, n);
      for (const auto& r : results) ok = ok && r.ok;
      families::PrintFamilies(results, families::PeerTimes(), "threaded memcpy");
    }
    return ok ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "bandwidth_cpu: %s\n", e.what());
    return 1;
  }
}
