// ops/cuda/cutlass/grad_f32.cu — data-gradient kernels for float, TF32 tensor cores and strict fp32 on
// the CUDA cores, and the strict weight gradient (float slices). TF32's weight gradient: wgrad_f32.cu.
#include "conv_kernel.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

namespace {
using cutlass::gemm::GemmShape;
using cutlass::conv::StrideSupport;
using NHWC = cutlass::layout::TensorNHWC;
using SimtTile = GemmShape<128, 128, 8>;
using SimtWarp = GemmShape<32, 64, 8>;
using SimtEpilogue = cutlass::epilogue::thread::LinearCombination<float, 1, float, float>;

template <StrideSupport kStride>
using SimtDgrad = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dDgrad<
    float, NHWC, float, NHWC, float, NHWC, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80, SimtTile, SimtWarp,
    GemmShape<1, 1, 1>, SimtEpilogue,
    typename std::conditional<kStride == StrideSupport::kUnity, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>,
                              cutlass::conv::threadblock::StridedDgradIdentityThreadblockSwizzle<1>>::type,
    4, cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kOptimized, kStride>::Kernel>;

using SimtWgrad = cutlass::conv::device::ImplicitGemmConvolution<typename cutlass::conv::kernel::DefaultConv2dWgrad<
    float, NHWC, float, NHWC, float, NHWC, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80, SimtTile, SimtWarp,
    GemmShape<1, 1, 1>, SimtEpilogue, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<4>, 4,
    cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel>;

}  // namespace

void AppendGrad32Kernels(std::vector<ConvKernel>& kernels) {
  AppendDgradKernels<float, Tiles32>(
      kernels, Element::kF32,
      {"tf32_tensorop_dgrad_unity_128x128x32_3", "tf32_tensorop_dgrad_unity_128x64x32_4",
       "tf32_tensorop_dgrad_strided_128x128x32_3", "tf32_tensorop_dgrad_strided_128x64x32_4",
       "tf32_tensorop_dgrad_strided_128x32x32_4"});
  kernels.push_back(MakeConvKernel<SimtDgrad<StrideSupport::kUnity>>("f32_simt_dgrad_unity_128x128x8_4", Pass::kDgrad,
                                                                     Element::kF32, Math::kSimt));
  kernels.push_back(MakeConvKernel<SimtDgrad<StrideSupport::kStrided>>("f32_simt_dgrad_strided_128x128x8_4",
                                                                       Pass::kDgrad, Element::kF32, Math::kSimt));
  kernels.push_back(
      MakeConvKernel<SimtWgrad>("f32_simt_wgrad_128x128x8_4", Pass::kWgrad, Element::kF32, Math::kSimt));
}

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
