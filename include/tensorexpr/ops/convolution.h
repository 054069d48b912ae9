// tensorexpr/ops/convolution.h — the convolution operator (MXNet's Convolution): Forward and Backward for 1-D, 2-D and
// 3-D inputs, channels first (NCW, NCHW, NCDHW) or last (NWC, NHWC, NDHWC), on the CPU and (compiled by
// nvcc) the GPU, for float, double, half_t and bf16_t. Parameters, shapes and cost:
// <tensorexpr/ops/conv_param.h>.
//
// The operator is the boundary: it checks the tensors against the parameters, decodes each req once into
// a ReqStore, describes the work as a ConvProblem, lets <tensorexpr/ops/conv_select.h> pick an algorithm per pass
// (im2col_gemm, pointwise_gemm, cpu_per_image, or one registered by the user), gives it workspace from
// the stream (tensorexpr/workspace.h) and adds the bias (a broadcast, unless the algorithm fuses it into
// its store) and its gradient (a reduction) itself. When data and weight gradients go to the same algorithm it computes both in one Run.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t and 1-, 2- and 3-D data; ops/convolution.h is the template implementation.
#pragma once
#include <string>
#include <vector>
#include <tensorexpr/tensor.h>
#include <tensorexpr/workspace.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include <tensorexpr/ops/conv_param.h>
#include <tensorexpr/ops/conv_problem.h>
#include <tensorexpr/ops/conv_select.h>
#include <tensorexpr/ops/layout.h>
#include <tensorexpr/ops/workspace.h>

namespace tensorexpr {
namespace ops {

// Bytes of workspace Forward / Backward take under param's cap with the built-in algorithms chosen by the
// heuristic, all passes of a call together: the largest of im2col_gemm's column buffer (cpu_per_image,
// cpu_direct and gpu_direct never take more), pointwise_gemm's for 1x1 kernels (none, except on the GPU
// for channels-first images of fewer than 256 pixels and strided kernels whose gathered pixels fit the
// cap: copies of the pixels it reads and of the output) and winograd_2x2's transforms for 4-byte types'
// 2-D 3x3 stride-1 undilated layers (the GPU's choice for strict float, where they fit the cap) with the
// weight gradient's columns beside them (a GPU backward runs the two gradients at the same time), each
// counted whatever the device. Not counted: cutlass_implicit_gemm's staged copies (tensors it needs
// channels last, padded or folded) and its kernels' split-reduction partials, which depend on the kernels
// the build compiled. input_contiguous: whether the data (and its gradient) have dense rows; false also
// counts what a padded-row input takes. An algorithm forced by name or registered by the user may take up
// to the cap. A border other than zeros (pad_mode, pad_value) takes a padded copy of the data besides, and
// backward one of its gradient.
size_t ConvolutionWorkspaceBytes(const ConvolutionParam& p, const std::vector<index_t>& data_shape,
                                 size_t dtype_bytes, bool input_contiguous = true);

// y = conv(x, W) + b, stored as req says. data (N, C, spatial...) or (C, spatial...), rows may be padded;
// weight (K, C/group, kernel...), bias (K) (ignored when no_bias), out as InferConvShapes says; weight and
// out contiguous. Runs on out's stream; the workspace comes from that stream's resource.
template <typename Device, int ddim, int wdim, typename DType>
void ConvolutionForward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                        const Tensor<Device, wdim, DType>& weight, const Tensor<Device, 1, DType>& bias, OpReqType req,
                        const Tensor<Device, ddim, DType>& out);

// out (req) act(conv(x, W) + bias + residual) as `epilogue` describes (conv_algorithm.h), fused into the
// store of the algorithm chosen for the forward; returns false, having run nothing, when that algorithm
// does not fuse it. p.no_bias must be set. <tensorexpr/ops/conv_epilogue.h> builds on this: any
// elementwise expression as the epilogue, fused where it can be.
template <typename Device, int ddim, int wdim, typename DType>
bool ConvolutionForwardFused(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& data,
                             const Tensor<Device, wdim, DType>& weight, const ConvEpilogue<DType>& epilogue,
                             OpReqType req, const Tensor<Device, ddim, DType>& out);

// Gradients of y = conv(x, W) + b given dY (out_grad). Each of data_grad, weight_grad, bias_grad is
// stored as its req says; kNullOp skips its work. data and data_grad may have padded rows; out_grad,
// weight and the weight / bias gradients are contiguous. On the GPU the weight gradient may run on the
// stream's side stream beside the data gradient (Stream<gpu>::ForkSide); everything is ordered before the
// stream's next work as usual, and the two run in turn where one writes what the other reads.
template <typename Device, int ddim, int wdim, typename DType>
void ConvolutionBackward(const ConvolutionParam& p, const Tensor<Device, ddim, DType>& out_grad,
                         const Tensor<Device, ddim, DType>& data, const Tensor<Device, wdim, DType>& weight,
                         OpReqType req_data, const Tensor<Device, ddim, DType>& data_grad, OpReqType req_weight,
                         const Tensor<Device, wdim, DType>& weight_grad, OpReqType req_bias,
                         const Tensor<Device, 1, DType>& bias_grad);

// Forgets every algorithm choice held in memory and frees the device's convolution workspaces (the
// streams must still be alive). A later call chooses again (or reloads the cache file).
template <typename Device>
void ReleaseConvCaches() {
  ClearConvChoices();
  ReleaseAllWorkspaces<Device>();
}

}  // namespace ops
}  // namespace tensorexpr
