// ops/gemm_epilogue.h — a gemm whose store applies the epilogue itself: bias per row of the column-major
// result, an added matrix C, and a relu. On the GPU it is cuBLASLt's epilogue (ops/cuda/gemm_epilogue.cu);
// pointwise_gemm fuses a channels-last convolution's epilogue (conv_algorithm.h's ConvEpilogue) into it,
// where the output would otherwise take one more pass.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

// For a column-major gemm g (expr::GemmCall, batch 1) with result R = op(A) op(B), m x n:
//   D[i][j] = act(R[i][j] + C[i][j] + bias[i])     D = g.c
// C may be D itself (D += ...); null adds nothing.
template <typename DType>
struct GemmEpilogue {
  bool relu = false;
  const DType* bias = nullptr;  // m values, 16-byte aligned; null: none
  const DType* c = nullptr;     // m x n with D's leading dimension; null: none
};

// Whether the GPU has a kernel for g's sizes and layouts with e's form, every operand `alignment` bytes
// aligned (16, or the element's size; g's pointers are not read) and at most `workspace_limit` bytes of
// workspace. tf32: float products on TF32 tensor cores (else strict fp32).
template <typename DType>
bool GpuGemmEpilogueSupported(const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32, int alignment,
                              size_t workspace_limit);
// D = act(op(A) op(B) + C + bias) on stream s with the kernel GpuGemmEpilogueSupported found for the
// same arguments; an Error when there is none, or when an operand is less aligned than `alignment`.
template <typename DType>
void GpuGemmWithEpilogue(Stream<gpu>* s, const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32,
                         int alignment, size_t workspace_limit);

}  // namespace ops
}  // namespace tensorexpr
