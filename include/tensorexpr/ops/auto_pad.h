// tensorexpr/ops/auto_pad.h — how a windowed operator (convolution, deconvolution, pooling) chooses its padding
// (Caffe2's legacy_pad, ONNX's auto_pad): explicit numbers, SAME_UPPER (output = ceil(input / stride), the odd
// pixel of padding at the end; kSame), SAME_LOWER (the same total, the odd pixel at the beginning) or VALID
// (no padding); the SAME padding of a convolution-like window; and what the padding reads, the border
// (ARM Compute Library's BorderMode).
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <tensorexpr/base.h>
#include <tensorexpr/checked.h>
#include <tensorexpr/expr/pad.h>

namespace tensorexpr {
namespace ops {

// kSameLower comes last so that the older values keep theirs.
enum class ConvPadding { kExplicit, kSame, kValid, kSameLower, kSameUpper = kSame };

inline const char* ConvPaddingName(ConvPadding p) {
  switch (p) {
    case ConvPadding::kExplicit: return "explicit";
    case ConvPadding::kSame: return "SAME_UPPER";
    case ConvPadding::kValid: return "VALID";
    case ConvPadding::kSameLower: return "SAME_LOWER";
  }
  return "unknown";
}

inline bool IsKnownPadding(ConvPadding p) {
  return p == ConvPadding::kExplicit || p == ConvPadding::kSame || p == ConvPadding::kSameLower ||
         p == ConvPadding::kValid;
}

// SAME padding of a window spanning `span` input elements moved by `stride` over `in`: ceil(in / stride)
// windows, the padding they need in total split as `mode` says. Overflows are an Error naming `op`.
inline void SamePadding(ConvPadding mode, index_t in, index_t stride, index_t span, const char* op, index_t* before,
                        index_t* after) {
  const std::string what = std::string(op) + ": SAME padding";
  const index_t out = CheckedAdd(in, stride - 1, (what + ", input + stride - 1").c_str()) / stride;
  const index_t total = std::max<index_t>(
      0, CheckedAdd(CheckedMul(out - 1, stride, (what + ", (out - 1) * stride").c_str()), span - in,
                    (what + " total").c_str()));
  *before = mode == ConvPadding::kSameUpper ? total / 2 : total - total / 2;
  *after = total - *before;
}

// The border a windowed operator's padding reads: pad_mode kConstant (pad_value, or the operator's usual
// border when there is no value), kEdge, kReflect or kWrap (expr/pad.h). A border that is data is formed
// by padding the input into a temporary (expr::pad) and running the operator on it without padding; the
// data gradient is summed back through expr::unpad.
inline void CheckBorder(const char* op, PadMode mode, const std::optional<double>& value) {
  TE_CHECK(mode == PadMode::kConstant || mode == PadMode::kEdge || mode == PadMode::kReflect || mode == PadMode::kWrap,
           op, ": unknown pad_mode ", static_cast<int>(mode));
  TE_CHECK(!value || mode == PadMode::kConstant, op, ": pad_value ", value.value_or(0),
           " goes with pad_mode constant, not ", PadModeName(mode));
}

// Edge, reflect and wrap borders repeat the data's elements, so a padded dimension must have some.
inline void CheckBorderSource(const char* op, PadMode mode, index_t in, index_t pad_before, index_t pad_after,
                              size_t dim, const std::string& data_shape) {
  TE_CHECK(mode == PadMode::kConstant || in > 0 || pad_before + pad_after == 0, op, ": ", PadModeName(mode),
           " padding of spatial dimension ", dim, " repeats the data's elements, but data shape ", data_shape,
           " has none there");
}

}  // namespace ops
}  // namespace tensorexpr
