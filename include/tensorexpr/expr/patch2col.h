// expr/patch2col.h — unpack_patch2col(img, ...): im2col. Every kernel-sized patch of an image becomes one
// column of a matrix, so a convolution is one dot: out = dot(weight, unpack_patch2col(img, ...)).
//
// img is (C, H, W) or a batch (N, C, H, W) (more leading dimensions are folded into N). For a kernel
// ky x kx, stride (sy, sx), dilation (dy, dx) and zero padding (py, px) on each side:
//   oh = (H + 2 py - (dy (ky - 1) + 1)) / sy + 1        ow likewise
//   result (C ky kx, N oh ow):  result[(c ky + i) kx + j][(n oh + oy) ow + ox]
//                                 = img[n][c][oy sy + i dy - py][ox sx + j dx - px]   (0 outside the image)
// pack_col2patch (col2patch.h) is its adjoint, the gradient of this one.
#pragma once
#include <algorithm>
#include "base.h"
#include "../checked.h"
#include "../fast_divmod.h"
#include "../tensor.h"
#include "../cpu/device.h"
#include "../cpu/threads.h"

namespace tensorexpr {
namespace expr {

// The geometry unpack_patch2col and pack_col2patch share: sizes, kernel, output grid.
struct PatchGeometry {
  index_t images, channels, height, width;  // images = product of the leading dimensions (N)
  index_t ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x, pad_y, pad_x;
  index_t out_height, out_width;

  // The column matrix: (C ky kx, N oh ow).
  Shape<2> ColShape() const { return Shape2(channels * ksize_y * ksize_x, images * out_height * out_width); }

  // Checks the parameters against the image shape; `op` names the caller in messages.
  template <int dim>
  static PatchGeometry Make(const char* op, const Shape<dim>& imshape, index_t ksize_y, index_t ksize_x,
                            index_t stride_y, index_t stride_x, index_t dilate_y, index_t dilate_x, index_t pad_y,
                            index_t pad_x) {
    static_assert(dim >= 3, "an image for patch2col is (C, H, W) or a batch (N, C, H, W)");
    TE_CHECK(ksize_y >= 1 && ksize_x >= 1 && stride_y >= 1 && stride_x >= 1 && dilate_y >= 1 && dilate_x >= 1,
             op, ": kernel, stride and dilation must be at least 1, got kernel ", ksize_y, "x", ksize_x,
             ", stride ", stride_y, "x", stride_x, ", dilate ", dilate_y, "x", dilate_x, " for image shape ",
             imshape);
    TE_CHECK(pad_y >= 0 && pad_x >= 0, op, ": padding must be non-negative, got ", pad_y, "x", pad_x,
             " for image shape ", imshape);
    CheckedSize(imshape, Message(op, " image"));
    PatchGeometry g;
    g.images = imshape.ProdShape(0, dim - 3);
    g.channels = imshape[dim - 3];
    g.height = imshape[dim - 2];
    g.width = imshape[dim - 1];
    g.ksize_y = ksize_y;
    g.ksize_x = ksize_x;
    g.stride_y = stride_y;
    g.stride_x = stride_x;
    g.dilate_y = dilate_y;
    g.dilate_x = dilate_x;
    g.pad_y = pad_y;
    g.pad_x = pad_x;
    // Every product and sum below is checked: huge kernel, dilation or padding values must not wrap into
    // a small (or negative) output size.
    const std::string span = Message(op, " (dilated kernel extent)"), padded = Message(op, " (padded image extent)");
    const index_t span_y = CheckedAdd(CheckedMul(dilate_y, ksize_y - 1, span), 1, span);
    const index_t span_x = CheckedAdd(CheckedMul(dilate_x, ksize_x - 1, span), 1, span);
    const index_t padded_h = CheckedAdd(g.height, CheckedMul(2, pad_y, padded), padded);
    const index_t padded_w = CheckedAdd(g.width, CheckedMul(2, pad_x, padded), padded);
    TE_CHECK(span_y <= padded_h && span_x <= padded_w, op, ": the (dilated) kernel ", span_y, "x", span_x,
             " is larger than the padded image ", padded_h, "x", padded_w, " (image shape ", imshape, ", kernel ",
             ksize_y, "x", ksize_x, ", dilate ", dilate_y, "x", dilate_x, ", pad ", pad_y, "x", pad_x, ")");
    g.out_height = (padded_h - span_y) / stride_y + 1;
    g.out_width = (padded_w - span_x) / stride_x + 1;
    const std::string cols = Message(op, " (column matrix (C*ky*kx, N*oh*ow))");
    CheckedMul(CheckedMul(CheckedMul(g.channels, ksize_y, cols), ksize_x, cols),
               CheckedMul(CheckedMul(g.images, g.out_height, cols), g.out_width, cols), cols);
    return g;
  }
};

template <typename E>
struct UnpackPatchToColExp : public Exp<UnpackPatchToColExp<E>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim >= 3, "unpack_patch2col(img, ...) takes an image (C, H, W) or a batch of images (N, C, H, W)");
  static_assert(E::kExpType != type::kComplex, "unpack_patch2col(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E img_;
  PatchGeometry geo_;

  UnpackPatchToColExp(const E& img, index_t ksize_y, index_t ksize_x, index_t stride_y, index_t stride_x,
                      index_t dilate_y, index_t dilate_x, index_t pad_y, index_t pad_x)
      : img_(img),
        geo_(PatchGeometry::Make("unpack_patch2col", img.shape(), ksize_y, ksize_x, stride_y, stride_x, dilate_y,
                                 dilate_x, pad_y, pad_x)) {}
  Shape<2> shape() const { return geo_.ColShape(); }

  struct Plan {
    typename E::Plan img_;
    // row = (c ky + i) kx + j and col = (n oh + oy) ow + ox are split by these.
    FastDivmod ksize_x_, ksize_y_, out_width_, out_height_;
    index_t channels_, height_, width_;
    index_t stride_y_, stride_x_, dilate_y_, dilate_x_, pad_y_, pad_x_;
    TE_XINLINE DType Eval(index_t row, index_t col) const {
      index_t j, i, ox, oy;
      const index_t c = ksize_y_.DivMod(ksize_x_.DivMod(row, &j), &i);
      const index_t n = out_height_.DivMod(out_width_.DivMod(col, &ox), &oy);
      const index_t y = oy * stride_y_ + i * dilate_y_ - pad_y_;
      const index_t x = ox * stride_x_ + j * dilate_x_ - pad_x_;
      if (static_cast<uint64_t>(y) < static_cast<uint64_t>(height_) &&
          static_cast<uint64_t>(x) < static_cast<uint64_t>(width_)) {
        return img_.Eval((n * channels_ + c) * height_ + y, x);
      }
      return DType(0);
    }
  };
  Plan plan() const {
    const PatchGeometry& g = geo_;
    const Shape<2> s = g.ColShape();
    return Plan{img_.plan(),
                FastDivmod(g.ksize_x, s[0]),
                FastDivmod(g.ksize_y, s[0]),
                FastDivmod(std::max<index_t>(g.out_width, 1), s[1]),
                FastDivmod(std::max<index_t>(g.out_height, 1), s[1]),
                g.channels, g.height, g.width,
                g.stride_y, g.stride_x, g.dilate_y, g.dilate_x, g.pad_y, g.pad_x};
  }
};

// On the CPU, `dst = unpack_patch2col(...)` (and +=, ...) at the top level skips the per-element index
// arithmetic of the plan: each (row, image) pair of the result is a run of oh rows of ow values, and
// along one such row the source column advances by the stride, so the loop splits it into a zero
// prefix, a strided copy and a zero suffix: an order of magnitude faster than the generic loop.
// Nested uses (and the GPU) evaluate the plan, which gives the same values.
template <typename Saver, typename DType, typename E>
inline void EvalInto(Tensor<cpu, 2, DType> dst, const Exp<UnpackPatchToColExp<E>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the image of unpack_patch2col lives on a different device than the tensor it is assigned to; Copy() it first");
  const UnpackPatchToColExp<E>& e = exp.self();
  const Shape<2> s = e.shape();
  TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression unpack_patch2col ", s);
  if (s.Size() == 0) return;
  const PatchGeometry g = e.geo_;
  const auto plan = e.img_.plan();
  const index_t plane_len = g.out_height * g.out_width;
  ParallelFor(s[0] * g.images, plane_len, [&](index_t begin, index_t end) {
    const auto src = plan;
    for (index_t item = begin; item < end; ++item) {
      const index_t row = item / g.images, n = item - row * g.images;
      const index_t j = row % g.ksize_x, i = (row / g.ksize_x) % g.ksize_y, c = row / (g.ksize_x * g.ksize_y);
      const index_t x_off = j * g.dilate_x - g.pad_x;
      // Output columns ox with 0 <= ox sx + x_off < W.
      // ceil(-x_off / sx), written without adding the stride (which may be near 2^63)
      const index_t ox_lo = std::min(g.out_width, x_off >= 0 ? 0 : (-x_off - 1) / g.stride_x + 1);
      const index_t ox_hi = std::max(ox_lo, std::min(g.out_width, g.width - x_off <= 0 ? 0 : (g.width - 1 - x_off) / g.stride_x + 1));
      DType* out = dst.dptr_ + row * dst.stride_ + n * plane_len;
      for (index_t oy = 0; oy < g.out_height; ++oy, out += g.out_width) {
        const index_t y = oy * g.stride_y + i * g.dilate_y - g.pad_y;
        if (y < 0 || y >= g.height) {
          for (index_t ox = 0; ox < g.out_width; ++ox) Saver::Save(out[ox], DType(0));
          continue;
        }
        const index_t src_row = (n * g.channels + c) * g.height + y;
        for (index_t ox = 0; ox < ox_lo; ++ox) Saver::Save(out[ox], DType(0));
        for (index_t ox = ox_lo; ox < ox_hi; ++ox) Saver::Save(out[ox], src.Eval(src_row, ox * g.stride_x + x_off));
        for (index_t ox = ox_hi; ox < g.out_width; ++ox) Saver::Save(out[ox], DType(0));
      }
    }
  });
}

// The full form: kernel, stride, dilation and zero padding per axis.
template <typename E, typename DType, int etype>
inline UnpackPatchToColExp<E> unpack_patch2col(const Exp<E, DType, etype>& img, index_t ksize_y, index_t ksize_x,
                                               index_t stride_y, index_t stride_x, index_t dilate_y,
                                               index_t dilate_x, index_t pad_y, index_t pad_x) {
  return UnpackPatchToColExp<E>(img.self(), ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x, pad_y, pad_x);
}
// mshadow's full form: no padding (pad the image with pad(img, ...) or use the form above).
template <typename E, typename DType, int etype>
inline UnpackPatchToColExp<E> unpack_patch2col(const Exp<E, DType, etype>& img, index_t ksize_y, index_t ksize_x,
                                               index_t stride_y, index_t stride_x, index_t dilate_y,
                                               index_t dilate_x) {
  return UnpackPatchToColExp<E>(img.self(), ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x, 0, 0);
}
// mshadow's short form: one stride and one dilation for both axes.
template <typename E, typename DType, int etype>
inline UnpackPatchToColExp<E> unpack_patch2col(const Exp<E, DType, etype>& img, index_t ksize_y, index_t ksize_x,
                                               index_t stride, index_t dilate) {
  return UnpackPatchToColExp<E>(img.self(), ksize_y, ksize_x, stride, stride, dilate, dilate, 0, 0);
}
// mshadow's oldest form: one stride for both axes, no dilation.
template <typename E, typename DType, int etype>
inline UnpackPatchToColExp<E> unpack_patch2col(const Exp<E, DType, etype>& img, index_t ksize_y, index_t ksize_x,
                                               index_t stride) {
  return UnpackPatchToColExp<E>(img.self(), ksize_y, ksize_x, stride, stride, 1, 1, 0, 0);
}

}  // namespace expr
}  // namespace tensorexpr
