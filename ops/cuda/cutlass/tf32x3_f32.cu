// ops/cuda/cutlass/tf32x3_f32.cu — forward and weight-gradient kernels for float as three TF32 products
// (Math::kTensorOpTF32x3: each operand split into a TF32 part and the TF32 rounding of its remainder, the
// small x small product dropped; CUTLASS's OpMultiplyAddFastF32). TF32's thread-block tiles with narrower
// warps (Tiles32x3); the weight gradient's warps are its own, as TF32's (64 x 32 on its 128 x 64 tile may
// spill a little). The data gradient's kernels are in tf32x3_dgrad_f32.cu, so that neither unit ends a
// build alone.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendTf32x3Kernels(std::vector<ConvKernel>& kernels) {
  using Fast = cutlass::arch::OpMultiplyAddFastF32;
  AppendFpropKernels<float, Tiles32x3, Fast>(kernels, Element::kF32,
                                           {"tf32x3_tensorop_fprop_128x128x32_3", "tf32x3_tensorop_fprop_128x64x32_4"},
                                           Math::kTensorOpTF32x3);
  AppendWgradKernels<float, Tiles32x3, Fast>(kernels, Element::kF32,
                                           {"tf32x3_tensorop_wgrad_128x64x32_4", "tf32x3_tensorop_wgrad_64x64x32_5",
                                            "tf32x3_tensorop_wgrad_64x128x32_4"},
                                           Math::kTensorOpTF32x3);
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
