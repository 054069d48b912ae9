// expr/upsampling.h — upsampling_nearest(src, scale): the last two dimensions (H, W) of src scaled by an
// integer factor, each output pixel (h, w) copying source pixel (h / scale, w / scale).
#pragma once
#include "base.h"
#include "map.h"
#include "../index_div.h"

namespace tensorexpr {
namespace expr {

template <typename SrcExp>
struct UpSamplingNearestExp : public Exp<UpSamplingNearestExp<SrcExp>, typename SrcExp::value_type, type::kChainer> {
  using DType = typename SrcExp::value_type;
  static_assert(SrcExp::kDim >= 2, "upsampling_nearest(src, scale) scales the last two dimensions: src needs 2 or more");
  static_assert(check_operand<SrcExp>::value, "");
  static constexpr int kDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  SrcExp src_;
  index_t scale_;
  UpSamplingNearestExp(const SrcExp& src, index_t scale) : src_(src), scale_(scale) {
    TE_CHECK(scale >= 1, "upsampling_nearest: scale must be >= 1, got ", scale);
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = src_.shape();
    s[kDim - 2] *= scale_;
    s[kDim - 1] *= scale_;
    return s;
  }
  struct Plan {
    typename SrcExp::Plan src_;
    IndexDiv out_height_, scale_;
    index_t src_height_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      index_t h;
      const index_t plane = out_height_.DivMod(y, &h);
      return src_.Eval(plane * src_height_ + scale_.Div(h), scale_.Div(x));
    }
  };
  Plan plan() const {
    const index_t h = src_.shape()[kDim - 2];
    return Plan{src_.plan(), IndexDiv::Make(h * scale_), IndexDiv::Make(scale_), h};
  }
};

template <typename SrcExp, typename DType, int etype>
inline UpSamplingNearestExp<SrcExp> upsampling_nearest(const Exp<SrcExp, DType, etype>& src, index_t scale) {
  return UpSamplingNearestExp<SrcExp>(src.self(), scale);
}

}  // namespace expr
}  // namespace tensorexpr
