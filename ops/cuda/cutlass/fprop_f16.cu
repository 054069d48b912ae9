// ops/cuda/cutlass/fprop_f16.cu — forward kernels for half and bf16 on tensor cores (float accumulation).
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFprop16Kernels(std::vector<ConvKernel>& kernels) {
  using cutlass::gemm::GemmShape;
  using Tile = GemmShape<128, 128, 64>;
  using Warp = GemmShape<64, 64, 64>;
  using NarrowTile = GemmShape<128, 64, 64>;  // for 64 output channels, which waste half of a 128-wide tile
  using NarrowWarp = GemmShape<64, 32, 64>;
  using Mma = GemmShape<16, 8, 16>;
  // Listed first: where it can run (8 channels) it beats the others at equal tiles.
  kernels.push_back(MakeConvKernel<TensorOpFpropFixedChannels<cutlass::half_t, NarrowTile, NarrowWarp, Mma, 3>>(
      "f16_tensorop_fprop_fixed_channels_128x64x64_3", Pass::kFprop, Element::kF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFpropFixedChannels<cutlass::bfloat16_t, NarrowTile, NarrowWarp, Mma, 3>>(
      "bf16_tensorop_fprop_fixed_channels_128x64x64_3", Pass::kFprop, Element::kBF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFprop<cutlass::half_t, Tile, Warp, Mma, 3>>(
      "f16_tensorop_fprop_128x128x64_3", Pass::kFprop, Element::kF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFprop<cutlass::half_t, NarrowTile, NarrowWarp, Mma, 4>>(
      "f16_tensorop_fprop_128x64x64_4", Pass::kFprop, Element::kF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFprop<cutlass::bfloat16_t, Tile, Warp, Mma, 3>>(
      "bf16_tensorop_fprop_128x128x64_3", Pass::kFprop, Element::kBF16, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpFprop<cutlass::bfloat16_t, NarrowTile, NarrowWarp, Mma, 4>>(
      "bf16_tensorop_fprop_128x64x64_4", Pass::kFprop, Element::kBF16, Math::kTensorOp));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
