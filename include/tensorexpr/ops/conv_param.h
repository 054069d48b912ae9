// tensorexpr/ops/conv_param.h — what a convolution is asked to compute (MXNet's ConvolutionParam) and what follows
// from it without running anything: the resolved geometry, the tensors' shapes, the cost in FLOPs and
// bytes. Everything here throws Error naming the parameter and its value when they do not fit together.
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>
#include <tensorexpr/base.h>
#include <tensorexpr/checked.h>
#include <tensorexpr/ops/auto_pad.h>
#include <tensorexpr/ops/conv_geometry.h>
#include <tensorexpr/ops/layout.h>
#include <tensorexpr/ops/param_text.h>

namespace tensorexpr {
namespace ops {

struct ConvolutionParam {
  std::vector<index_t> kernel;   // spatial kernel extents: 1, 2 or 3 of them (W; H,W; D,H,W)
  std::vector<index_t> stride;   // per spatial dimension; empty means 1
  std::vector<index_t> dilate;   // per spatial dimension; empty means 1
  std::vector<index_t> pad;      // explicit padding before each spatial dimension; empty means 0
  std::vector<index_t> pad_end;  // explicit padding after, when it differs from pad; empty means = pad
  index_t num_filter = 0;        // K
  index_t num_group = 1;         // C and K are split into this many independent groups
  bool no_bias = false;
  double workspace = 1024.0;     // cap on the temp space, in MB (MXNet's default)
  ConvPadding padding = ConvPadding::kExplicit;
  // What the padding reads (auto_pad.h): zeros by default; pad_value for kConstant, or the data's own
  // elements by kEdge, kReflect or kWrap. A border other than zeros runs on a padded copy of the data.
  PadMode pad_mode = PadMode::kConstant;
  std::optional<double> pad_value;
  // Channels first: data (N, C, spatial...), weight (K, C/G, kernel...), output (N, K, out...); channels
  // last: data (N, spatial..., C), weight (K, kernel..., C/G), output (N, out..., K) (ops/layout.h).
  Layout layout = Layout::kNCHW;
  // The algorithm to run, by name (ListConvAlgorithms); empty: the library chooses (ops/conv_select.h).
  // A named algorithm that cannot implement the problem is an Error that says why.
  std::string algorithm;
};

// The shapes of one convolution's tensors.
struct ConvShapes {
  std::vector<index_t> out;     // (N, K, out...) or (K, out...) for an unbatched input
  std::vector<index_t> weight;  // (K, C / num_group, kernel...)
  std::vector<index_t> bias;    // (K) or empty when no_bias
};

// Work and traffic, for schedulers and benchmarks. FLOPs count a multiply-add as 2.
struct ConvCost {
  double forward_flops = 0;          // gemm plus the bias add
  double backward_data_flops = 0;
  double backward_weight_flops = 0;
  double backward_bias_flops = 0;
  double forward_bytes = 0;          // reads of x, W, b and the write of y (no workspace traffic)
  double backward_bytes = 0;         // reads of dY, x, W and writes of dX, dW, db
};

// How a run is cut into chunks of the column buffer.
struct ConvWorkPlan {
  bool direct = false;     // pointwise: gemm on the input, no column buffer
  index_t images = 0;      // images per chunk
  index_t positions = 0;   // output positions per chunk (all of them unless one image exceeds the cap)
  index_t col_elems = 0;   // elements of the column buffer
};

// Resolves the parameters against the shape of the data (N, C, spatial...) or, unbatched, (C, spatial...).
// Throws Error naming the parameter and its value when they do not fit together.
inline ConvGeometry MakeConvGeometry(const ConvolutionParam& p, const std::vector<index_t>& data_shape) {
  const size_t nd = p.kernel.size();
  TE_CHECK(nd >= 1 && nd <= 3, "Convolution: kernel ", detail::VecStr(p.kernel),
           " must have 1, 2 or 3 spatial dimensions (NCW, NCHW, NCDHW)");
  TE_CHECK(data_shape.size() == nd + 2 || data_shape.size() == nd + 1, "Convolution: ", LayoutName(p.layout),
           " data shape ",
           detail::VecStr(data_shape), " does not fit a ", nd, "-D kernel ", detail::VecStr(p.kernel),
           ": expected ", nd + 2, p.layout == Layout::kNHWC ? " dimensions (N, spatial..., C) or " : " dimensions (N, C, spatial...) or ",
           nd + 1, p.layout == Layout::kNHWC ? " (spatial..., C)" : " (C, spatial...)");
  const std::vector<index_t> stride = detail::PerDim("Convolution", p.stride, nd, 1, "stride");
  const std::vector<index_t> dilate = detail::PerDim("Convolution", p.dilate, nd, 1, "dilate");
  const std::vector<index_t> pad = detail::PerDim("Convolution", p.pad, nd, 0, "pad");
  const std::vector<index_t> pad_end = detail::PerDim("Convolution", p.pad_end, nd, 0, "pad_end");
  for (size_t i = 0; i < nd; ++i) {
    TE_CHECK(p.kernel[i] >= 1, "Convolution: kernel[", i, "] = ", p.kernel[i], " in kernel ",
             detail::VecStr(p.kernel), " must be >= 1");
    TE_CHECK(stride[i] >= 1, "Convolution: stride[", i, "] = ", stride[i], " in stride ", detail::VecStr(stride),
             " must be >= 1");
    TE_CHECK(dilate[i] >= 1, "Convolution: dilate[", i, "] = ", dilate[i], " in dilate ", detail::VecStr(dilate),
             " must be >= 1");
    TE_CHECK(pad[i] >= 0, "Convolution: pad[", i, "] = ", pad[i], " in pad ", detail::VecStr(pad),
             " must be >= 0");
    TE_CHECK(pad_end[i] >= 0, "Convolution: pad_end[", i, "] = ", pad_end[i], " in pad_end ",
             detail::VecStr(pad_end), " must be >= 0");
  }
  TE_CHECK(IsKnownPadding(p.padding), "Convolution: unknown padding mode ", static_cast<int>(p.padding));
  CheckBorder("Convolution", p.pad_mode, p.pad_value);
  if (p.padding != ConvPadding::kExplicit) {
    TE_CHECK(p.pad.empty() && p.pad_end.empty(), "Convolution: padding mode ", ConvPaddingName(p.padding),
             " computes the padding itself; leave pad ", detail::VecStr(p.pad), " and pad_end ",
             detail::VecStr(p.pad_end), " empty");
  }
  TE_CHECK(p.num_group >= 1, "Convolution: num_group = ", p.num_group, " must be >= 1");
  TE_CHECK(p.num_filter >= 1, "Convolution: num_filter = ", p.num_filter, " must be >= 1");
  TE_CHECK(std::isfinite(p.workspace) && p.workspace >= 0, "Convolution: workspace = ", p.workspace,
           " MB must be a finite number >= 0");

  ConvGeometry g;
  const bool batched = data_shape.size() == nd + 2;
  g.channels_last = p.layout == Layout::kNHWC;
  // The first spatial dimension of the data, and where its channels are.
  const size_t first = batched ? (g.channels_last ? 1 : 2) : (g.channels_last ? 0 : 1);
  g.N = batched ? data_shape[0] : 1;
  g.C = g.channels_last ? data_shape.back() : data_shape[first - 1];
  g.K = p.num_filter;
  g.G = p.num_group;
  for (size_t i = 0; i < data_shape.size(); ++i)
    TE_CHECK(data_shape[i] >= 0, "Convolution: data shape ", detail::VecStr(data_shape), " has a negative extent");
  TE_CHECK(g.C >= 1, "Convolution: data shape ", detail::VecStr(data_shape), " has C = ", g.C,
           " input channels; need at least 1");
  TE_CHECK(g.C % g.G == 0, "Convolution: input channels C = ", g.C, " (data shape ", detail::VecStr(data_shape),
           ") are not divisible by num_group = ", g.G);
  TE_CHECK(g.K % g.G == 0, "Convolution: num_filter = ", g.K, " is not divisible by num_group = ", g.G);
  const size_t off = 3 - nd;  // 1-D and 2-D fill the leading spatial slots with 1
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = data_shape[first + i], k = p.kernel[i], s = stride[i], d = dilate[i];
    const index_t span = CheckedAdd(CheckedMul(k - 1, d, "Convolution: (kernel - 1) * dilate"), 1,
                                    "Convolution: dilated kernel extent");
    index_t pb = pad[i], pe = p.pad_end.empty() ? pad[i] : pad_end[i];
    if (p.padding == ConvPadding::kValid) {
      pb = pe = 0;
    } else if (p.padding == ConvPadding::kSame || p.padding == ConvPadding::kSameLower) {
      SamePadding(p.padding, in, s, span, "Convolution", &pb, &pe);
    }
    CheckBorderSource("Convolution", p.pad_mode, in, pb, pe, i, detail::VecStr(data_shape));
    const index_t padded = CheckedAdd(CheckedAdd(in, pb, "Convolution: input + pad"), pe, "Convolution: input + pad + pad_end");
    TE_CHECK(span <= padded, "Convolution: kernel[", i, "] = ", k, " with dilate ", d, " spans ", span,
             " but spatial dimension ", i, " of data shape ", detail::VecStr(data_shape), " is only ", in + pb + pe,
             " after padding (", pb, " + ", in, " + ", pe, ")");
    g.in[off + i] = in;
    g.kernel[off + i] = k;
    g.stride[off + i] = s;
    g.dilate[off + i] = d;
    g.pad[off + i] = pb;
    g.pad_end[off + i] = pe;
    g.out[off + i] = (padded - span) / s + 1;
  }
  // Every tensor and the column matrix of one image must be addressable; past here the kernels' index
  // arithmetic cannot wrap.
  const char* what = "Convolution: tensor size";
  auto volume = [what](const index_t* e) { return CheckedMul(CheckedMul(e[0], e[1], what), e[2], what); };
  const index_t in_size = volume(g.in), out_size = volume(g.out), kernel_size = volume(g.kernel);
  CheckedMul(CheckedMul(g.N, g.C, what), in_size, what);
  CheckedMul(CheckedMul(g.N, g.K, what), out_size, what);
  CheckedMul(CheckedMul(g.K, g.Cg(), what), kernel_size, what);
  // One image's column matrix, in bytes of the widest dtype (double: 8, with room to spare).
  CheckedMul(CheckedMul(CheckedMul(g.C, kernel_size, what), out_size, what), index_t(16), what);
  return g;
}

// Whether the padding reads something other than zeros (a padded copy of the data then runs).
inline bool ConvBorderIsData(const ConvolutionParam& p) {
  return p.pad_mode != PadMode::kConstant || p.pad_value.value_or(0.0) != 0.0;
}

// Output, weight and bias shapes for data of `data_shape`.
inline ConvShapes InferConvShapes(const ConvolutionParam& p, const std::vector<index_t>& data_shape) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  const size_t nd = p.kernel.size(), off = 3 - nd;
  ConvShapes s;
  if (data_shape.size() == nd + 2) s.out.push_back(g.N);
  if (!g.channels_last) s.out.push_back(g.K);
  for (size_t i = 0; i < nd; ++i) s.out.push_back(g.out[off + i]);
  if (g.channels_last) s.out.push_back(g.K);
  s.weight = {g.K};
  if (!g.channels_last) s.weight.push_back(g.Cg());
  for (size_t i = 0; i < nd; ++i) s.weight.push_back(p.kernel[i]);
  if (g.channels_last) s.weight.push_back(g.Cg());
  if (!p.no_bias) s.bias = {g.K};
  return s;
}

inline ConvCost InferConvCost(const ConvolutionParam& p, const std::vector<index_t>& data_shape, size_t dtype_bytes) {
  const ConvGeometry g = MakeConvGeometry(p, data_shape);
  // Sizes as doubles (a product of int64 sizes can pass 2^53; a cost estimate does not mind the rounding).
  const double outputs = double(g.N) * double(g.K) * double(g.OutSize());
  const double macs = outputs * double(g.Cg()) * double(g.KernelSize());
  const double x = double(g.N) * double(g.C) * double(g.InSize());
  const double w = double(g.K) * double(g.Cg()) * double(g.KernelSize());
  const double b = p.no_bias ? 0.0 : double(g.K);
  ConvCost c;
  c.forward_flops = 2 * macs + (p.no_bias ? 0.0 : outputs);
  c.backward_data_flops = 2 * macs;
  c.backward_weight_flops = 2 * macs;
  c.backward_bias_flops = p.no_bias ? 0.0 : outputs;
  c.forward_bytes = (x + w + b + outputs) * double(dtype_bytes);
  c.backward_bytes = (outputs + x + w + x + w + b) * double(dtype_bytes);
  return c;
}

}  // namespace ops
}  // namespace tensorexpr
