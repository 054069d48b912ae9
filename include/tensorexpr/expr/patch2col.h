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
#include "../index_div.h"
#include "../patch.h"
#include "../tensor.h"

namespace tensorexpr {
namespace expr {

// The geometry of an image expression (C, H, W) or (N..., C, H, W) (leading dimensions fold into N),
// checked; `op` names the caller in messages.
template <int dim>
inline PatchGeometry ImagePatchGeometry(const char* op, const Shape<dim>& imshape, index_t ksize_y, index_t ksize_x,
                                        index_t stride_y, index_t stride_x, index_t dilate_y, index_t dilate_x,
                                        index_t pad_y, index_t pad_x) {
  static_assert(dim >= 3, "an image for patch2col is (C, H, W) or a batch (N, C, H, W)");
  CheckedSize(imshape, Message(op, " image"));
  return MakePatchGeometry2D(op, imshape, imshape.ProdShape(0, dim - 3), imshape[dim - 3], imshape[dim - 2],
                             imshape[dim - 1], ksize_y, ksize_x, stride_y, stride_x, dilate_y, dilate_x, pad_y, pad_x);
}
// The column matrix of a whole batch: (C ky kx, N oh ow).
inline Shape<2> PatchColShape(const PatchGeometry& g) { return Shape2(g.ColRows(), g.N * g.OutSize()); }

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
        geo_(ImagePatchGeometry("unpack_patch2col", img.shape(), ksize_y, ksize_x, stride_y, stride_x, dilate_y,
                                dilate_x, pad_y, pad_x)) {}
  Shape<2> shape() const { return PatchColShape(geo_); }

  // The element-wise form, for nested uses; a top-level assignment runs the im2col loops of
  // cpu/patch.h or cuda/patch.cuh instead.
  struct Plan {
    typename E::Plan img_;
    // row = (c ky + i) kx + j and col = (n oh + oy) ow + ox are split by these.
    IndexDiv ksize_x_, ksize_y_, out_width_, out_height_;
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
    return Plan{img_.plan(),
                IndexDiv::Make(g.kernel[2]), IndexDiv::Make(g.kernel[1]),
                IndexDiv::Make(g.out[2]), IndexDiv::Make(g.out[1]),
                g.C, g.in[1], g.in[2],
                g.stride[1], g.stride[2], g.dilate[1], g.dilate[2], g.pad[1], g.pad[2]};
  }
};

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
