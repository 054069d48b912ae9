// tensorexpr/ops/layout.h — where the channels of an operator's data are (Caffe2's `order`, MXNet's `layout`):
// first, (N, C, spatial...) — NCW, NCHW, NCDHW — or last, (N, spatial..., C) — NWC, NHWC, NDHWC. 1-D and
// 3-D data take the same two values.
#pragma once
#include <tensorexpr/shape.h>

namespace tensorexpr {
namespace ops {

enum class Layout { kNCHW, kNHWC };

inline const char* LayoutName(Layout l) { return l == Layout::kNHWC ? "NHWC" : "NCHW"; }

// The axes that view channels-last data channels first ((..., s..., C) -> (..., C, s...), to_first) and
// back (to_first false), for nd spatial dimensions; output dimension i reads source dimension axes[i].
template <int dim>
inline Shape<dim> ChannelAxes(int nd, bool to_first) {
  Shape<dim> axes;
  const int c = dim - 1 - nd;  // where the channels sit when first
  for (int i = 0; i < dim; ++i) axes[i] = i;
  if (to_first) {
    axes[c] = dim - 1;
    for (int i = c + 1; i < dim; ++i) axes[i] = i - 1;
  } else {
    for (int i = c; i + 1 < dim; ++i) axes[i] = i + 1;
    axes[dim - 1] = c;
  }
  return axes;
}
template <int dim>
inline Shape<dim> Permute(const Shape<dim>& s, const Shape<dim>& axes) {
  Shape<dim> r;
  for (int i = 0; i < dim; ++i) r[i] = s[axes[i]];
  return r;
}

}  // namespace ops
}  // namespace tensorexpr
