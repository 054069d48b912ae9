// ops/cuda/cutlass/sm90_fprop_bias_bf16.cu — Hopper forward kernels for bf16 with the bias and bias + relu
// epilogues (sm90_conv_kernel.cuh's Sm90Fusion): the plain forward's tiles, so that a layer whose plain
// forward is Hopper's fuses on the same tile. Compiled for sm_90a only, in all-kernel builds (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90FpropBiasBF16Kernels(std::vector<ConvKernel>& kernels) {
  AppendSm90FpropBiasKernels<cutlass::bfloat16_t, Sm90Tiles16::Wide, Sm90Tiles16::Narrow>(
      kernels, Element::kBF16,
      {"bf16_sm90_fprop_bias_128x128x64", "bf16_sm90_fprop_bias_128x64x64", "bf16_sm90_fprop_bias_relu_128x128x64",
       "bf16_sm90_fprop_bias_relu_128x64x64"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
