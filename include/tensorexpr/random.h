// random.h — Random<Device, DType>: a seeded random number generator that fills tensors (mshadow's names).
//
//   Random<cpu, float> rnd(42);
//   rnd.SampleUniform(&t, -1.0f, 1.0f);     // or rnd.SampleUniform(t, ...): a view works as well
//   rnd.SampleGaussian(&t, 0.0f, 0.01f);
//   rnd.Seed(7);                             // restart the sequence
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
}  // namespace detail

template <typename DType>
class Random<cpu, DType> {
  static_assert(detail::check_random_dtype<DType>::value, "");
  // The distributions run in float for half / bf16 (they have no std:: distribution of their own).
  using Real = compute_t<DType>;

 public:
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
  // mshadow's pointer forms.
  template <int dim>
  void SampleUniform(Tensor<cpu, dim, DType>* dst, Real a = Real(0), Real b = Real(1)) { SampleUniform(*dst, a, b); }
  template <int dim>
  void SampleGaussian(Tensor<cpu, dim, DType>* dst, Real mu = Real(0), Real sigma = Real(1)) {
    SampleGaussian(*dst, mu, sigma);
  }

  // The underlying engine (for host-side sampling that must follow the same sequence).
  std::mt19937& engine() { return rng_; }

 private:
  template <int dim, typename Dist>
  void Fill(const Tensor<cpu, dim, DType>& dst, Dist& dist) {
    const Tensor<cpu, 2, DType> t = dst.FlatTo2D();
    for (index_t y = 0; y < t.shape_[0]; ++y) {
      DType* row = t.dptr_ + y * t.stride_;
      for (index_t x = 0; x < t.shape_[1]; ++x) row[x] = static_cast<DType>(dist(rng_));
    }
  }

  std::mt19937 rng_;
};

}  // namespace tensorexpr
