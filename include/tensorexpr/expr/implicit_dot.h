// expr/implicit_dot.h — implicit_dot(lhs, rhs): the matrix product of two 2-D expressions (M, K) x (K, N),
// evaluated element by element (each output element runs its own loop over K, accumulating in accum_t).
// Unlike dot, which is one BLAS call on tensors and may only stand alone, it takes any expressions and
// composes inside others: `out = F<op::relu>(implicit_dot(a * 2.0f, b.T()) + c)`. It costs K reads of each
// operand per output element, so for large products assign dot(...) to a tensor instead.
#pragma once
#include "base.h"
#include "map.h"

namespace tensorexpr {
namespace expr {

template <typename LhsExp, typename RhsExp>
struct ImplicitDotExp : public Exp<ImplicitDotExp<LhsExp, RhsExp>, typename LhsExp::value_type, type::kChainer> {
  using DType = typename LhsExp::value_type;
  static_assert(LhsExp::kDim == 2 && RhsExp::kDim == 2, "implicit_dot(lhs, rhs) multiplies 2-D expressions");
  static_assert(check_operand<LhsExp>::value && check_operand<RhsExp>::value, "");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename common_device<typename LhsExp::device_type, typename RhsExp::device_type>::type;
  LhsExp lhs_;
  RhsExp rhs_;
  ImplicitDotExp(const LhsExp& lhs, const RhsExp& rhs) : lhs_(lhs), rhs_(rhs) {
    TE_CHECK(lhs_.shape()[1] == rhs_.shape()[0], "implicit_dot: inner dimensions differ: left operand ",
             lhs_.shape(), " vs right operand ", rhs_.shape());
  }
  Shape<2> shape() const { return Shape2(lhs_.shape()[0], rhs_.shape()[1]); }
  struct Plan {
    typename LhsExp::Plan lhs_;
    typename RhsExp::Plan rhs_;
    index_t inner_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      A acc = A(0);
      for (index_t k = 0; k < inner_; ++k) acc += static_cast<A>(lhs_.Eval(y, k)) * static_cast<A>(rhs_.Eval(k, x));
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const { return Plan{lhs_.plan(), rhs_.plan(), lhs_.shape()[1]}; }
};

template <typename LhsExp, typename RhsExp, typename DType, int e1, int e2>
inline ImplicitDotExp<LhsExp, RhsExp> implicit_dot(const Exp<LhsExp, DType, e1>& lhs, const Exp<RhsExp, DType, e2>& rhs) {
  return ImplicitDotExp<LhsExp, RhsExp>(lhs.self(), rhs.self());
}

}  // namespace expr
}  // namespace tensorexpr
