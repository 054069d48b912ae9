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
  // One group's filters, every tap: the weight gradient's result.
  TE_XINLINE index_t FilterValuesPerGroup() const { return Kg() * Cg() * KernelSize(); }
  // A 1x1(x1) kernel without padding, any stride: each output position reads one pixel.
  TE_XINLINE bool IsOneByOne() const {
    for (int i = 0; i < 3; ++i)
      if (kernel[i] != 1 || pad[i] != 0 || pad_end[i] != 0) return false;
    return true;
  }
  // A 1x1(x1) kernel with stride 1 and no padding: the input already is the column matrix.
  TE_XINLINE bool IsPointwise() const { return IsOneByOne() && stride[0] == 1 && stride[1] == 1 && stride[2] == 1; }
};

// Filters under this many values per group (the stem's; 3x3 layers' up to 128 channels) make the weight
// gradient a long reduction onto a small result: formed as one product over the whole batch, it leaves most
// of a GPU idle, so the GPU's algorithms split that reduction (per-image products, or CUTLASS's slices).
constexpr index_t kSmallFilterValues = index_t(1) << 18;

// The weight gradient sums over every output position of the batch. Large filters over fewer positions
// than this (ResNet-50's layers at 7 x 7 with N = 32: 1568) make it a short reduction onto a large result,
// which one cuBLAS product over the columns or gathered pixels runs faster than CUTLASS's implicit GEMM.
constexpr index_t kShortWeightReduction = 4096;
TE_XINLINE bool WeightGradIsShortAndWide(const ConvGeometry& g) {
  return g.FilterValuesPerGroup() >= kSmallFilterValues && g.N * g.OutSize() < kShortWeightReduction;
}

}  // namespace ops
}  // namespace tensorexpr
