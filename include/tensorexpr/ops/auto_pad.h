// tensorexpr/ops/auto_pad.h — how a windowed operator (convolution, deconvolution, pooling) chooses its padding
// (Caffe2's legacy_pad, ONNX's auto_pad): explicit numbers, SAME_UPPER (output = ceil(input / stride), the odd
// pixel of padding at the end; kSame), SAME_LOWER (the same total, the odd pixel at the beginning) or VALID
// (no padding); and the SAME padding of a convolution-like window.
#pragma once
#include <algorithm>
#include <string>
#include <tensorexpr/base.h>
#include <tensorexpr/checked.h>

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

}  // namespace ops
}  // namespace tensorexpr
