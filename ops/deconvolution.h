// ops/deconvolution.h — the template implementation of <tensorexpr/ops/deconvolution.h> (see there): the
// operator boundary (tensor checks, each req decoded once, bias and its gradient) over the passes of the
// convolution MakeDeconvGeometry describes, run by ops/convolution.h's dispatch to the algorithms. Compiled
// into tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes (ops/deconvolution.cc).
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/deconvolution.h>
#include "convolution.h"

namespace tensorexpr {
namespace ops {

namespace detail {

// The checks both passes make; returns the shapes.
template <int ddim, int wdim>
inline DeconvShapes CheckDeconv(const DeconvolutionParam& p, const std::vector<index_t>& data_shape) {
  static_assert(wdim >= 3 && wdim <= 5,
                "the deconvolution weight is (C, K/group, kernel...) with 1, 2 or 3 spatial dimensions");
  static_assert(ddim == wdim || ddim == wdim - 1,
                "the deconvolution data is (N, C, spatial...) or unbatched (C, spatial...) with as many spatial "
                "dimensions as the weight");
  TE_CHECK(size_t(wdim - 2) == p.kernel.size(), "Deconvolution: the weight has ", wdim - 2,
           " spatial dimensions but the kernel ", VecStr(p.kernel), " has ", p.kernel.size());
  return InferDeconvShapes(p, data_shape);
}

}  // namespace detail

template <typename Device, int ddim, int wdim, typename DType>
void DeconvolutionForward(const DeconvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                          const Tensor<Device, wdim, DType>& weight, const Tensor<Device, 1, DType>& bias,
                          OpReqType req, const Tensor<Device, ddim, DType>& out) {
  const std::vector<index_t> dshape = detail::ShapeVec(data.shape_);
  const DeconvShapes shapes = detail::CheckDeconv<ddim, wdim>(p, dshape);
  detail::CheckTensor("Deconvolution", data, dshape, "data", true);
  detail::CheckTensor("Deconvolution", weight, shapes.weight, "weight", true);
  detail::CheckTensor("Deconvolution", out, shapes.out, "output", false);
  if (!p.no_bias) detail::CheckTensor("Deconvolution", bias, shapes.bias, "bias", true);
  if constexpr (ddim == wdim - 1) {
    DeconvolutionForward(p, detail::WithBatch(data), weight, bias, req, detail::WithBatch(out));
  } else {
    const ReqStore store = DecodeReq(req, "Deconvolution forward");
    if (!store.active || data.shape_[0] == 0) return;
    Stream<Device>* s = out.stream_;
    const StreamThreadScope threads(s);
    const ConvGeometry g = MakeDeconvGeometry(p, dshape);
    // y is the convolution's data gradient given dY = x.
    ConvTensors<DType> t;
    t.weight = weight.dptr_;
    t.out_grad = data.dptr_;
    t.data_grad = out.dptr_;
    t.data_grad_stride = out.stride_;
    const ConvProblem problem = MakeConvProblem<Device, DType>(
        g, s, out.CheckContiguous(), p.workspace, detail::VectorAligned(data.dptr_, weight.dptr_, out.dptr_));
    detail::RunConvPasses(p.algorithm, problem, t, ConvStores::Only(ConvPass::kBackwardData, store),
                          detail::ConvSpans{0, detail::SpanOf(out)}, false, s);
    if (!p.no_bias) ApplyEpilogueInPlace(out, ConvEpilogue<DType>::Bias(bias.dptr_), g.channels_last);
  }
}

template <typename Device, int ddim, int wdim, typename DType>
void DeconvolutionBackward(const DeconvolutionParam& p, const Tensor<Device, ddim, DType>& out_grad,
                           const Tensor<Device, ddim, DType>& data, const Tensor<Device, wdim, DType>& weight,
                           OpReqType req_data, const Tensor<Device, ddim, DType>& data_grad, OpReqType req_weight,
                           const Tensor<Device, wdim, DType>& weight_grad, OpReqType req_bias,
                           const Tensor<Device, 1, DType>& bias_grad) {
  const std::vector<index_t> dshape = detail::ShapeVec(data.shape_);
  const DeconvShapes shapes = detail::CheckDeconv<ddim, wdim>(p, dshape);
  ConvStores stores;  // the convolution's forward is our data gradient
  stores.out = DecodeReq(req_data, "Deconvolution backward (data gradient)");
  stores.weight_grad = DecodeReq(req_weight, "Deconvolution backward (weight gradient)");
  const ReqStore bias_store = p.no_bias ? ReqStore() : DecodeReq(req_bias, "Deconvolution backward (bias gradient)");
  detail::CheckTensor("Deconvolution", out_grad, shapes.out, "output gradient", false);
  detail::CheckTensor("Deconvolution", data, dshape, "data", true);
  detail::CheckTensor("Deconvolution", weight, shapes.weight, "weight", true);
  if (stores.out.active) detail::CheckTensor("Deconvolution", data_grad, dshape, "data gradient", true);
  if (stores.weight_grad.active) detail::CheckTensor("Deconvolution", weight_grad, shapes.weight, "weight gradient", true);
  if (bias_store.active) detail::CheckTensor("Deconvolution", bias_grad, shapes.bias, "bias gradient", true);
  if constexpr (ddim == wdim - 1) {
    DeconvolutionBackward(p, detail::WithBatch(out_grad), detail::WithBatch(data), weight, req_data,
                          detail::WithBatch(data_grad), req_weight, weight_grad, req_bias, bias_grad);
  } else {
    Stream<Device>* s = out_grad.stream_;
    const StreamThreadScope threads(s);
    const ConvGeometry g = MakeDeconvGeometry(p, dshape);
    if (bias_store.active) {  // db = the sum of dY over images and positions
      detail::WithChannelsAt1(out_grad, g.channels_last,
                              [&](auto dy) { Assign(bias_grad, req_bias, expr::sumall_except_dim<1>(dy)); });
    }
    if (!stores.out.active && !stores.weight_grad.active) return;
    if (g.N == 0) {  // no images: the weight gradient is zero (the data gradient is empty)
      if (stores.weight_grad.active && !stores.weight_grad.add)
        Assign(weight_grad, kWriteTo, expr::scalar<DType>(DType(0)));
      return;
    }
    // dx = the convolution of dY; dW = the convolution's weight gradient with data dY and output gradient x.
    ConvTensors<DType> t;
    t.data = out_grad.dptr_;
    t.data_stride = out_grad.stride_;
    t.weight = weight.dptr_;
    t.out = stores.out.active ? data_grad.dptr_ : nullptr;
    t.out_grad = data.dptr_;
    t.weight_grad = stores.weight_grad.active ? weight_grad.dptr_ : nullptr;
    const ConvProblem problem = MakeConvProblem<Device, DType>(
        g, s, out_grad.CheckContiguous(), p.workspace,
        detail::VectorAligned(t.data, t.weight, t.out, t.out_grad, t.weight_grad));
    const bool apart = detail::PassesApart(weight_grad, data_grad, data, out_grad, weight);
    detail::RunConvPasses(p.algorithm, problem, t, stores, detail::ConvSpans{detail::SpanOf(data_grad), 0}, apart, s);
  }
}

// Explicit instantiations of Forward and Backward for one device and dtype, 1-, 2- and 3-D, batched or
// not (ops/deconvolution.cc).
#define TE_DECONVOLUTION_INSTANCE_(Device, ddim, wdim, DType) \
  template void DeconvolutionForward<Device, ddim, wdim, DType>( \
      const DeconvolutionParam&, const Tensor<Device, ddim, DType>&, const Tensor<Device, wdim, DType>&, \
      const Tensor<Device, 1, DType>&, OpReqType, const Tensor<Device, ddim, DType>&); \
  template void DeconvolutionBackward<Device, ddim, wdim, DType>( \
      const DeconvolutionParam&, const Tensor<Device, ddim, DType>&, const Tensor<Device, ddim, DType>&, \
      const Tensor<Device, wdim, DType>&, OpReqType, const Tensor<Device, ddim, DType>&, OpReqType, \
      const Tensor<Device, wdim, DType>&, OpReqType, const Tensor<Device, 1, DType>&);
#define TE_INSTANTIATE_DECONVOLUTION(Device, DType) \
  TE_DECONVOLUTION_INSTANCE_(Device, 3, 3, DType) TE_DECONVOLUTION_INSTANCE_(Device, 2, 3, DType) \
  TE_DECONVOLUTION_INSTANCE_(Device, 4, 4, DType) TE_DECONVOLUTION_INSTANCE_(Device, 3, 4, DType) \
  TE_DECONVOLUTION_INSTANCE_(Device, 5, 5, DType) TE_DECONVOLUTION_INSTANCE_(Device, 4, 5, DType)

}  // namespace ops
}  // namespace tensorexpr
