// tensorexpr/ops/dropout.h — dropout (MXNet's Dropout, mode "training"), on the CPU and (compiled by nvcc) the GPU.
//
//   training   mask_i = 1 / (1 - p) with probability 1 - p, else 0;  y = x * mask   (mask kept for backward)
//   inference  y = x
//   backward   dx = dy * mask
// Two generators:
// - Random<Device, DType>: the mask is drawn by SampleUniform into the mask tensor itself and then
//   thresholded in place (two passes, no other memory). Its numbers differ between the CPU and the GPU.
// - PhiloxRandom<Device> (random_philox.h): one pass, each element's uniform thresholded as it is drawn;
//   the mask is the same on the CPU and the GPU, bit for bit, for the same seed, sequence and offset, and
//   does not depend on the CPU's thread count. Element i is kept when u_i < 1 - p, u_i being the number
//   SampleUniform(t, 0, 1) would put at element i of a compute_t<DType> tensor t (float for half_t / bf16_t)
//   at that offset; the call moves the generator's offset on as such a SampleUniform would (for 0 < p < 1).
// On the GPU the generator queues its work on its own stream (set_stream; PhiloxRandom: null means the
// mask's stream): give it the stream of the tensors. p = 0 keeps everything (no sampling); p = 1 drops
// everything.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/dropout.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/random.h>
#include <tensorexpr/random_philox.h>

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
template <typename Device, int dim, typename DType>
void DropoutForward(const DropoutParam& p, bool is_train, PhiloxRandom<Device>* rnd,
                    const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out,
                    const Tensor<Device, dim, DType>& mask);

// data_grad = out_grad * mask (the mask of the training forward), stored as req says.
template <typename Device, int dim, typename DType>
void DropoutBackward(const DropoutParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& mask, OpReqType req, const Tensor<Device, dim, DType>& data_grad);

}  // namespace ops
}  // namespace tensorexpr
