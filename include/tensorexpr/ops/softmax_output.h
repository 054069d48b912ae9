// tensorexpr/ops/softmax_output.h — softmax with the cross-entropy loss against integer class labels (MXNet's
// SoftmaxOutput, plus the loss value), on any device, for float, double, half_t and bf16_t.
//
//   forward   prob[i, :] = softmax(data[i, :])                       data, prob (N, K)
//             loss       = mean_i ( -log prob[i, label[i]] )         a 1-element tensor, so it stays on the device
//   backward  data_grad  = (prob - onehot(label)) * grad_scale / N  [* loss_grad[0]]
//
// Numerically stable: the row maximum m is subtracted before exp, and the loss is computed from the
// log-sum-exp, -log p = m + log(sum_j exp(x_j - m)) - x_label, never from log(prob) (which underflows).
// Everything is composed from core expressions (Softmax, mat_choose_row_element: data[i, label[i]],
// one_hot_encode, sumall, F<op>), so the same code runs on the CPU and the GPU. Sums accumulate in accum_t (float for half / bf16).
//
// Labels: a 1-D tensor of N class indices of any element type LType — the data's DType (MXNet's
// convention) or int32_t. Floating labels must hold whole numbers (exact up to 2^11 classes in half_t, 2^8
// in bf16_t: use int32_t or float labels for more). On the CPU a label that is not a whole number in
// [0, K) throws Error naming it; on the GPU (no host check, which would need a copy and a sync) such a
// row's loss term is NaN and its one-hot row is all zero.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/softmax_output.h is the template implementation, for other dtypes.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct SoftmaxOutputParam {
  double grad_scale = 1.0;  // multiplies the gradient (MXNet's grad_scale)
};

// prob = softmax(data) (overwritten: req_prob is kWriteTo or kWriteInplace, prob may alias data) and,
// unless req_loss is kNullOp, loss (shape (1)) = the mean cross-entropy, stored as req_loss says
// (kAddTo accumulates). An empty batch has loss 0. data and prob may have padded rows.
template <typename Device, typename DType, typename LType>
void SoftmaxOutputForward(const SoftmaxOutputParam& /*p: grad_scale acts in the backward only*/,
                          const Tensor<Device, 2, DType>& data,
                          const Tensor<Device, 1, LType>& label, OpReqType req_prob,
                          const Tensor<Device, 2, DType>& prob, OpReqType req_loss,
                          const Tensor<Device, 1, DType>& loss);

// data_grad = (prob - onehot(label)) * grad_scale / N, stored as req says (data_grad may alias prob).
template <typename Device, typename DType, typename LType>
void SoftmaxOutputBackward(const SoftmaxOutputParam& p, const Tensor<Device, 2, DType>& prob,
                           const Tensor<Device, 1, LType>& label, OpReqType req,
                           const Tensor<Device, 2, DType>& data_grad);

// The same times loss_grad[0] (shape (1), on the device): the gradient flowing into the loss.
template <typename Device, typename DType, typename LType>
void SoftmaxOutputBackward(const SoftmaxOutputParam& p, const Tensor<Device, 2, DType>& prob,
                           const Tensor<Device, 1, LType>& label, const Tensor<Device, 1, DType>& loss_grad,
                           OpReqType req, const Tensor<Device, 2, DType>& data_grad);

}  // namespace ops
}  // namespace tensorexpr
