// tensorexpr/ops/conv_problem.h — one convolution as its algorithms see it (CUTLASS's problem size, widened): the
// resolved geometry, the element type, the device and its math mode, how the input sits in memory, and
// the workspace the caller allows. An algorithm decides from this alone whether it can run, and the
// choice of algorithm is remembered per problem (ops/conv_select.h), under Key().
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_geometry.h>

namespace tensorexpr {
namespace ops {

// The three products of a convolution; an algorithm may do any subset.
enum class ConvPass { kForward, kBackwardData, kBackwardWeight };

inline const char* ConvPassName(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward: return "forward";
    case ConvPass::kBackwardData: return "data-grad";
    case ConvPass::kBackwardWeight: return "weight-grad";
  }
  return "unknown";
}

// How float products may be rounded: strictly, to TF32 on tensor cores (a GPU stream's set_tf32), or as
// three TF32 products each, about fp32's accuracy on tensor cores (set_tf32x3; where an algorithm has no
// such kernels it computes strictly).
enum class ConvMath { kStrict, kTF32, kTF32x3 };

inline const char* ConvMathName(ConvMath m) {
  return m == ConvMath::kTF32 ? "tf32" : m == ConvMath::kTF32x3 ? "tf32x3" : "strict";
}

struct ConvProblem {
  ConvGeometry geom;
  const char* dtype = "";        // DataType<DType>::name()
  size_t dtype_bytes = 0;
  const char* device = "";       // DeviceName(stream) (static storage): a tuned choice holds for this device only
  int threads = 1;               // CPU threads a run may use (1 on the GPU)
  ConvMath math = ConvMath::kStrict;
  bool data_contiguous = true;   // the input (and its gradient) have no padded rows
  bool vector_aligned = true;    // every tensor of the call starts on a 16-byte boundary (vector accesses)
  size_t workspace_limit = 0;    // bytes of workspace an algorithm may take (ConvolutionParam::workspace)

  // Whether two problems are the same (what Key compares, without building it).
  bool operator==(const ConvProblem& o) const {
    const ConvGeometry &a = geom, &b = o.geom;
    for (int i = 0; i < 3; ++i)
      if (a.in[i] != b.in[i] || a.kernel[i] != b.kernel[i] || a.stride[i] != b.stride[i] ||
          a.dilate[i] != b.dilate[i] || a.pad[i] != b.pad[i] || a.pad_end[i] != b.pad_end[i])
        return false;
    return a.channels_last == b.channels_last && a.N == b.N && a.C == b.C && a.K == b.K && a.G == b.G && dtype_bytes == o.dtype_bytes &&
           std::strcmp(dtype, o.dtype) == 0 && std::strcmp(device, o.device) == 0 && threads == o.threads &&
           math == o.math && data_contiguous == o.data_contiguous && vector_aligned == o.vector_aligned &&
           workspace_limit == o.workspace_limit;
  }

  // One line with everything above: the key of the choice cache (no tabs or newlines).
  std::string Key(ConvPass pass) const {
    const ConvGeometry& g = geom;
    auto triple = [](const index_t* v) {
      return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
    };
    std::string dev = device;
    for (char& c : dev)
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return std::string(ConvPassName(pass)) + " " + dtype + (g.channels_last ? " NHWC " : " NCHW ") + ConvMathName(math) +
           " N" + std::to_string(g.N) + " C" + std::to_string(g.C) + " K" + std::to_string(g.K) + " G" +
           std::to_string(g.G) + " in" + triple(g.in) + " k" + triple(g.kernel) + " s" + triple(g.stride) + " d" +
           triple(g.dilate) + " p" + triple(g.pad) + " q" + triple(g.pad_end) +
           (data_contiguous ? " dense" : " strided") + (vector_aligned ? "" : " unaligned") + " ws" + std::to_string(workspace_limit) + " threads" +
           std::to_string(threads) + " @ " + dev;
  }
};

// ConvolutionParam::workspace (MB, checked finite and >= 0 by MakeConvGeometry) in bytes; beyond 2^62
// bytes it is no limit at all.
inline size_t WorkspaceLimitBytes(double workspace_mb) {
  return static_cast<size_t>(std::min(workspace_mb * 1048576.0, 4.6e18));
}

namespace detail {
// Whether every pointer starts on a 16-byte boundary (null ones do): what ConvProblem::vector_aligned
// records for a call's tensors, and what the fused epilogues ask of a bias or a residual.
template <typename... T>
bool VectorAligned(const T*... pointers) {
  return ((reinterpret_cast<std::uintptr_t>(pointers) % 16 == 0) && ...);
}
}  // namespace detail

// The problem of geometry g for DType on the device of `stream`.
template <typename Device, typename DType>
ConvProblem MakeConvProblem(const ConvGeometry& g, Stream<Device>* stream, bool data_contiguous,
                            double workspace_mb, bool vector_aligned = true) {
  ConvProblem p;
  p.geom = g;
  p.dtype = DataType<DType>::name();
  p.dtype_bytes = sizeof(DType);
  p.device = DeviceName(stream).c_str();
  p.threads = ThreadBudget(stream);
  p.math = !std::is_same<DType, float>::value ? ConvMath::kStrict
           : UsesTF32x3(stream)                 ? ConvMath::kTF32x3
           : UsesTF32(stream)                   ? ConvMath::kTF32
                                                : ConvMath::kStrict;
  p.data_contiguous = data_contiguous;
  p.vector_aligned = vector_aligned;
  p.workspace_limit = WorkspaceLimitBytes(workspace_mb);
  return p;
}

}  // namespace ops
}  // namespace tensorexpr
