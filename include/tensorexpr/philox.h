// philox.h — the Philox4x32-10 counter-based generator (Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC'11) as one function of host and device code: a block of four 32-bit
// words from a 128-bit counter and a 64-bit key, with no state between blocks, so any block can be
// computed by any thread in any order.
//
//   PhiloxWords w = Philox4x32_10(counter, key0, key1);      // the paper's function, Random123's numbers
//   PhiloxWords b = PhiloxBlock(seed, subsequence, block);    // in cuRAND's layout (below)
//
// cuRAND's layout: curand_init(seed, subsequence, offset, &state) on a curandStatePhilox4_32_10_t takes
// key = (low 32 bits of seed, high 32 bits) and counter = (low and high 32 bits of offset / 4, low and high
// 32 bits of subsequence); curand4(&state) then returns that counter's block and steps the counter by one
// (a carry out of the low 64 bits runs into the subsequence's words). So PhiloxBlock(seed, subsequence,
// block) is curand4() after curand_init(seed, subsequence, 4 * block), and the words of one subsequence
// are one stream: word k is word k % 4 of block k / 4. PhiloxRandom<Device> (random_philox.h) fills
// tensors from these blocks.
#pragma once
#include <cstdint>
#include "base.h"

namespace tensorexpr {

// Four 32-bit words: a Philox counter or a block of output.
struct PhiloxWords {
  uint32_t w[4];
};

namespace detail {
// The round multipliers and the Weyl key increments of Philox4x32 (the paper's constants).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

// The high and low 32 bits of a * b.
TE_XINLINE uint32_t MulHiLo32(uint32_t a, uint32_t b, uint32_t* low) {
#if defined(__CUDA_ARCH__)
  *low = a * b;
  return __umulhi(a, b);
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *low = static_cast<uint32_t>(p);
  return static_cast<uint32_t>(p >> 32);
#endif
}

// One round: two 32x32 -> 64-bit products, their halves crossed with the other two words and the key.
TE_XINLINE PhiloxWords PhiloxRound(const PhiloxWords& c, uint32_t k0, uint32_t k1) {
  uint32_t lo0, lo1;
  const uint32_t hi0 = MulHiLo32(kPhiloxM0, c.w[0], &lo0);
  const uint32_t hi1 = MulHiLo32(kPhiloxM1, c.w[2], &lo1);
  return PhiloxWords{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
}
}  // namespace detail

// Philox4x32 with 10 rounds of `counter` under the key (key0, key1): the words of Random123's
// philox4x32_R(10, counter, key), word 0 first.
TE_XINLINE PhiloxWords Philox4x32_10(PhiloxWords counter, uint32_t key0, uint32_t key1) {
  TE_UNROLL
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key0 += detail::kPhiloxW0, key1 += detail::kPhiloxW1;  // the key schedule: a Weyl sequence
    counter = detail::PhiloxRound(counter, key0, key1);
  }
  return counter;
}

// Block `block` of subsequence `subsequence` under `seed`, in cuRAND's layout (see the top of this file):
// counter = block + 2^64 * subsequence, key = seed.
TE_XINLINE PhiloxWords PhiloxBlock(uint64_t seed, uint64_t subsequence, uint64_t block) {
  const PhiloxWords counter{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                             static_cast<uint32_t>(subsequence), static_cast<uint32_t>(subsequence >> 32)}};
  return Philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

}  // namespace tensorexpr
