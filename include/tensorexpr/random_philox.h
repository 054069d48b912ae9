// random_philox.h — PhiloxRandom<Device>: a counter-based generator (Philox4x32-10, philox.h) that fills
// tensors in parallel with numbers that do not depend on the thread count, and are the same on the CPU and
// the GPU for the same seed.
//
//   PhiloxRandom<cpu> rnd(42);                 // or rnd(42, sequence, stream): another subsequence
//   rnd.SampleUniform(t, -1.0f, 1.0f);        // [-1, 1); float, double, half_t or bf16_t tensors, any rank
//   rnd.SampleGaussian(t, 0.0f, 0.01f);       // normal, mean 0, standard deviation 0.01
//   rnd.Seed(7);                               // restart: offset() back to 0
//
// The numbers. The generator is (seed, sequence, offset): a call takes its words from the Philox blocks
// PhiloxBlock(seed, sequence, offset() + k), k = 0, 1, ... (cuRAND's layout: block k is curand4() after
// curand_init(seed, sequence, 4 * (offset() + k))), and then advances offset() past the blocks it used, so
// the next call draws fresh ones. Element i of the destination, in row-major order of its logical shape
// (padded rows are skipped, their padding never written), takes its words from block i / per_block, where
// per_block is 4 for float, half_t and bf16_t (one word per element) and 2 for double (two words): its
// value depends only on (seed, sequence, offset at the call, i). Hence one call of n elements and two of
// n / 2 give the same numbers when n / 2 is a multiple of per_block; otherwise the second call starts at the
// next whole block. sequence selects an independent stream of 2^64 blocks (a carry out of offset runs into
// it, as in cuRAND).
//
// SampleUniform(t, a, b): u = (word >> 8) * 2^-24 (float, half_t, bf16_t) or (w0 * 2^32 + w1) >> 11 times
// 2^-53 (double), each exact, then a + (b - a) * u, each operation rounded on its own in compute_t<DType>,
// rounded to DType; a value that rounds onto b becomes the DType value just below b (b is never returned; a
// == b after rounding gives a; in a range only a few DType values wide the rounding makes them unequally
// likely, the top one taking b's share). The same bits on both devices: CPU and GPU uniforms are bitwise equal (as
// long as the host compiler does not fuse the multiply-add: g++'s default x86-64 target does not; -mfma
// with -ffp-contract=fast could). SampleGaussian(t, mu, sigma): Box–Muller on the pairs (u0, u1), (u2, u3)
// of a block's uniforms: r = sqrt(-2 log(1 - u0)), z0 = r cos(2 pi u1), z1 = r sin(2 pi u1), mu + sigma z.
// log / sin / cos are the host's libm and CUDA's, so the CPU and GPU normals agree to a few ulps of
// compute_t<DType>, not bitwise (half_t / bf16_t: almost always bitwise after the rounding).
//
// Threads and streams: the CPU fills blocks with ParallelFor, within the thread budget of the generator's
// stream (set_stream), else of the destination's stream, else SetNumThreads'. On the GPU (the loop is in
// cuda/random_philox.cuh, which a .cu gets through tensorexpr_cuda.cuh) each call is one kernel on the
// generator's stream, else the destination's. The generator keeps no device state: the offset is advanced
// on the host when the work is queued.
//
// Generate(dst, sampler) is the lower level the samplers share (and ops::DropoutForward uses to draw its
// mask in one pass): sampler(block, values) turns one block into Sampler::kPerBlock values of dst.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include "base.h"
#include "dtype.h"
#include "op.h"
#include "tensor.h"
#include "philox.h"
#include "random.h"
#include "random_bits.h"
#include "cpu/device.h"
#include "cpu/threads.h"

namespace tensorexpr {

template <typename Device>
class PhiloxRandom;

namespace detail {

// Block `k` of a call that starts at `offset`: the 128-bit counter offset + k, the carry into the sequence.
TE_XINLINE PhiloxWords PhiloxBlockAt(uint64_t seed, uint64_t sequence, uint64_t offset, uint64_t k) {
  const uint64_t block = offset + k;
  return PhiloxBlock(seed, sequence + (block < offset ? 1u : 0u), block);
}

// The words of one block as a bit generator (random_bits.h), read in order.
struct PhiloxBlockBits {
  using result_type = uint32_t;
  const PhiloxWords& block;
  int next;
  TE_XINLINE result_type operator()() { return block.w[next++]; }
  TE_XINLINE static constexpr result_type min() { return 0u; }
  TE_XINLINE static constexpr result_type max() { return 0xffffffffu; }
};

// The reals uniform on [0, 1) of one block: four floats (a word each) or two doubles (two words each),
// by random_bits.h's UnitInterval.
template <typename Real>
struct PhiloxUnits {
  static constexpr int kCount = sizeof(Real) == 8 ? 2 : 4;
  TE_XINLINE static void Draw(const PhiloxWords& block, Real* u) {
    PhiloxBlockBits bits{block, 0};
    TE_UNROLL
    for (int j = 0; j < kCount; ++j) u[j] = UnitInterval<Real>(bits);
  }
};

// lo + width * u with the product and the sum each rounded: nvcc would otherwise fuse them into one FMA,
// and the GPU's uniforms would differ from the CPU's in the last bit.
template <typename Real>
TE_XINLINE Real ScaleShift(Real lo, Real width, Real u) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<Real, float>::value) {
    return __fadd_rn(lo, __fmul_rn(width, u));
  } else {
    return __dadd_rn(lo, __dmul_rn(width, u));
  }
#else
  return lo + width * u;
#endif
}

// The DType value just below v (v finite and above the lowest value).
template <typename DType>
TE_XINLINE DType ValueBelow(DType v) {
  if constexpr (is_low_precision<DType>::value) {  // sign and magnitude in 16 bits
    const uint16_t bits = v.bits_;
    if ((bits & 0x7fffu) == 0) return DType::FromBits(0x8001u);  // +-0: the negative value closest to 0
    return DType::FromBits(static_cast<uint16_t>((bits & 0x8000u) != 0 ? bits + 1u : bits - 1u));
  } else {
#if defined(__CUDA_ARCH__)
    return ::nextafter(v, std::numeric_limits<DType>::lowest());
#else
    return std::nextafter(v, std::numeric_limits<DType>::lowest());
#endif
  }
}

// Uniform on [lo, hi) (the bounds already DType values), kPerBlock values per block.
template <typename DType>
struct PhiloxUniformSampler {
  using Real = compute_t<DType>;
  static constexpr int kPerBlock = PhiloxUnits<Real>::kCount;
  DType lo, hi;
  Real width;
  TE_XINLINE void operator()(const PhiloxWords& block, DType* out) const {
    Real u[4];  // kPerBlock of them
    PhiloxUnits<Real>::Draw(block, u);
    TE_UNROLL
    for (int j = 0; j < kPerBlock; ++j) {
      const DType v = static_cast<DType>(ScaleShift(static_cast<Real>(lo), width, u[j]));
      out[j] = v < hi ? v : (lo < hi ? ValueBelow(hi) : lo);
    }
  }
};

// Normal with mean mu and standard deviation sigma: Box–Muller on each pair of the block's uniforms.
template <typename DType>
struct PhiloxGaussianSampler {
  using Real = compute_t<DType>;
  static constexpr int kPerBlock = PhiloxUnits<Real>::kCount;
  Real mu, sigma;
  TE_XINLINE void operator()(const PhiloxWords& block, DType* out) const {
    Real u[4];  // kPerBlock of them
    PhiloxUnits<Real>::Draw(block, u);
    TE_UNROLL
    for (int j = 0; j < kPerBlock; j += 2) {
      // 1 - u lies in (0, 1] (exactly: u is a multiple of 2^-24 or 2^-53), so the logarithm is finite.
      const Real r = sigma * math::sqrt(Real(-2) * math::log(Real(1) - u[j]));
      const Real theta = Real(6.283185307179586476925286766559) * u[j + 1];
      out[j] = static_cast<DType>(mu + r * math::cos(theta));
      out[j + 1] = static_cast<DType>(mu + r * math::sin(theta));
    }
  }
};

template <typename DType>
struct check_philox_dtype {
  static_assert(is_random_real<DType>::value, "PhiloxRandom samples float, double, half_t or bf16_t tensors");
  static constexpr bool value = true;
};

// Where a call's blocks start: block k is PhiloxBlockAt(seed, sequence, offset, k).
struct PhiloxCall {
  uint64_t seed, sequence, offset;
};

// The device's loop: PhiloxFill<Device>::Run(d, n, blocks, sampler, stream, call) fills the n elements of
// the (rows, cols) view d, element i from block i / Sampler::kPerBlock of the call. The CPU's is below, the
// GPU's in cuda/random_philox.cuh.
template <typename Device>
struct PhiloxFill {
  static_assert(sizeof(Device) == 0, "PhiloxRandom<gpu> fills tensors with a CUDA kernel: " TE_GPU_NEEDS_NVCC_MESSAGE);
};

// Blocks in parallel, each thread walking (row, column) through its range of blocks.
template <>
struct PhiloxFill<cpu> {
  template <typename OutT, typename Sampler>
  static void Run(const Tensor<cpu, 2, OutT>& d, index_t n, index_t blocks, const Sampler& sampler,
                  Stream<cpu>* stream, PhiloxCall call) {
    const StreamThreadScope threads(stream);  // the stream's thread budget
    OutT* const out = d.dptr_;
    const index_t cols = d.shape_[1], stride = d.stride_;
    // About 60 integer operations for the block, a few more per element.
    ParallelFor(blocks, 64, [out, cols, stride, n, sampler, call](index_t begin, index_t end) {
      constexpr int kPer = Sampler::kPerBlock;
      static_assert(kPer >= 1 && kPer <= 4, "a block has 4 words: at most 4 values per block");
      index_t e = begin * kPer, row = e / cols, col = e % cols;
      OutT values[4];
      for (index_t b = begin; b < end; ++b) {
        sampler(PhiloxBlockAt(call.seed, call.sequence, call.offset, static_cast<uint64_t>(b)), values);
        for (int j = 0; j < kPer && e < n; ++j, ++e) {
          out[row * stride + col] = values[j];
          if (++col == cols) col = 0, ++row;
        }
      }
    });
  }
};
}  // namespace detail

template <typename Device>
class PhiloxRandom {
 public:
  static constexpr const char* kName = std::is_same<Device, cpu>::value ? "PhiloxRandom<cpu>" : "PhiloxRandom<gpu>";

  explicit PhiloxRandom(uint64_t seed = 0, uint64_t sequence = 0, Stream<Device>* stream = nullptr)
      : stream_(stream) {
    Seed(seed, sequence);
  }

  // Restarts: offset() back to 0; the same seed and sequence give the same numbers.
  void Seed(uint64_t seed, uint64_t sequence = 0) {
    seed_ = seed;
    sequence_ = sequence;
    offset_ = 0;
  }
  uint64_t GetSeed() const { return seed_; }
  uint64_t sequence() const { return sequence_; }
  // The first block the next call uses (cuRAND's offset in words is 4 * offset()).
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t blocks) { offset_ = blocks; }
  // Where the work runs: the CPU's thread budget, the GPU's queue (null: the destination's stream).
  void set_stream(Stream<Device>* stream) { stream_ = stream; }
  Stream<Device>* stream() const { return stream_; }

  // Uniform on [a, b), the bounds rounded to DType first (see the top of the file).
  template <int dim, typename DType>
  void SampleUniform(Tensor<Device, dim, DType> dst, compute_t<DType> a = compute_t<DType>(0),
                     compute_t<DType> b = compute_t<DType>(1)) {
    static_assert(detail::check_philox_dtype<DType>::value, "");
    detail::CheckUniformRange<DType>(kName, a, b, dst.shape_);
    const DType lo = static_cast<DType>(a), hi = static_cast<DType>(b);
    using Real = compute_t<DType>;
    Generate(dst, detail::PhiloxUniformSampler<DType>{lo, hi, static_cast<Real>(hi) - static_cast<Real>(lo)},
             "SampleUniform");
  }
  // Normal with mean mu and standard deviation sigma (>= 0).
  template <int dim, typename DType>
  void SampleGaussian(Tensor<Device, dim, DType> dst, compute_t<DType> mu = compute_t<DType>(0),
                      compute_t<DType> sigma = compute_t<DType>(1)) {
    static_assert(detail::check_philox_dtype<DType>::value, "");
    detail::CheckGaussianSigma(kName, sigma, dst.shape_);
    Generate(dst, detail::PhiloxGaussianSampler<DType>{mu, sigma}, "SampleGaussian");
  }
  // mshadow's pointer forms.
  template <int dim, typename DType>
  void SampleUniform(Tensor<Device, dim, DType>* dst, compute_t<DType> a = compute_t<DType>(0),
                     compute_t<DType> b = compute_t<DType>(1)) {
    SampleUniform(*dst, a, b);
  }
  template <int dim, typename DType>
  void SampleGaussian(Tensor<Device, dim, DType>* dst, compute_t<DType> mu = compute_t<DType>(0),
                      compute_t<DType> sigma = compute_t<DType>(1)) {
    SampleGaussian(*dst, mu, sigma);
  }

  // dst's elements from the next blocks, Sampler::kPerBlock (1 to 4) per block through
  // `TE_XINLINE void sampler(const PhiloxWords& block, OutT* values) const`; then offset() moves past them.
  // `call` names the caller in the error for a destination without memory.
  template <int dim, typename OutT, typename Sampler>
  void Generate(const Tensor<Device, dim, OutT>& dst, const Sampler& sampler, const char* call = "Generate") {
    const index_t n = dst.shape_.Size();
    TE_CHECK(dst.dptr_ != nullptr || n == 0, kName, "::", call, ": the tensor of shape ", dst.shape_,
             " has no memory (null dptr_)");
    if (n <= 0) return;
    const index_t blocks = (n + Sampler::kPerBlock - 1) / Sampler::kPerBlock;
    detail::PhiloxFill<Device>::Run(dst.FlatTo2D(), n, blocks, sampler, stream_ != nullptr ? stream_ : dst.stream_,
                                    detail::PhiloxCall{seed_, sequence_, offset_});
    offset_ += static_cast<uint64_t>(blocks);
  }

 private:
  Stream<Device>* stream_ = nullptr;
  uint64_t seed_ = 0, sequence_ = 0, offset_ = 0;
};

}  // namespace tensorexpr
