// expr/mask.h — mask(m, src): src with each item along its first dimension multiplied by that item's
// entry of the 1-D m: element (i, ...) is src(i, ...) * m[i] (mshadow's mask, which took 2-D src; any
// src of 2 or more dimensions here). A mask of 0 / 1 keeps or zeroes whole rows (samples).
#pragma once
#include "base.h"
#include "map.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename MaskExpr, typename SrcExp>
struct MaskExp : public Exp<MaskExp<MaskExpr, SrcExp>, typename SrcExp::value_type, type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(MaskExpr::kDim == 1 && SrcExp::kDim >= 2, "mask(m, src): m is 1-D (N), src is (N, ...)");
  static_assert(check_operand<MaskExpr>::value && check_operand<SrcExp>::value, "");
  static constexpr int kDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename MaskExpr::device_type, typename SrcExp::device_type>::type;
  MaskExpr mask_;
  SrcExp src_;
  MaskExp(const MaskExpr& m, const SrcExp& src) : mask_(m), src_(src) {
    TE_CHECK(mask_.shape()[0] == src_.shape()[0], "mask: mask shape ", mask_.shape(), " and source shape ",
             src_.shape(), " disagree on the first dimension");
  }
  Shape<kDim> shape() const { return src_.shape(); }
  struct Plan {
    typename MaskExpr::Plan mask_;
    typename SrcExp::Plan src_;
    IndexDiv rows_per_item_;  // rows of the (rows, last) view in one item of the first dimension
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      return static_cast<DType>(src_.Eval(y, x) * static_cast<DType>(mask_.Eval(0, rows_per_item_.Div(y))));
    }
  };
  Plan plan() const { return Plan{mask_.plan(), src_.plan(), IndexDiv::Make(src_.shape().ProdShape(1, kDim - 1))}; }
};

template <typename MaskExpr, typename SrcExp, typename MType, typename DType, int e1, int e2>
inline MaskExp<MaskExpr, SrcExp> mask(const Exp<MaskExpr, MType, e1>& m, const Exp<SrcExp, DType, e2>& src) {
  return MaskExp<MaskExpr, SrcExp>(m.self(), src.self());
}

}  // namespace expr
}  // namespace tensorexpr
