// ops/init.h — the template implementation of <tensorexpr/ops/init.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <cmath>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/init.h>
#include <tensorexpr/random.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/cuda/random.cuh>
#endif

namespace tensorexpr {
namespace ops {

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

// Explicit instantiations for one device and dtype, ranks 2 to 5 (ops/init.cc).
#define TE_INIT_INSTANCE_(Device, dim, DType) \
  template double XavierInit<Device, dim, DType>(const XavierParam& p, Random<Device, DType>* rnd, \
      const Tensor<Device, dim, DType>& weight); \
  template double HeInit<Device, dim, DType>(const HeParam& p, Random<Device, DType>* rnd, \
      const Tensor<Device, dim, DType>& weight);
#define TE_INSTANTIATE_INIT(Device, DType) TE_OPS_RANKS_FROM_2(TE_INIT_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
