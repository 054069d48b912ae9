// cpu/threads.h — the CPU thread count and the one parallel loop every CPU kernel uses.
// Work is split like a window: each thread gets one contiguous block of the outer range. Small work runs
// serially (thread start-up costs more than it saves). OpenBLAS is kept single-threaded and called from
// inside these regions (cpu_blas::ParallelGemm), so one pool of threads owns the cores.
#pragma once
#include <algorithm>
#include "../base.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace tensorexpr {
namespace detail {
inline int& NumThreadsSetting() {
  static int n = 0;  // 0: not set, use the OpenMP default
  return n;
}
}  // namespace detail

// Threads used by CPU evaluation (and handed to OpenBLAS by the BLAS layer).
inline int GetNumThreads() {
  int n = detail::NumThreadsSetting();
  if (n > 0) return n;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
inline void SetNumThreads(int n) {
  TE_CHECK(n >= 1, "SetNumThreads: need at least one thread, got ", n);
  detail::NumThreadsSetting() = n;
}

// Below this many elementary operations a loop runs on one thread.
constexpr index_t kSerialCutoff = index_t(1) << 15;

// Calls body(begin, end) over [0, n) split into one contiguous block per thread.
// cost_per_item estimates the work of one item in elementary operations.
template <typename Body>
inline void ParallelFor(index_t n, index_t cost_per_item, Body body) {
  if (n <= 0) return;
  int nthreads = GetNumThreads();
  const index_t total = n * std::max<index_t>(cost_per_item, 1);
  if (nthreads <= 1 || total < kSerialCutoff || n == 1) {
    body(index_t(0), n);
    return;
  }
  nthreads = static_cast<int>(std::min<index_t>(nthreads, std::min<index_t>(n, total / (kSerialCutoff / 4) + 1)));
#ifdef _OPENMP
#pragma omp parallel num_threads(nthreads)
  {
    const index_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const index_t chunk = (n + nt - 1) / nt;
    const index_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
  }
#else
  body(index_t(0), n);
#endif
}

}  // namespace tensorexpr
