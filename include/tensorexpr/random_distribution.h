// random_distribution.h — UniformRealDistribution<Device, Rng, DType> and GaussianDistribution<Device,
// Rng, DType>: mshadow's distribution objects over a bit generator (PCGRandom32 / PCGRandom64, or any
// generator of whole 32- or 64-bit words: random_bits.h), called as dist(rng) on the host (cpu) or in
// device code (gpu). The code is the same for both devices; Device is mshadow's spelling and is checked.
//
//   PCGRandom32 rng(seed, sequence);
//   UniformRealDistribution<gpu, PCGRandom32, half_t> uniform;        // [0, 1), or uniform(lo, hi): [lo, hi)
//   GaussianDistribution<gpu, PCGRandom32, float> normal(0.f, 2.f);   // mean 0, standard deviation 2
//   half_t u = uniform(rng);
//   float z = normal(rng);
//
// Both compute in compute_t<DType> (float for half_t / bf16_t) and round once to DType.
#pragma once
#include <limits>
#include <type_traits>
#include "base.h"
#include "dtype.h"
#include "op.h"
#include "random_bits.h"

namespace tensorexpr {
namespace detail {
template <typename Device, typename DType>
struct check_distribution_args {
  static_assert(std::is_same<Device, cpu>::value || std::is_same<Device, gpu>::value, "Device must be cpu or gpu");
  static_assert(std::is_floating_point<DType>::value || is_low_precision<DType>::value,
                "the distributions give real values: DType must be float, double, half_t or bf16_t");
  static constexpr bool value = true;
};
}  // namespace detail

// Values uniform on [a, b), the bounds rounded to DType first: rounding that lands on b is drawn again, so
// b is never returned however close it is to a. An empty range (a == b after rounding) gives a; a width
// b - a that is not finite (an infinite or NaN bound) gives NaN. (Random::SampleUniform checks its bounds
// and throws instead; device code cannot.)
template <typename Device, typename Rng, typename DType>
struct UniformRealDistribution {
  static_assert(detail::check_distribution_args<Device, DType>::value, "");
  using result_type = DType;

  TE_XINLINE explicit UniformRealDistribution(result_type a = result_type(0), result_type b = result_type(1))
      : lo_(a), hi_(b), width_(static_cast<Real>(b) - static_cast<Real>(a)) {}

  TE_XINLINE result_type operator()(Rng& rng) const {
    if (!(width_ > Real(0))) return lo_;
    if (!(width_ <= std::numeric_limits<Real>::max())) return static_cast<DType>(std::numeric_limits<Real>::quiet_NaN());
    const Real lo = static_cast<Real>(lo_);
    return detail::DrawBelow(hi_, [&] { return lo + width_ * detail::UnitInterval<Real>(rng); });
  }
  TE_XINLINE result_type a() const { return lo_; }
  TE_XINLINE result_type b() const { return hi_; }

 private:
  using Real = compute_t<DType>;
  DType lo_, hi_;
  Real width_;
};

// Normal values of the given mean and standard deviation, by Marsaglia's polar method: a point uniform in
// the unit disc gives two independent normals; the second is kept for the next call (so the object, not
// only the generator, carries state).
template <typename Device, typename Rng, typename DType>
struct GaussianDistribution {
  static_assert(detail::check_distribution_args<Device, DType>::value, "");
  using result_type = DType;

  TE_XINLINE explicit GaussianDistribution(result_type mean = result_type(0), result_type stddev = result_type(1))
      : mean_(static_cast<Real>(mean)), stddev_(static_cast<Real>(stddev)) {}

  TE_XINLINE result_type operator()(Rng& rng) {
    if (has_spare_) {
      has_spare_ = false;
      return static_cast<DType>(mean_ + stddev_ * spare_);
    }
    Real u, v, s;
    do {
      u = Real(2) * detail::UnitInterval<Real>(rng) - Real(1);
      v = Real(2) * detail::UnitInterval<Real>(rng) - Real(1);
      s = u * u + v * v;
    } while (s >= Real(1) || s == Real(0));
    const Real scale = math::sqrt(Real(-2) * math::log(s) / s);
    spare_ = v * scale;
    has_spare_ = true;
    return static_cast<DType>(mean_ + stddev_ * (u * scale));
  }
  TE_XINLINE result_type mean() const { return static_cast<DType>(mean_); }
  TE_XINLINE result_type stddev() const { return static_cast<DType>(stddev_); }
  TE_XINLINE void reset() { has_spare_ = false; }

 private:
  using Real = compute_t<DType>;
  Real mean_, stddev_;
  Real spare_ = Real(0);
  bool has_spare_ = false;
};

}  // namespace tensorexpr
