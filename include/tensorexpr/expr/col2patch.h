// expr/col2patch.h — pack_col2patch(col, imshape, ...): col2im, the adjoint of unpack_patch2col.
// Each image pixel receives the sum of every column entry that unpack_patch2col (same parameters) would
// have read from it; entries that read padding go nowhere. This is the gradient of im2col and the core
// of a convolution's backward pass and of deconvolution.
//
// Every output pixel GATHERS its sum (no scatter, no atomics): the result is deterministic on every
// device and is an ordinary plan (the CPU's top-level loop at the bottom works a row at a time). The gather visits only the windows that cover the pixel: along one
// axis, window o with kernel tap d covers coordinate p when o s + d dl - pad = p, which are the o in
// [ceil((p + pad - (k - 1) dl) / s), (p + pad) / s] whose offset p + pad - o s is a multiple of dl;
// consecutive solutions differ by dl / g in o and by s / g in d (g = gcd(s, dl)).
#pragma once
#include <algorithm>
#include <vector>
#include "base.h"
#include "patch2col.h"
#include "../fast_divmod.h"
#include "../tensor.h"
#include "../cpu/device.h"
#include "../cpu/threads.h"

namespace tensorexpr {
namespace expr {

// The windows covering one coordinate along one spatial axis.
struct PatchCoverAxis {
  index_t pad_, stride_, dilate_, span_;  // span_ = (k - 1) dilate
  index_t last_out_;                      // out - 1
  index_t out_step_, tap_step_;           // dilate / g and stride / g
  FastDivmod stride_div_, dilate_div_;

  static index_t Gcd(index_t a, index_t b) {
    while (b != 0) {
      const index_t t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
  static PatchCoverAxis Make(index_t extent, index_t ksize, index_t stride, index_t dilate, index_t pad,
                             index_t out) {
    const index_t g = Gcd(stride, dilate);
    const index_t max_q = extent + pad;  // bounds every dividend below (PatchGeometry checked the sum)
    return PatchCoverAxis{pad, stride, dilate, (ksize - 1) * dilate, out - 1, dilate / g, stride / g,
                          FastDivmod(stride, max_q), FastDivmod(dilate, max_q)};
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
        geo_(PatchGeometry::Make("pack_col2patch", imshape, ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x,
                                 pad_y, pad_x)) {
    const Shape<2> got = col_.shape(), want = geo_.ColShape();
    TE_CHECK(got == want, "pack_col2patch: column matrix shape ", got, " does not match (C*ky*kx, N*oh*ow) = ", want,
             " for image shape ", imshape, " (kernel ", ksize_y, "x", ksize_x, ", stride ", stride_y, "x", stride_x,
             ", dilate ", dilate_y, "x", dilate_x, ", pad ", pad_y, "x", pad_x, ")");
  }
  Shape<dstdim> shape() const { return imshape_; }

  struct Plan {
    typename E::Plan col_;
    FastDivmod height_, channels_;  // image row -> (n, c, y)
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
    const index_t rows = g.images * g.channels * g.height;
    return Plan{col_.plan(),
                FastDivmod(std::max<index_t>(g.height, 1), rows),
                FastDivmod(std::max<index_t>(g.channels, 1), rows),
                PatchCoverAxis::Make(g.height, g.ksize_y, g.stride_y, g.dilate_y, g.pad_y, g.out_height),
                PatchCoverAxis::Make(g.width, g.ksize_x, g.stride_x, g.dilate_x, g.pad_x, g.out_width),
                g.ksize_y, g.ksize_x, g.out_height, g.out_width};
  }
};

// On the CPU, `dst = pack_col2patch(...)` (and +=, ...) at the top level works a whole image row at a
// time: a thread owns the row, sums into a private row buffer every column-matrix run that lands on it
// (contiguous reads, a fixed order: deterministic, no atomics), then saves the buffer. Several times
// faster than the per-pixel gather; nested uses (and the GPU) evaluate the plan.
template <typename Saver, typename DType, typename E, int dstdim>
inline void EvalInto(Tensor<cpu, dstdim, DType> dst,
                     const Exp<PackColToPatchExp<E, dstdim>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the column matrix of pack_col2patch lives on a different device than the tensor it is assigned to; Copy() it first");
  using A = accum_t<DType>;
  const PackColToPatchExp<E, dstdim>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression pack_col2patch ", e.shape());
  if (dst.shape_.Size() == 0) return;
  const PatchGeometry g = e.geo_;
  const auto plan = e.col_.plan();
  const PatchCoverAxis along_y = PatchCoverAxis::Make(g.height, g.ksize_y, g.stride_y, g.dilate_y, g.pad_y, g.out_height);
  // For kernel column j: the output columns [ox_lo[j], ox_hi[j]) that read inside the image.
  std::vector<index_t> ox_lo(g.ksize_x), ox_hi(g.ksize_x);
  for (index_t j = 0; j < g.ksize_x; ++j) {
    const index_t x_off = j * g.dilate_x - g.pad_x;
    ox_lo[j] = std::min(g.out_width, x_off >= 0 ? 0 : (-x_off - 1) / g.stride_x + 1);  // ceil(-x_off / sx)
    ox_hi[j] = std::max(ox_lo[j], std::min(g.out_width, g.width - x_off <= 0 ? 0 : (g.width - 1 - x_off) / g.stride_x + 1));
  }
  const index_t rows = g.images * g.channels * g.height;
  const index_t cost = std::max<index_t>(1, g.ksize_y / g.stride_y) * g.ksize_x * g.out_width;
  ParallelFor(rows, cost, [&](index_t begin, index_t end) {
    const auto col = plan;
    std::vector<A> acc(static_cast<size_t>(g.width));
    for (index_t row = begin; row < end; ++row) {
      const index_t y = row % g.height, plane = row / g.height;
      const index_t c = plane % g.channels, n = plane / g.channels;
      std::fill(acc.begin(), acc.end(), A(0));
      index_t oy, i, oy_last;
      if (along_y.Cover(y, &oy, &i, &oy_last)) {
        for (; oy <= oy_last; oy += along_y.out_step_, i -= along_y.tap_step_) {
          const index_t col_base = (n * g.out_height + oy) * g.out_width;
          for (index_t j = 0; j < g.ksize_x; ++j) {
            const index_t col_row = (c * g.ksize_y + i) * g.ksize_x + j;
            const index_t x_off = j * g.dilate_x - g.pad_x;  // column ox read pixel ox sx + x_off
            for (index_t ox = ox_lo[j]; ox < ox_hi[j]; ++ox)
              acc[ox * g.stride_x + x_off] += static_cast<A>(col.Eval(col_row, col_base + ox));
          }
        }
      }
      DType* out = dst.dptr_ + row * dst.stride_;
      for (index_t x = 0; x < g.width; ++x) Saver::Save(out[x], static_cast<DType>(acc[x]));
    }
  });
}

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
