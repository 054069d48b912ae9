// random_bits.h — turning the words of a bit generator into numbers, on the host and on the device:
// full-width words, reals uniform on [0, 1), and integers uniform on a closed range.
//
// A bit generator is anything with `result_type operator()()`, min() == 0 and max() == 2^32 - 1 or
// 2^64 - 1 (static constexpr): std::mt19937, PCGRandom32 / PCGRandom64 (pcg_random.h), a cuRAND state
// adapter. Random<Device, DType> and the distributions (random_distribution.h) draw through these, so an
// idea such as "an unbiased integer in [lo, hi]" has one implementation for every device.
#pragma once
#include <cstdint>
#include <type_traits>
#include "base.h"

namespace tensorexpr {
namespace detail {

// How many random bits one call of a generator gives: 32 or 64.
template <typename Rng>
constexpr int RngBits() {
  static_assert(Rng::min() == 0 && (static_cast<uint64_t>(Rng::max()) == 0xffffffffull ||
                                    static_cast<uint64_t>(Rng::max()) == ~0ull),
                "a bit generator must give whole 32- or 64-bit words (min() == 0, max() == 2^32 - 1 or 2^64 - 1)");
  return static_cast<uint64_t>(Rng::max()) == 0xffffffffull ? 32 : 64;
}

// One uniformly random uint32_t or uint64_t: a 64-bit generator's top half, or two 32-bit words.
template <typename Word, typename Rng>
TE_XINLINE Word RandomWord(Rng& rng) {
  static_assert(std::is_same<Word, uint32_t>::value || std::is_same<Word, uint64_t>::value,
                "RandomWord gives uint32_t or uint64_t");
  if constexpr (RngBits<Rng>() == 64) {
    const uint64_t w = static_cast<uint64_t>(rng());
    return static_cast<Word>(sizeof(Word) == 4 ? w >> 32 : w);
  } else if constexpr (sizeof(Word) == 4) {
    return static_cast<uint32_t>(rng());
  } else {
    const uint64_t high = static_cast<uint64_t>(static_cast<uint32_t>(rng())) << 32;
    return high | static_cast<uint32_t>(rng());
  }
}

// A real uniform on [0, 1): the top 24 (float) or 53 (double) bits of a word, times 2^-24 / 2^-53, so
// every value is exact and 1 is never reached.
template <typename Real, typename Rng>
TE_XINLINE Real UnitInterval(Rng& rng) {
  static_assert(std::is_same<Real, float>::value || std::is_same<Real, double>::value,
                "UnitInterval draws float or double");
  if constexpr (std::is_same<Real, float>::value) {
    return static_cast<float>(RandomWord<uint32_t>(rng) >> 8) * (1.0f / 16777216.0f);
  } else {
    return static_cast<double>(RandomWord<uint64_t>(rng) >> 11) * (1.0 / 9007199254740992.0);
  }
}

// The high 64 bits of a * b, the low ones in *low (portable; the device has an instruction for it).
TE_XINLINE uint64_t MulHigh64(uint64_t a, uint64_t b, uint64_t* low) {
  *low = a * b;
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  const uint64_t a0 = a & 0xffffffffull, a1 = a >> 32, b0 = b & 0xffffffffull, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t middle = (p00 >> 32) + (p01 & 0xffffffffull) + (p10 & 0xffffffffull);  // < 3 * 2^32
  return p11 + (p01 >> 32) + (p10 >> 32) + (middle >> 32);
#endif
}

// An integer uniform on [0, span] (all span + 1 values equally likely), by Lemire's multiply-and-reject
// ("Fast random integer generation in an interval", 2019): the high word of word * count is the value; the
// few words whose low part falls below 2^w mod count are redrawn, which removes the bias. Spans below 2^32
// take one 32-bit word per try, wider ones a 64-bit word.
template <typename Rng>
TE_XINLINE uint64_t UniformOffset(Rng& rng, uint64_t span) {
  if (span < 0xffffffffull) {
    const uint32_t count = static_cast<uint32_t>(span) + 1u;
    uint64_t m = static_cast<uint64_t>(RandomWord<uint32_t>(rng)) * count;
    if (static_cast<uint32_t>(m) < count) {
      const uint32_t threshold = (0u - count) % count;  // 2^32 mod count
      while (static_cast<uint32_t>(m) < threshold) m = static_cast<uint64_t>(RandomWord<uint32_t>(rng)) * count;
    }
    return m >> 32;
  }
  if (span == 0xffffffffull) return RandomWord<uint32_t>(rng);
  if (span == ~0ull) return RandomWord<uint64_t>(rng);
  const uint64_t count = span + 1u;
  uint64_t low;
  uint64_t high = MulHigh64(RandomWord<uint64_t>(rng), count, &low);
  if (low < count) {
    const uint64_t threshold = (0ull - count) % count;  // 2^64 mod count
    while (low < threshold) high = MulHigh64(RandomWord<uint64_t>(rng), count, &low);
  }
  return high;
}

// The number of steps from lo up to hi (hi >= lo), exact for every integer type, signed or not.
template <typename Int>
TE_XINLINE uint64_t IntegerSpan(Int lo, Int hi) {
  return static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // modulo 2^64: exact because hi >= lo
}
// An integer uniform on the closed range [lo, lo + span] (span from IntegerSpan).
template <typename Int, typename Rng>
TE_XINLINE Int UniformInteger(Rng& rng, Int lo, uint64_t span) {
  return static_cast<Int>(static_cast<uint64_t>(lo) + UniformOffset(rng, span));
}

// Every bit of an integer type random: its full range, each value equally likely.
template <typename Int, typename Rng>
TE_XINLINE Int RandomInteger(Rng& rng) {
  static_assert(std::is_integral<Int>::value && !std::is_same<Int, bool>::value,
                "random integers fill an integer type (not bool)");
  using Word = typename std::conditional<(sizeof(Int) <= 4), uint32_t, uint64_t>::type;
  return static_cast<Int>(RandomWord<Word>(rng));
}

// lo + width * u rounded to DType never falls below lo, but it can round up onto the excluded bound hi
// (when hi is a few ulps above lo, or DType is coarser than the arithmetic): such a draw is drawn again.
// At least half the draws lie below hi (the worst case being hi just one ulp above lo), so this ends fast.
template <typename DType, typename Draw>
TE_XINLINE DType DrawBelow(const DType& hi, Draw&& draw) {
  DType v = static_cast<DType>(draw());
  while (!(v < hi)) v = static_cast<DType>(draw());
  return v;
}

}  // namespace detail
}  // namespace tensorexpr
