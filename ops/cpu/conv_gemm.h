// ops/cpu/conv_gemm.h — the strided-batched row-major gemm the convolution is built on, on the CPU:
//   C_b = alpha * op(A_b) * op(B_b) + beta * C_b,  X_b = X + b * strideX,  b in [0, batch)
// with op(X) = X or X^T, M x N results and inner size K. strideC == 0 with batch > 1 sums the products
// into the one C instead (beta applies once): the weight gradient's sum over images.
// float and double go to cpu_blas::ParallelGemm (the library's threads over tiles, single-threaded
// OpenBLAS in each); half_t and bf16_t run a threaded loop that accumulates in float.
// The GPU twin is ops/cuda/conv_gemm.cuh (cuBLAS strided-batched).
#pragma once
#include <type_traits>
#include <vector>
#include <tensorexpr/cpu/blas.h>
#include <tensorexpr/cpu/threads.h>
#include <tensorexpr/dtype.h>
#include <tensorexpr/stream.h>

namespace tensorexpr {
namespace ops {

namespace detail {
// Low-precision gemm: each thread owns whole rows of C and keeps a float accumulator row.
template <typename DType>
void LowPrecisionGemm(bool ta, bool tb, index_t M, index_t N, index_t K, float alpha, const DType* A, index_t lda,
                      const DType* B, index_t ldb, float beta, DType* C, index_t ldc) {
  ParallelFor(M, N * K, [&](index_t begin, index_t end) {
    std::vector<float> acc(static_cast<size_t>(N));
    for (index_t i = begin; i < end; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (index_t k = 0; k < K; ++k) {
        const float a = static_cast<float>(ta ? A[k * lda + i] : A[i * lda + k]);
        if (tb) {
          for (index_t j = 0; j < N; ++j) acc[j] += a * static_cast<float>(B[j * ldb + k]);
        } else {
          const DType* brow = B + k * ldb;
          for (index_t j = 0; j < N; ++j) acc[j] += a * static_cast<float>(brow[j]);
        }
      }
      DType* crow = C + i * ldc;
      for (index_t j = 0; j < N; ++j) {
        const float prev = beta == 0.0f ? 0.0f : beta * static_cast<float>(crow[j]);  // beta 0 never reads C
        crow[j] = static_cast<DType>(alpha * acc[j] + prev);
      }
    }
  });
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the BLAS call takes the operands
// swapped and keeps the flags.
template <typename DType>
expr::GemmCall<DType> RowMajorGemmCall(bool ta, bool tb, index_t M, index_t N, index_t K, const DType* A,
                                       index_t lda, index_t strideA, const DType* B, index_t ldb, index_t strideB,
                                       DType* C, index_t ldc, index_t strideC, index_t batch) {
  expr::GemmCall<DType> c;
  c.m = N, c.n = M, c.k = K;
  c.trans_a = tb, c.a = B, c.lda = ldb, c.stride_a = strideB;
  c.trans_b = ta, c.b = A, c.ldb = lda, c.stride_b = strideA;
  c.c = C, c.ldc = ldc, c.stride_c = strideC;
  c.batch = batch;
  return c;
}
}  // namespace detail

// One row-major gemm, C = alpha op(A) op(B) + beta C, on the calling thread (float and double; called
// from inside the library's parallel loops, after cpu_blas::UseOneBlasThread()).
template <typename DType>
inline void SerialGemm(bool ta, bool tb, index_t M, index_t N, index_t K, float alpha, const DType* A, index_t lda,
                       const DType* B, index_t ldb, float beta, DType* C, index_t ldc) {
  static_assert(std::is_same<DType, float>::value || std::is_same<DType, double>::value,
                "SerialGemm calls BLAS: float or double");
  if (M == 0 || N == 0) return;
  cpu_blas::RunOne(detail::RowMajorGemmCall(ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1), DType(alpha),
                   DType(beta));
}

template <typename DType>
inline void BatchedGemm(Stream<cpu>*, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha,
                        const DType* A, index_t lda, index_t strideA, const DType* B, index_t ldb, index_t strideB,
                        float beta, DType* C, index_t ldc, index_t strideC, index_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if constexpr (std::is_same<DType, float>::value || std::is_same<DType, double>::value) {
    cpu_blas::ParallelGemm(
        detail::RowMajorGemmCall(ta, tb, M, N, K, A, lda, strideA, B, ldb, strideB, C, ldc, strideC, batch),
        DType(alpha), DType(beta));
  } else {
    static_assert(is_low_precision<DType>::value, "the convolution gemm supports float, double, half_t and bf16_t");
    for (index_t b = 0; b < batch; ++b)  // strideC == 0: the later products add onto the first
      detail::LowPrecisionGemm(ta, tb, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb,
                               b > 0 && strideC == 0 ? 1.0f : beta, C + b * strideC, ldc);
  }
}

}  // namespace ops
}  // namespace tensorexpr
