// expr/pad.h — pad(src, ...): a border around any dimensions of an expression, filled by a border mode
// (ARM Compute Library's BorderMode, ONNX Pad's mode; PadMode below):
//   kConstant  a value (0 unless given)                       ... 0 0 | a b c d | 0 0 ...
//   kEdge      the nearest element repeated (replicate)       ... a a | a b c d | d d ...
//   kReflect   mirrored about the edge element, not repeating it  ... c b | a b c d | c b ...
//   kWrap      the other end continues (periodic)             ... c d | a b c d | a b ...
// pad(src, begin, end[, mode[, value]]) adds begin[i] elements before and end[i] after dimension i. Borders
// wider than the source keep going by the same rule: reflect bounces back and forth (period 2(n-1); an
// extent of 1 repeats its element), wrap repeats with period n. Edge, reflect and wrap need a non-empty
// source along each padded dimension. Negative padding (cropping) is not taken here: crop() and slice() do it.
//
// The image forms, mshadow's: images are (..., C, H, W) and these zero-pad the last two dimensions:
// pad(src, p) pads H and W by p on every side; pad(src, py, px) H by py and W by px; pad(src, top, bottom,
// left, right) each side on its own.
#pragma once
#include <algorithm>
#include <cstdint>
#include "base.h"
#include "../checked.h"
#include "../index_div.h"

namespace tensorexpr {

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

inline const char* PadModeName(PadMode m) {
  switch (m) {
    case PadMode::kConstant: return "constant";
    case PadMode::kEdge: return "edge";
    case PadMode::kReflect: return "reflect";
    case PadMode::kWrap: return "wrap";
  }
  return "unknown";
}

// The source index that output index i (already shifted by the leading border) reads along a dimension of
// extent n, or -1 for the constant border.
TE_XINLINE index_t PadSourceIndex(index_t i, index_t n, PadMode mode) {
  if (static_cast<uint64_t>(i) < static_cast<uint64_t>(n)) return i;  // inside: one unsigned compare
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const index_t period = 2 * (n - 1);
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
    case PadMode::kWrap:
      i %= n;
      return i < 0 ? i + n : i;
  }
  return -1;
}

namespace expr {

template <typename E>
struct PaddingExp : public Exp<PaddingExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 1, "pad(...) needs an expression with at least one dimension, not a scalar");
  static_assert(E::kExpType != type::kComplex, "pad(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr int kRowDims = kDim > 1 ? kDim - 1 : 1;  // the dimensions a row index spans (at least 1)
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  Shape<kDim> begin_, end_;
  PadMode mode_;
  DType value_;

  PaddingExp(const E& src, const Shape<kDim>& begin, const Shape<kDim>& end, PadMode mode, DType value)
      : src_(src), begin_(begin), end_(end), mode_(mode), value_(value) {
    const Shape<kDim> in = src_.shape();
    TE_CHECK(mode == PadMode::kConstant || mode == PadMode::kEdge || mode == PadMode::kReflect ||
                 mode == PadMode::kWrap,
             "pad: unknown mode ", static_cast<int>(mode));
    for (int i = 0; i < kDim; ++i) {
      TE_CHECK(begin[i] >= 0 && end[i] >= 0, "pad: the padding of dimension ", i, " must be non-negative, got begin ",
               begin[i], " and end ", end[i], " for source shape ", in, " (crop or slice to cut)");
      CheckedAdd(CheckedAdd(in[i], begin[i], "pad (extent + begin)"), end[i], "pad (extent + begin + end)");
      TE_CHECK(mode == PadMode::kConstant || in[i] > 0 || begin[i] + end[i] == 0, "pad: ", PadModeName(mode),
               " padding of dimension ", i, " needs source elements, but source shape ", in,
               " is empty there");
    }
    CheckedSize(shape(), "pad");
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = src_.shape();
    for (int i = 0; i < kDim; ++i) s[i] += begin_[i] + end_[i];
    return s;
  }

  // The output row splits into the indices of the row dimensions from first_ on (each mapped to its
  // source index by the mode) and, before them, unpadded dimensions that pass through as one index.
  struct Plan {
    typename E::Plan src_;
    IndexDiv out_extent_[static_cast<size_t>(kRowDims)];
    index_t in_extent_[static_cast<size_t>(kRowDims)], begin_[static_cast<size_t>(kRowDims)];
    int first_;  // the first padded row dimension (kDim - 1 when no row dimension is padded)
    index_t in_width_, begin_x_;
    PadMode mode_;
    DType value_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      const index_t ix = PadSourceIndex(x - begin_x_, in_width_, mode_);
      if (ix < 0) return value_;
      index_t row = 0, scale = 1, rest = y;
      for (int d = kDim - 2; d >= first_; --d) {
        index_t r;
        rest = out_extent_[d].DivMod(rest, &r);
        const index_t i = PadSourceIndex(r - begin_[d], in_extent_[d], mode_);
        if (i < 0) return value_;
        row += i * scale;
        scale *= in_extent_[d];
      }
      return src_.Eval(row + rest * scale, ix);
    }
  };
  Plan plan() const {
    const Shape<kDim> in = src_.shape();
    Plan p{src_.plan(), {}, {}, {}, kDim - 1, in[kDim - 1], begin_[kDim - 1], mode_, value_};
    for (int d = 0; d + 1 < kDim; ++d) {
      p.out_extent_[d] = IndexDiv::Make(in[d] + begin_[d] + end_[d]);
      p.in_extent_[d] = in[d];
      p.begin_[d] = begin_[d];
      if (begin_[d] + end_[d] > 0) p.first_ = std::min(p.first_, d);
    }
    return p;
  }
};

// Pads dimension i by begin[i] before and end[i] after, the border filled by `mode` (`value` for kConstant).
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, const Shape<E::kDim>& begin, const Shape<E::kDim>& end,
                         PadMode mode = PadMode::kConstant, typename E::value_type value = typename E::value_type(0)) {
  return PaddingExp<E>(src.self(), begin, end, mode, value);
}
// Zero-pads H (the second-last dimension) by `top` and `bottom`, W (the last) by `left` and `right`.
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t top, index_t bottom, index_t left, index_t right) {
  static_assert(E::kDim >= 2, "pad(src, top, bottom, left, right) pads the last two dimensions (H, W) of an image, so its source needs at least two dimensions");
  Shape<E::kDim> begin, end;
  begin[E::kDim - 2] = top;
  end[E::kDim - 2] = bottom;
  begin[E::kDim - 1] = left;
  end[E::kDim - 1] = right;
  return PaddingExp<E>(src.self(), begin, end, PadMode::kConstant, DType(0));
}
// Zero-pads H by `pad_y` (top and bottom) and W by `pad_x` (left and right).
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t pad_y, index_t pad_x) {
  return pad(src, pad_y, pad_y, pad_x, pad_x);
}
// Zero-pads H and W by `p` on every side.
template <typename E, typename DType, int etype>
inline PaddingExp<E> pad(const Exp<E, DType, etype>& src, index_t p) {
  return pad(src, p, p, p, p);
}

}  // namespace expr
}  // namespace tensorexpr
