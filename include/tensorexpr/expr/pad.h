// expr/pad.h — pad(src, p): zero padding around the two spatial dimensions of an image.
// Images are (..., C, H, W): the last two dimensions are spatial, everything before them is a stack of
// planes. pad(src, p) adds p zero rows above and below and p zero columns left and right;
// pad(src, py, px) pads H by py and W by px; pad(src, top, bottom, left, right) pads each side on its own.
#pragma once
#include <algorithm>
#include "base.h"
#include "../checked.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename E>
struct PaddingExp : public Exp<PaddingExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 2, "pad(...) pads the last two dimensions (H, W) of an image, so its source needs at least two dimensions");
  static_assert(E::kExpType != type::kComplex, "pad(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  index_t top_, bottom_, left_, right_;

  PaddingExp(const E& src, index_t top, index_t bottom, index_t left, index_t right)
      : src_(src), top_(top), bottom_(bottom), left_(left), right_(right) {
    TE_CHECK(top >= 0 && bottom >= 0 && left >= 0 && right >= 0,
             "pad: padding must be non-negative, got top=", top, " bottom=", bottom, " left=", left,
             " right=", right, " for source shape ", src_.shape());
    const Shape<kDim> in = src_.shape();
    CheckedAdd(CheckedAdd(in[kDim - 2], top, "pad (height + top)"), bottom, "pad (height + top + bottom)");
    CheckedAdd(CheckedAdd(in[kDim - 1], left, "pad (width + left)"), right, "pad (width + left + right)");
    CheckedSize(shape(), "pad");
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = src_.shape();
    s[kDim - 2] += top_ + bottom_;
    s[kDim - 1] += left_ + right_;
    return s;
  }

  struct Plan {
    typename E::Plan src_;
    IndexDiv out_height_;  // output row -> (plane, y)
    index_t in_height_, in_width_, top_, left_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      index_t oy;
      const index_t plane = out_height_.DivMod(y, &oy);
      const index_t iy = oy - top_, ix = x - left_;
      // One unsigned compare per axis tests 0 <= i < extent.
      if (static_cast<uint64_t>(iy) < static_cast<uint64_t>(in_height_) &&
          static_cast<uint64_t>(ix) < static_cast<uint64_t>(in_width_)) {
        return src_.Eval(plane * in_height_ + iy, ix);
      }
      return DType(0);
    }
  };
  Plan plan() const {
    const Shape<kDim> in = src_.shape();
    const index_t out_h = in[kDim - 2] + top_ + bottom_;
    return Plan{src_.plan(), IndexDiv::Make(out_h), in[kDim - 2], in[kDim - 1], top_, left_};
  }
};

// Pads H and W by `p` on every side.
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t p) {
  return PaddingExp<E>(src.self(), p, p, p, p);
}
// Pads H by `pad_y` (top and bottom) and W by `pad_x` (left and right).
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t pad_y, index_t pad_x) {
  return PaddingExp<E>(src.self(), pad_y, pad_y, pad_x, pad_x);
}
// Pads each side on its own.
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t top, index_t bottom, index_t left, index_t right) {
  return PaddingExp<E>(src.self(), top, bottom, left, right);
}

}  // namespace expr
}  // namespace tensorexpr
