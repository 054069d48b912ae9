// tensorexpr/ops/conv_geometry.h — the resolved sizes of one convolution, in the form the im2col / col2im kernels
// take (a plain trivially-copyable struct, passed by value to CUDA kernels).
//
// Every convolution is handled as a 3-D one: 1-D (NCW) and 2-D (NCHW) inputs get leading spatial
// dimensions of extent 1 with kernel 1, stride 1, dilation 1 and no padding, which changes nothing in
// the result and lets one im2col / col2im serve all three layouts.
#pragma once
#include <tensorexpr/base.h>

namespace tensorexpr {
namespace ops {

struct ConvGeometry {
  index_t N = 0;  // images
  index_t C = 0;  // input channels
  index_t K = 0;  // filters (output channels)
  index_t G = 1;  // groups
  // Spatial extents, depth / height / width; 1-D and 2-D convolutions fill the leading ones with 1.
  index_t in[3] = {1, 1, 1};
  index_t out[3] = {1, 1, 1};
  index_t kernel[3] = {1, 1, 1};
  index_t stride[3] = {1, 1, 1};
  index_t dilate[3] = {1, 1, 1};
  index_t pad[3] = {0, 0, 0};      // padding before (the kernels need only this side)
  index_t pad_end[3] = {0, 0, 0};  // padding after (only the output size depends on it)
  bool channels_last = false;      // data (N, spatial..., C), weight (K, kernel..., C/G), out (N, out..., K)

  TE_XINLINE index_t Cg() const { return C / G; }
  TE_XINLINE index_t Kg() const { return K / G; }
  TE_XINLINE index_t KernelSize() const { return kernel[0] * kernel[1] * kernel[2]; }
  TE_XINLINE index_t InSize() const { return in[0] * in[1] * in[2]; }
  TE_XINLINE index_t OutSize() const { return out[0] * out[1] * out[2]; }
  // Rows of the column matrix: one per (channel, kernel offset).
  TE_XINLINE index_t ColRows() const { return C * KernelSize(); }
  // A 1x1(x1) kernel with stride 1 and no padding: the input already is the column matrix.
  TE_XINLINE bool IsPointwise() const {
    for (int i = 0; i < 3; ++i)
      if (kernel[i] != 1 || stride[i] != 1 || pad[i] != 0 || pad_end[i] != 0) return false;
    return true;
  }
};

}  // namespace ops
}  // namespace tensorexpr
