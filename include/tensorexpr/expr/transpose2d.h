// expr/transpose2d.h — e.T(): the transpose of a 2-D expression. dot() reads it as a BLAS transpose flag;
// anywhere else it evaluates element by element.
#pragma once
#include "base.h"

namespace tensorexpr {
namespace expr {

template <typename E>
struct TransposeExp : public Exp<TransposeExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kExpType != type::kComplex, "transpose the operands of dot(...) instead of its result");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  explicit TransposeExp(const E& src) : src_(src) {}
  Shape<2> shape() const {
    Shape<2> s = src_.shape();
    return Shape2(s[1], s[0]);
  }
  // Transposing twice gives the original back.
  const E& T() const { return src_; }
  struct Plan {
    typename E::Plan src_;
    TE_XINLINE DType Eval(index_t y, index_t x) const { return src_.Eval(x, y); }
    // Output row y (source column y), any x of it (see TransposeAxesExp::Plan::AtRow).
    struct RowAt {
      const typename E::Plan& src_;
      index_t y_;
      TE_XINLINE DType operator()(index_t x) const { return src_.Eval(x, y_); }
    };
    TE_XINLINE RowAt AtRow(index_t y) const { return RowAt{src_, y}; }
  };
  Plan plan() const { return Plan{src_.plan()}; }
};

}  // namespace expr
}  // namespace tensorexpr
