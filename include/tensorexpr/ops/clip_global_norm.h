// tensorexpr/ops/clip_global_norm.h — gradient clipping by the global norm (MXNet's gluon clip_global_norm,
// TensorFlow's clip_by_global_norm), on any device, for float, double, half_t and bf16_t:
//
//   norm  = sqrt(sum over every gradient of the sum of its squares)
//   grads *= min(1, max_norm / norm)                 (in place; unchanged when norm <= max_norm)
//
// The norm is computed on the device into `norm` (shape (1)) and the scale is applied there too, so
// nothing waits for the device. A NaN or infinite gradient makes the norm NaN or infinite, and then every
// gradient NaN or zero: check `norm` to skip such a step. Sums accumulate in compute_t<DType> (float for
// half / bf16). Each gradient is given as its (rows, last dimension) view: t.FlatTo2D().
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/clip_global_norm.h is the template implementation, for other dtypes.
#pragma once
#include <vector>
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

// Scales `grads` in place so that their global norm is at most max_norm (> 0); norm (1) receives the
// norm before clipping.
template <typename Device, typename DType>
void ClipByGlobalNorm(const std::vector<Tensor<Device, 2, DType>>& grads, double max_norm,
                      const Tensor<Device, 1, DType>& norm);

}  // namespace ops
}  // namespace tensorexpr
