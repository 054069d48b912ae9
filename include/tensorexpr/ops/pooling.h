// tensorexpr/ops/pooling.h — the pooling operator (MXNet's Pooling): max and average pooling of 1-D (N, C, W),
// 2-D (N, C, H, W) and 3-D (N, C, D, H, W) data (any number of leading dimensions: the last 1, 2 or 3
// are spatial), with kernel / stride / dilation / padding (asymmetric, or SAME_UPPER / SAME_LOWER / VALID),
// the "valid" (floor) and "full" (ceil) output conventions, global pooling, and average pooling that counts
// the padding or not. Forward and Backward honour req, on the CPU and the GPU, for float, double, half_t
// and bf16_t, and max pooling for int8_t, uint8_t, int32_t and int64_t.
//
// It runs the core's pool<> / unpool<> expressions over PoolWindows (expr/pool.h): one output element per
// Eval forward, the window clipped to the image; backward a gather over the windows that cover each input
// (deterministic, no atomics), which the CPU evaluates by walking the windows instead (cpu/pool.h).
// The padding is never read as zeros: a max ignores it (zero padding would win over negative inputs), and
// an average divides by the window's size clipped to the padded image (count_include_pad, MXNet's
// default) or by the number of real elements in it.
// Max-pooling gradients go to every input equal to its window's maximum (ties all receive it, as in
// mshadow's unpool; MXNet picks one).
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/pooling.h is the template implementation, for other dtypes.
#pragma once
#include <optional>
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/checked.h>
#include <tensorexpr/ops/auto_pad.h>
#include <tensorexpr/ops/layout.h>
#include <tensorexpr/ops/param_text.h>

namespace tensorexpr {
namespace ops {

enum class PoolType { kMax, kAvg };
enum class PoolingConvention { kValid, kFull };  // output floor((in + 2p - k) / s) + 1, or ceil(...) + 1

struct PoolingParam {
  std::vector<index_t> kernel;   // 1, 2 or 3 spatial extents (W; H,W; D,H,W); may be empty with global_pool
  std::vector<index_t> stride;   // empty means 1
  std::vector<index_t> pad;      // padding before each spatial dimension (and after, without pad_end); empty: 0
  std::vector<index_t> pad_end;  // padding after, when it differs from pad; empty means = pad
  std::vector<index_t> dilate;   // the distance between a window's taps; empty means 1
  // SAME_UPPER / SAME_LOWER: ceil(input / stride) windows, the padding they need split with the odd element
  // after / before (pooling_convention then plays no part); VALID: no padding; explicit: pad and pad_end.
  ConvPadding padding = ConvPadding::kExplicit;
  PoolType pool_type = PoolType::kMax;
  PoolingConvention pooling_convention = PoolingConvention::kValid;
  bool global_pool = false;       // the kernel is the whole image: stride 1, no padding. The kernel's values
                                  // are then ignored; its length (or, when empty, the data's number of
                                  // dimensions minus 2: (N, C, spatial...)) gives the spatial dimensions
  bool count_include_pad = true;  // average pooling divides by the padded window size
  // What the padding reads (auto_pad.h). By default (kConstant, no value) it is no data: a max ignores
  // it and an average counts it as count_include_pad says. pad_value, or kEdge / kReflect / kWrap, make
  // it data the windows read like any other element; windows that the full convention lets run past the
  // end read the border further by the same rule (ONNX's Pad then ceil_mode would clip them instead).
  // Runs on a padded copy of the data. Max pooling's backward takes the constant border only.
  PadMode pad_mode = PadMode::kConstant;
  std::optional<double> pad_value;
  // Channels first, data (..., C, spatial...), or last, (..., spatial..., C) (ops/layout.h). Channels-last
  // data is pooled channels first through the stream's workspace: moved, pooled, moved back.
  Layout layout = Layout::kNCHW;
};

// Whether the padding is data the windows read (a padded copy of the data then runs).
inline bool PoolBorderIsData(const PoolingParam& p) {
  return p.pad_mode != PadMode::kConstant || p.pad_value.has_value();
}

// The resolved geometry, 3-D with leading extents of 1 for 1-D and 2-D. Trivially copyable: node plans
// carry it to the GPU.
// The core's windows (nd, in, out, k, s, d, p, pe and the average's divisor; expr/pool.h) and what else
// the operator needs.
struct PoolGeometry : PoolWindows {
  index_t planes = 0;  // the product of the leading (non-spatial) dimensions
  bool is_max = true;
};

// Resolves the parameters against the data shape (..., spatial...). Throws Error naming the bad value.
inline PoolGeometry MakePoolGeometry(const PoolingParam& p, const std::vector<index_t>& data_shape) {
  const size_t dims = data_shape.size();
  const size_t nd = p.global_pool && p.kernel.empty() ? (dims >= 3 ? std::min<size_t>(dims - 2, 3) : 1)
                                                      : p.kernel.size();
  TE_CHECK(nd >= 1 && nd <= 3, "Pooling: kernel ", detail::VecStr(p.kernel),
           " must have 1, 2 or 3 spatial dimensions");
  TE_CHECK(dims >= nd + 1, "Pooling: data shape ", detail::VecStr(data_shape), " has ", dims,
           " dimensions; a ", nd, "-D pooling needs at least ", nd + 1, " (leading dimensions, then spatial)");
  for (index_t e : data_shape)
    TE_CHECK(e >= 0, "Pooling: data shape ", detail::VecStr(data_shape), " has a negative extent");
  if (p.layout == Layout::kNHWC) {
    TE_CHECK(dims >= nd + 2, "Pooling: channels-last data shape ", detail::VecStr(data_shape), " has ", dims,
             " dimensions; a ", nd, "-D pooling needs at least ", nd + 2, " (leading..., spatial..., C)");
    std::vector<index_t> first = data_shape;  // the same data seen channels first
    const index_t channels = first.back();
    first.insert(first.end() - static_cast<std::ptrdiff_t>(nd + 1), channels);
    first.pop_back();
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    return MakePoolGeometry(q, first);
  }
  PoolGeometry g;
  g.nd = static_cast<int>(nd);
  g.is_max = p.pool_type == PoolType::kMax;
  g.divisor = g.is_max ? PoolDivisor::kNone
                       : p.count_include_pad ? PoolDivisor::kPaddedWindow : PoolDivisor::kValidWindow;
  g.planes = 1;
  for (size_t i = 0; i + nd < dims; ++i) g.planes = CheckedMul(g.planes, data_shape[i], "Pooling: data size");
  std::vector<index_t> kernel(nd), stride(nd, 1), pad(nd, 0), pad_end(nd, 0), dilate(nd, 1);
  const size_t first = dims - nd;
  if (p.global_pool) {
    for (size_t i = 0; i < nd; ++i) kernel[i] = data_shape[first + i];
  } else {
    TE_CHECK(IsKnownPadding(p.padding), "Pooling: unknown padding mode ", static_cast<int>(p.padding));
    CheckBorder("Pooling", p.pad_mode, p.pad_value);
    TE_CHECK(p.padding == ConvPadding::kExplicit || (p.pad.empty() && p.pad_end.empty()), "Pooling: padding mode ",
             ConvPaddingName(p.padding), " computes the padding itself; leave pad ", detail::VecStr(p.pad),
             " and pad_end ", detail::VecStr(p.pad_end), " empty");
    kernel = p.kernel;
    stride = detail::PerDim("Pooling", p.stride, nd, 1, "stride");
    dilate = detail::PerDim("Pooling", p.dilate, nd, 1, "dilate");
    pad = detail::PerDim("Pooling", p.pad, nd, 0, "pad");
    pad_end = p.pad_end.empty() ? pad : detail::PerDim("Pooling", p.pad_end, nd, 0, "pad_end");
  }
  const size_t off = 3 - nd;
  for (size_t i = 0; i < 3; ++i) g.in[i] = g.out[i] = g.k[i] = g.s[i] = g.d[i] = 1, g.p[i] = g.pe[i] = 0;
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = data_shape[first + i], k = kernel[i], s = stride[i], d = dilate[i];
    index_t pb = pad[i], pe = pad_end[i];
    if (p.global_pool) {
      TE_CHECK(in >= 1, "Pooling: global pooling of data shape ", detail::VecStr(data_shape),
               " with an empty spatial dimension ", i);
    } else {
      TE_CHECK(k >= 1, "Pooling: kernel[", i, "] = ", k, " in kernel ", detail::VecStr(kernel), " must be >= 1");
      TE_CHECK(s >= 1, "Pooling: stride[", i, "] = ", s, " in stride ", detail::VecStr(stride), " must be >= 1");
      TE_CHECK(d >= 1, "Pooling: dilate[", i, "] = ", d, " in dilate ", detail::VecStr(dilate), " must be >= 1");
      TE_CHECK(in >= 1 || p.padding == ConvPadding::kExplicit, "Pooling: padding mode ",
               ConvPaddingName(p.padding), " of data shape ", detail::VecStr(data_shape),
               " with an empty spatial dimension ", i);
    }
    const index_t span = CheckedAdd(CheckedMul(k - 1, d, "Pooling: (kernel - 1) * dilate"), 1,
                                    "Pooling: dilated kernel extent");
    if (p.padding == ConvPadding::kValid) {
      pb = pe = 0;
    } else if (p.padding == ConvPadding::kSameUpper || p.padding == ConvPadding::kSameLower) {
      SamePadding(p.padding, in, s, span, "Pooling", &pb, &pe);
    }
    if (!p.global_pool) {
      CheckBorderSource("Pooling", p.pad_mode, in, pb, pe, i, detail::VecStr(data_shape));
      // Below the window's extent, so that a window holds a real element (a dilated one may still step over
      // a small image: PoolWindows::Check looks at each).
      TE_CHECK(pb >= 0 && pb < span, "Pooling: pad[", i, "] = ", pb, " in pad ", detail::VecStr(pad),
               " must be in [0, kernel[", i, "] = ", k, d > 1 ? " dilated: " : ")", d > 1 ? std::to_string(span) + ")" : "");
      TE_CHECK(pe >= 0 && pe < span, "Pooling: pad_end[", i, "] = ", pe, " must be in [0, kernel[", i, "] = ", k,
               d > 1 ? " dilated: " : ")", d > 1 ? std::to_string(span) + ")" : "");
      TE_CHECK(span <= CheckedAdd(CheckedAdd(in, pb, "Pooling: input + pad"), pe, "Pooling: input + pad + pad_end"),
               "Pooling: kernel[", i, "] = ", k, " with dilate ", d, " spans ", span, ", more than spatial dimension ",
               i, " of data shape ", detail::VecStr(data_shape), " after padding (", pb, " + ", in, " + ", pe, ")");
    }
    index_t out;
    if (p.padding == ConvPadding::kSameUpper || p.padding == ConvPadding::kSameLower) {
      out = (in + s - 1) / s;  // SamePadding checked the sum
    } else if (p.pooling_convention == PoolingConvention::kValid) {
      out = (in + pb + pe - span) / s + 1;
    } else {
      out = CheckedAdd(in + pb + pe - span, s - 1, "Pooling: full-convention window count") / s + 1;
      if ((out - 1) * s >= in + pb) --out;  // the last window must start inside the image or its left padding
    }
    g.in[off + i] = in;
    g.out[off + i] = out;
    g.k[off + i] = k;
    g.s[off + i] = s;
    g.d[off + i] = d;
    g.p[off + i] = pb;
    g.pe[off + i] = pe;
    for (index_t o = 0; d > 1 && o < out; ++o)  // dilated windows may step over a small image
      TE_CHECK(PoolWindows::Taps(g.At(int(off + i), o)) > 0, "Pooling: window ", o, " of spatial dimension ", i,
               " (kernel ", k, ", dilate ", d, ", stride ", s, ", pad ", pb, ") holds no element of the ", in,
               " the dimension has");
  }
  for (const index_t* e : {g.in, g.out})  // the data and the output must be addressable
    CheckedMul(CheckedMul(CheckedMul(g.planes, e[0], "Pooling: tensor size"), e[1], "Pooling: tensor size"), e[2],
               "Pooling: tensor size");
  return g;
}

// The output shape: the data's with the spatial extents pooled.
template <int dim>
inline Shape<dim> InferPoolingShape(const PoolingParam& p, const Shape<dim>& data_shape) {
  const PoolGeometry g = MakePoolGeometry(p, std::vector<index_t>(data_shape.shape_, data_shape.shape_ + dim));
  Shape<dim> s = data_shape;
  const int last = p.layout == Layout::kNHWC ? dim - 1 : dim;  // one past the last spatial dimension
  for (int i = 0; i < g.nd; ++i) s[last - g.nd + i] = g.out[3 - g.nd + i];
  return s;
}

// out = pool(data), stored as req says. data (..., spatial...), rows may be padded; out as
// InferPoolingShape says.
template <typename Device, int dim, typename DType>
void PoolingForward(const PoolingParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                    const Tensor<Device, dim, DType>& out);

// Max pooling's out (req), and indices = where each maximum is: its flat row-major index in the data (ONNX
// MaxPool's Indices with storage_order 0; for data (N, C, spatial...), the index in the whole tensor). The
// first element equal to the maximum wins ties; a window holding NaN points at its first NaN. Channels-first
// data, and a border that is no data, only.
template <typename Device, int dim, typename DType>
void PoolingForwardWithIndices(const PoolingParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                               const Tensor<Device, dim, DType>& out, const Tensor<Device, dim, int64_t>& indices);

// in_grad = d pool / d data applied to out_grad, stored as req says. `out` is the forward output (max
// pooling routes the gradient to the inputs equal to it).
template <typename Device, int dim, typename DType>
void PoolingBackward(const PoolingParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& data, const Tensor<Device, dim, DType>& out, OpReqType req,
                     const Tensor<Device, dim, DType>& in_grad);

}  // namespace ops
}  // namespace tensorexpr
