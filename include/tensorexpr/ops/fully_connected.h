// tensorexpr/ops/fully_connected.h — the fully connected operator (MXNet's FullyConnected), on any device, for
// float, double, half_t and bf16_t:
//   forward   out (N, K) = X . W^T + b          X = data flattened to (N, D), W (K, D), b (K)
//   backward  dX = dY . W,   dW = dY^T . X,   db = sum_rows(dY)
// Products are one BLAS call each (dot), the bias a broadcast; every output honours its own req
// (kNullOp skips its work, kAddTo accumulates through BLAS's beta).
// data may have any number of dimensions >= 2: it is read as (shape[0], the product of the rest), which
// needs it (and its gradient) contiguous unless it is already 2-D (then padded rows are fine).
// With flatten = false (MXNet's flatten=False) data (..., D) is multiplied on its last axis instead, every
// leading position its own row: out is then (the product of the leading extents, K), which is the
// (rows, last) view out.FlatTo2D() of an (..., K) output; padded rows are fine at any rank.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/fully_connected.h is the template implementation, for other dtypes.
#pragma once
#include <string>
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct FullyConnectedParam {
  index_t num_hidden = 0;  // K
  bool no_bias = false;
  bool flatten = true;  // false: multiply on the last axis of N-D data (see above)
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
  if (p.flatten) {
    s.out = Shape2(data_shape[0], p.num_hidden);
    s.weight = Shape2(p.num_hidden, data_shape.ProdShape(1, dim));
  } else {
    s.out = Shape2(data_shape.ProdShape(0, dim - 1), p.num_hidden);
    s.weight = Shape2(p.num_hidden, data_shape[dim - 1]);
  }
  s.bias = Shape1(p.no_bias ? 0 : p.num_hidden);
  return s;
}

// out = data . weight^T + bias, stored as req says. bias is ignored when no_bias.
template <typename Device, int dim, typename DType>
void FullyConnectedForward(const FullyConnectedParam& p, const Tensor<Device, dim, DType>& data,
                           const Tensor<Device, 2, DType>& weight, const Tensor<Device, 1, DType>& bias,
                           OpReqType req, const Tensor<Device, 2, DType>& out);

// Gradients given out_grad (N, K); each stored as its req says, kNullOp skipping its work.
template <typename Device, int dim, typename DType>
void FullyConnectedBackward(const FullyConnectedParam& p, const Tensor<Device, 2, DType>& out_grad,
                            const Tensor<Device, dim, DType>& data, const Tensor<Device, 2, DType>& weight,
                            OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_weight,
                            const Tensor<Device, 2, DType>& weight_grad, OpReqType req_bias,
                            const Tensor<Device, 1, DType>& bias_grad);

}  // namespace ops
}  // namespace tensorexpr
