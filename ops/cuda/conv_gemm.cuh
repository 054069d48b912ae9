// ops/cuda/conv_gemm.cuh — the strided-batched row-major gemm of the convolution on the GPU (the twin of
// ops/cpu/conv_gemm.h): C_b = alpha * op(A_b) * op(B_b) + beta * C_b over `batch` matrices.
// Row-major C = A.B is column-major C^T = B^T.A^T, so the operands swap and nothing is copied.
// float / double go to cublas{S,D}gemmStridedBatched (TF32 only when the stream asks for it);
// half_t / bf16_t to cublasGemmStridedBatchedEx with fp32 compute. strideC == 0 with batch > 1 sums the
// products into the one C (beta applies once), the weight gradient's sum over images. A batched call
// cannot write one C from every matrix, and one small gemm per matrix costs a launch each, so the
// products go to partial matrices, a strided-batched call per slice of the batch, and a kernel adds them
// onto C in a fixed order (deterministic). Only matrices too large for a useful slice run one by one.
#pragma once
#include <climits>
#include <type_traits>
#include <cublas_v2.h>
#include <tensorexpr/cuda/blas.cuh>
#include <tensorexpr/cuda/check.cuh>
#include <tensorexpr/cuda/memory.cuh>
#include <tensorexpr/cuda/stream.cuh>
#include <tensorexpr/dtype.h>
#include <tensorexpr/tensor_container.h>
#include "conv_kernels.cuh"  // cuda_conv::BlocksFor, kThreads

namespace tensorexpr {
namespace ops {

namespace detail {
inline int CublasInt(index_t v, const char* what) {
  TE_CHECK(v >= 0 && v <= INT_MAX, "convolution gemm on the GPU: ", what, " = ", v,
           " does not fit cuBLAS's 32-bit size");
  return static_cast<int>(v);
}

// Elements of partial products the summed gemm keeps at once (64 MiB in float).
constexpr index_t kSummedPartialElems = index_t(1) << 24;

// C (rows x cols, row stride ldc) = beta * C + the sum of `count` dense rows x cols matrices at partial,
// in order, accumulated in accum_t. beta == 0 never reads C.
template <typename DType>
__global__ void SumPartialsKernel(const DType* __restrict__ partial, index_t rows, index_t cols, index_t count,
                                  float beta, DType* C, index_t ldc) {
  using AccT = accum_t<DType>;
  const index_t n = rows * cols;
  for (index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += index_t(blockDim.x) * gridDim.x) {
    AccT acc = 0;
    for (index_t b = 0; b < count; ++b) acc += static_cast<AccT>(partial[b * n + j]);
    DType* c = C + (j / cols) * ldc + j % cols;
    if (beta != 0.0f) acc += static_cast<AccT>(beta) * static_cast<AccT>(*c);
    *c = static_cast<DType>(acc);
  }
}
}  // namespace detail

template <typename DType>
inline void BatchedGemm(Stream<gpu>* s, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha,
                        const DType* A, index_t lda, index_t strideA, const DType* B, index_t ldb, index_t strideB,
                        float beta, DType* C, index_t ldc, index_t strideC, index_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (strideC == 0 && batch > 1) {
    const index_t slice = std::min<index_t>(batch, detail::kSummedPartialElems / std::max<index_t>(M * N, 1));
    if (slice <= 1) {
      for (index_t b = 0; b < batch; ++b)
        BatchedGemm(s, ta, tb, M, N, K, alpha, A + b * strideA, lda, 0, B + b * strideB, ldb, 0,
                    b == 0 ? beta : 1.0f, C, ldc, 0, 1);
      return;
    }
    TensorContainer<gpu, 1, DType> partial;
    partial.set_stream(s);
    partial.Resize(Shape1(slice * M * N));
    for (index_t b0 = 0; b0 < batch; b0 += slice) {
      const index_t count = std::min(slice, batch - b0);
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + b0 * strideA, lda, strideA, B + b0 * strideB, ldb, strideB, 0.0f,
                  partial.dptr_, N, M * N, count);
      detail::SumPartialsKernel<DType><<<cuda_conv::BlocksFor(M * N), cuda_conv::kThreads, 0,
                                         Stream<gpu>::GetStream(s)>>>(partial.dptr_, M, N, count,
                                                                      b0 == 0 ? beta : 1.0f, C, ldc);
      TE_CUDA_CHECK_LAUNCH("convolution weight-gradient sum kernel");
    }
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
    constexpr cudaDataType_t t = cuda_blas::CudaDataType<DType>::kValue;  // the core's trait
    TE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, opb, opa, m, n, k, &alpha, B, t, ilb, sb, A, t, ila, sa, &beta, C, t,
                                               ilc, sc, nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace ops
}  // namespace tensorexpr
