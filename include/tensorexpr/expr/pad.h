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
// unpad(grad, begin, end, mode) is pad's adjoint (its backward): grad has the padded shape, and each
// element of the source shape receives the sum of the padded elements that read it; the constant border
// reads no element, so there it is the interior, a crop.
//
// The image forms, mshadow's: images are (..., C, H, W) and these zero-pad the last two dimensions:
// pad(src, p) pads H and W by p on every side; pad(src, py, px) H by py and W by px; pad(src, top, bottom,
// left, right) each side on its own.
#pragma once
#include <algorithm>
#include <cstdint>
#include "base.h"
#include "../checked.h"
#include "../dtype.h"
#include "../index_div.h"
#include "../red.h"

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

// The padded positions p in [0, extent) that read source index i of a dimension of n elements padded by
// `begin` before, as at most two arithmetic progressions (start, step, count): PadSourceIndex's inverse.
struct PadReaders {
  index_t start[2], step[2], count[2];
  int n = 0;
  TE_XINLINE void Add(index_t first, index_t stride, index_t extent) {
    if (first >= extent) return;
    start[n] = first;
    step[n] = stride;
    count[n] = (extent - 1 - first) / stride + 1;
    ++n;
  }
  TE_XINLINE index_t Total() const { return (n > 0 ? count[0] : 0) + (n > 1 ? count[1] : 0); }
  // The j-th reader, 0 <= j < Total().
  TE_XINLINE index_t At(index_t j) const {
    return j < count[0] ? start[0] + j * step[0] : start[1] + (j - count[0]) * step[1];
  }
};

TE_XINLINE PadReaders FindPadReaders(index_t i, index_t n, index_t begin, index_t extent, PadMode mode) {
  PadReaders r;
  switch (mode) {
    case PadMode::kConstant:
      r.Add(i + begin, 1, i + begin + 1);
      break;
    case PadMode::kEdge:
      if (n == 1) r.Add(0, 1, extent);
      else if (i == 0) r.Add(0, 1, begin + 1);                  // the border before, and the element itself
      else if (i == n - 1) r.Add(begin + n - 1, 1, extent);     // the element itself, and the border after
      else r.Add(i + begin, 1, i + begin + 1);
      break;
    case PadMode::kReflect: {
      if (n == 1) {
        r.Add(0, 1, extent);
        break;
      }
      // p - begin is congruent to i or to -i modulo the period 2(n - 1); for the two ends they coincide.
      const index_t period = 2 * (n - 1);
      const index_t up = (i + begin) % period, down = ((begin - i) % period + period) % period;
      r.Add(up, period, extent);
      if (down != up) r.Add(down, period, extent);
      break;
    }
    case PadMode::kWrap:
      r.Add((i + begin) % n, n, extent);
      break;
  }
  return r;
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

// pad's adjoint: grad has the padded shape; element i of the source shape is the sum of grad over the
// padded positions that read i. Accumulates in accum_t (float for half and bf16).
template <typename E>
struct UnpadExp : public Exp<UnpadExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 1, "unpad(...) needs an expression with at least one dimension, not a scalar");
  static_assert(E::kExpType != type::kComplex, "unpad(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = E::kDim;
  static constexpr int kRowDims = kDim > 1 ? kDim - 1 : 1;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E grad_;
  Shape<kDim> begin_, end_;
  PadMode mode_;

  UnpadExp(const E& grad, const Shape<kDim>& begin, const Shape<kDim>& end, PadMode mode)
      : grad_(grad), begin_(begin), end_(end), mode_(mode) {
    const Shape<kDim> padded = grad_.shape();
    TE_CHECK(mode == PadMode::kConstant || mode == PadMode::kEdge || mode == PadMode::kReflect ||
                 mode == PadMode::kWrap,
             "unpad: unknown mode ", static_cast<int>(mode));
    for (int i = 0; i < kDim; ++i) {
      TE_CHECK(begin[i] >= 0 && end[i] >= 0, "unpad: the padding of dimension ", i,
               " must be non-negative, got begin ", begin[i], " and end ", end[i]);
      TE_CHECK(begin[i] <= padded[i] && end[i] <= padded[i] - begin[i], "unpad: begin ", begin[i], " and end ",
               end[i], " of dimension ", i, " exceed the padded gradient's shape ", padded);
      TE_CHECK(mode == PadMode::kConstant || padded[i] > begin[i] + end[i] || begin[i] + end[i] == 0, "unpad: ",
               PadModeName(mode), " padding of dimension ", i, " needs source elements, but gradient shape ",
               padded, " leaves none inside begin ", begin[i], " and end ", end[i]);
    }
  }
  Shape<kDim> shape() const {
    Shape<kDim> s = grad_.shape();
    for (int i = 0; i < kDim; ++i) s[i] -= begin_[i] + end_[i];
    return s;
  }

  // Row dimensions before first_ are not padded and pass through as one index, as in PaddingExp::Plan.
  struct Plan {
    typename E::Plan grad_;
    IndexDiv out_extent_[static_cast<size_t>(kRowDims)];
    index_t in_extent_[static_cast<size_t>(kRowDims)], padded_extent_[static_cast<size_t>(kRowDims)],
        begin_[static_cast<size_t>(kRowDims)];
    int first_;
    index_t out_width_, padded_width_, begin_x_;
    PadMode mode_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      // The readers of each padded row dimension, then of the last. The loops over d run over every row
      // dimension and skip those before first_, so that unrolled they index readers by a constant and nvcc
      // keeps it in registers (indexed from first_ it went to local memory).
      PadReaders readers[static_cast<size_t>(kRowDims)];
      index_t rest = y, total = 1;
      TE_UNROLL
      for (int d = kDim - 2; d >= 0; --d) {
        if (d < first_) continue;
        index_t r;
        rest = out_extent_[d].DivMod(rest, &r);
        readers[d] = FindPadReaders(r, in_extent_[d], begin_[d], padded_extent_[d], mode_);
        total *= readers[d].Total();
      }
      const PadReaders cols = FindPadReaders(x, out_width_, begin_x_, padded_width_, mode_);
      index_t base = rest;  // the unpadded leading row index, scaled by the padded extents below
      for (int d = first_; d <= kDim - 2; ++d) base *= padded_extent_[d];
      A acc = A(0);
      for (index_t k = 0; k < total; ++k) {  // every combination of one reader per padded row dimension
        index_t row = 0, pick = k;
        TE_UNROLL
        for (int d = 0; d <= kDim - 2; ++d) {
          if (d < first_) continue;
          const index_t n = readers[d].Total();
          const index_t j = pick % n;
          pick /= n;
          row = row * padded_extent_[d] + readers[d].At(j);
        }
        row += base;
        for (index_t j = 0; j < cols.Total(); ++j) red::sum::Reduce(acc, A(grad_.Eval(row, cols.At(j))));
      }
      return DType(acc);
    }
  };
  Plan plan() const {
    const Shape<kDim> out = shape(), padded = grad_.shape();
    Plan p{grad_.plan(), {}, {}, {}, {}, kDim - 1, out[kDim - 1], padded[kDim - 1], begin_[kDim - 1], mode_};
    for (int d = 0; d + 1 < kDim; ++d) {
      p.out_extent_[d] = IndexDiv::Make(out[d]);
      p.in_extent_[d] = out[d];
      p.padded_extent_[d] = padded[d];
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
// The adjoint of pad(src, begin, end, mode): grad of the padded shape summed back onto the source shape.
template <typename E, typename DType, int etype>
inline UnpadExp<E> unpad(const Exp<E, DType, etype>& grad, const Shape<E::kDim>& begin, const Shape<E::kDim>& end,
                         PadMode mode = PadMode::kConstant) {
  return UnpadExp<E>(grad.self(), begin, end, mode);
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
