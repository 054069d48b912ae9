// ops/cuda/cutlass/fprop_bias_bf16.cu — forward kernels for bf16 whose epilogue adds the bias and a
// residual and applies the activation (conv_kernels.h, Epilogue): the tiles of fprop_f16.cu.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFpropBiasBF16Kernels(std::vector<ConvKernel>& kernels) {
  static const char* const names[4] = {"bf16_tensorop_fprop_bias_128x128x64_3", "bf16_tensorop_fprop_bias_128x64x64_4",
                                       "bf16_tensorop_fprop_bias_relu_128x128x64_3",
                                       "bf16_tensorop_fprop_bias_relu_128x64x64_4"};
  AppendFpropBias16<cutlass::bfloat16_t>(kernels, Element::kBF16, names);
  kernels.push_back(FixedChannelsBiasKernel<cutlass::bfloat16_t, Tiles16, Epilogue::kBiasRelu>(
      "bf16_tensorop_fprop_fixed_channels_bias_relu_128x64x64_3", Element::kBF16));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
