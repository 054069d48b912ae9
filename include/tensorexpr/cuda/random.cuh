// cuda/random.cuh — Random<gpu, DType>: cuRAND (one generator, bound to a stream) and Philox kernels.
//
//   Random<gpu, float> rnd(42);              // or rnd(42, sequence): another sequence id, another stream
//   rnd.set_stream(stream);                  // optional: generation is queued on this stream
//   rnd.SampleUniform(&t, -1.0f, 1.0f);      // or a view: rnd.SampleUniform(t, ...)
//   rnd.SampleGaussian(&t, 0.0f, 0.01f);
//
// Normal values for float / double come from curandGenerateNormal(Double) straight into the destination
// when it is contiguous with an even count; half_t / bf16_t, padded rows and odd counts (cuRAND draws
// normals in pairs) go through a float (double) buffer that an expression then converts into the
// destination, padding untouched. Everything else runs one kernel over the elements, each element drawing
// from its own Philox subsequence of the generator's seed (cuda::SampleKernel) straight into the
// destination: uniform reals on [a, b) and integers on [a, b] (random_bits.h, the CPU's rules), GetRandInt,
// and the samplers cuRAND's host API lacks (gamma, exponential, the negative binomials, and Poisson with
// a mean per element). The GPU and CPU sequences for a seed differ. A sequence id other than 0 is mixed
// into the seed both generators take (cuda::SequenceSeed).
// Every cuRAND call goes through TE_CURAND_CHECK: a failure throws Error naming the call.
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/random.cuh uses cuRAND and CUDA kernels: compile it with nvcc (a .cu file); CPU-only code includes tensorexpr/random.h."
#endif
#include <curand.h>
#include <curand_kernel.h>
#include <type_traits>
#include "../random.h"
#include "../tensor_container.h"
#include "../expr/map.h"
#include "check.cuh"
#include "stream.cuh"
#include "memory.cuh"
#include "map.cuh"
#include "../expr/reshape.h"

namespace tensorexpr {
namespace cuda {

inline const char* CurandStatusName(curandStatus_t s) {
  switch (s) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
    default: return "unknown cuRAND status";
  }
}

inline void CheckCurand(curandStatus_t st, const char* call, const char* file, int line) {
  if (st != CURAND_STATUS_SUCCESS) Fail(file, ":", line, ": ", call, " failed: ", CurandStatusName(st));
}

// Gamma(alpha, 1) by Marsaglia and Tsang's method (2000); below alpha = 1 through
// Gamma(alpha + 1) * U^(1 / alpha).
template <typename Real, typename State>
__device__ inline Real SampleGamma1(State* st, Real alpha) {
  Real boost = Real(1);
  if (alpha < Real(1)) {
    boost = pow(static_cast<Real>(curand_uniform(st)), Real(1) / alpha);
    alpha += Real(1);
  }
  const Real d = alpha - Real(1) / Real(3), c = Real(1) / sqrt(Real(9) * d);
  while (true) {
    Real x, v;
    do {
      x = static_cast<Real>(curand_normal(st));
      v = Real(1) + c * x;
    } while (v <= Real(0));
    v = v * v * v;
    const Real u = static_cast<Real>(curand_uniform(st));  // (0, 1]
    if (log(u) < Real(0.5) * x * x + d - d * v + d * log(v)) return d * v * boost;
  }
}
// A Poisson whose mean is Gamma(shape, scale): the negative binomial.
template <typename Real, typename State>
__device__ inline Real SamplePoissonOfGamma(State* st, Real shape, Real scale) {
  const Real mean = SampleGamma1(st, shape) * scale;
  return mean > Real(0) ? static_cast<Real>(curand_poisson(st, static_cast<double>(mean))) : Real(0);
}

// cuRAND's Philox state as a bit generator of 32-bit words (random_bits.h).
struct PhiloxBits {
  using result_type = uint32_t;
  curandStatePhilox4_32_10_t* state;
  __device__ result_type operator()() { return curand(state); }
  TE_XINLINE static constexpr result_type min() { return 0u; }
  TE_XINLINE static constexpr result_type max() { return 0xffffffffu; }
};
// Uniform on [lo, hi) (random_distribution.h).
template <typename DType>
struct UniformRealSampler {
  UniformRealDistribution<gpu, PhiloxBits, DType> dist;
  __device__ DType operator()(curandStatePhilox4_32_10_t* st) const {
    PhiloxBits bits{st};
    return dist(bits);
  }
};
// Uniform on the closed range [lo, lo + span].
template <typename Int>
struct UniformIntegerSampler {
  Int lo;
  uint64_t span;
  __device__ Int operator()(curandStatePhilox4_32_10_t* st) const {
    PhiloxBits bits{st};
    return detail::UniformInteger(bits, lo, span);
  }
};
// Every bit random.
template <typename Int>
struct RandomIntegerSampler {
  __device__ Int operator()(curandStatePhilox4_32_10_t* st) const {
    PhiloxBits bits{st};
    return detail::RandomInteger<Int>(bits);
  }
};

// The one 64-bit seed cuRAND's generators take, for (seed, sequence id): the seed itself for sequence 0
// (the numbers generators had before sequence ids), else the seed xor a mix of the sequence, mixed again.
// SplitMix64's finaliser is a bijection, so for one sequence distinct seeds stay distinct, and for one seed
// distinct sequences.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline uint64_t SequenceSeed(uint64_t seed, uint64_t sequence) {
  return sequence == 0 ? seed : Mix64(seed ^ Mix64(sequence + 0x9e3779b97f4a7c15ull));
}

enum class Distribution { kGamma, kExponential, kPoisson, kPoissonOfGamma };
template <Distribution kDist, typename Real>
struct Sampler {
  Real a, b;  // gamma: shape, scale; exponential: rate; Poisson: mean; Poisson of gamma: shape, scale
  template <typename State>
  __device__ Real operator()(State* st) const {
    if constexpr (kDist == Distribution::kGamma) return SampleGamma1(st, a) * b;
    if constexpr (kDist == Distribution::kExponential) return -log(static_cast<Real>(curand_uniform(st))) / a;
    if constexpr (kDist == Distribution::kPoisson) return static_cast<Real>(curand_poisson(st, static_cast<double>(a)));
    if constexpr (kDist == Distribution::kPoissonOfGamma) return SamplePoissonOfGamma(st, a, b);
  }
};

// Element i of the n = rows * cols elements of a (row-padded) destination, in row-major order, is
// sample(state of subsequence i), the state placed `offset` draws into it (a new offset per call).
template <typename OutT, typename Sample>
__global__ void SampleKernel(OutT* out, index_t n, index_t cols, index_t stride, unsigned long long seed,
                             unsigned long long offset, Sample sample) {
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    curandStatePhilox4_32_10_t st;
    curand_init(seed, static_cast<unsigned long long>(i), offset, &st);
    out[(i / cols) * stride + i % cols] = static_cast<OutT>(sample(&st));
  }
}

}  // namespace cuda
}  // namespace tensorexpr

#define TE_CURAND_CHECK(call) ::tensorexpr::cuda::CheckCurand((call), #call, __FILE__, __LINE__)

namespace tensorexpr {

template <typename DType>
class Random<gpu, DType>
    : public detail::RandomPointerForms<Random<gpu, DType>, gpu, DType, detail::random_param_t<DType>> {
  static_assert(detail::check_random_dtype<DType>::value, "");
  using Param = detail::random_param_t<DType>;
  using PointerForms = detail::RandomPointerForms<Random, gpu, DType, Param>;
  // What cuRAND generates: double for double, float for the rest.
  using Real = compute_t<DType>;

 public:
  TE_RANDOM_POINTER_FORMS_(PointerForms);  // rnd.SampleGaussian(&t, ...): mshadow's pointer forms
  explicit Random(uint64_t seed = 0, Stream<gpu>* stream = nullptr) : Random(seed, 0u, stream) {}
  // With a sequence id (mshadow's Random(seed, sequence)). A template so that Random(0, 0) picks this one:
  // to a literal 0 an integer parameter and the Stream pointer would otherwise be equally good.
  template <typename Sequence, typename = typename std::enable_if<std::is_integral<Sequence>::value>::type>
  Random(uint64_t seed, Sequence sequence, Stream<gpu>* stream = nullptr) {
    TE_CURAND_CHECK(curandCreateGenerator(&gen_, CURAND_RNG_PSEUDO_DEFAULT));
    set_stream(stream);
    Seed(seed, static_cast<uint64_t>(sequence));
  }
  ~Random() {
    buffer_ = TensorContainer<gpu, 1, Real>();  // freed on the generator's stream, before the generator
    if (gen_ != nullptr) curandDestroyGenerator(gen_);
  }
  Random(const Random&) = delete;
  Random& operator=(const Random&) = delete;

  // Restarts the sequence: the same seed and sequence id give the same numbers (on the same GPU and cuRAND
  // version); another seed or id, others.
  void Seed(uint64_t seed, uint64_t sequence = 0) {
    seed_ = seed;
    generator_seed_ = cuda::SequenceSeed(seed, sequence);
    TE_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen_, static_cast<unsigned long long>(generator_seed_)));
    TE_CURAND_CHECK(curandSetGeneratorOffset(gen_, 0));
    kernel_calls_ = 0;
  }
  uint64_t GetSeed() const { return seed_; }
  // Queues generation on `stream` (null: the per-thread default stream).
  void set_stream(Stream<gpu>* stream) {
    buffer_ = TensorContainer<gpu, 1, Real>();  // the old buffer is freed in order on the old stream
    stream_ = stream;
    buffer_.set_stream(stream);
    TE_CURAND_CHECK(curandSetStream(gen_, Stream<gpu>::GetStream(stream)));
  }
  Stream<gpu>* stream() const { return stream_; }
  curandGenerator_t generator() const { return gen_; }

  // Uniform values: integers on the closed range [a, b], reals on [a, b) (bounds rounded to DType).
  template <int dim>
  void SampleUniform(Tensor<gpu, dim, DType> dst, Param a = Param(0), Param b = Param(1)) {
    detail::CheckUniformRange<DType>(kName, a, b, dst.shape_);
    if constexpr (detail::is_random_integer<DType>::value) {
      Sample(dst, cuda::UniformIntegerSampler<DType>{a, detail::IntegerSpan(a, b)});
    } else {
      using Uniform = UniformRealDistribution<gpu, cuda::PhiloxBits, DType>;
      Sample(dst, cuda::UniformRealSampler<DType>{Uniform(static_cast<DType>(a), static_cast<DType>(b))});
    }
  }
  // Every bit of every element random (the full range of IntType), whatever this generator's DType.
  template <typename IntType, int dim>
  void GetRandInt(Tensor<gpu, dim, IntType> dst) {
    static_assert(detail::check_rand_int_target<IntType>::value, "");
    Sample(dst, cuda::RandomIntegerSampler<IntType>{});
  }
  // Normal values with mean mu and standard deviation sigma.
  template <int dim>
  void SampleGaussian(Tensor<gpu, dim, DType> dst, Param mu = Param(0), Param sigma = Param(1)) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckGaussianSigma(kName, sigma, dst.shape_);
    const index_t n = dst.shape_.Size();
    if (n == 0) return;
    if constexpr (std::is_same<DType, Real>::value) {
      if (NormalsDirect(dst)) {
        GenerateNormal(dst.dptr_, n, mu, sigma);
        return;
      }
    }
    const index_t even = (n + 1) / 2 * 2;  // cuRAND draws normals in pairs
    Real* z = Buffer(even);
    GenerateNormal(z, even, mu, sigma);
    Store(dst, z);
  }

  // Gamma with shape alpha and scale beta (mean alpha beta).
  template <int dim>
  void SampleGamma(Tensor<gpu, dim, DType> dst, Param alpha, Param beta) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SampleGamma", "alpha", alpha, dst.shape_);
    CheckPositive("SampleGamma", "beta", beta, dst.shape_);
    Sample(dst, cuda::Sampler<cuda::Distribution::kGamma, Real>{alpha, beta});
  }
  // Exponential with rate lambda (mean 1 / lambda).
  template <int dim>
  void SampleExponential(Tensor<gpu, dim, DType> dst, Param lambda) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SampleExponential", "lambda", lambda, dst.shape_);
    Sample(dst, cuda::Sampler<cuda::Distribution::kExponential, Real>{lambda, Real(0)});
  }
  // Poisson with mean lambda (whole numbers stored in DType).
  template <int dim>
  void SamplePoisson(Tensor<gpu, dim, DType> dst, Param lambda) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SamplePoisson", "lambda", lambda, dst.shape_);
    Sample(dst, cuda::Sampler<cuda::Distribution::kPoisson, Real>{lambda, Real(0)});
  }
  // Failures before the k-th success of trials that succeed with probability p.
  template <int dim>
  void SampleNegativeBinomial(Tensor<gpu, dim, DType> dst, Param k, Param p) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckNegativeBinomial(kName, k, p, dst.shape_);
    Sample(dst, cuda::Sampler<cuda::Distribution::kPoissonOfGamma, Real>{k, (Real(1) - p) / p});
  }
  // Mean mu and overdispersion alpha (variance mu + alpha mu^2); alpha = 0 is a Poisson of mean mu.
  template <int dim>
  void SampleGeneralizedNegativeBinomial(Tensor<gpu, dim, DType> dst, Param mu, Param alpha) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckGeneralizedNegativeBinomial(kName, mu, alpha, dst.shape_);
    if (alpha == Param(0)) {
      SamplePoisson(dst, mu);
    } else {
      Sample(dst, cuda::Sampler<cuda::Distribution::kPoissonOfGamma, Real>{Real(1) / alpha, mu * alpha});
    }
  }

  // mshadow's sample expressions: `shape` normal (mean 0, deviation 1) or uniform [0, 1) values in the
  // generator's buffer, as an expression of that shape, valid until the generator's next call.
  template <int dim>
  auto gaussian(const Shape<dim>& shape) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    const index_t n = shape.Size();
    const index_t even = (n + 1) / 2 * 2;  // cuRAND draws normals in pairs
    Real* z = Buffer(even);
    if (n > 0) GenerateNormal(z, even, Real(0), Real(1));
    return AsExpression(z, shape);
  }
  template <int dim>
  auto uniform(const Shape<dim>& shape) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    const index_t n = shape.Size();
    Real* u = Buffer(n);
    using Uniform = UniformRealDistribution<gpu, cuda::PhiloxBits, Real>;
    Sample(Tensor<gpu, 1, Real>(u, Shape1(n), stream_), cuda::UniformRealSampler<Real>{Uniform(Real(0), Real(1))});
    return AsExpression(u, shape);
  }

 private:
  static constexpr const char* kName = "Random<gpu>";  // in error messages
  template <int dim>
  static void CheckPositive(const char* sampler, const char* name, Param v, const Shape<dim>& shape) {
    detail::CheckSamplerPositive(kName, sampler, name, v, shape);
  }
  // dst = sample(Philox state of the element) per element, straight into the (row-padded) destination,
  // on the generator's stream.
  template <typename OutT, int dim, typename Sampler>
  void Sample(const Tensor<gpu, dim, OutT>& dst, Sampler sampler) {
    const index_t n = dst.shape_.Size();
    if (n == 0) return;
    const Tensor<gpu, 2, OutT> d2 = dst.FlatTo2D();
    const int threads = 256;
    const index_t blocks = std::min<index_t>((n + threads - 1) / threads, 65536);
    cuda::SampleKernel<<<static_cast<unsigned>(blocks), threads, 0, Stream<gpu>::GetStream(stream_)>>>(
        d2.dptr_, n, d2.shape_[1], d2.stride_, static_cast<unsigned long long>(generator_seed_),
        (kernel_calls_++) << 32, sampler);
    TE_CUDA_CHECK(cudaGetLastError());
  }
  template <int dim>
  auto AsExpression(Real* values, const Shape<dim>& shape) {
    const Tensor<gpu, 1, Real> flat(values, Shape1(shape.Size()), stream_);
    if constexpr (std::is_same<DType, Real>::value) {
      return expr::reshape(flat, shape);
    } else {
      return expr::reshape(expr::tcast<DType>(flat), shape);
    }
  }
  // Whether cuRAND can write the (float / double) destination's normals itself: contiguous, an even count
  // (cuRAND draws them in pairs), aligned to a pair.
  template <int dim>
  static bool NormalsDirect(const Tensor<gpu, dim, DType>& dst) {
    return dst.CheckContiguous() && dst.shape_.Size() % 2 == 0 &&
           reinterpret_cast<uintptr_t>(dst.dptr_) % (2 * sizeof(Real)) == 0;
  }
  Real* Buffer(index_t n) {
    if (buffer_.shape_[0] < n) buffer_.Resize(Shape1(n));
    return buffer_.dptr_;
  }
  void GenerateNormal(Real* p, index_t n, Real mu, Real sigma) {
    if constexpr (std::is_same<Real, double>::value) {
      TE_CURAND_CHECK(curandGenerateNormalDouble(gen_, p, static_cast<size_t>(n), mu, sigma));
    } else {
      TE_CURAND_CHECK(curandGenerateNormal(gen_, p, static_cast<size_t>(n), mu, sigma));
    }
  }
  // dst = DType(src), with src the first dst.shape_.Size() values of a contiguous buffer.
  template <int dim>
  void Store(const Tensor<gpu, dim, DType>& dst, Real* src) {
    Tensor<gpu, 2, DType> d2 = dst.FlatTo2D();
    d2.stream_ = stream_;
    const Tensor<gpu, 2, Real> s2(src, d2.shape_, stream_);
    d2 = expr::tcast<DType>(s2);
  }

  curandGenerator_t gen_ = nullptr;
  Stream<gpu>* stream_ = nullptr;
  uint64_t seed_ = 0;            // as given (GetSeed)
  uint64_t generator_seed_ = 0;  // what cuRAND and the kernels take: the seed with the sequence id mixed in
  unsigned long long kernel_calls_ = 0;  // SampleKernel calls since Seed: each starts further into the streams
  TensorContainer<gpu, 1, Real> buffer_;
};

}  // namespace tensorexpr
