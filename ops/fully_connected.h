// ops/fully_connected.h — the template implementation of <tensorexpr/ops/fully_connected.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <string>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/fully_connected.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

inline void CheckFcReq(const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "FullyConnected ", what,
           ": unknown req ", static_cast<int>(req));
}

// data as (N, D): itself when 2-D, its (rows, last) view without flatten, else a contiguous view.
template <typename Device, int dim, typename DType>
inline Tensor<Device, 2, DType> FcFlat(const FullyConnectedParam& p, const Tensor<Device, dim, DType>& t,
                                       const char* name) {
  if constexpr (dim == 2) {
    return t;
  } else {
    if (!p.flatten) return t.FlatTo2D();
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
  const Tensor<Device, 2, DType> x = detail::FcFlat(p, data, "data");
  Tensor<Device, 2, DType> y = out;
  if (s.weight[1] == 0) {  // an empty sum: out = bias (or 0)
    if (req != kAddTo) y = DType(0);
  } else {
    Assign(out, req, expr::dot(x, weight.T()));
  }
  if (!p.no_bias) y += expr::repmat(bias, s.out[0]);
}

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
    const Tensor<Device, 2, DType> dx = detail::FcFlat(p, data_grad, "data gradient");
    Assign(dx, req_data, expr::dot(out_grad, weight));
  }
  if (req_weight != kNullOp && K * D > 0) {
    if (N == 0) {
      Tensor<Device, 2, DType> dw = weight_grad;
      if (req_weight != kAddTo) dw = DType(0);
    } else {
      Assign(weight_grad, req_weight, expr::dot(out_grad.T(), detail::FcFlat(p, data, "data")));
    }
  }
  if (do_bias && K > 0) Assign(bias_grad, req_bias, expr::sum_rows(out_grad));
}

// Explicit instantiations for one device and dtype, ranks 2 to 5 (ops/fully_connected.cc).
#define TE_FULLY_CONNECTED_INSTANCE_(Device, dim, DType) \
  template void FullyConnectedForward<Device, dim, DType>(const FullyConnectedParam& p, \
      const Tensor<Device, dim, DType>& data, const Tensor<Device, 2, DType>& weight, \
      const Tensor<Device, 1, DType>& bias, OpReqType req, const Tensor<Device, 2, DType>& out); \
  template void FullyConnectedBackward<Device, dim, DType>(const FullyConnectedParam& p, \
      const Tensor<Device, 2, DType>& out_grad, const Tensor<Device, dim, DType>& data, \
      const Tensor<Device, 2, DType>& weight, OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, \
      OpReqType req_weight, const Tensor<Device, 2, DType>& weight_grad, OpReqType req_bias, \
      const Tensor<Device, 1, DType>& bias_grad);
#define TE_INSTANTIATE_FULLY_CONNECTED(Device, DType) TE_OPS_RANKS_FROM_2(TE_FULLY_CONNECTED_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
