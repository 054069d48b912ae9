// expr/slice.h — slice<sdim>(e, begin, end): indices [begin, end) of dimension sdim of e, the other
// dimensions whole. Read-only (an expression, not a view you can assign to; for dimension 0 of a tensor,
// Tensor::Slice gives a writable view).
#pragma once
#include "base.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename SrcExp, typename DType, int dim, int sdim>
struct SliceExp : public Exp<SliceExp<SrcExp, DType, dim, sdim>, DType, type::kChainer> {
  static_assert(SrcExp::kExpType != type::kComplex,
                "slice(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(dim >= 1, "slice<sdim>(e, begin, end) needs an expression with at least one dimension, not a scalar");
  static_assert(0 <= sdim && sdim < dim,
                "slice<sdim>(e, begin, end): sdim must be a dimension of e (0 <= sdim < e's number of dimensions)");
  static constexpr int kDim = dim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;

  SrcExp src_;
  Shape<dim> src_shape_, shape_;
  index_t begin_;
  SliceExp(const SrcExp& src, index_t begin, index_t end) : src_(src), src_shape_(src_.shape()), begin_(begin) {
    TE_CHECK(0 <= begin && begin <= end && end <= src_shape_[sdim], "slice<", sdim, ">: range [", begin, ", ", end,
             ") is out of range for dimension ", sdim, " of source shape ", src_shape_);
    shape_ = src_shape_;
    shape_[sdim] = end - begin;
  }
  Shape<dim> shape() const { return shape_; }

  // Slicing the last dimension shifts the column; slicing a leading one shifts the row by an offset
  // that grows by `skip_` rows each time the output row passes a block of the outer dimensions.
  struct Plan {
    typename SrcExp::Plan src_;
    index_t offset_;  // column offset (last dimension) or row offset (leading dimension)
    IndexDiv block_;  // output rows per index of the dimensions outside sdim
    index_t skip_;    // source rows the slice leaves out per such block
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      if constexpr (sdim == dim - 1) {
        return src_.Eval(y, x + offset_);
      } else if constexpr (sdim == 0) {
        return src_.Eval(y + offset_, x);  // one block only: no division
      } else {
        return src_.Eval(y + block_.Div(y) * skip_ + offset_, x);
      }
    }
  };
  Plan plan() const {
    if constexpr (sdim == dim - 1) {
      return Plan{src_.plan(), begin_, IndexDiv::Make(1), 0};
    } else {
      const index_t inner = src_shape_.ProdShape(sdim + 1, dim - 1);  // rows per index of sdim
      const index_t block = shape_[sdim] * inner;
      return Plan{src_.plan(), begin_ * inner, IndexDiv::Make(block), (src_shape_[sdim] - shape_[sdim]) * inner};
    }
  }
};

// slice<sdim>(e, begin, end): Error unless 0 <= begin <= end <= e.shape()[sdim].
template <int sdim, typename SrcExp, typename DType, int etype>
inline SliceExp<SrcExp, DType, SrcExp::kDim, sdim> slice(const Exp<SrcExp, DType, etype>& src, index_t begin,
                                                         index_t end) {
  return SliceExp<SrcExp, DType, SrcExp::kDim, sdim>(src.self(), begin, end);
}

}  // namespace expr
}  // namespace tensorexpr
