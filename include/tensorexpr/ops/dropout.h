// tensorexpr/ops/dropout.h — dropout (MXNet's Dropout, mode "training"), on the CPU and (compiled by nvcc) the GPU.
//
//   training   mask_i = 1 / (1 - p) with probability 1 - p, else 0;  y = x * mask   (mask kept for backward)
//   inference  y = x
//   backward   dx = dy * mask
// The mask is drawn by Random<Device, DType>::SampleUniform into the mask tensor itself and then
// thresholded in place, so no other memory is needed. On the GPU the generator queues its work on its own
// stream (Random::set_stream): give it the stream of the tensors. p = 0 keeps everything (no sampling);
// p = 1 drops everything.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/dropout.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/random.h>

namespace tensorexpr {
namespace ops {

struct DropoutParam {
  double p = 0.5;  // the fraction of the inputs dropped in training
};

// out = dropout(data), stored as req says; in training `mask` (data's shape) receives the scaled mask.
// Rows of data, out and mask may be padded.
template <typename Device, int dim, typename DType>
void DropoutForward(const DropoutParam& p, bool is_train, Random<Device, DType>* rnd,
                    const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out,
                    const Tensor<Device, dim, DType>& mask);

// data_grad = out_grad * mask (the mask of the training forward), stored as req says.
template <typename Device, int dim, typename DType>
void DropoutBackward(const DropoutParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& mask, OpReqType req, const Tensor<Device, dim, DType>& data_grad);

}  // namespace ops
}  // namespace tensorexpr
