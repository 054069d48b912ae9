// tensorexpr/ops/softmax.h — softmax and log-softmax over any one axis (MXNet's softmax / log_softmax, ONNX's
// Softmax / LogSoftmax from opset 13), forward and backward, on any device, for float, double, half_t and
// bf16_t, data of rank 1 to 5. No label: the fused softmax with cross-entropy is <ops/softmax_output.h>.
//
//   softmax       y = exp(x - lse),  lse = m + log(sum_axis exp(x - m)),  m = max_axis x
//   log_softmax   y = x - lse
//   backward      softmax:      dx = y * (dy - sum_axis(dy * y))
//                 log_softmax:  dx = dy - exp(y) * sum_axis(dy)
// Numerically stable: the maximum along the axis is subtracted before exp, so any finite input gives a
// finite softmax (and log_softmax never takes the log of an underflowed probability). The log-sum-exp (one
// value per position of the other axes) is computed first into the stream's workspace, in compute_t<DType>
// (float for half / bf16), then the output is one elementwise pass: any req works, y may alias x and dx may
// alias dy. Views with padded rows work whatever the axis.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/softmax.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct SoftmaxParam {
  int axis = -1;  // the axis the probabilities sum over; negative counts from the end (ONNX's and MXNet's default)
};

// The output has the data's shape; Error when the axis is not one of the data's.
template <int dim>
inline Shape<dim> InferSoftmaxShape(const SoftmaxParam& p, const Shape<dim>& data_shape) {
  TE_CHECK(-dim <= p.axis && p.axis < dim, "Softmax: axis ", p.axis, " is out of range for data of shape ",
           data_shape, " (need ", -dim, " <= axis < ", dim, ")");
  return data_shape;
}

// out = softmax(data) along p.axis, stored as req says.
template <typename Device, int dim, typename DType>
void SoftmaxForward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                    const Tensor<Device, dim, DType>& out);
// in_grad = out * (out_grad - sum_axis(out_grad * out)); `out` is the forward output.
template <typename Device, int dim, typename DType>
void SoftmaxBackward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& out, OpReqType req, const Tensor<Device, dim, DType>& in_grad);

// out = log_softmax(data) along p.axis, stored as req says.
template <typename Device, int dim, typename DType>
void LogSoftmaxForward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                       const Tensor<Device, dim, DType>& out);
// in_grad = out_grad - exp(out) * sum_axis(out_grad); `out` is the forward output.
template <typename Device, int dim, typename DType>
void LogSoftmaxBackward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& out_grad,
                        const Tensor<Device, dim, DType>& out, OpReqType req,
                        const Tensor<Device, dim, DType>& in_grad);

}  // namespace ops
}  // namespace tensorexpr
