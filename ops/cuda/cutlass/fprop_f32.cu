// ops/cuda/cutlass/fprop_f32.cu — forward kernels for float: TF32 tensor cores (float accumulation) and
// strict fp32 on the CUDA cores.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

// Strict fp32: SIMT FMAs, one element per access (any C and K).
using SimtFprop = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dFprop<
    float, cutlass::layout::TensorNHWC, float, cutlass::layout::TensorNHWC, float, cutlass::layout::TensorNHWC, float,
    cutlass::arch::OpClassSimt, cutlass::arch::Sm80, cutlass::gemm::GemmShape<128, 128, 8>,
    cutlass::gemm::GemmShape<32, 64, 8>, cutlass::gemm::GemmShape<1, 1, 1>,
    cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, 4, cutlass::arch::OpMultiplyAdd,
    cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel>;

void AppendFprop32Kernels(std::vector<ConvKernel>& kernels) {
  kernels.push_back(MakeConvKernel<TensorOpFpropFixedChannels<float, Tiles32::NarrowTile, Tiles32::NarrowWarp,
                                                              Tiles32::Mma, 3>>(
      "tf32_tensorop_fprop_fixed_channels_128x64x32_3", Pass::kFprop, Element::kF32, Math::kTensorOp));
  kernels.push_back(FixedChannelsBiasKernel<float, Tiles32, Epilogue::kBias>("tf32_tensorop_fprop_fixed_channels_bias_128x64x32_3",
                                                            Element::kF32));  // (relu form: fprop_bias_f32.cu)
  AppendFpropKernels<float, Tiles32>(kernels, Element::kF32,
                                     {"tf32_tensorop_fprop_128x128x32_3", "tf32_tensorop_fprop_128x64x32_4"});
  kernels.push_back(
      MakeConvKernel<SimtFprop>("f32_simt_fprop_128x128x8_4", Pass::kFprop, Element::kF32, Math::kSimt));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
