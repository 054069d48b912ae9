// expr/dot.h — matrix products: dot(a, b) and batch_dot<transpose_a, transpose_b>(a, b).
//
// A product is not evaluated element by element: it is one BLAS call (OpenBLAS in cpu/blas.h, cuBLAS in
// cuda/blas.cuh), so the node is type::kComplex and may only be the whole right-hand side of an assignment:
//   c = dot(a, b);  c += dot(a.T(), b);  c -= 0.5f * dot(a, b.T());  y = dot(m, x);  y = dot(x, m);
//   out = batch_dot(a, b);  out = batch_dot<true, false>(a, b);   // (batch, k, m)^T x (batch, k, n)
// Operands are tensors or the transposes of 2-D tensors; `.T()` is read as a BLAS transpose flag, never
// copied. Only rows may be padded, so a view's row stride is the BLAS leading dimension.
//
// Besides the nodes, this header holds the device-neutral half of the evaluation: how a row-major product
// becomes one column-major BLAS call (GemmCall) and when that call is a matrix-vector product (GemvCall).
// The backends only translate those calls into library functions.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include "base.h"
#include "map.h"
#include "transpose2d.h"
#include "../tensor.h"
#include "../tensor_container.h"

namespace tensorexpr {
namespace expr {

// BLAS multiplies floating-point numbers only.
template <typename DType>
struct check_blas_dtype {
  static_assert(std::is_floating_point<DType>::value || is_low_precision<DType>::value,
                "dot and batch_dot support float, double, half_t and bf16_t; convert integer tensors with "
                "tcast<float>(e) into a float tensor first");
  static constexpr bool value = true;
};

// What dot() accepts as an operand: a tensor, or the transpose of a 2-D tensor (a BLAS transpose flag).
template <typename E>
struct dot_operand {
  static constexpr bool kValid = false;
};
template <typename Device, int dim, typename DType>
struct dot_operand<Tensor<Device, dim, DType>> {
  static constexpr bool kValid = true;
  static constexpr bool kTrans = false;
  using tensor_type = Tensor<Device, dim, DType>;
  static const tensor_type& Get(const tensor_type& t) { return t; }
};
template <typename Device, typename DType>
struct dot_operand<TransposeExp<Tensor<Device, 2, DType>>> {
  static constexpr bool kValid = true;
  static constexpr bool kTrans = true;
  using tensor_type = Tensor<Device, 2, DType>;
  static const tensor_type& Get(const TransposeExp<tensor_type>& t) { return t.src_; }
};

// "(3,4)" for a plain operand, "(3,4).T()" for a transposed one: the tensor as the user passed it.
template <int dim>
inline std::string OperandText(const Shape<dim>& s, bool trans) {
  return Message(s, trans ? ".T()" : "");
}

// ---- dot(a, b) --------------------------------------------------------------------------------------
// scale_ * op(lhs_) * op(rhs_), op = transpose when ltrans / rtrans. A 1-D left operand is a row (1 x k),
// a 1-D right operand a column (k x 1); the result of a vector form is 1-D (shape (1) for two vectors).
template <typename TA, typename TB, bool ltrans, bool rtrans, typename DType>
struct DotExp : public Exp<DotExp<TA, TB, ltrans, rtrans, DType>, DType, type::kComplex> {
  static_assert(check_blas_dtype<DType>::value, "");
  static constexpr int kDim = (TA::kDim == 2 && TB::kDim == 2) ? 2 : 1;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename TA::device_type, typename TB::device_type>::type;
  // The scale BLAS is given: float for float / half / bf16 (fp32 compute), double for double.
  using scale_type = compute_t<DType>;

  TA lhs_;
  TB rhs_;
  scale_type scale_;
  DotExp(const TA& lhs, const TB& rhs, scale_type scale) : lhs_(lhs), rhs_(rhs), scale_(scale) {}

  // op(lhs_) as (rows, cols) and op(rhs_) as (rows, cols).
  Shape<2> LeftShape() const {
    if constexpr (TA::kDim == 1) {
      return Shape2(1, lhs_.shape_[0]);
    } else {
      return ltrans ? Shape2(lhs_.shape_[1], lhs_.shape_[0]) : lhs_.shape_;
    }
  }
  Shape<2> RightShape() const {
    if constexpr (TB::kDim == 1) {
      return Shape2(rhs_.shape_[0], 1);
    } else {
      return rtrans ? Shape2(rhs_.shape_[1], rhs_.shape_[0]) : rhs_.shape_;
    }
  }
  // The summed-over dimension.
  index_t inner() const { return LeftShape()[1]; }
  Shape<kDim> shape() const {
    const Shape<2> a = LeftShape(), b = RightShape();
    TE_CHECK(a[1] == b[0], "dot: inner dimensions differ: left operand ", OperandText(lhs_.shape_, ltrans),
             " has ", a[1], " columns, right operand ", OperandText(rhs_.shape_, rtrans), " has ", b[0], " rows");
    if constexpr (kDim == 2) {
      return Shape2(a[0], b[1]);
    } else {
      return Shape1(TB::kDim == 1 ? a[0] : b[1]);
    }
  }
  std::string describe() const {
    return Message("dot(", OperandText(lhs_.shape_, ltrans), ", ", OperandText(rhs_.shape_, rtrans), ")");
  }
  // The same product over other operand tensors (a private copy, a float version) and scale.
  template <typename NA, typename NB>
  DotExp<NA, NB, ltrans, rtrans, typename NA::value_type> Rebind(const NA& a, const NB& b,
                                                               compute_t<typename NA::value_type> scale) const {
    return DotExp<NA, NB, ltrans, rtrans, typename NA::value_type>(a, b, scale);
  }
};

// dot(a, b): a and b are 1-D or 2-D tensors, or a.T() of 2-D tensors. Two vectors give their inner product
// as a 1-D result of shape (1) (mshadow's VectorDot), a (1 x k) (k x 1) product for BLAS.
template <typename EA, typename EB, typename DA, typename DB, int ta, int tb>
inline auto dot(const Exp<EA, DA, ta>& a, const Exp<EB, DB, tb>& b) {
  static_assert(check_same_dtype<DA, DB>::value, "");
  constexpr bool kOperands = dot_operand<EA>::kValid && dot_operand<EB>::kValid;
  static_assert(kOperands, "dot(a, b) multiplies tensors or their transposes (a.T()); assign any other expression to a "
                           "tensor first");
  if constexpr (kOperands) {
    using LA = dot_operand<EA>;
    using LB = dot_operand<EB>;
    using TA = typename LA::tensor_type;
    using TB = typename LB::tensor_type;
    static_assert(TA::kDim <= 2 && TB::kDim <= 2,
                  "dot(a, b) takes 1-D and 2-D tensors; use batch_dot(a, b) for 3-D (batch, rows, cols) tensors");
    if constexpr (TA::kDim <= 2 && TB::kDim <= 2) {
      return DotExp<TA, TB, LA::kTrans, LB::kTrans, DA>(LA::Get(a.self()), LB::Get(b.self()), 1);
    } else {
      return a.self();  // unreachable in a program that compiles; keeps the report to the sentence above
    }
  } else {
    return a.self();  // as above
  }
}

// ---- batch_dot<transpose_a, transpose_b>(a, b) -------------------------------------------------------
// For each i: scale_ * op(lhs_[i]) * op(rhs_[i]) over 3-D tensors (batch, m, k) x (batch, k, n) -> (batch,
// m, n); a transposed operand is given as stored, (batch, k, m) or (batch, n, k). An operand with a batch
// of 1 broadcasts: its one matrix multiplies every matrix of the other (a batch stride of 0 for BLAS).
template <typename TA, typename TB, bool ltrans, bool rtrans, typename DType>
struct BatchDotExp : public Exp<BatchDotExp<TA, TB, ltrans, rtrans, DType>, DType, type::kComplex> {
  static_assert(check_blas_dtype<DType>::value, "");
  static constexpr int kDim = 3;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename TA::device_type, typename TB::device_type>::type;
  using scale_type = compute_t<DType>;

  TA lhs_;
  TB rhs_;
  scale_type scale_;
  BatchDotExp(const TA& lhs, const TB& rhs, scale_type scale) : lhs_(lhs), rhs_(rhs), scale_(scale) {}

  index_t inner() const { return ltrans ? lhs_.shape_[1] : lhs_.shape_[2]; }
  Shape<3> shape() const {
    const Shape<3> a = lhs_.shape_, b = rhs_.shape_;
    const index_t m = ltrans ? a[2] : a[1], ka = ltrans ? a[1] : a[2];
    const index_t kb = rtrans ? b[2] : b[1], n = rtrans ? b[1] : b[2];
    TE_CHECK(a[0] == b[0] || a[0] == 1 || b[0] == 1, "batch_dot: batch sizes differ and neither is 1: left operand ",
             a, " vs right operand ", b);
    TE_CHECK(ka == kb, describe(), ": inner dimensions differ: left operand ", a,
             " gives ", ka, ", right operand ", b, " gives ", kb);
    return Shape3(a[0] == 1 ? b[0] : a[0], m, n);
  }
  std::string describe() const {
    return Message("batch_dot<", ltrans ? "true" : "false", ", ", rtrans ? "true" : "false", ">(", lhs_.shape_,
                   ", ", rhs_.shape_, ")");
  }
  template <typename NA, typename NB>
  BatchDotExp<NA, NB, ltrans, rtrans, typename NA::value_type> Rebind(const NA& a, const NB& b,
                                                                    compute_t<typename NA::value_type> scale) const {
    return BatchDotExp<NA, NB, ltrans, rtrans, typename NA::value_type>(a, b, scale);
  }
};

// ---- batch_dot over several batch dimensions: (batch..., m, k) x (batch..., k, n) ----------------------
// Operands of one rank, 4 or 5; each batch dimension is equal in both or 1 in one (it broadcasts, NumPy's
// rule). Evaluated as one 3-D batch_dot per index of the batch dimensions before the last: the last
// rides in that call's strided batch.
template <typename TA, typename TB, bool ltrans, bool rtrans, typename DType>
struct BatchDotNdExp : public Exp<BatchDotNdExp<TA, TB, ltrans, rtrans, DType>, DType, type::kComplex> {
  static_assert(check_blas_dtype<DType>::value, "");
  static constexpr int kDim = TA::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename TA::device_type, typename TB::device_type>::type;
  using scale_type = compute_t<DType>;
  using Matrices = Tensor<device_type, 3, DType>;  // one batch dimension and the matrices

  TA lhs_;
  TB rhs_;
  scale_type scale_;
  BatchDotNdExp(const TA& lhs, const TB& rhs, scale_type scale) : lhs_(lhs), rhs_(rhs), scale_(scale) {}

  Shape<kDim> shape() const {
    const Shape<kDim> a = lhs_.shape_, b = rhs_.shape_;
    Shape<kDim> s;
    for (int d = 0; d + 2 < kDim; ++d) {
      TE_CHECK(a[d] == b[d] || a[d] == 1 || b[d] == 1, describe(), ": batch dimension ", d,
               " differs and neither side is 1: ", a[d], " vs ", b[d]);
      s[d] = a[d] == 1 ? b[d] : a[d];
    }
    const index_t ka = ltrans ? a[kDim - 2] : a[kDim - 1], kb = rtrans ? b[kDim - 1] : b[kDim - 2];
    TE_CHECK(ka == kb, describe(), ": inner dimensions differ: the left operand gives ", ka, ", the right ", kb);
    s[kDim - 2] = ltrans ? a[kDim - 1] : a[kDim - 2];
    s[kDim - 1] = rtrans ? b[kDim - 2] : b[kDim - 1];
    return s;
  }
  std::string describe() const {
    return Message("batch_dot<", ltrans ? "true" : "false", ", ", rtrans ? "true" : "false", ">(", lhs_.shape_,
                   ", ", rhs_.shape_, ")");
  }
  // The (batch, rows, cols) slab at index i of t's batch dimensions before the last (its rows keep their stride).
  template <int dim>
  static Matrices Slab(const Tensor<device_type, dim, DType>& t, index_t i) {
    const Shape<dim>& s = t.shape_;
    return Matrices(t.dptr_ + i * s[dim - 3] * s[dim - 2] * t.stride_, Shape3(s[dim - 3], s[dim - 2], s[dim - 1]),
                    t.stride_, t.stream_);
  }
};

template <typename E>
struct batch_operand_rank : std::integral_constant<int, 0> {};
template <typename Device, int dim, typename DType>
struct batch_operand_rank<Tensor<Device, dim, DType>> : std::integral_constant<int, dim> {};

// The transpose flags are template arguments, as in mshadow: batch_dot<false, true>(a, b) = a[i] * b[i]^T.
// 3-D operands (batch, rows, cols), or 4-D / 5-D ones of one rank with broadcast batch dimensions.
template <bool transpose_a = false, bool transpose_b = false, typename EA, typename EB, typename DA, typename DB,
          int ta, int tb>
inline auto batch_dot(const Exp<EA, DA, ta>& a, const Exp<EB, DB, tb>& b) {
  static_assert(check_same_dtype<DA, DB>::value, "");
  constexpr int kRank = batch_operand_rank<EA>::value;
  constexpr bool kOperands = kRank >= 3 && kRank <= 5 && batch_operand_rank<EB>::value == kRank;
  static_assert(kOperands,
                "batch_dot(a, b) multiplies tensors of one rank, 3 to 5 (batch..., rows, cols); transposes are its "
                "template arguments, batch_dot<transpose_a, transpose_b>(a, b), and other expressions must be "
                "assigned to a tensor first");
  if constexpr (kOperands && kRank == 3) {
    return BatchDotExp<EA, EB, transpose_a, transpose_b, DA>(a.self(), b.self(), 1);
  } else if constexpr (kOperands) {
    return BatchDotNdExp<EA, EB, transpose_a, transpose_b, DA>(a.self(), b.self(), 1);
  } else {
    return a.self();  // unreachable in a program that compiles; keeps the report to the sentence above
  }
}

// ---- the scalar factor: alpha * dot(a, b), dot(a, b) * alpha, -dot(a, b) ----------------------------
// Exact overloads for the node types: they beat the generic scalar operators of map.h, which would wrap
// the product in an elementwise node (not allowed), and carry the factor into BLAS's alpha instead.
#define TE_DOT_SCALE_OPERATORS(NODE)                                                                         \
  template <typename TA, typename TB, bool lt, bool rt, typename DType, typename S,                         \
            typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>                       \
  inline NODE<TA, TB, lt, rt, DType> operator*(S alpha, const NODE<TA, TB, lt, rt, DType>& e) {              \
    using C = typename NODE<TA, TB, lt, rt, DType>::scale_type;                                             \
    return NODE<TA, TB, lt, rt, DType>(e.lhs_, e.rhs_, e.scale_ * static_cast<C>(alpha));                   \
  }                                                                                                         \
  template <typename TA, typename TB, bool lt, bool rt, typename DType, typename S,                         \
            typename = typename std::enable_if<is_scalar_for<S, DType>::value>::type>                       \
  inline NODE<TA, TB, lt, rt, DType> operator*(const NODE<TA, TB, lt, rt, DType>& e, S alpha) {              \
    return alpha * e;                                                                                       \
  }                                                                                                         \
  template <typename TA, typename TB, bool lt, bool rt, typename DType>                                     \
  inline NODE<TA, TB, lt, rt, DType> operator-(const NODE<TA, TB, lt, rt, DType>& e) {                       \
    return NODE<TA, TB, lt, rt, DType>(e.lhs_, e.rhs_, -e.scale_);                                          \
  }
TE_DOT_SCALE_OPERATORS(DotExp)
TE_DOT_SCALE_OPERATORS(BatchDotExp)
TE_DOT_SCALE_OPERATORS(BatchDotNdExp)
#undef TE_DOT_SCALE_OPERATORS

// ---- from a row-major product to one column-major BLAS call ----------------------------------------

// A row-major matrix in memory: element (i, j) at ptr[i * ld + j].
template <typename DType>
struct RowMajorMatrix {
  DType* ptr;
  index_t rows, cols, ld;
};
template <typename Device, typename DType>
inline RowMajorMatrix<DType> AsMatrix(const Tensor<Device, 2, DType>& t) {
  return {t.dptr_, t.shape_[0], t.shape_[1], t.stride_};
}
// A vector as a 1 x n row or an n x 1 column.
template <typename Device, typename DType>
inline RowMajorMatrix<DType> AsRow(const Tensor<Device, 1, DType>& v) {
  return {v.dptr_, 1, v.shape_[0], v.shape_[0]};
}
template <typename Device, typename DType>
inline RowMajorMatrix<DType> AsColumn(const Tensor<Device, 1, DType>& v) {
  return {v.dptr_, v.shape_[0], 1, 1};
}

// C = alpha * op(A) * op(B) + beta * C, column-major as BLAS wants it, `batch` times with the matrices
// stride_a / stride_b / stride_c elements apart. lda / ldb / ldc are at least 1, as BLAS requires.
template <typename DType>
struct GemmCall {
  bool trans_a = false, trans_b = false;
  index_t m = 0, n = 0, k = 0;
  const DType* a = nullptr;
  index_t lda = 1;
  const DType* b = nullptr;
  index_t ldb = 1;
  DType* c = nullptr;
  index_t ldc = 1;
  index_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
};

// Row-major C = op(A) op(B) is, read column-major, C^T = op(B)^T op(A)^T: the same memory, the operands
// swapped, the transpose flags kept (a row-major B read column-major is already B^T).
template <typename DType>
inline GemmCall<DType> RowMajorGemm(RowMajorMatrix<DType> a, bool trans_a, RowMajorMatrix<DType> b, bool trans_b,
                                    RowMajorMatrix<DType> c) {
  GemmCall<DType> g;
  g.m = c.cols;
  g.n = c.rows;
  g.k = trans_a ? a.rows : a.cols;
  g.trans_a = trans_b;
  g.a = b.ptr;
  g.lda = std::max<index_t>(1, b.ld);
  g.trans_b = trans_a;
  g.b = a.ptr;
  g.ldb = std::max<index_t>(1, a.ld);
  g.c = c.ptr;
  g.ldc = std::max<index_t>(1, c.ld);
  return g;
}

template <typename Device, int dim, typename TA, typename TB, bool lt, bool rt, typename DType>
inline GemmCall<DType> MakeGemmCall(const Tensor<Device, dim, DType>& dst, const DotExp<TA, TB, lt, rt, DType>& e) {
  RowMajorMatrix<DType> a, b, c;
  if constexpr (TA::kDim == 1) a = AsRow(e.lhs_); else a = AsMatrix(e.lhs_);
  if constexpr (TB::kDim == 1) b = AsColumn(e.rhs_); else b = AsMatrix(e.rhs_);
  if constexpr (dim == 2) {
    c = AsMatrix(dst);
  } else if constexpr (TB::kDim == 1) {
    c = AsColumn(dst);  // matrix x vector: an m x 1 result
  } else {
    c = AsRow(dst);  // vector x matrix: a 1 x n result
  }
  return RowMajorGemm(a, lt, b, rt, c);
}

template <typename Device, typename TA, typename TB, bool lt, bool rt, typename DType>
inline GemmCall<DType> MakeGemmCall(const Tensor<Device, 3, DType>& dst,
                                    const BatchDotExp<TA, TB, lt, rt, DType>& e) {
  // Matrix i of a 3-D view starts rows * stride_ elements after matrix i - 1.
  auto first = [](const Tensor<Device, 3, DType>& t) {
    return RowMajorMatrix<DType>{t.dptr_, t.shape_[1], t.shape_[2], t.stride_};
  };
  GemmCall<DType> g = RowMajorGemm(first(e.lhs_), lt, first(e.rhs_), rt, first(dst));
  g.batch = dst.shape_[0];
  // The call's A is the product's right operand; a batch of 1 broadcasts (stride 0).
  g.stride_a = e.rhs_.shape_[0] == 1 ? 0 : e.rhs_.shape_[1] * e.rhs_.stride_;
  g.stride_b = e.lhs_.shape_[0] == 1 ? 0 : e.lhs_.shape_[1] * e.lhs_.stride_;
  g.stride_c = dst.shape_[1] * dst.stride_;
  return g;
}

// y = op(A) x with A column-major rows x cols: what a GemmCall with one output column (or row) reduces
// to. BLAS's gemv is faster than a gemm with n = 1 and reads a strided x or y directly.
template <typename DType>
struct GemvCall {
  bool trans;
  index_t rows, cols;
  const DType* a;
  index_t lda;
  const DType* x;
  index_t incx;
  DType* y;
  index_t incy;
};

template <typename DType>
inline bool AsGemv(const GemmCall<DType>& g, GemvCall<DType>* v) {
  if (g.n == 1) {  // C (m x 1) = op(A) (m x k) * b, b the single column of op(B)
    *v = {g.trans_a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.a, g.lda, g.b, g.trans_b ? g.ldb : 1, g.c, 1};
    return true;
  }
  if (g.m == 1) {  // C (1 x n) = a * op(B) (k x n)  <=>  C^T = op(B)^T a^T, a the single row of op(A)
    *v = {!g.trans_b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.b, g.ldb, g.a, g.trans_a ? 1 : g.lda,
          g.c, g.ldc};
    return true;
  }
  return false;
}

// ---- checks shared by the backends ------------------------------------------------------------------

// Whether two views share any byte of the memory they span (padding included: conservative).
template <typename Device, int d1, int d2, typename DType>
inline bool MemoryOverlaps(const Tensor<Device, d1, DType>& x, const Tensor<Device, d2, DType>& y) {
  if (x.shape_.Size() == 0 || y.shape_.Size() == 0) return false;
  const uintptr_t x0 = reinterpret_cast<uintptr_t>(x.dptr_), y0 = reinterpret_cast<uintptr_t>(y.dptr_);
  const uintptr_t x1 = x0 + static_cast<uintptr_t>(x.MSize()) * sizeof(DType);
  const uintptr_t y1 = y0 + static_cast<uintptr_t>(y.MSize()) * sizeof(DType);
  return x0 < y1 && y0 < x1;
}

// The destination must have the product's shape.
template <typename Saver, typename Device, int dim, typename DType, typename E>
inline void CheckProductDestination(const Tensor<Device, dim, DType>& dst, const E& e) {
  const Shape<dim> s = e.shape();
  TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_, " vs ",
           e.describe(), " of shape ", s);
}

// Compile-time checks shared by the EvalInto overloads of both backends; `value` says whether the
// evaluation may be compiled (after a failed check it is skipped, so that only the sentence is reported).
template <typename Saver, typename Device, int dim, typename E>
struct check_product_assignment {
  static_assert(Saver::kBLAS,
                "dst *= dot(...) and dst /= dot(...) are not supported: BLAS can only overwrite (=) or "
                "accumulate (+=, -=); assign the product to a temporary tensor first");
  static_assert(E::kDim == dim, "the product has a different number of dimensions than the tensor it is assigned to");
  static_assert(std::is_same<typename E::device_type, Device>::value,
                "the product's operands live on a different device than the tensor it is assigned to; Copy() "
                "them first");
  using DType = typename E::value_type;
  static constexpr bool value = Saver::kBLAS && E::kDim == dim && std::is_same<typename E::device_type, Device>::value &&
                                (std::is_floating_point<DType>::value || is_low_precision<DType>::value);
};

// dst saver= batch_dot(a, b) of rank 4 or 5 on either device: a 3-D batch_dot per outer batch index, each
// operand's index 0 along the dimensions where it broadcasts.
template <typename Saver, typename Device, int dim, typename DType, typename TA, typename TB, bool lt, bool rt>
inline void EvalInto(Tensor<Device, dim, DType> dst, const BatchDotNdExp<TA, TB, lt, rt, DType>& e) {
  using Node = BatchDotNdExp<TA, TB, lt, rt, DType>;
  if constexpr (check_product_assignment<Saver, Device, dim, Node>::value) {
    CheckProductDestination<Saver>(dst, e);
    const bool lhs_aliased = MemoryOverlaps(dst, e.lhs_), rhs_aliased = MemoryOverlaps(dst, e.rhs_);
    if (lhs_aliased || rhs_aliased) {
      // A broadcast operand may share memory with a slab written before it is read: private copies.
      TensorContainer<Device, dim, DType> lhs, rhs;
      lhs.set_stream(dst.stream_), rhs.set_stream(dst.stream_);
      if (lhs_aliased) lhs = e.lhs_;
      if (rhs_aliased) rhs = e.rhs_;
      EvalInto<Saver>(dst, Node(lhs_aliased ? lhs.view() : e.lhs_, rhs_aliased ? rhs.view() : e.rhs_, e.scale_));
      return;
    }
    const Shape<dim> a = e.lhs_.shape_, b = e.rhs_.shape_;
    const index_t outer = dst.shape_.ProdShape(0, dim - 3);
    for (index_t o = 0; o < outer; ++o) {
      index_t rest = o, ia = 0, ib = 0, scale_a = 1, scale_b = 1;
      for (int d = dim - 4; d >= 0; --d) {
        const index_t i = rest % dst.shape_[d];
        rest /= dst.shape_[d];
        ia += (a[d] == 1 ? 0 : i) * scale_a;
        ib += (b[d] == 1 ? 0 : i) * scale_b;
        scale_a *= a[d];
        scale_b *= b[d];
      }
      using Matrices = typename Node::Matrices;
      EvalInto<Saver>(Node::Slab(dst, o),
                      BatchDotExp<Matrices, Matrices, lt, rt, DType>(Node::Slab(e.lhs_, ia), Node::Slab(e.rhs_, ib), e.scale_));
    }
  }
}

}  // namespace expr
}  // namespace tensorexpr
