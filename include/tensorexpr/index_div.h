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

}  // namespace tensorexpr
