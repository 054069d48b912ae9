// expr/concat.h — concat<cdim>(a, b, ...): the operands one after another along dimension cdim; every
// other dimension must match. Each output element reads exactly one operand. N operands are N - 1 nested
// pairs, concat(concat(a, b), c): an element of the k-th operand passes N - k tests to find it.
#pragma once
#include <type_traits>
#include "base.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename LhsExp, typename RhsExp, typename DType, int dim, int cdim>
struct ConcatExp : public Exp<ConcatExp<LhsExp, RhsExp, DType, dim, cdim>, DType, type::kChainer> {
  static_assert(LhsExp::kExpType != type::kComplex && RhsExp::kExpType != type::kComplex,
                "concat(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(dim >= 1, "concat<cdim>(a, b) joins expressions with at least one dimension, not scalars");
  static_assert(0 <= cdim && cdim < dim,
                "concat<cdim>(a, b): cdim must be a dimension of the operands (0 <= cdim < their number of dimensions)");
  static constexpr int kDim = dim;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename LhsExp::device_type, typename RhsExp::device_type>::type;

  LhsExp lhs_;
  RhsExp rhs_;
  Shape<dim> lhs_shape_, shape_;
  ConcatExp(const LhsExp& lhs, const RhsExp& rhs) : lhs_(lhs), rhs_(rhs), lhs_shape_(lhs_.shape()) {
    const Shape<dim> b = rhs_.shape();
    bool match = true;
    for (int i = 0; i < dim; ++i) match = match && (i == cdim || lhs_shape_[i] == b[i]);
    TE_CHECK(match, "concat<", cdim, ">: operands of shape ", lhs_shape_, " and ", b,
             " differ in a dimension other than ", cdim);
    shape_ = lhs_shape_;
    shape_[cdim] += b[cdim];
  }
  Shape<dim> shape() const { return shape_; }

  // Along the last dimension the column decides; along a leading one the output row splits as
  // y = outer * block_ + rest, and rest < split_ is a's part of the block.
  struct Plan {
    typename LhsExp::Plan lhs_;
    typename RhsExp::Plan rhs_;
    index_t split_;      // a's columns (last dimension) or a's rows per block (leading dimension)
    IndexDiv block_;     // output rows per index of the dimensions outside cdim
    index_t rhs_rows_;   // b's rows per such block
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      if constexpr (cdim == dim - 1) {
        return x < split_ ? lhs_.Eval(y, x) : rhs_.Eval(y, x - split_);
      } else if constexpr (cdim == 0) {
        return y < split_ ? lhs_.Eval(y, x) : rhs_.Eval(y - split_, x);  // one block only: no division
      } else {
        const index_t outer = block_.Div(y), rest = block_.Rem(y, outer);
        return rest < split_ ? lhs_.Eval(outer * split_ + rest, x) : rhs_.Eval(outer * rhs_rows_ + rest - split_, x);
      }
    }
  };
  Plan plan() const {
    if constexpr (cdim == dim - 1) {
      return Plan{lhs_.plan(), rhs_.plan(), lhs_shape_[cdim], IndexDiv::Make(1), 0};
    } else {
      const index_t inner = shape_.ProdShape(cdim + 1, dim - 1);  // rows per index of cdim
      const index_t block = shape_[cdim] * inner;
      return Plan{lhs_.plan(), rhs_.plan(), lhs_shape_[cdim] * inner, IndexDiv::Make(block),
                  (shape_[cdim] - lhs_shape_[cdim]) * inner};
    }
  }
};

// concat<cdim>(a, b): Error (naming both shapes) unless a and b match outside dimension cdim.
template <int cdim, typename LhsExp, typename RhsExp, typename DType, typename DType2, int ta, int tb>
inline ConcatExp<LhsExp, RhsExp, DType, LhsExp::kDim, cdim> concat(const Exp<LhsExp, DType, ta>& a,
                                                                   const Exp<RhsExp, DType2, tb>& b) {
  static_assert(std::is_same<DType, DType2>::value, "concat<cdim>(a, b): a and b must share a dtype; convert one with tcast<T>(e)");
  static_assert(LhsExp::kDim == RhsExp::kDim, "concat<cdim>(a, b): a and b must have the same number of dimensions");
  return ConcatExp<LhsExp, RhsExp, DType, LhsExp::kDim, cdim>(a.self(), b.self());
}

// concat<cdim>(a, b, c, ...): three or more operands, the pairs nested from the left.
template <int cdim, typename EA, typename EB, typename EC, typename... Rest>
inline auto concat(const EA& a, const EB& b, const EC& c, const Rest&... rest) {
  static_assert(is_exp<EA>::value && is_exp<EB>::value && is_exp<EC>::value,
                "concat<cdim>(a, b, ...) joins expressions (tensors, or expressions of them)");
  return concat<cdim>(concat<cdim>(a, b), c, rest...);
}

}  // namespace expr
}  // namespace tensorexpr
