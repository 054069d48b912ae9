// ops/cuda/cutlass/sm90_fprop_bias_f16.cu — Hopper forward kernels for half with the bias and bias + relu
// epilogues (sm90_conv_kernel.cuh's Sm90Fusion): the plain forward's tiles, so that a layer whose plain
// forward is Hopper's fuses on the same tile. Compiled for sm_90a only, in all-kernel builds (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90FpropBiasF16Kernels(std::vector<ConvKernel>& kernels) {
  AppendSm90FpropBiasKernels<cutlass::half_t, Sm90Tiles16::Wide, Sm90Tiles16::Narrow>(
      kernels, Element::kF16,
      {"f16_sm90_fprop_bias_128x128x64", "f16_sm90_fprop_bias_128x64x64", "f16_sm90_fprop_bias_relu_128x128x64",
       "f16_sm90_fprop_bias_relu_128x64x64"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
