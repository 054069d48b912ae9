// patch.h — the im2col / col2im primitive, device-neutral half: the geometry of a sliding window over
// N-D images and the part of the work one call covers. The loops are cpu/patch.h and cuda/patch.cuh;
// both the expressions unpack_patch2col / pack_col2patch (expr/) and the convolution's algorithms (ops/)
// run on them.
//
// Every window is handled as a 3-D one: 1-D and 2-D images get leading spatial dimensions of extent 1
// with kernel 1, stride 1, dilation 1 and no padding, which changes nothing in the result and lets one
// loop serve all three.
//
// The column matrix holds one row per (channel, kernel offset) and one column per (image, output
// position). A call covers a chunk: images [n0, n0 + nb) and output positions [p0, p0 + pc) (positions
// flatten (od, oh, ow)). Where the chunk's entries live:
//   channels first (N, C, spatial...): entry (image i of the chunk, row r = c kk + k, position q of the
//     chunk) at i image_stride + r row_stride + q, with r's kernel offset k = (kz kh + ky) kw + kx;
//   channels last (N, spatial..., C): (nb pc, C kk) in rows of row_stride >= C kk entries, entry
//     (i pc + q, (group kk + k) Cg + channel of the group) at (i pc + q) row_stride + ..., so each group's
//     part is a (pc, Cg kk) matrix whose (offset, channel) order matches a (K, kernel..., C/G) weight.
//     A row's entries past C kk are zeros (a gemm may run its reduction over them).
// Images are addressed as rows of their last dimension with a row stride (padded views work).
#pragma once
#include <string>
#include "base.h"
#include "checked.h"

namespace tensorexpr {

struct PatchGeometry {
  index_t N = 0;  // images
  index_t C = 0;  // channels
  index_t G = 1;  // channel groups (channels last: the column matrix's rows run group by group)
  // Spatial extents, depth / height / width; 1-D and 2-D windows fill the leading ones with 1.
  index_t in[3] = {1, 1, 1};
  index_t out[3] = {1, 1, 1};
  index_t kernel[3] = {1, 1, 1};
  index_t stride[3] = {1, 1, 1};
  index_t dilate[3] = {1, 1, 1};
  index_t pad[3] = {0, 0, 0};  // padding before (the loops need only this side)
  bool channels_last = false;

  TE_XINLINE index_t Cg() const { return C / G; }
  TE_XINLINE index_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  // A 1-D or 2-D problem: the depth axis is one plane, read by one tap of one output plane without
  // padding. (A depth-1 input with depth padding and a stride past it has one output plane too, but that
  // plane reads only the padding: not a 2-D problem.)
  TE_XINLINE bool IsPlanar() const { return in[0] == 1 && kernel[0] == 1 && out[0] == 1 && pad[0] == 0; }
  TE_XINLINE index_t InSize() const { return in[0] * in[1] * in[2]; }
  TE_XINLINE index_t OutSize() const { return out[0] * out[1] * out[2]; }
  // Rows of the column matrix: one per (channel, kernel offset).
  TE_XINLINE index_t ColRows() const { return C * KernelSize(); }
  // One past the farthest coordinate any window reaches along `axis` (padding included):
  // (out - 1) * stride + (kernel - 1) * dilation + 1, saturating at the largest index_t so that a limit
  // check on it cannot be fooled by a wrap. For the host's plans (32-bit checks), not the loops.
  index_t Reach(int axis) const {
    return SaturatingAdd(SaturatingAdd(SaturatingMul(out[axis] - 1, stride[axis]),
                                       SaturatingMul(kernel[axis] - 1, dilate[axis])),
                         1);
  }
};

// The images and output positions one im2col / col2im call covers.
struct PatchChunk {
  index_t n0 = 0, nb = 0;  // images [n0, n0 + nb)
  index_t p0 = 0, pc = 0;  // output positions [p0, p0 + pc)
  static PatchChunk Whole(const PatchGeometry& g) { return PatchChunk{0, g.N, 0, g.OutSize()}; }
};

// Where a chunk's column entries live (see the top of this file).
struct PatchColumns {
  index_t row_stride = 0, image_stride = 0;
  // The convolution's buffer, image-major and dense: channels first (nb, C kk, pc), channels last
  // (nb pc, C kk).
  static PatchColumns ImageMajor(const PatchGeometry& g, const PatchChunk& ch) {
    return g.channels_last ? PixelRows(ch, g.ColRows()) : PatchColumns{ch.pc, g.ColRows() * ch.pc};
  }
  // Channels last with rows of row_stride entries.
  static PatchColumns PixelRows(const PatchChunk& ch, index_t row_stride) {
    return PatchColumns{row_stride, ch.pc * row_stride};
  }
};

template <typename Device>
struct Stream;

// col = the chunk's column matrix of data, image-major, on either device: the layout-taking Im2Col of
// cpu/patch.h or cuda/patch.cuh (found when this is instantiated) with PatchColumns::ImageMajor.
template <typename Device, typename DType>
inline void Im2Col(Stream<Device>* s, const PatchGeometry& g, const PatchChunk& ch, const DType* data,
                   index_t data_stride, DType* col) {
  Im2Col(s, g, ch, PatchColumns::ImageMajor(g, ch), data, data_stride, col);
}

// The geometry of a 2-D window over images (C, H, W) or (N..., C, H, W), checked: every parameter is
// positive (padding non-negative), the dilated kernel fits the padded image, and no size wraps.
// `op` names the caller in messages; `shape` is the image shape as the user gave it.
template <typename ShapeT>
inline PatchGeometry MakePatchGeometry2D(const char* op, const ShapeT& shape, index_t images, index_t channels,
                                         index_t height, index_t width, index_t ksize_y, index_t ksize_x,
                                         index_t stride_y, index_t stride_x, index_t dilate_y, index_t dilate_x,
                                         index_t pad_y, index_t pad_x) {
  TE_CHECK(ksize_y >= 1 && ksize_x >= 1 && stride_y >= 1 && stride_x >= 1 && dilate_y >= 1 && dilate_x >= 1, op,
           ": kernel, stride and dilation must be at least 1, got kernel ", ksize_y, "x", ksize_x, ", stride ",
           stride_y, "x", stride_x, ", dilate ", dilate_y, "x", dilate_x, " for image shape ", shape);
  TE_CHECK(pad_y >= 0 && pad_x >= 0, op, ": padding must be non-negative, got ", pad_y, "x", pad_x,
           " for image shape ", shape);
  PatchGeometry g;
  g.N = images;
  g.C = channels;
  g.in[1] = height, g.in[2] = width;
  g.kernel[1] = ksize_y, g.kernel[2] = ksize_x;
  g.stride[1] = stride_y, g.stride[2] = stride_x;
  g.dilate[1] = dilate_y, g.dilate[2] = dilate_x;
  g.pad[1] = pad_y, g.pad[2] = pad_x;
  // Every product and sum below is checked: huge kernel, dilation or padding values must not wrap into
  // a small (or negative) output size.
  const std::string span = Message(op, " (dilated kernel extent)"), padded = Message(op, " (padded image extent)");
  const index_t span_y = CheckedAdd(CheckedMul(dilate_y, ksize_y - 1, span), 1, span);
  const index_t span_x = CheckedAdd(CheckedMul(dilate_x, ksize_x - 1, span), 1, span);
  const index_t padded_h = CheckedAdd(height, CheckedMul(2, pad_y, padded), padded);
  const index_t padded_w = CheckedAdd(width, CheckedMul(2, pad_x, padded), padded);
  TE_CHECK(span_y <= padded_h && span_x <= padded_w, op, ": the (dilated) kernel ", span_y, "x", span_x,
           " is larger than the padded image ", padded_h, "x", padded_w, " (image shape ", shape, ", kernel ",
           ksize_y, "x", ksize_x, ", dilate ", dilate_y, "x", dilate_x, ", pad ", pad_y, "x", pad_x, ")");
  g.out[1] = (padded_h - span_y) / stride_y + 1;
  g.out[2] = (padded_w - span_x) / stride_x + 1;
  const std::string cols = Message(op, " (column matrix (C*ky*kx, N*oh*ow))");
  CheckedMul(CheckedMul(CheckedMul(channels, ksize_y, cols), ksize_x, cols),
             CheckedMul(CheckedMul(images, g.out[1], cols), g.out[2], cols), cols);
  return g;
}

}  // namespace tensorexpr
