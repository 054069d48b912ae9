// gemm.h — grouped matrix products on memory, the gemm beneath the convolution's algorithms (dot and
// batch_dot are the expression form of the same calls). Device-neutral: it builds the column-major
// call (expr::GemmCall, the one builder in expr/dot.h) and hands it to the device's BatchedGemm
// (cpu/blas.h: the library's threads over single-threaded OpenBLAS, or a float-accumulating loop for
// half_t / bf16_t; cuda/blas.cuh: cuBLAS strided-batched).
//
//   GroupedGemm(s, M, N, K, alpha, a, b, beta, c, images, groups[, sum])
//     C[n][g] = alpha op(A[n][g]) op(B[n][g]) + beta C[n][g]   row-major, M x N results, inner size K
// over images n and groups g, where operand X's matrix (n, g) starts at X.ptr + n X.image_stride +
// g X.group_stride. c.image_stride == 0 sums the images' products into one C[g] (beta applies once):
// a weight gradient.
#pragma once
#include <algorithm>
#include <climits>
#include "base.h"
#include "expr/dot.h"

namespace tensorexpr {

template <typename T>
struct GemmOperand {
  T* ptr;
  index_t ld;            // leading dimension (row stride) of each matrix
  index_t image_stride;  // elements between the matrices of consecutive images (0: one for all)
  index_t group_stride;  // elements between the matrices of consecutive groups
  bool trans = false;    // read op(X) = X^T
};

// The operand read transposed.
template <typename T>
inline GemmOperand<T> Transposed(GemmOperand<T> x) {
  x.trans = true;
  return x;
}

namespace detail {
// Matrix (0, 0) of a grouped operand that is rows x cols as op() reads it.
template <typename DType, typename T>
inline expr::RowMajorMatrix<DType> FirstMatrix(const GemmOperand<T>& x, index_t rows, index_t cols) {
  // The call only reads A and B; RowMajorMatrix holds one pointer type for all three operands.
  return {const_cast<DType*>(x.ptr), x.trans ? cols : rows, x.trans ? rows : cols, x.ld};
}
}  // namespace detail

namespace detail {
// Whether the images' matrices of an operand lie one after another along the dimension they would
// extend: op(X)'s rows (`along_rows`, `rows` of them per image) or its columns (`cols` per image). Then
// the images are one matrix `images` times as long in that dimension.
template <typename T>
inline bool ImagesAdjoin(const GemmOperand<T>& x, bool along_rows, index_t rows, index_t cols, index_t images) {
  // Stored as op(X) or as its transpose: a step along op(X)'s rows is ld elements, or 1. Within a stored
  // row the joined extent must still fit the row.
  const bool stored_rows = along_rows != x.trans;
  const index_t extent = along_rows ? rows : cols;
  if (stored_rows) return x.image_stride == extent * x.ld;
  return x.image_stride == extent && extent * images <= x.ld;
}
}  // namespace detail

// Whether GroupedGemm makes a sum over images whose operands adjoin one product (kJoin) or keeps the
// images a batch (kSeparate: on the GPU, where there are no more groups than images, each image's
// product goes to a partial and the partials are summed after; else a call per image adds onto C).
enum class GemmSum { kJoin, kSeparate };

// One strided-batched call per image (batched over groups) or per group (batched over images),
// whichever makes fewer calls. Images that adjoin in memory are first made one product: a sum over
// images whose A columns and B rows follow on (channels-last weight gradients) is one product with
// `images` times the inner size (unless `sum` is kSeparate), and images whose A and C rows follow on with
// one B for all of them (channels-last forward and data gradient) one product with `images` times the
// rows. One large gemm tiles the GPU better than a batch of small ones, and a sum needs no partial
// products; but a sum into a small result over a long inner size leaves cuBLAS most of the GPU idle,
// where a batch of products fills it.
template <typename Device, typename DType>
void GroupedGemm(Stream<Device>* s, index_t M, index_t N, index_t K, float alpha, const GemmOperand<const DType>& a,
                 const GemmOperand<const DType>& b, float beta, const GemmOperand<DType>& c, index_t images,
                 index_t groups, GemmSum sum = GemmSum::kJoin) {
  // (Joined sizes stay within the 32-bit sizes of the CPU's BLAS interface.)
  if (images > 1 && std::max(M, K) <= INT_MAX / images) {
    if (sum == GemmSum::kJoin && c.image_stride == 0 && detail::ImagesAdjoin(a, false, M, K, images) &&
        detail::ImagesAdjoin(b, true, K, N, images)) {
      GroupedGemm(s, M, N, K * images, alpha, a, b, beta, c, 1, groups);
      return;
    }
    if (b.image_stride == 0 && c.image_stride != 0 && detail::ImagesAdjoin(a, true, M, K, images) &&
        detail::ImagesAdjoin(c, true, M, N, images)) {
      GroupedGemm(s, M * images, N, K, alpha, a, b, beta, c, 1, groups);
      return;
    }
  }
  const expr::GemmCall<DType> first =
      expr::RowMajorGemm(detail::FirstMatrix<DType>(a, M, K), a.trans, detail::FirstMatrix<DType>(b, K, N), b.trans,
                         detail::FirstMatrix<DType>(c, M, N));
  // The call's A is the product's right operand (expr::RowMajorGemm swaps them).
  auto call = [&](index_t a_offset, index_t b_offset, index_t c_offset, index_t batch, index_t a_step,
                  index_t b_step, index_t c_step) {
    expr::GemmCall<DType> g = first;
    g.a = first.a + b_offset, g.b = first.b + a_offset, g.c = first.c + c_offset;
    g.batch = batch, g.stride_a = b_step, g.stride_b = a_step, g.stride_c = c_step;
    return g;
  };
  if (groups <= images) {
    for (index_t gi = 0; gi < groups; ++gi)
      BatchedGemm(s, call(gi * a.group_stride, gi * b.group_stride, gi * c.group_stride, images, a.image_stride,
                          b.image_stride, c.image_stride),
                  alpha, beta);
  } else {
    for (index_t n = 0; n < images; ++n)
      BatchedGemm(s, call(n * a.image_stride, n * b.image_stride, n * c.image_stride, groups, a.group_stride,
                          b.group_stride, c.group_stride),
                  alpha, n > 0 && c.image_stride == 0 ? 1.0f : beta);
  }
}

// ---- mshadow's BLAS functions on tensors ------------------------------------------------------------------

// VectorDot(dst, lhs, rhs): dst[0] = sum_i lhs[i] rhs[i]; dst has shape (1) and may live on the GPU.
template <typename Device, typename DType>
inline void VectorDot(Tensor<Device, 1, DType> dst, const Tensor<Device, 1, DType>& lhs,
                      const Tensor<Device, 1, DType>& rhs) {
  TE_CHECK(lhs.shape_ == rhs.shape_, "VectorDot: operand shapes ", lhs.shape_, " and ", rhs.shape_, " differ");
  TE_CHECK(dst.shape_[0] == 1, "VectorDot: the destination holds the one result: shape (1), not ", dst.shape_);
  const index_t n = lhs.shape_[0];
  if (n == 0) {
    dst = DType(0);
    return;
  }
  dst = expr::dot(Tensor<Device, 2, DType>(lhs.dptr_, Shape2(1, n), lhs.stream_), rhs);  // (1 x n)(n): one gemv
}

// BatchGEMM<transpose_left, transpose_right>(dst, lhs, rhs, alpha, beta, workspace):
// dst[i] = alpha op(lhs[i]) op(rhs[i]) + beta dst[i] for every i of the batch. The workspace of DType*
// that mshadow needed for cuBLAS's pointer arrays is accepted and not used (the call is strided-batched).
template <bool transpose_left, bool transpose_right, typename Device, typename DType, typename Workspace>
inline void BatchGEMM(Tensor<Device, 3, DType> dst, const Tensor<Device, 3, DType>& lhs,
                      const Tensor<Device, 3, DType>& rhs, DType alpha, DType beta, const Workspace& /*workspace*/) {
  const auto product = expr::batch_dot<transpose_left, transpose_right>(lhs, rhs);
  TE_CHECK(product.shape() == dst.shape_, "BatchGEMM: destination shape ", dst.shape_, " does not match ",
           product.describe());
  if (beta == DType(0)) {
    dst = alpha * product;  // beta = 0 does not read dst (it may hold NaN), as BLAS
  } else {
    if (beta != DType(1)) dst *= beta;
    dst += alpha * product;
  }
}

}  // namespace tensorexpr
