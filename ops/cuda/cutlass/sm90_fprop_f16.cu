// ops/cuda/cutlass/sm90_fprop_f16.cu — Hopper forward kernels for half and bf16 (sm90_conv_kernel.cuh):
// TMA im2col loads and wgmma, float accumulation. Compiled for sm_90a only (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90Fprop16Kernels(std::vector<ConvKernel>& kernels) {
  AppendSm90Kernels16<cutlass::conv::Operator::kFprop, Sm90Tiles16::Wide, Sm90Tiles16::Narrow>(
      kernels, {"f16_sm90_fprop_128x128x64", "f16_sm90_fprop_128x64x64", "bf16_sm90_fprop_128x128x64",
                "bf16_sm90_fprop_128x64x64"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
