// ops/fully_connected.h — the fully connected operator (MXNet's FullyConnected), on any device, for
// float, double, half_t and bf16_t:
//   forward   out (N, K) = X . W^T + b          X = data flattened to (N, D), W (K, D), b (K)
//   backward  dX = dY . W,   dW = dY^T . X,   db = sum_rows(dY)
// Products are one BLAS call each (dot), the bias a broadcast; every output honours its own req
// (kNullOp skips its work, kAddTo accumulates through BLAS's beta).
// data may have any number of dimensions >= 2: it is read as (shape[0], the product of the rest), which
// needs it (and its gradient) contiguous unless it is already 2-D (then padded rows are fine).
#pragma once
#include <string>
#include <tensorexpr/tensorexpr.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

struct FullyConnectedParam {
  index_t num_hidden = 0;  // K
  bool no_bias = false;
};

struct FullyConnectedShapes {
  Shape<2> out;     // (N, K)
  Shape<2> weight;  // (K, D)
  Shape<1> bias;    // (K); (0) when no_bias
};

template <int dim>
inline FullyConnectedShapes InferFullyConnectedShapes(const FullyConnectedParam& p, const Shape<dim>& data_shape) {
  static_assert(dim >= 2, "FullyConnected data is (N, features...): at least two dimensions");
  TE_CHECK(p.num_hidden >= 1, "FullyConnected: num_hidden = ", p.num_hidden, " must be >= 1");
  FullyConnectedShapes s;
  s.out = Shape2(data_shape[0], p.num_hidden);
  s.weight = Shape2(p.num_hidden, data_shape.ProdShape(1, dim));
  s.bias = Shape1(p.no_bias ? 0 : p.num_hidden);
  return s;
}

namespace detail {

inline void CheckFcReq(const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "FullyConnected ", what,
           ": unknown req ", static_cast<int>(req));
}

// data as (N, D): itself when 2-D, else a contiguous view.
template <typename Device, int dim, typename DType>
inline Tensor<Device, 2, DType> FcFlat(const Tensor<Device, dim, DType>& t, const char* name) {
  if constexpr (dim == 2) {
    return t;
  } else {
    TE_CHECK(t.CheckContiguous() || t.shape_.Size() == 0, "FullyConnected: ", name, " of shape ", t.shape_,
             " has padded rows (stride ", t.stride_, "); a ", dim, "-D ", name,
             " is flattened to (N, D) and must be contiguous");
    return Tensor<Device, 2, DType>(t.dptr_, Shape2(t.shape_[0], t.shape_.ProdShape(1, dim)), t.stream_);
  }
}

template <int dim>
inline void CheckFcShape(const Shape<dim>& got, const Shape<dim>& want, const char* name) {
  TE_CHECK(got == want, "FullyConnected: ", name, " shape ", got, " does not match the expected ", want);
}

}  // namespace detail

// out = data . weight^T + bias, stored as req says. bias is ignored when no_bias.
template <typename Device, int dim, typename DType>
void FullyConnectedForward(const FullyConnectedParam& p, const Tensor<Device, dim, DType>& data,
                           const Tensor<Device, 2, DType>& weight, const Tensor<Device, 1, DType>& bias,
                           OpReqType req, const Tensor<Device, 2, DType>& out) {
  const FullyConnectedShapes s = InferFullyConnectedShapes(p, data.shape_);
  detail::CheckFcShape(weight.shape_, s.weight, "weight");
  detail::CheckFcShape(out.shape_, s.out, "output");
  if (!p.no_bias) detail::CheckFcShape(bias.shape_, s.bias, "bias");
  detail::CheckFcReq("forward", req);
  if (req == kNullOp || s.out.Size() == 0) return;
  const Tensor<Device, 2, DType> x = detail::FcFlat(data, "data");
  Tensor<Device, 2, DType> y = out;
  if (s.weight[1] == 0) {  // an empty sum: out = bias (or 0)
    if (req != kAddTo) y = DType(0);
  } else {
    Assign(out, req, expr::dot(x, weight.T()));
  }
  if (!p.no_bias) y += expr::repmat(bias, s.out[0]);
}

// Gradients given out_grad (N, K); each stored as its req says, kNullOp skipping its work.
template <typename Device, int dim, typename DType>
void FullyConnectedBackward(const FullyConnectedParam& p, const Tensor<Device, 2, DType>& out_grad,
                            const Tensor<Device, dim, DType>& data, const Tensor<Device, 2, DType>& weight,
                            OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_weight,
                            const Tensor<Device, 2, DType>& weight_grad, OpReqType req_bias,
                            const Tensor<Device, 1, DType>& bias_grad) {
  const FullyConnectedShapes s = InferFullyConnectedShapes(p, data.shape_);
  detail::CheckFcShape(out_grad.shape_, s.out, "output gradient");
  detail::CheckFcShape(weight.shape_, s.weight, "weight");
  detail::CheckFcReq("backward (data)", req_data);
  detail::CheckFcReq("backward (weight)", req_weight);
  detail::CheckFcReq("backward (bias)", req_bias);
  if (req_data != kNullOp) detail::CheckFcShape(data_grad.shape_, data.shape_, "data gradient");
  if (req_weight != kNullOp) detail::CheckFcShape(weight_grad.shape_, s.weight, "weight gradient");
  const bool do_bias = req_bias != kNullOp && !p.no_bias;
  if (do_bias) detail::CheckFcShape(bias_grad.shape_, s.bias, "bias gradient");
  const index_t N = s.out[0], K = s.out[1], D = s.weight[1];
  // A product over an empty inner dimension is zero; BLAS is not asked to form it.
  if (req_data != kNullOp && N * D > 0) {
    const Tensor<Device, 2, DType> dx = detail::FcFlat(data_grad, "data gradient");
    Assign(dx, req_data, expr::dot(out_grad, weight));
  }
  if (req_weight != kNullOp && K * D > 0) {
    if (N == 0) {
      Tensor<Device, 2, DType> dw = weight_grad;
      if (req_weight != kAddTo) dw = DType(0);
    } else {
      Assign(weight_grad, req_weight, expr::dot(out_grad.T(), detail::FcFlat(data, "data")));
    }
  }
  if (do_bias && K > 0) Assign(bias_grad, req_bias, expr::sum_rows(out_grad));
}

}  // namespace ops
}  // namespace tensorexpr
