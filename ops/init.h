// ops/init.h — weight initialisers for fully connected (K, C) and convolution (K, C/group, kernel...)
// weights: Xavier / Glorot (MXNet's Xavier) and He / Kaiming.
//
//   fan_in  = shape[1] * receptive field,  fan_out = shape[0] * receptive field   (receptive = prod shape[2:])
//   Xavier  scale = sqrt(magnitude / factor), factor = fan_in, fan_out or their mean;
//           uniform: U(-scale, scale), gaussian: N(0, scale)          (MXNet's defaults: uniform, avg, 3)
//   He      std = sqrt(2 / ((1 + a^2) fan)), fan = fan_in (default) or fan_out, a the leaky-ReLU slope;
//           normal: N(0, std) (kaiming_normal), uniform: U(-sqrt(3) std, sqrt(3) std) (same variance)
// Each returns the scale it drew with (the bound of a uniform, the standard deviation of a normal).
#pragma once
#include <cmath>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/random.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/cuda/random.cuh>
#endif

namespace tensorexpr {
namespace ops {

enum class InitRandType { kUniform, kGaussian };
enum class XavierFactorType { kAvg, kIn, kOut };
enum class FanMode { kIn, kOut };

struct XavierParam {
  InitRandType rnd_type = InitRandType::kUniform;
  XavierFactorType factor_type = XavierFactorType::kAvg;
  double magnitude = 3.0;
};

struct HeParam {
  InitRandType rnd_type = InitRandType::kGaussian;
  FanMode mode = FanMode::kIn;
  double negative_slope = 0.0;  // a: 0 for ReLU
};

struct Fans {
  double fan_in = 0, fan_out = 0;
};

// The fans of a weight of `shape`: (out, in) for a fully connected layer, (K, C/group, kernel...) for a
// convolution.
template <int dim>
inline Fans ComputeFans(const Shape<dim>& shape) {
  static_assert(dim >= 2, "fan in / fan out need a weight of at least 2 dimensions: (out, in, kernel...)");
  double receptive = 1;
  for (int i = 2; i < dim; ++i) receptive *= double(shape[i]);
  return Fans{double(shape[1]) * receptive, double(shape[0]) * receptive};
}

namespace detail {
template <typename Device, int dim, typename DType>
inline void DrawInit(Random<Device, DType>* rnd, const Tensor<Device, dim, DType>& w, InitRandType type,
                     double scale) {
  using A = compute_t<DType>;
  if (type == InitRandType::kUniform) {
    rnd->SampleUniform(w, A(-scale), A(scale));
  } else {
    rnd->SampleGaussian(w, A(0), A(scale));
  }
}
}  // namespace detail

template <typename Device, int dim, typename DType>
double XavierInit(const XavierParam& p, Random<Device, DType>* rnd, const Tensor<Device, dim, DType>& weight) {
  TE_CHECK(rnd != nullptr, "XavierInit: no random generator (null) for a weight of shape ", weight.shape_);
  TE_CHECK(p.magnitude > 0, "XavierInit: magnitude = ", p.magnitude, " must be > 0");
  if (weight.shape_.Size() == 0) return 0;
  const Fans f = ComputeFans(weight.shape_);
  const double factor = p.factor_type == XavierFactorType::kIn    ? f.fan_in
                        : p.factor_type == XavierFactorType::kOut ? f.fan_out
                                                                  : (f.fan_in + f.fan_out) / 2;
  const double scale = std::sqrt(p.magnitude / factor);
  detail::DrawInit(rnd, weight, p.rnd_type, scale);
  return scale;
}

template <typename Device, int dim, typename DType>
double HeInit(const HeParam& p, Random<Device, DType>* rnd, const Tensor<Device, dim, DType>& weight) {
  TE_CHECK(rnd != nullptr, "HeInit: no random generator (null) for a weight of shape ", weight.shape_);
  // Checked here, not through the scale it gives: a NaN slope would be reported as a bad sigma.
  TE_CHECK(std::isfinite(p.negative_slope), "HeInit: negative_slope = ", p.negative_slope,
           " must be a finite number");
  if (weight.shape_.Size() == 0) return 0;
  const Fans f = ComputeFans(weight.shape_);
  const double fan = p.mode == FanMode::kIn ? f.fan_in : f.fan_out;
  const double sd = std::sqrt(2.0 / ((1.0 + p.negative_slope * p.negative_slope) * fan));
  const double scale = p.rnd_type == InitRandType::kUniform ? sd * std::sqrt(3.0) : sd;
  detail::DrawInit(rnd, weight, p.rnd_type, scale);
  return scale;
}

}  // namespace ops
}  // namespace tensorexpr
