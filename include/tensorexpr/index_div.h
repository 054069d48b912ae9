// index_div.h — IndexDiv: divides non-negative indices by a divisor fixed when a plan is built, with a
// multiply-high and two shifts instead of a hardware division. Why: a 64-bit division costs 20-90 cycles
// on a CPU and is a ~100-instruction software routine on a GPU, while plans that re-index (broadcast,
// reshape, transpose, slice, concat, pad, crop, pool, the patch expressions) divide for every element.
// A multiply also cannot trap, so a CPU compiler may hoist a division that depends on the row only out
// of the loop over columns. It is the library's one integer divider, in two widths.
//
// The method is Granlund & Montgomery's (1994, fig. 4.1), the one compilers use for constant divisors:
// for words of N bits (64 for IndexDiv, 32 for IndexDiv32), with l = ceil(log2 d) and
// m = floor(2^N (2^l - d) / d) + 1,
//   t = mulhi(m, n),  n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)
// exact for every N-bit unsigned n and every divisor 1 <= d < 2^(N-1) (d = 1 gives m = 1, t = 0: n itself).
#pragma once
#include <cstdint>
#include <limits>
#include "base.h"

namespace tensorexpr {

namespace detail {
// The unsigned word of an index type's width, and the word twice as wide (the host's multiply-high).
template <typename T>
struct DivWords;
template <>
struct DivWords<index_t> {
  using U = uint64_t;
  __extension__ typedef unsigned __int128 Wide;  // (__extension__ keeps -Wpedantic quiet)
};
template <>
struct DivWords<int> {
  using U = uint32_t;
  using Wide = uint64_t;
};
}  // namespace detail

// The divider for indices of type T: IndexDiv (index_t) for plans, IndexDiv32 (int) for kernels whose
// indices all fit an int (the 32-bit launches of the patch kernels), where a 32-bit multiply-high is one
// instruction and the 64-bit one several.
template <typename T>
struct BasicIndexDiv {
  using U = typename detail::DivWords<T>::U;
  using Wide = typename detail::DivWords<T>::Wide;
  static constexpr int kBits = 8 * static_cast<int>(sizeof(U));

  U magic_;
  int shift1_, shift2_;
  T divisor_;

  // Host only (plans are built on the host). Divisors below 1 become 1: they only occur for empty
  // shapes, whose plans are never evaluated. IndexDiv32's past an int: an Error.
  static BasicIndexDiv Make(index_t d) {
    if (d < 1) d = 1;
    if constexpr (sizeof(T) < sizeof(index_t))
      TE_CHECK(d <= index_t(std::numeric_limits<T>::max()), "IndexDiv32: divisor ", d, " does not fit an int");
    int l = 0;
    while ((uint64_t(1) << l) < static_cast<uint64_t>(d)) ++l;
    const Wide num = static_cast<Wide>((U(1) << l) - static_cast<U>(d)) << kBits;
    BasicIndexDiv r;
    r.magic_ = static_cast<U>(num / static_cast<U>(d)) + 1;
    r.shift1_ = l < 1 ? l : 1;
    r.shift2_ = l > 1 ? l - 1 : 0;
    r.divisor_ = static_cast<T>(d);
    return r;
  }

  // n / divisor_, for 0 <= n.
  TE_XINLINE T Div(T n) const {
    const U u = static_cast<U>(n);
    const U t = MulHi(magic_, u);
    return static_cast<T>((t + ((u - t) >> shift1_)) >> shift2_);
  }
  // n % divisor_, given q = n / divisor_.
  TE_XINLINE T Rem(T n, T q) const { return n - q * divisor_; }
  // n / divisor_, with n % divisor_ in *rem.
  TE_XINLINE T DivMod(T n, T* rem) const {
    const T q = Div(n);
    *rem = n - q * divisor_;
    return q;
  }

 private:
  TE_XINLINE static U MulHi(U a, U b) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(U) == 8) {
      return __umul64hi(a, b);
    } else {
      return __umulhi(a, b);
    }
#else
    return static_cast<U>((static_cast<Wide>(a) * b) >> kBits);
#endif
  }
};

using IndexDiv = BasicIndexDiv<index_t>;
using IndexDiv32 = BasicIndexDiv<int>;

}  // namespace tensorexpr
