// ops/cuda/cutlass/sm90_fprop_tf32.cu — Hopper forward kernels for float as TF32 (sm90_conv_kernel.cuh): TMA
// im2col loads and wgmma, float accumulation. Compiled for sm_90a only (ops/meson.build). Hopper's TF32
// MMAs read both operands reduction-major, which only the forward's are (the activations and filters are
// both channels last); the gradients keep Ampere's kernels.
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90FpropTf32Kernels(std::vector<ConvKernel>& kernels) {
  AppendSm90Kernels<cutlass::conv::Operator::kFprop, float, Sm90TilesTf32::Wide, Sm90TilesTf32::Narrow>(
      kernels, Element::kF32, {"tf32_sm90_fprop_128x128x32", "tf32_sm90_fprop_128x64x32"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
