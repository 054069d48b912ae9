// expr/broadcast.h — repeating an expression along dimensions it does not have (or has with extent 1):
//   broadcast<dimcast>(v, shape)        a 1-D v laid along dimension dimcast of `shape`
//   repmat(v, nrow)                     nrow copies of a 1-D v as the rows of a matrix
//   broadcast_with_axis(e, axis, size)  a new dimension of extent `size` inserted right after `axis`
//   broadcast_keepdim(e, axis, size)    dimension `axis` of extent 1 stretched to `size`
//   broadcast_scalar(v, shape)          the one element of a 1-D v of shape (1) repeated over `shape`
//                                       (a scalar that lives on the device: a loss, a norm)
// Each output element reads the one source element it repeats; nothing is materialised.
//
// Cost of a plan: its divisions are multiplies (index_div.h) of the output row index y alone, so the CPU
// loop hoists them out of its loop over x; broadcasting a 1-D v along the last dimension needs none.
#pragma once
#include <type_traits>
#include "base.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

// ---- broadcast<dimcast>(v, shape) ---------------------------------------------------------------------
template <typename SrcExp, typename DType, int dimdst, int dimcast>
struct Broadcast1DExp : public Exp<Broadcast1DExp<SrcExp, DType, dimdst, dimcast>, DType, type::kChainer> {
  static_assert(SrcExp::kExpType != type::kComplex,
                "broadcast(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(SrcExp::kDim == 1, "broadcast<dimcast>(v, shape) needs a 1-D v; use broadcast_with_axis or "
                                   "broadcast_keepdim to broadcast an expression of more dimensions");
  static_assert(0 <= dimcast && dimcast < dimdst,
                "broadcast<dimcast>(v, shape): dimcast must name a dimension of shape (0 <= dimcast < shape's dim)");
  static constexpr int kDim = dimdst;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  static constexpr bool kAlongLast = dimcast == dimdst - 1;

  SrcExp src_;
  Shape<dimdst> shape_;
  Broadcast1DExp(const SrcExp& src, const Shape<dimdst>& shape) : src_(src), shape_(shape) {
    const index_t len = src_.shape()[0];
    TE_CHECK(len == shape[dimcast], "broadcast<", dimcast, ">: source of shape ", Shape1(len),
             " does not match dimension ", dimcast, " of the target shape ", shape);
  }
  Shape<dimdst> shape() const { return shape_; }

  struct Plan {
    typename SrcExp::Plan src_;
    IndexDiv row_step_;  // output rows between consecutive source elements (leading dims after dimcast)
    IndexDiv length_;    // source length
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      if constexpr (kAlongLast) {
        return src_.Eval(0, x);
      } else {
        index_t i = y;
        if constexpr (dimcast + 2 < dimdst) i = row_step_.Div(i);
        if constexpr (dimcast > 0) i = length_.Rem(i, length_.Div(i));  // dimcast 0 is outermost: in range
        return src_.Eval(0, i);
      }
    }
  };
  Plan plan() const {
    const index_t row_step = kAlongLast ? 1 : shape_.ProdShape(dimcast + 1, dimdst - 1);
    return Plan{src_.plan(), IndexDiv::Make(row_step), IndexDiv::Make(shape_[dimcast])};
  }
};

template <int dimcast, typename SrcExp, typename DType, int etype, int dimdst>
inline Broadcast1DExp<SrcExp, DType, dimdst, dimcast> broadcast(const Exp<SrcExp, DType, etype>& src,
                                                                 const Shape<dimdst>& shape) {
  return Broadcast1DExp<SrcExp, DType, dimdst, dimcast>(src.self(), shape);
}

// repmat(v, nrow): (nrow, len) with every row equal to v.
template <typename SrcExp, typename DType, int etype>
inline Broadcast1DExp<SrcExp, DType, 2, 1> repmat(const Exp<SrcExp, DType, etype>& src, index_t nrow) {
  static_assert(SrcExp::kDim == 1, "repmat(v, nrow) repeats a 1-D v");
  TE_CHECK(nrow >= 0, "repmat: nrow must be non-negative, got ", nrow);
  return broadcast<1>(src, Shape2(nrow, src.self().shape()[0]));
}

// ---- broadcast_scalar(v, shape) -----------------------------------------------------------------------
template <typename SrcExp, typename DType, int dimdst>
struct BroadcastScalarExp : public Exp<BroadcastScalarExp<SrcExp, DType, dimdst>, DType, type::kChainer> {
  static_assert(SrcExp::kDim == 1, "broadcast_scalar(v, shape): v is a 1-D expression of shape (1)");
  static_assert(SrcExp::kExpType != type::kComplex,
                "broadcast_scalar(...) cannot read dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = dimdst;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  SrcExp src_;
  Shape<dimdst> shape_;
  BroadcastScalarExp(const SrcExp& src, const Shape<dimdst>& shape) : src_(src), shape_(shape) {
    TE_CHECK(src_.shape()[0] == 1, "broadcast_scalar: the source must have shape (1), not ", src_.shape(),
             " (target shape ", shape, ")");
  }
  Shape<dimdst> shape() const { return shape_; }
  struct Plan {
    typename SrcExp::Plan src_;
    TE_XINLINE DType Eval(index_t, index_t) const { return src_.Eval(0, 0); }
  };
  Plan plan() const { return Plan{src_.plan()}; }
};

template <typename SrcExp, typename DType, int etype, int dimdst>
inline BroadcastScalarExp<SrcExp, DType, dimdst> broadcast_scalar(const Exp<SrcExp, DType, etype>& src,
                                                                 const Shape<dimdst>& shape) {
  return BroadcastScalarExp<SrcExp, DType, dimdst>(src.self(), shape);
}

// ---- broadcast_with_axis / broadcast_keepdim ----------------------------------------------------------
// Both repeat the source along one output dimension `bdim` that the source lacks (or has with extent
// 1); the other dimensions are the source's, in order. One formula covers every case:
//   source row = y / A * B + (y % M) * row_of_rem,  source column = (y % M) * col_of_rem (+ x if pass_x)
// with, for extent E of bdim and I output rows per step of bdim (leading dimensions after it):
//   bdim leading (x passes through):          A = E*I, B = I, M = I,  row_of_rem 1, col_of_rem 0
//   bdim last, source's last extent 1:        A = 1,   B = 1, M = 1,  (column 0)
//   bdim a new last dimension, source width W: A = W,  B = 1, M = W,  row_of_rem 0, col_of_rem 1
// Straight-line code on purpose: a CPU compiler hoists all of it out of the loop over x.
template <typename SrcExp, typename DType, int dimdst>
struct BroadcastAxisExp : public Exp<BroadcastAxisExp<SrcExp, DType, dimdst>, DType, type::kChainer> {
  static_assert(SrcExp::kExpType != type::kComplex,
                "broadcast_with_axis / broadcast_keepdim cannot read dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = dimdst;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;

  SrcExp src_;
  Shape<dimdst> shape_;
  int bdim_;           // the output dimension that repeats
  index_t src_width_;  // the source's last dimension
  BroadcastAxisExp(const SrcExp& src, const Shape<dimdst>& shape, int bdim, index_t src_width)
      : src_(src), shape_(shape), bdim_(bdim), src_width_(src_width) {}
  Shape<dimdst> shape() const { return shape_; }

  struct Plan {
    typename SrcExp::Plan src_;
    IndexDiv by_a_, by_m_;
    index_t b_, row_of_rem_, col_of_rem_;
    bool pass_x_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      const index_t rem = by_m_.Rem(y, by_m_.Div(y));
      const index_t row = by_a_.Div(y) * b_ + rem * row_of_rem_, col = rem * col_of_rem_;
      // A loop-invariant test: the CPU loop over x stays a unit-stride copy when x passes through.
      return pass_x_ ? src_.Eval(row, col + x) : src_.Eval(row, col);
    }
  };
  Plan plan() const {
    const index_t extent = shape_[bdim_];
    if constexpr (dimdst > 1) {  // (a 1-D output has no leading dimension: no out-of-range index warning)
      if (bdim_ < dimdst - 1) {
        const index_t inner = shape_.ProdShape(bdim_ + 1, dimdst - 1);
        return Plan{src_.plan(), IndexDiv::Make(extent * inner), IndexDiv::Make(inner), inner, 1, 0, true};
      }
    }
    if (src_width_ == 1) return Plan{src_.plan(), IndexDiv::Make(1), IndexDiv::Make(1), 1, 0, 0, false};
    return Plan{src_.plan(), IndexDiv::Make(src_width_), IndexDiv::Make(src_width_), 1, 0, 1, false};
  }
};

// broadcast_with_axis(e, axis, size): a new dimension of extent `size` right after `axis` (axis -1 puts
// it in front); the result has one dimension more than e.
template <typename SrcExp, typename DType, int etype>
inline BroadcastAxisExp<SrcExp, DType, SrcExp::kDim + 1> broadcast_with_axis(const Exp<SrcExp, DType, etype>& src,
                                                                            int axis, index_t size) {
  constexpr int srcdim = SrcExp::kDim;
  static_assert(srcdim >= 1, "broadcast_with_axis needs an expression with at least one dimension");
  const Shape<srcdim> s = src.self().shape();
  TE_CHECK(-1 <= axis && axis < srcdim, "broadcast_with_axis: axis ", axis, " is out of range [-1, ", srcdim - 1,
           "] for source shape ", s);
  TE_CHECK(size >= 0, "broadcast_with_axis: size must be non-negative, got ", size, " (source shape ", s, ")");
  const int bdim = axis + 1;
  Shape<srcdim + 1> out;
  for (int i = 0, j = 0; i < srcdim + 1; ++i) out[i] = (i == bdim) ? size : s[j++];
  return BroadcastAxisExp<SrcExp, DType, srcdim + 1>(src.self(), out, bdim, s[srcdim - 1]);
}

// broadcast_keepdim(e, axis, size): e has extent 1 at `axis`; the result has `size` there.
template <typename SrcExp, typename DType, int etype>
inline BroadcastAxisExp<SrcExp, DType, SrcExp::kDim> broadcast_keepdim(const Exp<SrcExp, DType, etype>& src, int axis,
                                                                     index_t size) {
  constexpr int dim = SrcExp::kDim;
  static_assert(dim >= 1, "broadcast_keepdim needs an expression with at least one dimension");
  const Shape<dim> s = src.self().shape();
  TE_CHECK(0 <= axis && axis < dim, "broadcast_keepdim: axis ", axis, " is out of range [0, ", dim - 1,
           "] for source shape ", s);
  TE_CHECK(s[axis] == 1, "broadcast_keepdim: source shape ", s, " must have extent 1 at axis ", axis);
  TE_CHECK(size >= 0, "broadcast_keepdim: size must be non-negative, got ", size, " (source shape ", s, ")");
  Shape<dim> out = s;
  out[axis] = size;
  return BroadcastAxisExp<SrcExp, DType, dim>(src.self(), out, axis, s[dim - 1]);
}

}  // namespace expr
}  // namespace tensorexpr
