// ops/cuda/cutlass/grad_f16.cu — data-gradient kernels for half and bf16 on tensor cores (float
// accumulation). The weight gradient's are in wgrad_f16.cu, a unit of its own to compile beside this one.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendGrad16Kernels(std::vector<ConvKernel>& kernels) {
  AppendDgradKernels<cutlass::half_t, Tiles16>(
      kernels, Element::kF16,
      {"f16_tensorop_dgrad_unity_128x128x64_3", "f16_tensorop_dgrad_unity_128x64x64_4",
       "f16_tensorop_dgrad_strided_128x128x64_3", "f16_tensorop_dgrad_strided_128x64x64_4",
       "f16_tensorop_dgrad_strided_128x32x64_4"});
  AppendDgradKernels<cutlass::bfloat16_t, Tiles16>(
      kernels, Element::kBF16,
      {"bf16_tensorop_dgrad_unity_128x128x64_3", "bf16_tensorop_dgrad_unity_128x64x64_4",
       "bf16_tensorop_dgrad_strided_128x128x64_3", "bf16_tensorop_dgrad_strided_128x64x64_4",
       "bf16_tensorop_dgrad_strided_128x32x64_4"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
