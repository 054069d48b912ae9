// ops/cuda/cutlass/tf32x3_dgrad_f32.cu — data-gradient kernels for float as three TF32 products
// (Math::kTensorOpTF32x3, tf32x3_f32.cu says how), on Tiles32x3.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendTf32x3DgradKernels(std::vector<ConvKernel>& kernels) {
  AppendDgradKernels<float, Tiles32x3, cutlass::arch::OpMultiplyAddFastF32>(
      kernels, Element::kF32,
      {"tf32x3_tensorop_dgrad_unity_128x128x32_3", "tf32x3_tensorop_dgrad_unity_128x64x32_4",
       "tf32x3_tensorop_dgrad_strided_128x128x32_3", "tf32x3_tensorop_dgrad_strided_128x64x32_4",
       "tf32x3_tensorop_dgrad_strided_128x32x32_4"},
      Math::kTensorOpTF32x3);
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
