// expr/slice.h — slice<sdim>(e, begin, end[, step]): indices begin, begin + step, ... up to (not including)
// end of dimension sdim of e, the other dimensions whole. A negative step walks backwards: begin, begin +
// step, ... down to (not including) end, where end = -1 runs through index 0 (slice<0>(e, n - 1, -1, -1)
// reverses dimension 0). Read-only (an expression, not a view you can assign to; for dimension 0 of a
// tensor, Tensor::Slice gives a writable view).
#pragma once
#include <cstdint>
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
  index_t begin_, step_;
  SliceExp(const SrcExp& src, index_t begin, index_t end, index_t step)
      : src_(src), src_shape_(src_.shape()), begin_(begin), step_(step) {
    const index_t n = src_shape_[sdim];
    TE_CHECK(step != 0, "slice<", sdim, ">: step 0 for source shape ", src_shape_, " (need a positive or negative step)");
    if (step > 0) {
      TE_CHECK(0 <= begin && begin <= end && end <= n, "slice<", sdim, ">: range [", begin, ", ", end,
               ") is out of range for dimension ", sdim, " of source shape ", src_shape_);
    } else {
      TE_CHECK(-1 <= end && end <= begin && begin < n, "slice<", sdim, ">: backward range from ", begin, " down to ",
               end, " (step ", step, ") is out of range for dimension ", sdim, " of source shape ", src_shape_,
               " (need -1 <= end <= begin < ", n, ")");
    }
    shape_ = src_shape_;
    // ceil(|end - begin| / |step|), without overflow for any step.
    const index_t span = step > 0 ? end - begin : begin - end;
    const index_t stride = step > 0 ? step : (step == INT64_MIN ? INT64_MAX : -step);
    shape_[sdim] = span / stride + (span % stride != 0 ? 1 : 0);
  }
  Shape<dim> shape() const { return shape_; }

  // Slicing the last dimension moves the column; slicing a leading one moves the row. With step 1 the
  // row shifts by an offset that grows by `skip_` rows each time the output row passes a block of the
  // outer dimensions; otherwise the output row splits into (outer block, index along sdim, inner row).
  struct Plan {
    typename SrcExp::Plan src_;
    index_t offset_;  // column offset (last dimension) or row offset (leading dimension, step 1)
    IndexDiv block_;  // output rows per index of the dimensions outside sdim
    index_t skip_;    // source rows the slice leaves out per such block (step 1)
    index_t step_;
    IndexDiv inner_;     // rows per index of sdim (step other than 1)
    index_t src_block_;  // source rows per index of the dimensions outside sdim (step other than 1)
    index_t begin_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      if constexpr (sdim == dim - 1) {
        return src_.Eval(y, offset_ + x * step_);
      } else {
        if (step_ == 1) {
          if constexpr (sdim == 0) return src_.Eval(y + offset_, x);  // one block only: no division
          return src_.Eval(y + block_.Div(y) * skip_ + offset_, x);
        }
        index_t rest, r;
        const index_t outer = block_.DivMod(y, &rest);
        const index_t i = inner_.DivMod(rest, &r);
        return src_.Eval(outer * src_block_ + (begin_ + i * step_) * inner_.divisor_ + r, x);
      }
    }
  };
  Plan plan() const {
    if constexpr (sdim == dim - 1) {
      return Plan{src_.plan(), begin_, IndexDiv::Make(1), 0, step_, IndexDiv::Make(1), 0, begin_};
    } else {
      const index_t inner = src_shape_.ProdShape(sdim + 1, dim - 1);  // rows per index of sdim
      const index_t block = shape_[sdim] * inner;
      return Plan{src_.plan(), begin_ * inner, IndexDiv::Make(block), (src_shape_[sdim] - shape_[sdim]) * inner,
                  step_, IndexDiv::Make(inner), src_shape_[sdim] * inner, begin_};
    }
  }
};

// slice<sdim>(e, begin, end[, step]): Error unless the range lies in e.shape()[sdim] (0 <= begin <= end <= n
// for a positive step, -1 <= end <= begin < n for a negative one) and step is not 0.
template <int sdim, typename SrcExp, typename DType, int etype>
inline SliceExp<SrcExp, DType, SrcExp::kDim, sdim> slice(const Exp<SrcExp, DType, etype>& src, index_t begin,
                                                         index_t end, index_t step = 1) {
  return SliceExp<SrcExp, DType, SrcExp::kDim, sdim>(src.self(), begin, end, step);
}

}  // namespace expr
}  // namespace tensorexpr
