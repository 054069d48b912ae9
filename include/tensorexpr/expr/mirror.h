// expr/mirror.h — mirror(src): the source flipped along its last dimension (a horizontal flip of an
// image (..., C, H, W)).
#pragma once
#include "base.h"

namespace tensorexpr {
namespace expr {

template <typename E>
struct MirroringExp : public Exp<MirroringExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 1, "mirror(...) flips the last dimension, so its source needs at least one dimension");
  static_assert(E::kExpType != type::kComplex, "mirror(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;

  explicit MirroringExp(const E& src) : src_(src) {}
  Shape<kDim> shape() const { return src_.shape(); }

  struct Plan {
    typename E::Plan src_;
    index_t last_;  // width - 1
    TE_XINLINE DType Eval(index_t y, index_t x) const { return src_.Eval(y, last_ - x); }
  };
  Plan plan() const { return Plan{src_.plan(), src_.shape()[kDim - 1] - 1}; }
};

template <typename E, typename DType, int etype>
inline MirroringExp<E> mirror(const Exp<E, DType, etype>& src) {
  return MirroringExp<E>(src.self());
}

}  // namespace expr
}  // namespace tensorexpr
