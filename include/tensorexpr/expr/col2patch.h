// expr/col2patch.h — pack_col2patch(col, imshape, ...): col2im, the adjoint of unpack_patch2col.
// Each image pixel receives the sum of every column entry that unpack_patch2col (same parameters) would
// have read from it; entries that read padding go nowhere. This is the gradient of im2col and the core
// of a convolution's backward pass and of deconvolution.
//
// Every output pixel GATHERS its sum (no scatter, no atomics): the result is deterministic on every
// device. A top-level assignment runs the col2im loops of cpu/patch.h or cuda/patch.cuh; the plan below
// is the element-wise form for nested uses. It visits only the windows that cover the pixel: along one
// axis, window o with kernel tap d covers coordinate p when o s + d dl - pad = p, which are the o in
// [ceil((p + pad - (k - 1) dl) / s), (p + pad) / s] whose offset p + pad - o s is a multiple of dl;
// consecutive solutions differ by dl / g in o and by s / g in d (g = gcd(s, dl)).
#pragma once
#include <algorithm>
#include "base.h"
#include "patch2col.h"
#include "../index_div.h"
#include "../tensor.h"

namespace tensorexpr {
namespace expr {

// The windows covering one coordinate along one spatial axis.
struct PatchCoverAxis {
  index_t pad_, stride_, dilate_, span_;  // span_ = (k - 1) dilate
  index_t last_out_;                      // out - 1
  index_t out_step_, tap_step_;           // dilate / g and stride / g
  IndexDiv stride_div_, dilate_div_;

  static index_t Gcd(index_t a, index_t b) {
    while (b != 0) {
      const index_t t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  static PatchCoverAxis Make(index_t ksize, index_t stride, index_t dilate, index_t pad, index_t out) {
    const index_t g = Gcd(stride, dilate);
    return PatchCoverAxis{pad, stride, dilate, (ksize - 1) * dilate, out - 1, dilate / g, stride / g,
                          IndexDiv::Make(stride), IndexDiv::Make(dilate)};
  }

  // For coordinate p: the first covering window *o with its tap *d, and the last window *o_last.
  // Returns false when no window covers p (it lies in a gap of a stride larger than the kernel).
  TE_XINLINE bool Cover(index_t p, index_t* o, index_t* d, index_t* o_last) const {
    const index_t q = p + pad_;
    index_t hi = stride_div_.Div(q);
    if (hi > last_out_) hi = last_out_;
    // ceil((q - span) / stride), written without adding the stride (which may be near 2^63)
    index_t lo = q > span_ ? stride_div_.Div(q - span_ - 1) + 1 : 0;
    if (dilate_ == 1) {
      *d = q - lo * stride_;
    } else {
      // The first solution lies within out_step_ windows of lo, if any does.
      index_t r = 1;
      for (; lo <= hi; ++lo) {
        *d = dilate_div_.DivMod(q - lo * stride_, &r);
        if (r == 0) break;
      }
    }
    *o = lo;
    *o_last = hi;
    return lo <= hi;
  }
};

template <typename E, int dstdim>
struct PackColToPatchExp : public Exp<PackColToPatchExp<E, dstdim>, typename E::value_type, type::kChainer> {
  using DType = typename E::value_type;
  static_assert(E::kDim == 2, "pack_col2patch(col, ...) takes the 2-D column matrix that unpack_patch2col produces");
  static_assert(dstdim >= 3, "pack_col2patch(col, imshape, ...) packs into an image (C, H, W) or a batch (N, C, H, W)");
  static_assert(E::kExpType != type::kComplex, "pack_col2patch(...) cannot take dot(...) directly; assign the product to a tensor first");
  static constexpr int kDim = dstdim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E col_;
  Shape<dstdim> imshape_;
  PatchGeometry geo_;

  PackColToPatchExp(const E& col, const Shape<dstdim>& imshape, index_t ksize_y, index_t ksize_x, index_t stride_y,
                    index_t stride_x, index_t dilate_y, index_t dilate_x, index_t pad_y, index_t pad_x)
      : col_(col),
        imshape_(imshape),
        geo_(ImagePatchGeometry("pack_col2patch", imshape, ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x,
                                pad_y, pad_x)) {
    const Shape<2> got = col_.shape(), want = PatchColShape(geo_);
    TE_CHECK(got == want, "pack_col2patch: column matrix shape ", got, " does not match (C*ky*kx, N*oh*ow) = ", want,
             " for image shape ", imshape, " (kernel ", ksize_y, "x", ksize_x, ", stride ", stride_y, "x", stride_x,
             ", dilate ", dilate_y, "x", dilate_x, ", pad ", pad_y, "x", pad_x, ")");
  }
  Shape<dstdim> shape() const { return imshape_; }

  struct Plan {
    typename E::Plan col_;
    IndexDiv height_, channels_;  // image row -> (n, c, y)
    PatchCoverAxis along_y_, along_x_;
    index_t ksize_y_, ksize_x_, out_height_, out_width_;
    TE_XINLINE DType Eval(index_t row, index_t x) const {
      using A = accum_t<DType>;
      index_t y, c;
      const index_t n = channels_.DivMod(height_.DivMod(row, &y), &c);
      index_t oy, i, oy_last, ox0, j0, ox_last;
      if (!along_y_.Cover(y, &oy, &i, &oy_last) || !along_x_.Cover(x, &ox0, &j0, &ox_last)) return DType(0);
      // Walk (oy, i) and (ox, j) together: the column-matrix row and column move by fixed steps.
      const index_t row_step = along_y_.tap_step_ * ksize_x_, col_step = along_y_.out_step_ * out_width_;
      index_t col_row = (c * ksize_y_ + i) * ksize_x_ + j0;
      index_t col_col = (n * out_height_ + oy) * out_width_ + ox0;
      A acc = A(0);
      for (; oy <= oy_last; oy += along_y_.out_step_, col_row -= row_step, col_col += col_step) {
        index_t r = col_row, k = col_col;
        for (index_t ox = ox0; ox <= ox_last; ox += along_x_.out_step_) {
          acc += static_cast<A>(col_.Eval(r, k));
          r -= along_x_.tap_step_;
          k += along_x_.out_step_;
        }
      }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const {
    const PatchGeometry& g = geo_;
    return Plan{col_.plan(),
                IndexDiv::Make(g.in[1]),
                IndexDiv::Make(g.C),
                PatchCoverAxis::Make(g.kernel[1], g.stride[1], g.dilate[1], g.pad[1], g.out[1]),
                PatchCoverAxis::Make(g.kernel[2], g.stride[2], g.dilate[2], g.pad[2], g.out[2]),
                g.kernel[1], g.kernel[2], g.out[1], g.out[2]};
  }
};

// The full form: the same kernel, stride, dilation and padding that unpack_patch2col was given.
template <typename E, typename DType, int etype, int dstdim>
inline PackColToPatchExp<E, dstdim> pack_col2patch(const Exp<E, DType, etype>& col, const Shape<dstdim>& imshape,
                                                   index_t ksize_y, index_t ksize_x, index_t stride_y,
                                                   index_t stride_x, index_t dilate_y, index_t dilate_x,
                                                   index_t pad_y, index_t pad_x) {
  return PackColToPatchExp<E, dstdim>(col.self(), imshape, ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x,
                                      pad_y, pad_x);
}
// mshadow's full form: no padding.
template <typename E, typename DType, int etype, int dstdim>
inline PackColToPatchExp<E, dstdim> pack_col2patch(const Exp<E, DType, etype>& col, const Shape<dstdim>& imshape,
                                                   index_t ksize_y, index_t ksize_x, index_t stride_y,
                                                   index_t stride_x, index_t dilate_y, index_t dilate_x) {
  return PackColToPatchExp<E, dstdim>(col.self(), imshape, ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x,
                                      0, 0);
}
// mshadow's short form: one stride and one dilation for both axes.
template <typename E, typename DType, int etype, int dstdim>
inline PackColToPatchExp<E, dstdim> pack_col2patch(const Exp<E, DType, etype>& col, const Shape<dstdim>& imshape,
                                                   index_t ksize_y, index_t ksize_x, index_t stride, index_t dilate) {
  return PackColToPatchExp<E, dstdim>(col.self(), imshape, ksize_y, ksize_x, stride, stride, dilate, dilate, 0, 0);
}
// mshadow's oldest form: one stride for both axes, no dilation.
template <typename E, typename DType, int etype, int dstdim>
inline PackColToPatchExp<E, dstdim> pack_col2patch(const Exp<E, DType, etype>& col, const Shape<dstdim>& imshape,
                                                   index_t ksize_y, index_t ksize_x, index_t stride) {
  return PackColToPatchExp<E, dstdim>(col.self(), imshape, ksize_y, ksize_x, stride, stride, 1, 1, 0, 0);
}

}  // namespace expr
}  // namespace tensorexpr
