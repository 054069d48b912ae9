// ops/cuda/cutlass/fprop_f16.cu — forward kernels for half and bf16 on tensor cores (float accumulation).
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFprop16Kernels(std::vector<ConvKernel>& kernels) {
  using NarrowTile = Tiles16::NarrowTile;
  using NarrowWarp = Tiles16::NarrowWarp;
  using Mma = Tiles16::Mma;
  // Listed first: where it can run (8 channels) it beats the others at equal tiles.
  kernels.push_back(MakeConvKernel<TensorOpFpropFixedChannels<cutlass::half_t, NarrowTile, NarrowWarp, Mma, 3>>(
      "f16_tensorop_fprop_fixed_channels_128x64x64_3", Pass::kFprop, Element::kF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFpropFixedChannels<cutlass::bfloat16_t, NarrowTile, NarrowWarp, Mma, 3>>(
      "bf16_tensorop_fprop_fixed_channels_128x64x64_3", Pass::kFprop, Element::kBF16, Math::kTensorOp));
  // The same two with the bias as their source (the relu forms: fprop_bias_f16.cu, fprop_bias_bf16.cu).
  kernels.push_back(FixedChannelsBiasKernel<cutlass::half_t, Tiles16, Epilogue::kBias>("f16_tensorop_fprop_fixed_channels_bias_128x64x64_3",
                                                                      Element::kF16));
  kernels.push_back(FixedChannelsBiasKernel<cutlass::bfloat16_t, Tiles16, Epilogue::kBias>(
      "bf16_tensorop_fprop_fixed_channels_bias_128x64x64_3", Element::kBF16));
  AppendFpropKernels<cutlass::half_t, Tiles16>(kernels, Element::kF16,
                                               {"f16_tensorop_fprop_128x128x64_3", "f16_tensorop_fprop_128x64x64_4"});
  AppendFpropKernels<cutlass::bfloat16_t, Tiles16>(kernels, Element::kBF16,
                                                   {"bf16_tensorop_fprop_128x128x64_3", "bf16_tensorop_fprop_128x64x64_4"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
