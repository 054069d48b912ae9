// ops/layout.h — where the channels of an operator's data are (Caffe2's `order`, MXNet's `layout`):
// first, (N, C, spatial...) — NCW, NCHW, NCDHW — or last, (N, spatial..., C) — NWC, NHWC, NDHWC. 1-D and
// 3-D data take the same two values.
#pragma once

namespace tensorexpr {
namespace ops {

enum class Layout { kNCHW, kNHWC };

inline const char* LayoutName(Layout l) { return l == Layout::kNHWC ? "NHWC" : "NCHW"; }

}  // namespace ops
}  // namespace tensorexpr
