// random.h — Random<Device, DType>: a seeded random number generator that fills tensors (mshadow's names).
//
//   Random<cpu, float> rnd(42);
//   rnd.SampleUniform(&t, -1.0f, 1.0f);     // or rnd.SampleUniform(t, ...): a view works as well
//   rnd.SampleGaussian(&t, 0.0f, 0.01f);
//   rnd.Seed(7);                             // restart the sequence
//   t = rnd.gaussian(t.shape_) * 0.1f;       // mshadow's sample expressions: a buffer the generator owns,
//   t += rnd.uniform(t.shape_);              // valid until its next gaussian / uniform call
//   rnd.SampleGamma(&t, alpha, beta);        // and the other samplers: SampleExponential(&t, lambda),
//                                            // SamplePoisson(&t, lambda), SampleNegativeBinomial(&t, k, p),
//                                            // SampleGeneralizedNegativeBinomial(&t, mu, alpha)
//
// The CPU generator is std::mt19937 drawn sequentially over the elements in row-major order, so a seed
// gives the same numbers on every run, whatever the thread count. Padded rows: only the elements of the
// view are written, never the padding. half_t / bf16_t draw in float and convert.
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

namespace tensorexpr {

template <typename Device, typename DType = float>
class Random;

namespace detail {
template <typename DType>
struct check_random_dtype {
  static_assert(std::is_floating_point<DType>::value || is_low_precision<DType>::value,
                "Random<Device, DType> samples floating-point values: DType must be float, double, half_t or bf16_t");
  static constexpr bool value = true;
};

// The samplers' parameter checks, shared by Random<cpu> and Random<gpu>; `generator` names the one that
// was called in the message.
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
    : public detail::RandomPointerForms<Random<cpu, DType>, cpu, DType, compute_t<DType>> {
  static_assert(detail::check_random_dtype<DType>::value, "");
  using PointerForms = detail::RandomPointerForms<Random, cpu, DType, compute_t<DType>>;
  // The distributions run in float for half / bf16 (they have no std:: distribution of their own).
  using Real = compute_t<DType>;

 public:
  TE_RANDOM_POINTER_FORMS_(PointerForms);  // rnd.SampleGaussian(&t, ...): mshadow's pointer forms
  explicit Random(uint64_t seed = 0) { Seed(seed); }

  // Restarts the sequence: the same seed gives the same numbers.
  void Seed(uint64_t seed) { rng_.seed(static_cast<std::mt19937::result_type>(seed ^ (seed >> 32))); }
  void set_stream(Stream<cpu>*) {}  // work on the CPU runs at once; kept for the GPU's interface

  // Uniform values in [a, b).
  template <int dim>
  void SampleUniform(Tensor<cpu, dim, DType> dst, Real a = Real(0), Real b = Real(1)) {
    TE_CHECK(a <= b, "Random::SampleUniform: the range [", a, ", ", b, ") is empty (a > b) for a tensor of shape ",
             dst.shape_);
    std::uniform_real_distribution<Real> dist(a, b);
    Fill(dst, dist);
  }
  // Normal values with mean mu and standard deviation sigma.
  template <int dim>
  void SampleGaussian(Tensor<cpu, dim, DType> dst, Real mu = Real(0), Real sigma = Real(1)) {
    TE_CHECK(sigma >= Real(0), "Random::SampleGaussian: sigma = ", sigma,
             " must be >= 0 for a tensor of shape ", dst.shape_);
    if (sigma == Real(0)) {  // std::normal_distribution requires sigma > 0
      struct Constant {
        Real v;
        Real operator()(std::mt19937&) const { return v; }
      } constant{mu};
      Fill(dst, constant);
      return;
    }
    std::normal_distribution<Real> dist(mu, sigma);
    Fill(dst, dist);
  }

  // Gamma with shape alpha and scale beta (mean alpha beta).
  template <int dim>
  void SampleGamma(Tensor<cpu, dim, DType> dst, Real alpha, Real beta) {
    CheckPositive("SampleGamma", "alpha", alpha, dst.shape_);
    CheckPositive("SampleGamma", "beta", beta, dst.shape_);
    std::gamma_distribution<Real> dist(alpha, beta);
    Fill(dst, dist);
  }
  // Exponential with rate lambda (mean 1 / lambda).
  template <int dim>
  void SampleExponential(Tensor<cpu, dim, DType> dst, Real lambda) {
    CheckPositive("SampleExponential", "lambda", lambda, dst.shape_);
    std::exponential_distribution<Real> dist(lambda);
    Fill(dst, dist);
  }
  // Poisson with mean lambda (whole numbers stored in DType).
  template <int dim>
  void SamplePoisson(Tensor<cpu, dim, DType> dst, Real lambda) {
    CheckPositive("SamplePoisson", "lambda", lambda, dst.shape_);
    std::poisson_distribution<int64_t> dist(static_cast<double>(lambda));
    Fill(dst, dist);
  }
  // Failures before the k-th success of trials that succeed with probability p.
  template <int dim>
  void SampleNegativeBinomial(Tensor<cpu, dim, DType> dst, Real k, Real p) {
    detail::CheckNegativeBinomial(kName, k, p, dst.shape_);
    // A Poisson whose mean is gamma distributed: k need not be whole (std::negative_binomial's must).
    FillPoissonOfGamma(dst, k, (Real(1) - p) / p);
  }
  // Mean mu and overdispersion alpha (variance mu + alpha mu^2); alpha = 0 is a Poisson of mean mu.
  template <int dim>
  void SampleGeneralizedNegativeBinomial(Tensor<cpu, dim, DType> dst, Real mu, Real alpha) {
    detail::CheckGeneralizedNegativeBinomial(kName, mu, alpha, dst.shape_);
    if (alpha == Real(0)) {
      SamplePoisson(dst, mu);
    } else {
      FillPoissonOfGamma(dst, Real(1) / alpha, mu * alpha);
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
    Tensor<cpu, 1, DType> b = Buffer(shape.Size());
    SampleUniform(b);
    return expr::reshape(b, shape);
  }

  // The underlying engine (for host-side sampling that must follow the same sequence).
  std::mt19937& engine() { return rng_; }

 private:
  static constexpr const char* kName = "Random";  // in error messages
  template <int dim>
  static void CheckPositive(const char* sampler, const char* name, Real v, const Shape<dim>& shape) {
    detail::CheckSamplerPositive(kName, sampler, name, v, shape);
  }
  template <int dim>
  void FillPoissonOfGamma(const Tensor<cpu, dim, DType>& dst, Real shape, Real scale) {
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

  template <int dim, typename Dist>
  void Fill(const Tensor<cpu, dim, DType>& dst, Dist& dist) {
    const Tensor<cpu, 2, DType> t = dst.FlatTo2D();
    for (index_t y = 0; y < t.shape_[0]; ++y) {
      DType* row = t.dptr_ + y * t.stride_;
      for (index_t x = 0; x < t.shape_[1]; ++x) row[x] = static_cast<DType>(dist(rng_));
    }
  }

  std::mt19937 rng_;
  TensorContainer<cpu, 1, DType> buffer_;
};

}  // namespace tensorexpr
