// tensorexpr/ops/init.h — weight initialisers for fully connected (K, C) and convolution (K, C/group, kernel...)
// weights: Xavier / Glorot (MXNet's Xavier) and He / Kaiming.
//
//   fan_in  = shape[1] * receptive field,  fan_out = shape[0] * receptive field   (receptive = prod shape[2:])
//   Xavier  scale = sqrt(magnitude / factor), factor = fan_in, fan_out or their mean;
//           uniform: U(-scale, scale), gaussian: N(0, scale)          (MXNet's defaults: uniform, avg, 3)
//   He      std = sqrt(2 / ((1 + a^2) fan)), fan = fan_in (default) or fan_out, a the leaky-ReLU slope;
//           normal: N(0, std) (kaiming_normal), uniform: U(-sqrt(3) std, sqrt(3) std) (same variance)
// Each returns the scale it drew with (the bound of a uniform, the standard deviation of a normal).
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/init.h is the template implementation, for other dtypes.
#pragma once
#include <cmath>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/random.h>

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

template <typename Device, int dim, typename DType>
double XavierInit(const XavierParam& p, Random<Device, DType>* rnd, const Tensor<Device, dim, DType>& weight);

template <typename Device, int dim, typename DType>
double HeInit(const HeParam& p, Random<Device, DType>* rnd, const Tensor<Device, dim, DType>& weight);

}  // namespace ops
}  // namespace tensorexpr
