// index_div.h — IndexDiv: divides non-negative indices by a divisor fixed when a plan is built, with a
// multiply-high and two shifts instead of a hardware division. Why: a 64-bit division costs 20-90 cycles
// on a CPU and is a ~100-instruction software routine on a GPU, while plans that re-index (broadcast,
// reshape, transpose, slice, concat, pad, crop, pool, the patch expressions) divide for every element.
// A multiply also cannot trap, so a CPU compiler may hoist a division that depends on the row only out
// of the loop over columns. It is the library's one integer divider.
//
// The method is Granlund & Montgomery's (1994, fig. 4.1), the one compilers use for constant divisors:
// with l = ceil(log2 d) and m = floor(2^64 (2^l - d) / d) + 1,
//   t = mulhi(m, n),  n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)
// exact for every 64-bit unsigned n and every divisor 1 <= d < 2^63 (d = 1 gives m = 1, t = 0: n itself).
#pragma once
#include "base.h"

namespace tensorexpr {

struct IndexDiv {
  // The GNU 128-bit integer for the host's high half of a product; __extension__ keeps -Wpedantic quiet.
  __extension__ typedef unsigned __int128 uint128;

  uint64_t magic_;
  int shift1_, shift2_;
  index_t divisor_;

  // Host only (plans are built on the host). Divisors below 1 become 1: they only occur for empty
  // shapes, whose plans are never evaluated.
  static IndexDiv Make(index_t d) {
    if (d < 1) d = 1;
    int l = 0;
    while ((uint64_t(1) << l) < static_cast<uint64_t>(d)) ++l;
    const uint128 num = static_cast<uint128>((uint64_t(1) << l) - static_cast<uint64_t>(d)) << 64;
    IndexDiv r;
    r.magic_ = static_cast<uint64_t>(num / static_cast<uint64_t>(d)) + 1;
    r.shift1_ = l < 1 ? l : 1;
    r.shift2_ = l > 1 ? l - 1 : 0;
    r.divisor_ = d;
    return r;
  }

  // n / divisor_, for 0 <= n.
  TE_XINLINE index_t Div(index_t n) const {
    const uint64_t u = static_cast<uint64_t>(n);
#if defined(__CUDA_ARCH__)
    const uint64_t t = __umul64hi(magic_, u);
#else
    const uint64_t t = static_cast<uint64_t>((static_cast<uint128>(magic_) * u) >> 64);
#endif
    return static_cast<index_t>((t + ((u - t) >> shift1_)) >> shift2_);
  }
  // n % divisor_, given q = n / divisor_.
  TE_XINLINE index_t Rem(index_t n, index_t q) const { return n - q * divisor_; }
  // n / divisor_, with n % divisor_ in *rem.
  TE_XINLINE index_t DivMod(index_t n, index_t* rem) const {
    const index_t q = Div(n);
    *rem = n - q * divisor_;
    return q;
  }
};

// IndexDiv's method in 32 bits, for kernels whose indices all fit an int (the 32-bit launches of the
// patch kernels): a 32-bit multiply-high where IndexDiv's 64-bit one takes several instructions on a GPU.
// With l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1, exact for every 0 <= n < 2^31 and every
// divisor 1 <= d < 2^31 (the method holds for all 32-bit unsigned n and d; ints are what the kernels hold).
struct IndexDiv32 {
  uint32_t magic_;
  int shift1_, shift2_;
  int divisor_;

  // Host only. Divisors below 1 become 1 (empty shapes, never evaluated); 2^31 or more an Error.
  static IndexDiv32 Make(index_t d) {
    if (d < 1) d = 1;
    TE_CHECK(d < (index_t(1) << 31), "IndexDiv32: divisor ", d, " does not fit an int");
    int l = 0;
    while ((int64_t(1) << l) < d) ++l;
    IndexDiv32 r;
    r.magic_ = static_cast<uint32_t>((((uint64_t(1) << l) - static_cast<uint64_t>(d)) << 32) / static_cast<uint64_t>(d) + 1);
    r.shift1_ = l < 1 ? l : 1;
    r.shift2_ = l > 1 ? l - 1 : 0;
    r.divisor_ = static_cast<int>(d);
    return r;
  }
  // n / divisor, for 0 <= n < 2^31.
  TE_XINLINE int Div(int n) const {
    const uint32_t u = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(magic_, u);
#else
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(magic_) * u) >> 32);
#endif
    return static_cast<int>((t + ((u - t) >> shift1_)) >> shift2_);
  }
  // n / divisor, with n % divisor in *rem.
  TE_XINLINE int DivMod(int n, int* rem) const {
    const int q = Div(n);
    *rem = n - q * divisor_;
    return q;
  }
};

}  // namespace tensorexpr
