// tensorexpr/ops/adaptive_update.h — optimisers with per-element state (MXNet's adam_update and rmsprop_update),
// each ONE pass over the data that reads weight, gradient and state and writes the state and the new
// weight, on any device, for float, double, half_t and bf16_t, ranks 1 to 5.
//
//   g     = clip(rescale_grad * grad, clip_gradient) + wd * weight      (no clipping when clip_gradient < 0)
//   Adam     mean = beta1 * mean + (1 - beta1) * g
//            var  = beta2 * var + (1 - beta2) * g^2
//            out  = weight - lr * mean / (sqrt(var) + epsilon)
//   RMSProp  n    = gamma1 * n + (1 - gamma1) * g^2
//            out  = weight - lr * g / sqrt(n + epsilon)
// As in MXNet, Adam's bias correction is the caller's: pass lr * sqrt(1 - beta2^t) / (1 - beta1^t) for step t.
// Weight decay joins the gradient (L2, as MXNet's), after the clipping. The arithmetic runs in
// compute_t<DType> and rounds once per stored value. `out` is normally the weight itself (kWriteInplace);
// the state is updated in place whatever req says (except kNullOp, which does nothing). Padded rows work.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/adaptive_update.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct AdamParam {
  double lr = 0.001;
  double beta1 = 0.9;           // decay of the gradient's running mean
  double beta2 = 0.999;         // decay of the squared gradient's running mean
  double epsilon = 1e-8;
  double wd = 0.0;
  double rescale_grad = 1.0;
  double clip_gradient = -1.0;  // < 0: no clipping
};

struct RMSPropParam {
  double lr = 0.001;
  double gamma1 = 0.95;         // decay of the squared gradient's running mean
  double epsilon = 1e-8;
  double wd = 0.0;
  double rescale_grad = 1.0;
  double clip_gradient = -1.0;
};

// mean, var and out (req) as above; every tensor has the weight's shape.
template <typename Device, int dim, typename DType>
void AdamUpdate(const AdamParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
                const Tensor<Device, dim, DType>& mean, const Tensor<Device, dim, DType>& var, OpReqType req,
                const Tensor<Device, dim, DType>& out);

// n and out (req) as above.
template <typename Device, int dim, typename DType>
void RMSPropUpdate(const RMSPropParam& p, const Tensor<Device, dim, DType>& weight,
                   const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& n, OpReqType req,
                   const Tensor<Device, dim, DType>& out);

}  // namespace ops
}  // namespace tensorexpr
