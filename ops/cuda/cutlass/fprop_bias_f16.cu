// ops/cuda/cutlass/fprop_bias_f16.cu — forward kernels for half whose epilogue adds the bias and a
// residual and applies the activation (conv_kernels.h, Epilogue): the tiles of fprop_f16.cu.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFpropBiasF16Kernels(std::vector<ConvKernel>& kernels) {
  static const char* const names[4] = {"f16_tensorop_fprop_bias_128x128x64_3", "f16_tensorop_fprop_bias_128x64x64_4",
                                       "f16_tensorop_fprop_bias_relu_128x128x64_3",
                                       "f16_tensorop_fprop_bias_relu_128x64x64_4"};
  AppendFpropBias16<cutlass::half_t>(kernels, Element::kF16, names);
  kernels.push_back(FixedChannelsBiasKernel<cutlass::half_t, Tiles16, Epilogue::kBiasRelu>(
      "f16_tensorop_fprop_fixed_channels_bias_relu_128x64x64_3", Element::kF16));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
