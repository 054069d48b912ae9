// tensorexpr/ops/deconvolution.h — the deconvolution (transposed convolution) operator (MXNet's Deconvolution,
// ONNX's ConvTranspose): Forward and Backward for 1-D, 2-D and 3-D inputs, channels first or last, on the CPU
// and (compiled by nvcc) the GPU, for float, double, half_t and bf16_t. Parameters and shapes:
// <tensorexpr/ops/deconv_param.h>.
//
// A deconvolution is the data gradient of the convolution that maps its output back onto its input
// (MakeDeconvGeometry): the forward runs that convolution's data-gradient pass, the backward its forward
// pass (the data gradient) and its weight-gradient pass, through the convolution's algorithms and their
// selection (<tensorexpr/ops/conv_select.h>: ConvolutionParam::algorithm's names, tuning and the cache serve
// here too), with workspace from the stream. The operator adds the bias and sums its gradient itself.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t and 1-, 2- and 3-D data; ops/deconvolution.h is the template implementation.
#pragma once
#include <tensorexpr/tensor.h>
#include <tensorexpr/ops/deconv_param.h>

namespace tensorexpr {
namespace ops {

// y = deconv(x, W) + b, stored as req says. data (N, C, spatial...) or (C, spatial...) and weight (C, K/group,
// kernel...) contiguous; bias (K) (ignored when no_bias); out as InferDeconvShapes says, rows may be padded.
// Runs on out's stream.
template <typename Device, int ddim, int wdim, typename DType>
void DeconvolutionForward(const DeconvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                          const Tensor<Device, wdim, DType>& weight, const Tensor<Device, 1, DType>& bias,
                          OpReqType req, const Tensor<Device, ddim, DType>& out);

// Gradients of y = deconv(x, W) + b given dY (out_grad, rows may be padded). Each of data_grad, weight_grad,
// bias_grad is stored as its req says; kNullOp skips its work. data, data_grad, weight and weight_grad are
// contiguous. Runs on out_grad's stream.
template <typename Device, int ddim, int wdim, typename DType>
void DeconvolutionBackward(const DeconvolutionParam& p, const Tensor<Device, ddim, DType>& out_grad,
                           const Tensor<Device, ddim, DType>& data, const Tensor<Device, wdim, DType>& weight,
                           OpReqType req_data, const Tensor<Device, ddim, DType>& data_grad, OpReqType req_weight,
                           const Tensor<Device, wdim, DType>& weight_grad, OpReqType req_bias,
                           const Tensor<Device, 1, DType>& bias_grad);

}  // namespace ops
}  // namespace tensorexpr
