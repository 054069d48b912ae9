// expr/crop.h — crop(src, oshape): a window of the two spatial dimensions of an image (..., C, H, W).
// crop(src, Shape2(h, w)) takes the centre h x w window (start (H - h) / 2, (W - w) / 2, as mshadow);
// crop(src, Shape2(h, w), start_y, start_x) takes the window whose top-left corner is (start_y, start_x).
#pragma once
#include <algorithm>
#include "base.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename E>
struct CroppingExp : public Exp<CroppingExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 2, "crop(...) crops the last two dimensions (H, W) of an image, so its source needs at least two dimensions");
  static_assert(E::kExpType != type::kComplex, "crop(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  index_t out_height_, out_width_, start_y_, start_x_;

  CroppingExp(const E& src, Shape<2> oshape, index_t start_y, index_t start_x)
      : src_(src), out_height_(oshape[0]), out_width_(oshape[1]), start_y_(start_y), start_x_(start_x) {
    const Shape<kDim> in = src_.shape();
    // start <= extent first, then out <= extent - start: no sum that could wrap.
    TE_CHECK(out_height_ >= 0 && out_width_ >= 0 && start_y >= 0 && start_x >= 0 && start_y <= in[kDim - 2] &&
                 start_x <= in[kDim - 1] && out_height_ <= in[kDim - 2] - start_y &&
                 out_width_ <= in[kDim - 1] - start_x,
             "crop: window ", oshape, " at (", start_y, ",", start_x, ") is out of range for source shape ", in);
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = src_.shape();
    s[kDim - 2] = out_height_;
    s[kDim - 1] = out_width_;
    return s;
  }

  struct Plan {
    typename E::Plan src_;
    IndexDiv out_height_;  // output row -> (plane, y)
    index_t in_height_, start_y_, start_x_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      index_t oy;
      const index_t plane = out_height_.DivMod(y, &oy);
      return src_.Eval(plane * in_height_ + oy + start_y_, x + start_x_);
    }
  };
  Plan plan() const {
    const Shape<kDim> in = src_.shape();
    return Plan{src_.plan(), IndexDiv::Make(out_height_), in[kDim - 2], start_y_, start_x_};
  }
};

// The centre oshape[0] x oshape[1] window of the last two dimensions.
template <typename E, typename DType, int etype>
inline CroppingExp<E> crop(const Exp<E, DType, etype>& src, Shape<2> oshape) {
  const Shape<E::kDim> in = src.self().shape();
  TE_CHECK(oshape[0] >= 0 && oshape[1] >= 0 && oshape[0] <= in[E::kDim - 2] && oshape[1] <= in[E::kDim - 1],
           "crop: window ", oshape, " is larger than the spatial size of source shape ", in);
  return CroppingExp<E>(src.self(), oshape, (in[E::kDim - 2] - oshape[0]) / 2, (in[E::kDim - 1] - oshape[1]) / 2);
}
// The oshape[0] x oshape[1] window whose top-left corner is (start_y, start_x).
template <typename E, typename DType, int etype>
inline CroppingExp<E> crop(const Exp<E, DType, etype>& src, Shape<2> oshape, index_t start_y, index_t start_x) {
  return CroppingExp<E>(src.self(), oshape, start_y, start_x);
}

}  // namespace expr
}  // namespace tensorexpr
