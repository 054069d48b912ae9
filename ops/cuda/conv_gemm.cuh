// ops/cuda/conv_gemm.cuh — the strided-batched row-major gemm of the convolution on the GPU (the twin of
// ops/cpu/conv_gemm.h): C_b = alpha * op(A_b) * op(B_b) + beta * C_b over `batch` matrices.
// Row-major C = A.B is column-major C^T = B^T.A^T, so the operands swap and nothing is copied.
// float / double go to cublas{S,D}gemmStridedBatched (TF32 only when the stream asks for it);
// half_t / bf16_t to cublasGemmStridedBatchedEx with fp32 compute. strideC == 0 with batch > 1 sums the
// products into the one C (beta applies once): a batched call would race on C, so those run in order.
#pragma once
#include <climits>
#include <type_traits>
#include <cublas_v2.h>
#include <tensorexpr/cuda/check.cuh>
#include <tensorexpr/cuda/stream.cuh>
#include <tensorexpr/dtype.h>

namespace tensorexpr {
namespace ops {

namespace detail {
inline int CublasInt(index_t v, const char* what) {
  TE_CHECK(v >= 0 && v <= INT_MAX, "convolution gemm on the GPU: ", what, " = ", v,
           " does not fit cuBLAS's 32-bit size");
  return static_cast<int>(v);
}
template <typename DType> struct CudaDataType;
template <> struct CudaDataType<half_t> { static constexpr cudaDataType_t value = CUDA_R_16F; };
template <> struct CudaDataType<bf16_t> { static constexpr cudaDataType_t value = CUDA_R_16BF; };
}  // namespace detail

template <typename DType>
inline void BatchedGemm(Stream<gpu>* s, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha,
                        const DType* A, index_t lda, index_t strideA, const DType* B, index_t ldb, index_t strideB,
                        float beta, DType* C, index_t ldc, index_t strideC, index_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (strideC == 0 && batch > 1) {
    for (index_t b = 0; b < batch; ++b)
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + b * strideA, lda, 0, B + b * strideB, ldb, 0, b == 0 ? beta : 1.0f,
                  C, ldc, 0, 1);
    return;
  }
  cublasHandle_t h = StreamOrDefault(s)->blas_handle();
  const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = detail::CublasInt(N, "N"), n = detail::CublasInt(M, "M"), k = detail::CublasInt(K, "K");
  const int ila = detail::CublasInt(lda, "lda"), ilb = detail::CublasInt(ldb, "ldb"), ilc = detail::CublasInt(ldc, "ldc");
  const int nb = detail::CublasInt(batch, "batch");
  const long long sa = strideA, sb = strideB, sc = strideC;
  if constexpr (std::is_same<DType, float>::value) {
    TE_CUBLAS_CHECK(cublasSgemmStridedBatched(h, opb, opa, m, n, k, &alpha, B, ilb, sb, A, ila, sa, &beta, C, ilc, sc, nb));
  } else if constexpr (std::is_same<DType, double>::value) {
    const double a = alpha, b = beta;
    TE_CUBLAS_CHECK(cublasDgemmStridedBatched(h, opb, opa, m, n, k, &a, B, ilb, sb, A, ila, sa, &b, C, ilc, sc, nb));
  } else {
    static_assert(is_low_precision<DType>::value, "the convolution gemm supports float, double, half_t and bf16_t");
    constexpr cudaDataType_t t = detail::CudaDataType<DType>::value;
    TE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, opb, opa, m, n, k, &alpha, B, t, ilb, sb, A, t, ila, sa, &beta, C, t,
                                               ilc, sc, nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace ops
}  // namespace tensorexpr
