// ops/cuda/cutlass/fprop_bias_f32.cu — forward kernels for float on TF32 tensor cores whose epilogue adds
// the bias and a residual and applies the activation (conv_kernels.h, Epilogue).
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFpropBias32Kernels(std::vector<ConvKernel>& kernels) {
  using cutlass::gemm::GemmShape;
  using Tile = GemmShape<128, 128, 32>;
  using Warp = GemmShape<64, 64, 32>;
  using Mma = GemmShape<16, 8, 8>;
  using Identity = cutlass::epilogue::thread::Identity<float>;
  using Relu = cutlass::epilogue::thread::ReLu<float>;
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<float, Identity, Tile, Warp, Mma, 3>>(
      "tf32_tensorop_fprop_bias_128x128x32_3", Pass::kFprop, Element::kF32, Math::kTensorOp, Epilogue::kBias));
  kernels.push_back(MakeConvKernel<TensorOpFpropBias<float, Relu, Tile, Warp, Mma, 3>>(
      "tf32_tensorop_fprop_bias_relu_128x128x32_3", Pass::kFprop, Element::kF32, Math::kTensorOp,
      Epilogue::kBiasRelu));
  kernels.push_back(FixedChannelsBiasKernel<float, Tiles32, Epilogue::kBiasRelu>("tf32_tensorop_fprop_fixed_channels_bias_relu_128x64x32_3",
                                                                Element::kF32));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
