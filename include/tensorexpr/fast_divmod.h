// fast_divmod.h — FastDivmod: division by a run-time constant as a multiply and a shift.
// Plans of the image expressions (pad, crop, pool, unpack_patch2col, ...) split a flat row index into
// (image, channel, y) once per element; on a GPU every element is its own thread, and a 64-bit integer
// division there costs dozens of instructions. The divisor is fixed when the plan is made, so the
// division becomes q = (n + mulhi(n, m)) >> s (Granlund & Montgomery, "Division by invariant integers
// using multiplication", 1994, round-up variant). That is exact for every 0 <= n < 2^32 and divisor
// 1 <= d <= 2^31; the plan says how large its dividends get, and larger ones take a plain division.
#pragma once
#include <cstdint>
#include <type_traits>
#include "base.h"

namespace tensorexpr {

struct FastDivmod {
  index_t divisor_ = 1;
  uint32_t multiplier_ = 0;
  uint32_t shift_ = 0;
  bool fast_ = true;  // every dividend this divisor will see is below 2^32

  FastDivmod() = default;
  // d >= 1; max_dividend bounds every n later passed to Div / DivMod (it picks the fast path).
  FastDivmod(index_t d, index_t max_dividend) : divisor_(d) {
    TE_CHECK(d >= 1, "FastDivmod: divisor must be at least 1, got ", d);
    fast_ = d <= (index_t(1) << 31) && max_dividend < (index_t(1) << 32);
    if (!fast_) return;
    uint32_t l = 0;
    while ((uint64_t(1) << l) < static_cast<uint64_t>(d)) ++l;  // l = ceil(log2(d))
    shift_ = l;
    // m = floor(2^32 * (2^l - d) / d) + 1 < 2^32 for d <= 2^31.
    multiplier_ = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << l) - static_cast<uint64_t>(d))) /
                                            static_cast<uint64_t>(d) + 1);
  }

  // n / d for 0 <= n <= max_dividend.
  TE_XINLINE index_t Div(index_t n) const {
    if (fast_) {
      const uint32_t n32 = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
      const uint64_t hi = __umulhi(n32, multiplier_);
#else
      const uint64_t hi = (static_cast<uint64_t>(n32) * multiplier_) >> 32;
#endif
      return static_cast<index_t>((hi + n32) >> shift_);
    }
    return n / divisor_;
  }
  // quotient and remainder at once.
  TE_XINLINE index_t DivMod(index_t n, index_t* rem) const {
    const index_t q = Div(n);
    *rem = n - q * divisor_;
    return q;
  }
};
static_assert(std::is_trivially_copyable<FastDivmod>::value, "FastDivmod travels inside plans, which are copied to the GPU");

}  // namespace tensorexpr
