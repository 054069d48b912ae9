// ops/cuda/cutlass/sm90_wgrad_f16.cu — Hopper weight-gradient kernels for half and bf16 (sm90_conv_kernel.cuh):
// the output gradient by TMA tiles, the activations by TMA im2col, wgmma, the filter gradient in float.
// They do not split the reduction (CUTLASS's Hopper convolutions have no split-K), so conv_cutlass.h takes
// them where their tiles alone fill the GPU. Compiled for sm_90a only (ops/meson.build).
#include "sm90_conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendSm90Wgrad16Kernels(std::vector<ConvKernel>& kernels) {
  using cute::_128;
  using cute::_64;
  // M is the filters; N the taps times channels and K the output pixels, each a mode of its own.
  using Wide = cute::Shape<_128, cute::Shape<_128>, cute::Shape<_64>>;
  using Narrow = cute::Shape<_128, cute::Shape<_64>, cute::Shape<_64>>;
  AppendSm90Kernels16<cutlass::conv::Operator::kWgrad, Wide, Narrow>(
      kernels, {"f16_sm90_wgrad_128x128x64", "f16_sm90_wgrad_128x64x64", "bf16_sm90_wgrad_128x128x64",
                "bf16_sm90_wgrad_128x64x64"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
