// cpu/threads.h — the CPU thread count and the one parallel loop every CPU kernel uses.
// Each thread gets one contiguous share of the outer range and takes over blocks of the others' shares
// when it finishes first. Small work runs serially (thread start-up costs more than it saves). OpenBLAS
// is kept single-threaded and called from inside these regions (cpu_blas::ParallelGemm), so one pool of
// threads owns the cores.
#pragma once
#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
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
// The calling thread's budget while it evaluates for a stream that has one (0: none).
inline int& ThreadLimit() {
  thread_local int n = 0;
  return n;
}
}  // namespace detail

// Threads used by CPU evaluation (and handed to OpenBLAS by the BLAS layer): the budget of the stream
// being evaluated for, else SetNumThreads's value, else OpenMP's default.
inline int GetNumThreads() {
  if (detail::ThreadLimit() > 0) return detail::ThreadLimit();
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

// While alive, CPU loops started by this thread use at most `threads` threads (0: no limit of its own).
// Scopes nest, and a nested scope only narrows: inside a one-thread worker, a stream's larger budget
// does not start threads again. Each puts the previous limit back.
class ScopedThreadLimit {
 public:
  explicit ScopedThreadLimit(int threads) : saved_(detail::ThreadLimit()) {
    if (threads > 0) detail::ThreadLimit() = saved_ > 0 ? std::min(saved_, threads) : threads;
  }
  ~ScopedThreadLimit() { detail::ThreadLimit() = saved_; }
  ScopedThreadLimit(const ScopedThreadLimit&) = delete;
  ScopedThreadLimit& operator=(const ScopedThreadLimit&) = delete;

 private:
  int saved_;
};

// Below this many elementary operations a loop runs on one thread.
constexpr index_t kSerialCutoff = index_t(1) << 15;

namespace detail {
// A cache line of its own per counter: the threads bump them concurrently.
struct alignas(64) BlockCounter {
  std::atomic<index_t> next{0};
};
}  // namespace detail

namespace detail {
// A block's body with its type erased: every ParallelFor shares one compiled OpenMP region, and each
// body is compiled once (into its trampoline) rather than once per call site.
using BlockFn = void (*)(const void* body, index_t begin, index_t end);

// Not inlined: the serial and the threaded path then share this one copy of the body's loops.
template <typename Body>
#if defined(__GNUC__)
__attribute__((noinline))
#endif
void RunBlock(const void* body, index_t begin, index_t end) {
  (*static_cast<const Body*>(body))(begin, end);
}

// Runs fn over [0, n) in `nthreads` (> 1) shares of `share` items and blocks of `block`, from a region of
// `team` >= nthreads threads whose first nthreads each own a share.
//
// The region always has the caller's whole budget of threads, however few the work wants: libgomp keeps
// one pool of threads, lets the threads a smaller region leaves out end, and creates new ones for the
// next larger region. With teams sized by each loop's work, a 16-thread budget alternating between loops
// of 16 and of 3 threads created 13 threads per pair of loops (tests/threads_test.cc counts them). Threads
// past nthreads take no share and wait at the region's end, which costs a wake-up per loop where the
// budget exceeds the free cores. (PyTorch's parallel_for works around the same behaviour the same way:
// pytorch/pytorch#32008, fixed by #32875.) A nested region, which libgomp never takes from the pool,
// asks for the shares' threads alone.
inline void RunShares(index_t n, int team, int nthreads, index_t share, index_t block, BlockFn fn, const void* body) {
#ifdef _OPENMP
  std::unique_ptr<BlockCounter[]> taken(new BlockCounter[static_cast<size_t>(nthreads)]);
  std::exception_ptr error;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(omp_in_parallel() ? nthreads : team)
  {
    // Own share first, then the others' (all nthreads shares, should OpenMP have granted fewer threads).
    const int t = omp_get_thread_num();
    for (int k = 0; t < nthreads && k < nthreads && !failed.load(std::memory_order_relaxed); ++k) {
      const index_t owner = (t + k) % nthreads, lo = owner * share, hi = std::min(n, lo + share);
      while (!failed.load(std::memory_order_relaxed)) {
        const index_t begin = lo + taken[static_cast<size_t>(owner)].next.fetch_add(1, std::memory_order_relaxed) * block;
        if (begin >= hi) break;
        try {
          fn(body, begin, std::min(hi, begin + block));
        } catch (...) {
          // exchange() lets exactly one thread store its exception; the region's end publishes it.
          if (!failed.exchange(true)) error = std::current_exception();
        }
      }
    }
  }
  if (error) std::rethrow_exception(error);
#else
  (void)team, (void)nthreads, (void)share, (void)block;
  fn(body, index_t(0), n);
#endif
}
}  // namespace detail

// Calls body(begin, end) over disjoint blocks that cover [0, n), from up to GetNumThreads() threads.
// cost_per_item estimates the work of one item in elementary operations.
//
// Each thread owns a contiguous share of the range (the same share for the same n and thread count, so
// consecutive loops over one tensor find their part in the core's cache) and works through it in a few
// blocks; a thread that finishes its share takes the remaining blocks of the others. A thread that the
// OS delays (a busy machine, a virtual CPU's stolen time) then holds the loop up by one block, not by
// its whole share. body must not depend on which thread runs a block.
//
// An exception must not leave an OpenMP region (it would terminate the process): the first one a block
// throws is kept, the threads stop taking blocks, and it is rethrown here on the calling thread.
template <typename Body>
inline void ParallelFor(index_t n, index_t cost_per_item, Body body) {
  if (n <= 0) return;
  const detail::BlockFn run = &detail::RunBlock<Body>;
  const int team = GetNumThreads();
  const index_t cost = std::max<index_t>(cost_per_item, 1), total = n * cost;
  if (team <= 1 || total < kSerialCutoff || n == 1) {
    run(&body, index_t(0), n);
    return;
  }
  const int nthreads = static_cast<int>(std::min<index_t>(team, std::min<index_t>(n, total / (kSerialCutoff / 4) + 1)));
  // Blocks per share: up to 4, each of at least kSerialCutoff / 4 operations.
  const index_t share = (n + nthreads - 1) / nthreads;
  const index_t per_share = std::max<index_t>(1, std::min<index_t>({4, share, share * cost / (kSerialCutoff / 4)}));
  detail::RunShares(n, team, nthreads, share, (share + per_share - 1) / per_share, run, &body);
}

}  // namespace tensorexpr
