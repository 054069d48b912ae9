// tensorexpr/ops/deconv_param.h — what a deconvolution (transposed convolution) is asked to compute (MXNet's
// DeconvolutionParam, ONNX's ConvTranspose attributes) and what follows from it without running anything:
// the output, weight and bias shapes, and the convolution whose data gradient the deconvolution is.
// Everything here throws Error naming the parameter and its value when they do not fit together.
//
// Along each spatial dimension, with span = (kernel - 1) dilate + 1 and full = stride (in - 1) + span + adj:
//   out = full - pad_begin - pad_end
// and the padding comes from:
//   target_shape   total = full - target (>= 0): explicit or SAME_LOWER puts the odd pixel before
//                  (pad_begin = total - total / 2: MXNet's and ONNX's rule), SAME_UPPER after
//   SAME_UPPER / SAME_LOWER   the target is in * stride (ONNX's auto_pad)
//   VALID          no padding
//   explicit       pad before, pad_end after (= pad unless given)
// adj (ONNX's output_padding) adds that many output elements at the end, which only the bias reaches; it
// must be below the stride (MXNet's rule; ONNX allows up to the dilation as well).
#pragma once
#include <cmath>
#include <string>
#include <vector>
#include <tensorexpr/base.h>
#include <tensorexpr/checked.h>
#include <tensorexpr/ops/conv_param.h>
#include <tensorexpr/ops/layout.h>
#include <tensorexpr/ops/param_text.h>

namespace tensorexpr {
namespace ops {

struct DeconvolutionParam {
  std::vector<index_t> kernel;        // spatial kernel extents: 1, 2 or 3 of them (W; H,W; D,H,W)
  std::vector<index_t> stride;        // per spatial dimension; empty means 1
  std::vector<index_t> dilate;        // per spatial dimension; empty means 1
  std::vector<index_t> pad;           // explicit padding before each spatial dimension; empty means 0
  std::vector<index_t> pad_end;       // explicit padding after, when it differs from pad; empty means = pad
  std::vector<index_t> adj;           // output elements added at the end (ONNX's output_padding); empty means 0
  std::vector<index_t> target_shape;  // the output's spatial extents; the padding then follows from them
  index_t num_filter = 0;             // K: output channels
  index_t num_group = 1;              // C and K are split into this many independent groups
  bool no_bias = true;                // MXNet's default for Deconvolution (Convolution's is false)
  double workspace = 512.0;           // cap on the temp space, in MB (MXNet's Deconvolution default)
  ConvPadding padding = ConvPadding::kExplicit;
  // Channels first: data (N, C, spatial...), weight (C, K/G, kernel...), output (N, K, out...); channels
  // last: data (N, spatial..., C), weight (C, kernel..., K/G), output (N, out..., K).
  Layout layout = Layout::kNCHW;
  // The convolution algorithm (ListConvAlgorithms) for the passes; empty: the library chooses.
  std::string algorithm;
};

// The shapes of one deconvolution's tensors.
struct DeconvShapes {
  std::vector<index_t> out;     // (N, K, out...) or (K, out...) for an unbatched input
  std::vector<index_t> weight;  // (C, K / num_group, kernel...)
  std::vector<index_t> bias;    // (K) or empty when no_bias
};

namespace detail {

// The output's spatial extents and the padding per side, checked.
struct DeconvSpatial {
  std::vector<index_t> out, pad_begin, pad_end;
};

inline DeconvSpatial ResolveDeconvSpatial(const DeconvolutionParam& p, const std::vector<index_t>& data_shape,
                                          size_t first) {
  const size_t nd = p.kernel.size();
  const std::vector<index_t> stride = PerDim("Deconvolution", p.stride, nd, 1, "stride");
  const std::vector<index_t> dilate = PerDim("Deconvolution", p.dilate, nd, 1, "dilate");
  const std::vector<index_t> pad = PerDim("Deconvolution", p.pad, nd, 0, "pad");
  const std::vector<index_t> pad_end = PerDim("Deconvolution", p.pad_end, nd, 0, "pad_end");
  const std::vector<index_t> adj = PerDim("Deconvolution", p.adj, nd, 0, "adj");
  const std::vector<index_t> target = PerDim("Deconvolution", p.target_shape, nd, 0, "target_shape");
  DeconvSpatial r;
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = data_shape[first + i], k = p.kernel[i], s = stride[i], d = dilate[i];
    TE_CHECK(k >= 1, "Deconvolution: kernel[", i, "] = ", k, " in kernel ", VecStr(p.kernel), " must be >= 1");
    TE_CHECK(s >= 1, "Deconvolution: stride[", i, "] = ", s, " in stride ", VecStr(stride), " must be >= 1");
    TE_CHECK(d >= 1, "Deconvolution: dilate[", i, "] = ", d, " in dilate ", VecStr(dilate), " must be >= 1");
    TE_CHECK(pad[i] >= 0, "Deconvolution: pad[", i, "] = ", pad[i], " in pad ", VecStr(pad), " must be >= 0");
    TE_CHECK(pad_end[i] >= 0, "Deconvolution: pad_end[", i, "] = ", pad_end[i], " in pad_end ", VecStr(pad_end),
             " must be >= 0");
    TE_CHECK(adj[i] >= 0 && adj[i] < s, "Deconvolution: adj[", i, "] = ", adj[i], " in adj ", VecStr(adj),
             " must be >= 0 and below stride[", i, "] = ", s);
    TE_CHECK(p.target_shape.empty() || target[i] >= 1, "Deconvolution: target_shape[", i, "] = ", target[i],
             " in target_shape ", VecStr(target), " must be >= 1");
    TE_CHECK(in >= 1, "Deconvolution: spatial dimension ", i, " of data shape ", VecStr(data_shape), " is ", in,
             "; need at least 1");
    const index_t span = CheckedAdd(CheckedMul(k - 1, d, "Deconvolution: (kernel - 1) * dilate"), 1,
                                    "Deconvolution: dilated kernel extent");
    const index_t full = CheckedAdd(
        CheckedAdd(CheckedMul(s, in - 1, "Deconvolution: stride * (input - 1)"), span, "Deconvolution: output extent"),
        adj[i], "Deconvolution: output extent");
    index_t pb = pad[i], pe = p.pad_end.empty() ? pad[i] : pad_end[i];
    const bool same = p.padding == ConvPadding::kSameUpper || p.padding == ConvPadding::kSameLower;
    if (!p.target_shape.empty() || same) {
      const index_t want = p.target_shape.empty() ? CheckedMul(in, s, "Deconvolution: SAME output, input * stride")
                                                  : target[i];
      const index_t total = full - want;
      TE_CHECK(total >= 0, "Deconvolution: the output extent ", want, " asked of spatial dimension ", i,
               p.target_shape.empty() ? " by SAME padding (input * stride)" : " by target_shape",
               " exceeds stride * (input - 1) + (kernel - 1) * dilate + 1 + adj = ", full,
               ", the most padding 0 gives");
      pe = p.padding == ConvPadding::kSameUpper ? total - total / 2 : total / 2;
      pb = total - pe;
    } else if (p.padding == ConvPadding::kValid) {
      pb = pe = 0;
    }
    TE_CHECK(CheckedAdd(pb, pe, "Deconvolution: pad + pad_end") < full, "Deconvolution: padding ", pb, " + ", pe,
             " of spatial dimension ", i, " leaves no output of the ", full,
             " elements stride * (input - 1) + (kernel - 1) * dilate + 1 + adj gives");
    r.out.push_back(full - pb - pe);
    r.pad_begin.push_back(pb);
    r.pad_end.push_back(pe);
  }
  return r;
}

// The full output shape (batched or not, either layout) for output channels K and spatial extents `out`.
inline std::vector<index_t> DeconvOutShape(const std::vector<index_t>& data_shape, size_t nd, bool channels_last,
                                           index_t K, const std::vector<index_t>& out) {
  std::vector<index_t> s;
  if (data_shape.size() == nd + 2) s.push_back(data_shape[0]);
  if (!channels_last) s.push_back(K);
  s.insert(s.end(), out.begin(), out.end());
  if (channels_last) s.push_back(K);
  return s;
}

}  // namespace detail

// The convolution whose data gradient this deconvolution is, resolved against the deconvolution's data
// (N, C, spatial...) or, unbatched, (C, spatial...): its data is the deconvolution's output, its output the
// deconvolution's data (so its filters are C, its input channels K), its weight the same tensor.
inline ConvGeometry MakeDeconvGeometry(const DeconvolutionParam& p, const std::vector<index_t>& data_shape) {
  const size_t nd = p.kernel.size();
  TE_CHECK(nd >= 1 && nd <= 3, "Deconvolution: kernel ", detail::VecStr(p.kernel),
           " must have 1, 2 or 3 spatial dimensions (NCW, NCHW, NCDHW)");
  const bool last = p.layout == Layout::kNHWC;
  TE_CHECK(p.layout == Layout::kNCHW || last, "Deconvolution: unknown layout ", static_cast<int>(p.layout));
  TE_CHECK(data_shape.size() == nd + 2 || data_shape.size() == nd + 1, "Deconvolution: ", LayoutName(p.layout),
           " data shape ", detail::VecStr(data_shape), " does not fit a ", nd, "-D kernel ", detail::VecStr(p.kernel),
           ": expected ", nd + 2, last ? " dimensions (N, spatial..., C) or " : " dimensions (N, C, spatial...) or ",
           nd + 1, last ? " (spatial..., C)" : " (C, spatial...)");
  for (index_t e : data_shape)
    TE_CHECK(e >= 0, "Deconvolution: data shape ", detail::VecStr(data_shape), " has a negative extent");
  TE_CHECK(IsKnownPadding(p.padding), "Deconvolution: unknown padding mode ", static_cast<int>(p.padding));
  TE_CHECK(p.padding == ConvPadding::kExplicit || (p.pad.empty() && p.pad_end.empty()), "Deconvolution: padding mode ",
           ConvPaddingName(p.padding), " computes the padding itself; leave pad ", detail::VecStr(p.pad), " and pad_end ",
           detail::VecStr(p.pad_end), " empty");
  TE_CHECK(p.target_shape.empty() || (p.pad.empty() && p.pad_end.empty() && p.padding != ConvPadding::kValid),
           "Deconvolution: target_shape ", detail::VecStr(p.target_shape),
           " computes the padding itself; leave pad and pad_end empty and the padding mode not VALID");
  TE_CHECK(p.num_group >= 1, "Deconvolution: num_group = ", p.num_group, " must be >= 1");
  TE_CHECK(p.num_filter >= 1, "Deconvolution: num_filter = ", p.num_filter, " must be >= 1");
  TE_CHECK(std::isfinite(p.workspace) && p.workspace >= 0, "Deconvolution: workspace = ", p.workspace,
           " MB must be a finite number >= 0");
  const bool batched = data_shape.size() == nd + 2;
  const size_t first = batched ? (last ? 1 : 2) : (last ? 0 : 1);
  const index_t C = last ? data_shape.back() : data_shape[first - 1];
  TE_CHECK(C >= 1, "Deconvolution: data shape ", detail::VecStr(data_shape), " has C = ", C,
           " input channels; need at least 1");
  TE_CHECK(C % p.num_group == 0, "Deconvolution: input channels C = ", C, " (data shape ", detail::VecStr(data_shape),
           ") are not divisible by num_group = ", p.num_group);
  TE_CHECK(p.num_filter % p.num_group == 0, "Deconvolution: num_filter = ", p.num_filter,
           " is not divisible by num_group = ", p.num_group);
  const detail::DeconvSpatial sp = detail::ResolveDeconvSpatial(p, data_shape, first);
  ConvolutionParam c;
  c.kernel = p.kernel;
  c.stride = p.stride;
  c.dilate = p.dilate;
  c.pad = sp.pad_begin;
  c.pad_end = sp.pad_end;
  c.num_filter = C;
  c.num_group = p.num_group;
  c.workspace = p.workspace;
  c.layout = p.layout;
  c.algorithm = p.algorithm;
  const ConvGeometry g = MakeConvGeometry(c, detail::DeconvOutShape(data_shape, nd, last, p.num_filter, sp.out));
  // The convolution maps the output back onto the data's extents (adj < stride keeps the last window in).
  for (size_t i = 0; i < nd; ++i)
    TE_CHECK(g.out[3 - nd + i] == data_shape[first + i], "Deconvolution: internal: the convolution of the output ",
             "does not come back to the data's extent in dimension ", i);
  return g;
}

// Output, weight and bias shapes for data of `data_shape`.
inline DeconvShapes InferDeconvShapes(const DeconvolutionParam& p, const std::vector<index_t>& data_shape) {
  const ConvGeometry g = MakeDeconvGeometry(p, data_shape);
  const size_t nd = p.kernel.size(), off = 3 - nd;
  DeconvShapes s;
  s.out = detail::DeconvOutShape(data_shape, nd, g.channels_last, p.num_filter,
                                 std::vector<index_t>(g.in + off, g.in + 3));
  s.weight = {g.K};  // the data's channels C, the convolution's filters
  if (!g.channels_last) s.weight.push_back(g.Cg());
  s.weight.insert(s.weight.end(), p.kernel.begin(), p.kernel.end());
  if (g.channels_last) s.weight.push_back(g.Cg());
  if (!p.no_bias) s.bias = {p.num_filter};
  return s;
}

}  // namespace ops
}  // namespace tensorexpr
