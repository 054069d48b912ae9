// ops/cpu/conv_gemm.h — the strided-batched row-major gemm the convolution is built on, on the CPU:
//   C_b = alpha * op(A_b) * op(B_b) + beta * C_b,  X_b = X + b * strideX,  b in [0, batch)
// with op(X) = X or X^T, M x N results and inner size K. float and double go to OpenBLAS (which
// threads each call itself); half_t and bf16_t run a threaded loop that accumulates in float.
// The GPU twin is ops/cuda/conv_gemm.cuh (cuBLAS strided-batched).
#pragma once
#include <cblas.h>
#include <climits>
#include <type_traits>
#include <vector>
#include <tensorexpr/cpu/blas.h>  // UseLibraryThreadCount: OpenBLAS gets the library's thread count
#include <tensorexpr/cpu/threads.h>
#include <tensorexpr/dtype.h>
#include <tensorexpr/stream.h>

namespace tensorexpr {
namespace ops {

namespace detail {
inline void CheckBlasInt(index_t v, const char* what) {
  TE_CHECK(v >= 0 && v <= INT_MAX, "convolution gemm: ", what, " = ", v, " does not fit the BLAS integer type");
}

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
}  // namespace detail

template <typename DType>
inline void BatchedGemm(Stream<cpu>*, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha,
                        const DType* A, index_t lda, index_t strideA, const DType* B, index_t ldb, index_t strideB,
                        float beta, DType* C, index_t ldc, index_t strideC, index_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if constexpr (std::is_same<DType, float>::value || std::is_same<DType, double>::value) {
    detail::CheckBlasInt(M, "M");
    detail::CheckBlasInt(N, "N");
    detail::CheckBlasInt(K, "K");
    detail::CheckBlasInt(lda, "lda");
    detail::CheckBlasInt(ldb, "ldb");
    detail::CheckBlasInt(ldc, "ldc");
    cpu_blas::UseLibraryThreadCount();
    const CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
    for (index_t b = 0; b < batch; ++b) {
      if constexpr (std::is_same<DType, float>::value) {
        cblas_sgemm(CblasRowMajor, opa, opb, int(M), int(N), int(K), alpha, A + b * strideA, int(lda),
                    B + b * strideB, int(ldb), beta, C + b * strideC, int(ldc));
      } else {
        cblas_dgemm(CblasRowMajor, opa, opb, int(M), int(N), int(K), double(alpha), A + b * strideA, int(lda),
                    B + b * strideB, int(ldb), double(beta), C + b * strideC, int(ldc));
      }
    }
  } else {
    static_assert(is_low_precision<DType>::value, "the convolution gemm supports float, double, half_t and bf16_t");
    for (index_t b = 0; b < batch; ++b)
      detail::LowPrecisionGemm(ta, tb, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb, beta,
                               C + b * strideC, ldc);
  }
}

}  // namespace ops
}  // namespace tensorexpr
