// bench/bandwidth_cpu.cpp — the expression families (families.h) on the host CPU against memcpy at the
// same thread count, measured in this one run: x of (N, 256, 3136) fp32 (N = 32: 103 MB by default), each
// family alternating with a threaded memcpy of x (the threads each copy a contiguous share, as the
// library's ParallelFor splits work). Timing: std::chrono::steady_clock around each repetition, median.
//
// Usage: bandwidth_cpu [--threads 16[,2...]] [--n 32] [--reps 10] [--isa best|baseline]
// --isa baseline: the kernels' hand-written vector paths keep to SSE2 (cpu/isa.h), to compare with AVX2's.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "families.h"

namespace {
using namespace tensorexpr;

// Median milliseconds of `reps` runs of each function, alternating, after one warm-up run of each.
std::vector<double> AlternatingMedians(int reps, const std::vector<std::function<void()>>& fs) {
  for (const auto& f : fs) f();
  std::vector<std::vector<double>> times(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (size_t i = 0; i < fs.size(); ++i) {
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
  bool baseline_isa = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads_arg = argv[++i];
    else if (a == "--n" && i + 1 < argc) n = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--isa" && i + 1 < argc && (std::string(argv[i + 1]) == "best" || std::string(argv[i + 1]) == "baseline"))
      baseline_isa = std::string(argv[++i]) == "baseline";
    else {
      std::fprintf(stderr, "usage: %s [--threads 16[,2...]] [--n 32] [--reps 10] [--isa best|baseline]\n", argv[0]);
      return 2;
    }
  }
  try {
    TE_CHECK(n >= 1 && reps >= 1, "need --n and --reps >= 1 (got ", n, ", ", reps, ")");
    const cpu_isa::ScopedIsaLimit isa(baseline_isa ? cpu_isa::Isa::kBaseline : cpu_isa::Isa::kAvx2);
    std::printf("vector paths: %s\n", cpu_isa::ActiveIsa() == cpu_isa::Isa::kAvx2 ? "AVX2" : "baseline (SSE2)");
    std::mt19937 rng(20241124u);
    const families::FamilyHooks<cpu> hooks{
        [&](Tensor<cpu, 1, float> t) {
          std::uniform_real_distribution<float> u(-1.0f, 1.0f);
          for (index_t i = 0; i < t.shape_[0]; ++i) t.dptr_[i] = u(rng);
        },
        [&](const std::vector<std::function<void()>>& fs) { return AlternatingMedians(reps, fs); },
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
