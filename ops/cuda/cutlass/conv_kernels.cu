// ops/cuda/cutlass/conv_kernels.cu — the lists of the kernel units' kernels, the convolutions' and the row-bias
// gemms' (TE_CUTLASS_KERNELS_SUBSET: only the units the Meson option cutlass_kernels=subset builds;
// TE_CUTLASS_SM90: the Hopper units, built with sm_90a machine code).
#include "conv_kernels.h"
#include "row_bias_gemm.h"

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

void AppendFprop16Kernels(std::vector<ConvKernel>& kernels);
void AppendFprop32Kernels(std::vector<ConvKernel>& kernels);
void AppendFpropBiasF16Kernels(std::vector<ConvKernel>& kernels);
void AppendFpropBiasBF16Kernels(std::vector<ConvKernel>& kernels);
void AppendFpropBias32Kernels(std::vector<ConvKernel>& kernels);
void AppendGrad16Kernels(std::vector<ConvKernel>& kernels);
void AppendWgrad16Kernels(std::vector<ConvKernel>& kernels);
void AppendGrad32Kernels(std::vector<ConvKernel>& kernels);
void AppendWgrad32Kernels(std::vector<ConvKernel>& kernels);
void AppendTf32x3Kernels(std::vector<ConvKernel>& kernels);
void AppendTf32x3DgradKernels(std::vector<ConvKernel>& kernels);
void AppendSm90Fprop16Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90Dgrad16Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90Wgrad16Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90FpropTf32Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90FpropBiasF16Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90FpropBiasBF16Kernels(std::vector<ConvKernel>& kernels);
void AppendSm90FpropBiasTf32Kernels(std::vector<ConvKernel>& kernels);

const std::vector<ConvKernel>& CompiledConvKernels() {
  static const std::vector<ConvKernel> kernels = [] {
    std::vector<ConvKernel> v;
    AppendFprop16Kernels(v);
    AppendGrad16Kernels(v);
    AppendWgrad16Kernels(v);
    AppendFpropBiasF16Kernels(v);
#if !TE_CUTLASS_KERNELS_SUBSET
    AppendFprop32Kernels(v);
    AppendGrad32Kernels(v);
    AppendWgrad32Kernels(v);
    AppendTf32x3Kernels(v);
    AppendTf32x3DgradKernels(v);
    AppendFpropBiasBF16Kernels(v);
    AppendFpropBias32Kernels(v);
#endif
#if TE_CUTLASS_SM90
    AppendSm90Fprop16Kernels(v);  // conv_cutlass.h says where they are preferred
    AppendSm90Dgrad16Kernels(v);
    AppendSm90Wgrad16Kernels(v);
#if !TE_CUTLASS_KERNELS_SUBSET
    AppendSm90FpropTf32Kernels(v);
    AppendSm90FpropBiasF16Kernels(v);
    AppendSm90FpropBiasBF16Kernels(v);
    AppendSm90FpropBiasTf32Kernels(v);
#endif
#endif
    return v;
  }();
  return kernels;
}

}  // namespace cutlass_conv

namespace cutlass_gemm {

void AppendSm90RowBiasF16Kernels(std::vector<RowBiasKernel>& kernels);
void AppendSm90RowBiasTf32Kernels(std::vector<RowBiasKernel>& kernels);

const std::vector<RowBiasKernel>& CompiledRowBiasKernels() {
  static const std::vector<RowBiasKernel> kernels = [] {
    std::vector<RowBiasKernel> v;
#if TE_CUTLASS_SM90 && !TE_CUTLASS_KERNELS_SUBSET
    AppendSm90RowBiasF16Kernels(v);
    AppendSm90RowBiasTf32Kernels(v);
#endif
    return v;
  }();
  return kernels;
}

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
