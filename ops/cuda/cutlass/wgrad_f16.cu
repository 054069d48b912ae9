// ops/cuda/cutlass/wgrad_f16.cu — weight-gradient kernels for half and bf16 on tensor cores (float
// accumulation, float slices of a split reduction: conv_kernels.h).
//
// The implicit GEMM's M is the filters and N their taps times channels: on ResNet-50's layers (64 to 512
// filters) a 128 x 128 tile wasted half its work on 64 filters and left most SMs idle on the others unless
// the reduction was cut into many slices. Narrower tiles ran those layers 10-40% faster when both were
// timed on an H200 (fp16, N = 32, each at power-of-two splits 1 to 128; bench/cutlass_kernels --pass wgrad
// times the kernels kept); conv_cutlass.h takes the one that pads the least, in this order on a tie (64 x 64
// before 64 x 128: it needs half the slices to fill the GPU, and ran 10% faster on 64 filters at 56 x 56).
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendWgrad16Kernels(std::vector<ConvKernel>& kernels) {
  AppendWgradKernels<cutlass::half_t, Tiles16>(
      kernels, Element::kF16,
      {"f16_tensorop_wgrad_128x64x64_4", "f16_tensorop_wgrad_64x64x64_5", "f16_tensorop_wgrad_64x128x64_4"});
  AppendWgradKernels<cutlass::bfloat16_t, Tiles16>(
      kernels, Element::kBF16,
      {"bf16_tensorop_wgrad_128x64x64_4", "bf16_tensorop_wgrad_64x64x64_5", "bf16_tensorop_wgrad_64x128x64_4"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
