// random.h — Random<Device, DType>: a seeded random number generator that fills tensors (mshadow's names).
//
//   Random<cpu, float> rnd(42);              // or rnd(42, sequence): another sequence id, another stream
//   rnd.SampleUniform(&t, -1.0f, 1.0f);     // [-1, 1); or rnd.SampleUniform(t, ...): a view works as well
//   rnd.SampleGaussian(&t, 0.0f, 0.01f);
//   rnd.Seed(7);                             // restart the sequence (rnd.Seed(7, sequence) too)
//   t = rnd.gaussian(t.shape_) * 0.1f;       // mshadow's sample expressions: a buffer the generator owns,
//   t += rnd.uniform(t.shape_);              // valid until its next gaussian / uniform call
//   rnd.SampleGamma(&t, alpha, beta);        // and the other samplers: SampleExponential(&t, lambda),
//                                            // SamplePoisson(&t, lambda), SampleNegativeBinomial(&t, k, p),
//                                            // SampleGeneralizedNegativeBinomial(&t, mu, alpha)
//   Random<cpu, int32_t> ints(42);
//   ints.SampleUniform(&k, -3, 3);           // integers: the closed range [-3, 3]
//   rnd.GetRandInt(bits);                    // any generator, any integer tensor: every bit random
//
// DType is float, double, half_t, bf16_t or an integer type; integer generators have SampleUniform and
// GetRandInt (the other samplers are for reals). Real bounds are rounded to DType first and the upper one is
// never reached, even when it is only an ulp above the lower one (a draw that rounds onto it is drawn again).
//
// The CPU generator is std::mt19937 drawn sequentially over the elements in row-major order, so a seed
// gives the same numbers on every run, whatever the thread count. Sequence 0 seeds it as mshadow did
// (mt19937.seed(seed folded to 32 bits)), so its reals are mshadow's std:: distributions' numbers; another
// sequence id seeds it through std::seed_seq from all 128 bits of (seed, sequence). Padded rows: only the
// elements of the view are written, never the padding. half_t / bf16_t draw in float and convert.
// The GPU specialisation (cuRAND, bound to a stream) lives in cuda/random.cuh.
#pragma once
#include <cstdint>
#include <random>
#include <type_traits>
#include "base.h"
#include "dtype.h"
#include "tensor.h"
#include "tensor_container.h"
#include "expr/reshape.h"
#include "pcg_random.h"
#include "random_bits.h"
#include "random_distribution.h"

namespace tensorexpr {

template <typename Device, typename DType = float>
class Random;

namespace detail {
template <typename DType>
struct is_random_integer
    : std::integral_constant<bool, std::is_integral<DType>::value && !std::is_same<DType, bool>::value> {};
template <typename DType>
struct is_random_real
    : std::integral_constant<bool, std::is_floating_point<DType>::value || is_low_precision<DType>::value> {};
template <typename DType>
struct check_random_dtype {
  static_assert(is_random_real<DType>::value || is_random_integer<DType>::value,
                "Random<Device, DType>: DType must be float, double, half_t, bf16_t or an integer type");
  static constexpr bool value = true;
};
// The type of a Random's bounds and parameters: the integer itself, or the type reals are drawn in (float
// for half_t / bf16_t).
template <typename DType>
using random_param_t = typename std::conditional<is_random_integer<DType>::value, DType, compute_t<DType>>::type;

template <typename DType>
struct check_real_sampler {
  static_assert(is_random_real<DType>::value,
                "this sampler gives real values: use a Random<Device, float / double / half_t / bf16_t> (an integer "
                "Random has SampleUniform and GetRandInt)");
  static constexpr bool value = true;
};
template <typename IntType>
struct check_rand_int_target {
  static_assert(is_random_integer<IntType>::value, "GetRandInt fills a tensor of an integer type (not bool)");
  static constexpr bool value = true;
};

// SampleUniform's bounds, checked alike by Random<cpu> and Random<gpu> (`generator` names the one called):
// integers a <= b (the closed range [a, b]); reals a <= b with a finite width b - a (the range [a, b)).
template <typename DType, typename Param, int dim>
void CheckUniformRange(const char* generator, Param a, Param b, const Shape<dim>& shape) {
  if constexpr (is_random_integer<DType>::value) {
    TE_CHECK(a <= b, generator, "::SampleUniform: the range [", +a, ", ", +b,
             "] is empty (a > b) for a tensor of shape ", shape);
  } else {
    TE_CHECK(a <= b, generator, "::SampleUniform: the range [", a, ", ", b,
             ") is empty (a > b) or has a NaN bound, for a tensor of shape ", shape);
    // The bounds as DType holds them (half_t overflows to inf past 65504); inf - inf and NaN are not 0.
    const Param width = static_cast<Param>(static_cast<DType>(b)) - static_cast<Param>(static_cast<DType>(a));
    TE_CHECK(width - width == Param(0), generator, "::SampleUniform: the range [", a, ", ", b,
             ") is not finite in ", DataType<DType>::name(), " (its width is ", width, ") for a tensor of shape ",
             shape);
  }
}

// The samplers' parameter checks, shared by Random<cpu>, Random<gpu> and PhiloxRandom; `generator` names
// the one that was called in the message.
template <typename Real, int dim>
void CheckGaussianSigma(const char* generator, Real sigma, const Shape<dim>& shape) {
  TE_CHECK(sigma >= Real(0), generator, "::SampleGaussian: sigma = ", sigma, " must be >= 0 for a tensor of shape ",
           shape);
}
template <typename Real, int dim>
void CheckSamplerPositive(const char* generator, const char* sampler, const char* name, Real v,
                          const Shape<dim>& shape) {
  TE_CHECK(v > Real(0), generator, "::", sampler, ": ", name, " = ", v, " must be > 0 for a tensor of shape ", shape);
}
template <typename Real, int dim>
void CheckNegativeBinomial(const char* generator, Real k, Real p, const Shape<dim>& shape) {
  CheckSamplerPositive(generator, "SampleNegativeBinomial", "k", k, shape);
  TE_CHECK(p > Real(0) && p <= Real(1), generator, "::SampleNegativeBinomial: p = ", p,
           " must lie in (0, 1] for a tensor of shape ", shape);
}
template <typename Real, int dim>
void CheckGeneralizedNegativeBinomial(const char* generator, Real mu, Real alpha, const Shape<dim>& shape) {
  CheckSamplerPositive(generator, "SampleGeneralizedNegativeBinomial", "mu", mu, shape);
  TE_CHECK(alpha >= Real(0), generator, "::SampleGeneralizedNegativeBinomial: alpha = ", alpha,
           " must be >= 0 for a tensor of shape ", shape);
}

// mshadow's pointer forms, rnd.SampleGaussian(&t, ...), of each sampler, for both devices: each forwards to
// the view form of Random<Device, DType> (Derived), whose class brings them in with using-declarations.
template <typename Derived, typename Device, typename DType, typename Real>
struct RandomPointerForms {
  template <int dim>
  void SampleUniform(Tensor<Device, dim, DType>* dst, Real a = Real(0), Real b = Real(1)) {
    self().SampleUniform(*dst, a, b);
  }
  template <int dim>
  void SampleGaussian(Tensor<Device, dim, DType>* dst, Real mu = Real(0), Real sigma = Real(1)) {
    self().SampleGaussian(*dst, mu, sigma);
  }
  template <int dim>
  void SampleGamma(Tensor<Device, dim, DType>* dst, Real alpha, Real beta) { self().SampleGamma(*dst, alpha, beta); }
  template <int dim>
  void SampleExponential(Tensor<Device, dim, DType>* dst, Real lambda) { self().SampleExponential(*dst, lambda); }
  template <int dim>
  void SamplePoisson(Tensor<Device, dim, DType>* dst, Real lambda) { self().SamplePoisson(*dst, lambda); }
  template <int dim>
  void SampleNegativeBinomial(Tensor<Device, dim, DType>* dst, Real k, Real p) {
    self().SampleNegativeBinomial(*dst, k, p);
  }
  template <int dim>
  void SampleGeneralizedNegativeBinomial(Tensor<Device, dim, DType>* dst, Real mu, Real alpha) {
    self().SampleGeneralizedNegativeBinomial(*dst, mu, alpha);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};
}  // namespace detail

// The using-declarations that bring RandomPointerForms' overloads in beside a Random's view forms.
#define TE_RANDOM_POINTER_FORMS_(Forms)          \
  using Forms::SampleUniform;                    \
  using Forms::SampleGaussian;                   \
  using Forms::SampleGamma;                      \
  using Forms::SampleExponential;                \
  using Forms::SamplePoisson;                    \
  using Forms::SampleNegativeBinomial;           \
  using Forms::SampleGeneralizedNegativeBinomial

template <typename DType>
class Random<cpu, DType>
    : public detail::RandomPointerForms<Random<cpu, DType>, cpu, DType, detail::random_param_t<DType>> {
  static_assert(detail::check_random_dtype<DType>::value, "");
  using Param = detail::random_param_t<DType>;
  using PointerForms = detail::RandomPointerForms<Random, cpu, DType, Param>;
  // The distributions run in float for half / bf16 (they have no std:: distribution of their own).
  using Real = compute_t<DType>;

 public:
  TE_RANDOM_POINTER_FORMS_(PointerForms);  // rnd.SampleGaussian(&t, ...): mshadow's pointer forms
  // Generators of the same seed and sequence id give the same numbers; another seed or id, others.
  explicit Random(uint64_t seed = 0, uint64_t sequence = 0) { Seed(seed, sequence); }

  // Restarts the sequence: the same seed gives the same numbers.
  void Seed(uint64_t seed, uint64_t sequence = 0) {
    seed_ = seed;
    if (sequence == 0) {  // mshadow's seeding, so sequence 0 keeps its numbers
      rng_.seed(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32)));
    } else {
      std::seed_seq words{Low32(seed), High32(seed), Low32(sequence), High32(sequence)};
      rng_.seed(words);
    }
  }
  uint64_t GetSeed() const { return seed_; }
  void set_stream(Stream<cpu>*) {}  // work on the CPU runs at once; kept for the GPU's interface

  // Uniform values: integers on the closed range [a, b], reals on [a, b) (bounds rounded to DType).
  template <int dim>
  void SampleUniform(Tensor<cpu, dim, DType> dst, Param a = Param(0), Param b = Param(1)) {
    detail::CheckUniformRange<DType>(kName, a, b, dst.shape_);
    if constexpr (detail::is_random_integer<DType>::value) {
      const uint64_t span = detail::IntegerSpan(a, b);
      Fill(dst, [&](std::mt19937& rng) { return detail::UniformInteger(rng, a, span); });
    } else {
      const DType lo = static_cast<DType>(a), hi = static_cast<DType>(b);
      if (!(lo < hi)) {  // a == b (after rounding to DType): the one value
        Fill(dst, [&](std::mt19937&) { return lo; });
        return;
      }
      std::uniform_real_distribution<Real> dist(static_cast<Real>(lo), static_cast<Real>(hi));
      Fill(dst, [&](std::mt19937& rng) { return detail::DrawBelow(hi, [&] { return dist(rng); }); });
    }
  }
  // Every bit of every element random (the full range of IntType), whatever this generator's DType.
  template <typename IntType, int dim>
  void GetRandInt(Tensor<cpu, dim, IntType> dst) {
    static_assert(detail::check_rand_int_target<IntType>::value, "");
    const Tensor<cpu, 2, IntType> t = dst.FlatTo2D();
    for (index_t y = 0; y < t.shape_[0]; ++y) {
      IntType* row = t.dptr_ + y * t.stride_;
      for (index_t x = 0; x < t.shape_[1]; ++x) row[x] = detail::RandomInteger<IntType>(rng_);
    }
  }
  // Normal values with mean mu and standard deviation sigma.
  template <int dim>
  void SampleGaussian(Tensor<cpu, dim, DType> dst, Param mu = Param(0), Param sigma = Param(1)) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckGaussianSigma(kName, sigma, dst.shape_);
    if (sigma == Param(0)) {  // std::normal_distribution requires sigma > 0
      Fill(dst, [&](std::mt19937&) { return mu; });
      return;
    }
    std::normal_distribution<Real> dist(mu, sigma);
    Fill(dst, dist);
  }

  // Gamma with shape alpha and scale beta (mean alpha beta).
  template <int dim>
  void SampleGamma(Tensor<cpu, dim, DType> dst, Param alpha, Param beta) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SampleGamma", "alpha", alpha, dst.shape_);
    CheckPositive("SampleGamma", "beta", beta, dst.shape_);
    std::gamma_distribution<Real> dist(alpha, beta);
    Fill(dst, dist);
  }
  // Exponential with rate lambda (mean 1 / lambda).
  template <int dim>
  void SampleExponential(Tensor<cpu, dim, DType> dst, Param lambda) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SampleExponential", "lambda", lambda, dst.shape_);
    std::exponential_distribution<Real> dist(lambda);
    Fill(dst, dist);
  }
  // Poisson with mean lambda (whole numbers stored in DType).
  template <int dim>
  void SamplePoisson(Tensor<cpu, dim, DType> dst, Param lambda) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    CheckPositive("SamplePoisson", "lambda", lambda, dst.shape_);
    std::poisson_distribution<int64_t> dist(static_cast<double>(lambda));
    Fill(dst, dist);
  }
  // Failures before the k-th success of trials that succeed with probability p.
  template <int dim>
  void SampleNegativeBinomial(Tensor<cpu, dim, DType> dst, Param k, Param p) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckNegativeBinomial(kName, k, p, dst.shape_);
    // A Poisson whose mean is gamma distributed: k need not be whole (std::negative_binomial's must).
    FillPoissonOfGamma(dst, k, (Param(1) - p) / p);
  }
  // Mean mu and overdispersion alpha (variance mu + alpha mu^2); alpha = 0 is a Poisson of mean mu.
  template <int dim>
  void SampleGeneralizedNegativeBinomial(Tensor<cpu, dim, DType> dst, Param mu, Param alpha) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    detail::CheckGeneralizedNegativeBinomial(kName, mu, alpha, dst.shape_);
    if (alpha == Param(0)) {
      SamplePoisson(dst, mu);
    } else {
      FillPoissonOfGamma(dst, Param(1) / alpha, mu * alpha);
    }
  }

  // mshadow's sample expressions: `shape` normal (mean 0, deviation 1) or uniform [0, 1) values in a
  // buffer of the generator's, as an expression of that shape; the next call of either reuses the buffer.
  template <int dim>
  expr::ReshapeExp<Tensor<cpu, 1, DType>, DType, dim> gaussian(const Shape<dim>& shape) {
    Tensor<cpu, 1, DType> b = Buffer(shape.Size());
    SampleGaussian(b);
    return expr::reshape(b, shape);
  }
  template <int dim>
  expr::ReshapeExp<Tensor<cpu, 1, DType>, DType, dim> uniform(const Shape<dim>& shape) {
    static_assert(detail::check_real_sampler<DType>::value, "");
    Tensor<cpu, 1, DType> b = Buffer(shape.Size());
    SampleUniform(b);
    return expr::reshape(b, shape);
  }

  // The underlying engine (for host-side sampling that must follow the same sequence).
  std::mt19937& engine() { return rng_; }

 private:
  static constexpr const char* kName = "Random";  // in error messages
  static uint32_t Low32(uint64_t v) { return static_cast<uint32_t>(v); }
  static uint32_t High32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
  template <int dim>
  static void CheckPositive(const char* sampler, const char* name, Param v, const Shape<dim>& shape) {
    detail::CheckSamplerPositive(kName, sampler, name, v, shape);
  }
  template <int dim>
  void FillPoissonOfGamma(const Tensor<cpu, dim, DType>& dst, Param shape, Param scale) {
    std::gamma_distribution<double> gamma(static_cast<double>(shape), static_cast<double>(scale));
    struct PoissonOfGamma {
      std::gamma_distribution<double>& gamma;
      int64_t operator()(std::mt19937& rng) const {
        const double mean = gamma(rng);
        return mean > 0 ? std::poisson_distribution<int64_t>(mean)(rng) : 0;
      }
    } dist{gamma};
    Fill(dst, dist);
  }
  Tensor<cpu, 1, DType> Buffer(index_t n) {
    if (buffer_.shape_[0] < n) buffer_.Resize(Shape1(n));
    return buffer_.Slice(0, n);
  }

  // dst = dist(engine) per element, in row-major order.
  template <int dim, typename Dist>
  void Fill(const Tensor<cpu, dim, DType>& dst, Dist&& dist) {
    const Tensor<cpu, 2, DType> t = dst.FlatTo2D();
    for (index_t y = 0; y < t.shape_[0]; ++y) {
      DType* row = t.dptr_ + y * t.stride_;
      for (index_t x = 0; x < t.shape_[1]; ++x) row[x] = static_cast<DType>(dist(rng_));
    }
  }

  std::mt19937 rng_;
  uint64_t seed_ = 0;
  TensorContainer<cpu, 1, DType> buffer_;
};

}  // namespace tensorexpr
