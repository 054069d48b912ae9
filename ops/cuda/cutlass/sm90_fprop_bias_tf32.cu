// ops/cuda/cutlass/sm90_fprop_bias_tf32.cu — Hopper forward kernels for float as TF32 with the bias and
// bias + relu epilogues (sm90_conv_kernel.cuh's Sm90Fusion): the plain forward's tiles, so that a layer whose
// plain forward is Hopper's fuses on the same tile. Compiled for sm_90a only, in all-kernel builds (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90FpropBiasTf32Kernels(std::vector<ConvKernel>& kernels) {
  AppendSm90FpropBiasKernels<float, Sm90TilesTf32::Wide, Sm90TilesTf32::Narrow>(
      kernels, Element::kF32,
      {"tf32_sm90_fprop_bias_128x128x32", "tf32_sm90_fprop_bias_128x64x32", "tf32_sm90_fprop_bias_relu_128x128x32",
       "tf32_sm90_fprop_bias_relu_128x64x32"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
