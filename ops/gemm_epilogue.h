// ops/gemm_epilogue.h — a gemm whose store applies the epilogue itself: bias per row of the column-major
// result, an added matrix C, and a relu. On the GPU it is cuBLASLt's epilogue (ops/cuda/gemm_epilogue.cu);
// pointwise_gemm fuses a channels-last convolution's epilogue (conv_algorithm.h's ConvEpilogue) into it,
// where the output would otherwise take one more pass, and so does im2col_gemm's channels-last forward
// in one group, its column rows times the filters.
#pragma once
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_algorithm.h>

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

// The devices and dtypes ops/cuda/gemm_epilogue.cu is compiled for.
template <typename Device, typename DType>
constexpr bool kGpuGemmEpilogue =
    std::is_same<Device, gpu>::value && (std::is_same<DType, float>::value || std::is_same<DType, half_t>::value ||
                                         std::is_same<DType, bf16_t>::value);

// GpuGemmEpilogueSupported, false where cuBLASLt could not be set up (the plain gemm and a pass still can
// run).
template <typename DType>
bool GpuGemmTakesEpilogue(const expr::GemmCall<DType>& g, const GemmEpilogue<DType>& e, bool tf32, int alignment,
                          size_t workspace_limit) {
  try {
    return GpuGemmEpilogueSupported(g, e, tf32, alignment, workspace_limit);
  } catch (const Error&) {
    return false;
  }
}

// A channels-last convolution's forward product in one group, y (rows, K) = x (rows, reduction, rows ld
// entries apart) . W (K, reduction, the same ld)^T: the input itself for a 1x1 kernel, its column rows
// for im2col.
template <typename DType>
expr::GemmCall<DType> ChannelsLastProduct(const DType* x, index_t rows, index_t reduction, index_t ld,
                                          const DType* w, index_t K, DType* y) {
  return expr::RowMajorGemm(expr::RowMajorMatrix<DType>{const_cast<DType*>(x), rows, reduction, ld}, false,
                            expr::RowMajorMatrix<DType>{const_cast<DType*>(w), K, reduction, ld}, true,
                            expr::RowMajorMatrix<DType>{y, rows, K, K});
}

// A channels-last convolution's epilogue as the store of its product y (rows, K) = x (rows, .) . W^T
// applies it: the column-major result is K x rows, so the bias runs along its rows; the residual is its
// C, or the output itself where the store adds. The product's rows start `offset` elements into the
// output `out` (a chunk of the images), and so into the residual.
template <typename DType>
GemmEpilogue<DType> ConvStoreEpilogue(const ConvEpilogue<DType>& ep, ReqStore store, const DType* out,
                                      index_t offset = 0) {
  GemmEpilogue<DType> e;
  e.relu = ep.activation == ConvActivation::kRelu;
  e.bias = ep.bias;
  e.c = store.add ? out + offset : ep.residual != nullptr ? ep.residual + offset : nullptr;
  return e;
}

}  // namespace ops
}  // namespace tensorexpr
