// ops/cuda/cutlass/sm90_row_bias_f16.cu — row_bias_gemm.h's half and bf16 kernels on Hopper
// (sm90_row_bias_gemm.cuh): tiles of 128 and of 64 filters, bias and bias + relu.
#include "sm90_row_bias_gemm.cuh"

namespace tensorexpr {
namespace ops {
namespace cutlass_gemm {

void AppendSm90RowBiasF16Kernels(std::vector<RowBiasKernel>& kernels) {
  using cutlass::epilogue::thread::Identity;
  using cutlass::epilogue::thread::ReLu;
  using cutlass::half_t;
  using cutlass::bfloat16_t;
  using cutlass_conv::Element;
  using cutlass_conv::Epilogue;
  kernels.push_back(MakeSm90RowBiasKernel<half_t, Identity, 128>("f16_sm90_row_bias_128x128x64", Element::kF16, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<half_t, ReLu, 128>("f16_sm90_row_bias_relu_128x128x64", Element::kF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeSm90RowBiasKernel<bfloat16_t, Identity, 128>("bf16_sm90_row_bias_128x128x64", Element::kBF16, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<bfloat16_t, ReLu, 128>("bf16_sm90_row_bias_relu_128x128x64", Element::kBF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeSm90RowBiasKernel<half_t, Identity, 64>("f16_sm90_row_bias_64x128x64", Element::kF16, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<half_t, ReLu, 64>("f16_sm90_row_bias_relu_64x128x64", Element::kF16, Epilogue::kBiasRelu));
  kernels.push_back(MakeSm90RowBiasKernel<bfloat16_t, Identity, 64>("bf16_sm90_row_bias_64x128x64", Element::kBF16, Epilogue::kBias));
  kernels.push_back(MakeSm90RowBiasKernel<bfloat16_t, ReLu, 64>("bf16_sm90_row_bias_relu_64x128x64", Element::kBF16, Epilogue::kBiasRelu));
}

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
