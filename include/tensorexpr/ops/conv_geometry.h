// tensorexpr/ops/conv_geometry.h — the resolved sizes of one convolution: the core's patch geometry
// (patch.h: images, channels, groups, the spatial window, the layout) plus the filters and the padding
// after, in the plain trivially-copyable form the im2col / col2im loops take.
//
// Every convolution is handled as a 3-D one: 1-D (NCW) and 2-D (NCHW) inputs get leading spatial
// dimensions of extent 1 with kernel 1, stride 1, dilation 1 and no padding, which changes nothing in
// the result and lets one im2col / col2im serve all three layouts.
#pragma once
#include <tensorexpr/base.h>
#include <tensorexpr/patch.h>

namespace tensorexpr {
namespace ops {

// channels_last: data (N, spatial..., C), weight (K, kernel..., C/G), out (N, out..., K).
struct ConvGeometry : PatchGeometry {
  index_t K = 0;                   // filters (output channels)
  index_t pad_end[3] = {0, 0, 0};  // padding after (only the output size depends on it)

  TE_XINLINE index_t Kg() const { return K / G; }
  // A 1x1(x1) kernel with stride 1 and no padding: the input already is the column matrix.
  TE_XINLINE bool IsPointwise() const {
    for (int i = 0; i < 3; ++i)
      if (kernel[i] != 1 || stride[i] != 1 || pad[i] != 0 || pad_end[i] != 0) return false;
    return true;
  }
};

}  // namespace ops
}  // namespace tensorexpr
