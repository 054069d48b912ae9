// tensorexpr/ops/sgd.h — stochastic gradient descent updates (MXNet's sgd_update and sgd_mom_update), written as
// elementwise expressions, so the same code runs on the CPU and (compiled by nvcc) the GPU.
//
//   g      = clip(rescale_grad * grad, clip_gradient)       (no clipping when clip_gradient < 0)
//   plain  out = (1 - lr * wd) * weight - lr * g
//   mom    mom = momentum * mom - lr * wd * weight - lr * g;  out = weight + mom
// Weight decay is applied to the weight, not clipped with the gradient (as MXNet). The arithmetic runs in
// compute_t<DType> (float for half / bf16) and rounds once per stored value. `out` is normally the weight
// itself (req kWriteInplace); every read is elementwise, so the aliasing is safe. Each update is one pass
// over memory: the momentum update reads weight, gradient and momentum once and writes the momentum and
// the output in the same loop (or kernel).
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/sgd.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct SGDParam {
  double lr = 0.01;             // learning rate
  double wd = 0.0;              // weight decay (L2) coefficient
  double rescale_grad = 1.0;    // the gradient is multiplied by this first (e.g. 1 / batch size)
  double clip_gradient = -1.0;  // clip the rescaled gradient into [-clip, clip]; < 0: no clipping
};

struct SGDMomParam {
  double lr = 0.01;
  double momentum = 0.9;        // the weight of the previous update
  double wd = 0.0;
  double rescale_grad = 1.0;
  double clip_gradient = -1.0;
};

// out = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad), stored as req says.
template <typename Device, int dim, typename DType>
void SGDUpdate(const SGDParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
               OpReqType req, const Tensor<Device, dim, DType>& out);

// mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad);  out = weight + mom (req).
// mom (the optimiser's state) is updated in place whatever req says, except kNullOp, which does nothing.
template <typename Device, int dim, typename DType>
void SGDMomUpdate(const SGDMomParam& p, const Tensor<Device, dim, DType>& weight,
                  const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& mom, OpReqType req,
                  const Tensor<Device, dim, DType>& out);

}  // namespace ops
}  // namespace tensorexpr
