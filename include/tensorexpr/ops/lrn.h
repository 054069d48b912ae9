// tensorexpr/ops/lrn.h — local response normalisation across channels (MXNet's LRN, ONNX's LRN), forward and
// backward, on any device, for float, double, half_t and bf16_t, data (N, C, spatial...) of rank 3 to 5:
//
//   norm[n, c, ...] = knorm + alpha / nsize * sum of x[n, j, ...]^2 over j in [c - (nsize - 1) / 2, c + nsize / 2]
//   y = x * norm^-beta
//   dx = dy * norm^-beta - 2 alpha beta / nsize * x * sum over the c whose window holds j of dy * x * norm^(-beta - 1)
// The window is clipped to the channels that exist; an odd nsize centres it (MXNet takes odd sizes only), an
// even one reaches one channel further after than before (ONNX's rule); the windows are pooling's (expr/pool.h).
// norm is recomputed by the backward from the forward's INPUT (MXNet keeps it as a second output). The
// windows' sums live in the stream's workspace, in compute_t<DType> (float for half / bf16); the output is
// then one elementwise pass: any req, padded rows, y may alias x and dx may alias dy or x.
//
// Defaults: MXNet's (alpha 1e-4, beta 0.75, knorm 2); ONNX's bias (our knorm) defaults to 1. knorm > 0 and
// alpha >= 0 are required (so norm > 0 and its power is defined); ONNX does not check them.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/lrn.h is the template implementation, for other dtypes.
#pragma once
#include <cmath>
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct LRNParam {
  index_t nsize = 0;    // channels in the window (required, >= 1); ONNX's size
  double alpha = 1e-4;  // scale of the sum of squares (divided by nsize)
  double beta = 0.75;   // exponent
  double knorm = 2.0;   // added to the scaled sum; ONNX's bias
};

// The output has the data's shape; Error naming the parameter when one is out of range or the data is not
// (N, C, spatial...).
template <int dim>
inline Shape<dim> InferLRNShape(const LRNParam& p, const Shape<dim>& data_shape) {
  TE_CHECK(dim >= 3 && dim <= 5, "LRN: data shape ", data_shape,
           " must be (N, C, spatial...) with 1 to 3 spatial dimensions");
  TE_CHECK(p.nsize >= 1, "LRN: nsize = ", p.nsize, " must be >= 1 (the channels in the window)");
  TE_CHECK(std::isfinite(p.alpha) && p.alpha >= 0, "LRN: alpha = ", p.alpha, " must be finite and >= 0");
  TE_CHECK(std::isfinite(p.beta), "LRN: beta = ", p.beta, " must be finite");
  TE_CHECK(std::isfinite(p.knorm) && p.knorm > 0, "LRN: knorm = ", p.knorm,
           " must be finite and > 0 (the base of norm^-beta must stay positive)");
  return data_shape;
}

// out = data * norm^-beta, stored as req says.
template <typename Device, int dim, typename DType>
void LRNForward(const LRNParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                const Tensor<Device, dim, DType>& out);

// data_grad (req) = the gradient of the forward given out_grad; `data` is the forward's input.
template <typename Device, int dim, typename DType>
void LRNBackward(const LRNParam& p, const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data,
                 OpReqType req, const Tensor<Device, dim, DType>& data_grad);

}  // namespace ops
}  // namespace tensorexpr
