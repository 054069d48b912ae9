// expr/reshape.h — reshape(e, shape): the same elements in the same row-major order, seen with another
// shape of any number of dimensions. Element (y, x) of the output is the element with flat index
// y * width + x; the plan turns that flat index into the source's (row, column).
#pragma once
#include "base.h"
#include "../index_div.h"
#include "../checked.h"

namespace tensorexpr {
namespace expr {

template <typename SrcExp, typename DType, int dimdst>
struct ReshapeExp : public Exp<ReshapeExp<SrcExp, DType, dimdst>, DType, type::kChainer> {
  static_assert(SrcExp::kExpType != type::kComplex,
                "reshape(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(SrcExp::kDim >= 1, "reshape(e, shape) needs an expression with at least one dimension, not a scalar");
  static constexpr int kDim = dimdst;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;

  SrcExp src_;
  Shape<dimdst> shape_;
  Shape<2> src2d_;  // the source's (rows, last) view
  ReshapeExp(const SrcExp& src, const Shape<dimdst>& shape) : src_(src), shape_(shape) {
    const auto s = src_.shape();
    src2d_ = s.FlatTo2D();
    // Checked sizes: a target whose product wraps around to the source's size is not the same size.
    const index_t have = CheckedSize(s, "reshape source"), want = CheckedSize(shape, "reshape target");
    TE_CHECK(have == want, "reshape: source shape ", s, " (", have, " elements) cannot be viewed as shape ", shape, " (",
             want, " elements)");
  }
  Shape<dimdst> shape() const { return shape_; }

  // How an output (y, x) finds its source element; the cheaper cases skip the division.
  enum class Mapping : int {
    kSameRows,  // the last dimension is unchanged, so the 2-D views coincide: (y, x) itself
    kOneRow,    // the source is a single row (1-D, or leading extents 1): (0, flat index)
    kFlat       // general: the flat index divided by the source width
  };
  struct Plan {
    typename SrcExp::Plan src_;
    Mapping mapping_;
    index_t width_;
    IndexDiv src_width_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      // An if-chain rather than a switch: the CPU compiler unswitches it out of the loop over x.
      if (mapping_ == Mapping::kSameRows) return src_.Eval(y, x);
      if (mapping_ == Mapping::kOneRow) return src_.Eval(0, y * width_ + x);
      const index_t i = y * width_ + x, q = src_width_.Div(i);
      return src_.Eval(q, src_width_.Rem(i, q));
    }
  };
  Plan plan() const {
    const Shape<2> dst2d = shape_.FlatTo2D();
    const Mapping mapping = src2d_[1] == dst2d[1] ? Mapping::kSameRows
                            : src2d_[0] == 1      ? Mapping::kOneRow
                                                  : Mapping::kFlat;
    return Plan{src_.plan(), mapping, dst2d[1], IndexDiv::Make(src2d_[1])};
  }
};

// reshape(e, shape): Error unless e and shape hold the same number of elements.
template <typename SrcExp, typename DType, int etype, int dimdst>
inline ReshapeExp<SrcExp, DType, dimdst> reshape(const Exp<SrcExp, DType, etype>& src, const Shape<dimdst>& shape) {
  return ReshapeExp<SrcExp, DType, dimdst>(src.self(), shape);
}

}  // namespace expr
}  // namespace tensorexpr
