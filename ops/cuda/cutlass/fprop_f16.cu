// ops/cuda/cutlass/fprop_f16.cu — forward kernels for half and bf16 on tensor cores (float accumulation).
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFprop16Kernels(std::vector<ConvKernel>& kernels) {
  using Tile = Tiles16::Tile;
  using Warp = Tiles16::Warp;
  using NarrowTile = Tiles16::NarrowTile;
  using NarrowWarp = Tiles16::NarrowWarp;
  using Mma = Tiles16::Mma;
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
