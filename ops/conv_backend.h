// ops/conv_backend.h — the device loops the convolution algorithms are built from: im2col / col2im for
// channels-first and channels-last data, and the strided-batched row-major gemm, for the CPU (ops/cpu/)
// and, under nvcc, the GPU (ops/cuda/). Each is an overload on Stream<cpu>* / Stream<gpu>*, so an
// algorithm written once runs on both devices.
#pragma once
#include "cpu/conv_gemm.h"
#include "cpu/conv_kernels.h"
#include "cpu/conv_kernels_nhwc.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include "cuda/conv_gemm.cuh"
#include "cuda/conv_kernels.cuh"
#include "cuda/conv_kernels_nhwc.cuh"
#endif

namespace tensorexpr {
namespace ops {

// C_n[g] = alpha op(A_n[g]) op(B_n[g]) + beta C_n[g] over `images` images and all groups, with one
// strided-batched call per image (batch over groups) or per group (batch over images), whichever makes
// fewer calls. Offsets: X + n * x_img + g * x_grp. c_img == 0 sums the images' products into one C[g]
// (beta applies to the first): the weight gradient.
template <typename Device, typename DType>
void GroupedGemm(Stream<Device>* s, bool ta, bool tb, index_t M, index_t N, index_t K, float alpha, const DType* A,
                 index_t lda, index_t a_img, index_t a_grp, const DType* B, index_t ldb, index_t b_img,
                 index_t b_grp, float beta, DType* C, index_t ldc, index_t c_img, index_t c_grp, index_t images,
                 index_t groups) {
  if (groups <= images) {
    for (index_t gi = 0; gi < groups; ++gi)
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + gi * a_grp, lda, a_img, B + gi * b_grp, ldb, b_img, beta,
                  C + gi * c_grp, ldc, c_img, images);
  } else {
    for (index_t n = 0; n < images; ++n)
      BatchedGemm(s, ta, tb, M, N, K, alpha, A + n * a_img, lda, a_grp, B + n * b_img, ldb, b_grp,
                  n > 0 && c_img == 0 ? 1.0f : beta, C + n * c_img, ldc, c_grp, groups);
  }
}

}  // namespace ops
}  // namespace tensorexpr
