// fuzz/fuzz_util.h — what the libFuzzer harnesses share: hostile 64-bit values drawn from the fuzz bytes,
// and a trap that prints why before it stops the run (libFuzzer then saves the input as a crash).
#pragma once
#include <fuzzer/FuzzedDataProvider.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace te_fuzz {

using index_t = int64_t;

// What the harness is testing, printed with a failed check.
inline std::string& Context() {
  static std::string c;
  return c;
}

// With TE_FUZZ_TRACE set, prints each case before it runs (to read what a sanitizer report was about).
inline void Trace() {
  static const bool on = std::getenv("TE_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "case: %s\n", Context().c_str());
}

inline std::string VecStr(const std::vector<index_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + ")";
}

// Prints `what` and the case, and traps: the run is a crash that libFuzzer records with its input.
[[noreturn]] inline void Bug(const char* what) {
  std::fprintf(stderr, "fuzz check failed: %s\n  case: %s\n", what, Context().c_str());
  __builtin_trap();
}
#define TE_FUZZ_CHECK(cond) \
  do {                      \
    if (!(cond)) ::te_fuzz::Bug(#cond); \
  } while (0)

// An extent-like value: mostly small, often an edge of the 32- and 64-bit ranges (where products and sums
// wrap), sometimes any 64-bit value. The fuzzer steers which through the selector byte.
inline index_t Hostile(FuzzedDataProvider& f, index_t small_max = 9) {
  static const index_t kEdges[] = {0, 1, -1, 2, -2, 3, 7, 28, 255, 256, 65535, 65536,
                                   (1LL << 31) - 1, 1LL << 31, (1LL << 32) - 1, 1LL << 32, (1LL << 32) + 1,
                                   2097152, 2097153, 3037000499, 3037000500, 1LL << 62, (1LL << 62) + 1,
                                   std::numeric_limits<index_t>::max() - 1, std::numeric_limits<index_t>::max(),
                                   std::numeric_limits<index_t>::min(), std::numeric_limits<index_t>::min() + 1,
                                   std::numeric_limits<index_t>::max() / 2, std::numeric_limits<index_t>::max() / 3};
  switch (f.ConsumeIntegralInRange<int>(0, 4)) {
    case 0:
    case 1: return f.ConsumeIntegralInRange<index_t>(0, small_max);
    case 2: return kEdges[f.ConsumeIntegralInRange<size_t>(0, sizeof kEdges / sizeof kEdges[0] - 1)];
    case 3: return (index_t(1) << f.ConsumeIntegralInRange<int>(0, 62)) + f.ConsumeIntegralInRange<index_t>(-2, 2);
    default: return f.ConsumeIntegral<index_t>();
  }
}

// 0 to max_len hostile values (an empty vector means "the default" for most parameters).
inline std::vector<index_t> HostileVec(FuzzedDataProvider& f, size_t max_len, index_t small_max = 9) {
  std::vector<index_t> v(f.ConsumeIntegralInRange<size_t>(0, max_len));
  for (index_t& x : v) x = Hostile(f, small_max);
  return v;
}

// A double that may be NaN, infinite, negative, tiny or huge.
inline double HostileDouble(FuzzedDataProvider& f) {
  static const double kEdges[] = {std::nan(""), -std::nan(""), INFINITY, -INFINITY, -1.0, -0.0, 0.0, 1e-300, 1e-9,
                                  0.5, 1.0, 1024.0, 4.6e18 / 1048576.0, 1.8e13, 1e300,
                                  std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min()};
  if (f.ConsumeBool()) return kEdges[f.ConsumeIntegralInRange<size_t>(0, sizeof kEdges / sizeof kEdges[0] - 1)];
  return f.ConsumeFloatingPoint<double>();
}

}  // namespace te_fuzz
