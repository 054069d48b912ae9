// pcg_random.h — PCGRandom32 / PCGRandom64: bit generators of O'Neill's PCG family ("PCG: A Family of
// Simple Fast Space-Efficient Statistically Good Algorithms for Random Number Generation", 2014) that run
// on the host and in device code (mshadow's names), 16 bytes each, so a kernel can make one per thread:
//
//   __global__ void k(float* out) {
//     PCGRandom32 rng(seed, blockIdx.x * blockDim.x + threadIdx.x);   // a sequence per thread
//     UniformRealDistribution<gpu, PCGRandom32, float> uniform;       // random_distribution.h
//     out[i] = uniform(rng);
//   }
//
// Both step the same 64-bit LCG; the sequence id picks its increment, so the 2^63 sequences of a seed are
// distinct streams. PCGRandom32 outputs 32 bits per step (XSH RR), PCGRandom64 64 bits (RXS M XS). Like the
// standard engines they have result_type, min(), max() and seed(), so std:: distributions take them too.
#pragma once
#include <cstdint>
#include "base.h"

namespace tensorexpr {
namespace detail {
// The LCG both generators step: state = state * multiplier + increment (increment odd, from the sequence).
struct PcgState {
  uint64_t state;
  uint64_t increment;

  // The PCG paper's seeding: start at 0 on the sequence's increment, step, add the seed, step.
  TE_XINLINE void Seed(uint64_t seed, uint64_t sequence) {
    increment = (sequence << 1u) | 1u;
    state = 0u;
    Step();
    state += seed;
    Step();
  }
  // Advances the state and returns the one before (the output functions permute it).
  TE_XINLINE uint64_t Step() {
    const uint64_t old = state;
    state = old * 6364136223846793005ull + increment;  // Knuth's MMIX multiplier, as in the paper
    return old;
  }
};
}  // namespace detail

// 32 random bits per call: the top bits of the state, xorshifted, rotated by its top five bits.
class PCGRandom32 {
 public:
  using result_type = uint32_t;
  static constexpr uint64_t kDefaultSeed = 0x853c49e6748fea9bull;  // the PCG reference's default
  static constexpr uint64_t kDefaultSequence = 0xda3e39cb94b95bdbull;

  TE_XINLINE explicit PCGRandom32(uint64_t seed_value = kDefaultSeed, uint64_t sequence = kDefaultSequence) {
    seed(seed_value, sequence);
  }
  // The same seed and sequence give the same numbers; another seed or sequence, others.
  TE_XINLINE void seed(uint64_t seed_value = kDefaultSeed, uint64_t sequence = kDefaultSequence) {
    pcg_.Seed(seed_value, sequence);
  }
  TE_XINLINE result_type operator()() {
    const uint64_t old = pcg_.Step();
    const uint32_t xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const uint32_t rotation = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rotation) | (xorshifted << ((0u - rotation) & 31u));
  }
  TE_XINLINE static constexpr result_type min() { return 0u; }
  TE_XINLINE static constexpr result_type max() { return 0xffffffffu; }

 private:
  detail::PcgState pcg_;
};

// 64 random bits per call: the state shifted by its top bits, multiplied, xorshifted (every 64-bit value
// comes once per period of 2^64, which sampling cannot tell from random).
class PCGRandom64 {
 public:
  using result_type = uint64_t;
  static constexpr uint64_t kDefaultSeed = 0x853c49e6748fea9bull;
  static constexpr uint64_t kDefaultSequence = 0xda3e39cb94b95bdbull;

  TE_XINLINE explicit PCGRandom64(uint64_t seed_value = kDefaultSeed, uint64_t sequence = kDefaultSequence) {
    seed(seed_value, sequence);
  }
  TE_XINLINE void seed(uint64_t seed_value = kDefaultSeed, uint64_t sequence = kDefaultSequence) {
    pcg_.Seed(seed_value, sequence);
  }
  TE_XINLINE result_type operator()() {
    const uint64_t old = pcg_.Step();
    const uint64_t word = ((old >> ((old >> 59u) + 5u)) ^ old) * 12605985483714917081ull;
    return (word >> 43u) ^ word;
  }
  TE_XINLINE static constexpr result_type min() { return 0u; }
  TE_XINLINE static constexpr result_type max() { return ~0ull; }

 private:
  detail::PcgState pcg_;
};

}  // namespace tensorexpr
