// cpu/isa.h — which vector instruction set the CPU kernels' hand-written paths use, chosen at run time.
// The library builds for baseline x86-64 (SSE2), so that one binary runs on any x86-64 machine; kernels
// that gain from wider vectors (cpu/transpose_tiles.h) carry a second version compiled for AVX2 through
// TE_TARGET_AVX2 and take it when the processor has AVX2 (ActiveIsa). Tests and benchmarks lower the
// ceiling with ScopedIsaLimit to run the fallback on an AVX2 machine.
// Elsewhere (other architectures, compilers without GCC's target attribute) only the baseline exists.
#pragma once
#include <algorithm>
#include <atomic>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && defined(__SSE2__)
// The function is compiled for AVX2 and FMA (every AVX2 processor has both) whatever the build's -m flags;
// call it only when ActiveIsa() says so.
#define TE_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define TE_HAVE_AVX2_DISPATCH 1
#else
#define TE_HAVE_AVX2_DISPATCH 0
#endif

namespace tensorexpr {
namespace cpu_isa {

// In increasing order: each includes the ones before it.
enum class Isa : int { kBaseline = 0, kAvx2 = 1 };  // kAvx2: AVX2 with FMA

// The best the processor runs, checked once.
inline Isa DetectedIsa() {
#if TE_HAVE_AVX2_DISPATCH
  static const Isa isa = [] {
    __builtin_cpu_init();  // (needed only before static constructors have run; harmless after)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::kAvx2 : Isa::kBaseline;
  }();
  return isa;
#else
  return Isa::kBaseline;
#endif
}

namespace detail {
inline std::atomic<int>& IsaLimit() {
  static std::atomic<int> limit{static_cast<int>(Isa::kAvx2)};
  return limit;
}
}  // namespace detail

// What the kernels use: the processor's best, up to the limit ScopedIsaLimit sets. Kernels ask once per
// call, on the calling thread, before they start their threads.
inline Isa ActiveIsa() {
  const int limit = detail::IsaLimit().load(std::memory_order_relaxed);
  return static_cast<Isa>(std::min(static_cast<int>(DetectedIsa()), limit));
}

// While alive, kernels use at most `limit` (process-wide: for tests and benchmarks, not for concurrent use
// with kernels on other threads). Each puts the previous limit back.
class ScopedIsaLimit {
 public:
  explicit ScopedIsaLimit(Isa limit) : saved_(detail::IsaLimit().exchange(static_cast<int>(limit))) {}
  ~ScopedIsaLimit() { detail::IsaLimit().store(saved_); }
  ScopedIsaLimit(const ScopedIsaLimit&) = delete;
  ScopedIsaLimit& operator=(const ScopedIsaLimit&) = delete;

 private:
  int saved_;
};

}  // namespace cpu_isa
}  // namespace tensorexpr
