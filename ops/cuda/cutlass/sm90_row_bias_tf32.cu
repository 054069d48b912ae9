// ops/cuda/cutlass/sm90_row_bias_tf32.cu — row_bias_gemm.h's float kernels on Hopper, as TF32
// (sm90_row_bias_gemm.cuh: the transposed product, pixels as the rows, x through registers): tiles of 128
// and of 64 filters, bias and bias + relu. The operator runs them under TF32 math only.
#include "sm90_row_bias_gemm.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_gemm {

void AppendSm90RowBiasTf32Kernels(std::vector<RowBiasKernel>& kernels) {
  using cutlass::epilogue::thread::Identity;
  using cutlass::epilogue::thread::ReLu;
  using cutlass_conv::Element;
  using cutlass_conv::Epilogue;
  kernels.push_back(MakeSm90RowBiasKernel<float, Identity, 128>("tf32_sm90_row_bias_128x128x32", Element::kF32, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<float, ReLu, 128>("tf32_sm90_row_bias_relu_128x128x32", Element::kF32, Epilogue::kBiasRelu));
  kernels.push_back(MakeSm90RowBiasKernel<float, Identity, 64>("tf32_sm90_row_bias_64x128x32", Element::kF32, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<float, ReLu, 64>("tf32_sm90_row_bias_relu_64x128x32", Element::kF32, Epilogue::kBiasRelu));
}

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
