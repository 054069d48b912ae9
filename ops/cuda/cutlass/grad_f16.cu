// ops/cuda/cutlass/grad_f16.cu — data-gradient kernels for half and bf16 on tensor cores (float
// accumulation). The weight gradient's are in wgrad_f16.cu, a unit of its own to compile beside this one.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

namespace {
using cutlass::conv::StrideSupport;
using Tile = Tiles16::Tile;
using Warp = Tiles16::Warp;
using NarrowTile = Tiles16::NarrowTile;
using NarrowWarp = Tiles16::NarrowWarp;
using SlimTile = Tiles16::SlimTile;
using SlimWarp = Tiles16::SlimWarp;
using Mma = Tiles16::Mma;

// The kernels of element type E, in the order of `names`.
template <typename E>
void Append(std::vector<ConvKernel>& kernels, Element element, const char* const (&names)[5]) {
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, Tile, Warp, Mma, 3, StrideSupport::kUnity>>(
      names[0], Pass::kDgrad, element, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, NarrowTile, NarrowWarp, Mma, 4, StrideSupport::kUnity>>(
      names[1], Pass::kDgrad, element, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, Tile, Warp, Mma, 3, StrideSupport::kStrided>>(
      names[2], Pass::kDgrad, element, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, NarrowTile, NarrowWarp, Mma, 4, StrideSupport::kStrided>>(
      names[3], Pass::kDgrad, element, Math::kTensorOp));
  kernels.push_back(MakeConvKernel<TensorOpDgrad<E, SlimTile, SlimWarp, Mma, 4, StrideSupport::kStrided>>(
      names[4], Pass::kDgrad, element, Math::kTensorOp));
}
}  // namespace

void AppendGrad16Kernels(std::vector<ConvKernel>& kernels) {
  Append<cutlass::half_t>(kernels, Element::kF16,
                          {"f16_tensorop_dgrad_unity_128x128x64_3", "f16_tensorop_dgrad_unity_128x64x64_4",
                           "f16_tensorop_dgrad_strided_128x128x64_3", "f16_tensorop_dgrad_strided_128x64x64_4",
                           "f16_tensorop_dgrad_strided_128x32x64_4"});
  Append<cutlass::bfloat16_t>(kernels, Element::kBF16,
                              {"bf16_tensorop_dgrad_unity_128x128x64_3", "bf16_tensorop_dgrad_unity_128x64x64_4",
                               "bf16_tensorop_dgrad_strided_128x128x64_3", "bf16_tensorop_dgrad_strided_128x64x64_4",
                               "bf16_tensorop_dgrad_strided_128x32x64_4"});
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
