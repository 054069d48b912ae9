// ops/cuda/cutlass/sm90_dgrad_f16.cu — Hopper data-gradient kernels for half and bf16 (sm90_conv_kernel.cuh):
// the output gradient by TMA im2col, the filters by TMA tiles, wgmma, float accumulation; unit strides
// only (the strided data gradient stays on Ampere's kernels). Compiled for sm_90a only (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90Dgrad16Kernels(std::vector<ConvKernel>& kernels) {
  // M is the input's pixels, N its channels, K the filters times their taps.
  AppendSm90Kernels16<cutlass::conv::Operator::kDgrad, Sm90Tiles16::Wide, Sm90Tiles16::Narrow>(
      kernels, {"f16_sm90_dgrad_128x128x64", "f16_sm90_dgrad_128x64x64", "bf16_sm90_dgrad_128x128x64",
                "bf16_sm90_dgrad_128x64x64"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
