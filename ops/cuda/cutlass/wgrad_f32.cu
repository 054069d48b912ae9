// ops/cuda/cutlass/wgrad_f32.cu — weight-gradient kernels for float on TF32 tensor cores (float slices of a
// split reduction: conv_kernels.h): wgrad_f16.cu's tiles with half the reduction step, the same bytes a stage.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendWgrad32Kernels(std::vector<ConvKernel>& kernels) {
  AppendWgradKernels<float, Tiles32>(
      kernels, Element::kF32,
      {"tf32_tensorop_wgrad_128x64x32_4", "tf32_tensorop_wgrad_64x64x32_5", "tf32_tensorop_wgrad_64x128x32_4"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
