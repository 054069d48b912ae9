// ops/cuda/cutlass/fprop_bias_bf16.cu — forward kernels for bf16 whose epilogue adds the bias and a
// residual and applies the activation (conv_kernels.h, Epilogue): the tiles of fprop_f16.cu.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFpropBiasBF16Kernels(std::vector<ConvKernel>& kernels) {
  using cutlass::gemm::GemmShape;
  using Tile = GemmShape<128, 128, 64>;
  using Warp = GemmShape<64, 64, 64>;
  using NarrowTile = GemmShape<128, 64, 64>;
  using NarrowWarp = GemmShape<64, 32, 64>;
  using Mma = GemmShape<16, 8, 16>;
  using Identity = cutlass::epilogue::thread::Identity<float>;
  using Relu = cutlass::epilogue::thread::ReLu<float>;
  using cutlass::bfloat16_t;
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<bfloat16_t, Identity, Tile, Warp, Mma, 3>>(
      "bf16_tensorop_fprop_bias_128x128x64_3", Pass::kFprop, Element::kBF16, Math::kTensorOp, Epilogue::kBias));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<bfloat16_t, Identity, NarrowTile, NarrowWarp, Mma, 4>>(
      "bf16_tensorop_fprop_bias_128x64x64_4", Pass::kFprop, Element::kBF16, Math::kTensorOp, Epilogue::kBias));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<bfloat16_t, Relu, Tile, Warp, Mma, 3>>(
      "bf16_tensorop_fprop_bias_relu_128x128x64_3", Pass::kFprop, Element::kBF16, Math::kTensorOp,
      Epilogue::kBiasRelu));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<bfloat16_t, Relu, NarrowTile, NarrowWarp, Mma, 4>>(
      "bf16_tensorop_fprop_bias_relu_128x64x64_4", Pass::kFprop, Element::kBF16, Math::kTensorOp,
      Epilogue::kBiasRelu));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
