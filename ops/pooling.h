// ops/pooling.h — the pooling operator (MXNet's Pooling): max and average pooling of 1-D (N, C, W),
// 2-D (N, C, H, W) and 3-D (N, C, D, H, W) data (any number of leading dimensions: the last 1, 2 or 3
// are spatial), with kernel / stride / padding, the "valid" (floor) and "full" (ceil) output conventions,
// global pooling, and average pooling that counts the padding or not. Forward and Backward honour req,
// on the CPU and the GPU, for float, double, half_t and bf16_t.
//
// Two evaluation paths, checked against the same reference by tests/ops_nn_test.cc:
//  * 1-D and 2-D without padding in the valid convention (the common case: 2x2 stride 2, global pooling):
//    the core pool<> / avg_pool / unpool<> expressions (expr/pool.h); 1-D runs as 2-D with H = 1. Their
//    CPU unpool walks windows rather than pixels, several times faster for max.
//  * everything else (padding, full convention, 3-D): the two nodes below, PoolingNdExp (one output element
//    per Eval, the window clipped to the image) and PoolingNdGradExp (one input element per Eval, a gather
//    over the windows that cover it: deterministic, no atomics).
// The padding is never read as zeros: a max ignores it (zero padding would win over negative inputs), and
// an average divides by the window's size clipped to the padded image (count_include_pad, MXNet's
// default) or by the number of real elements in it.
// Max-pooling gradients go to every input equal to its window's maximum (ties all receive it, as in
// mshadow's unpool; MXNet picks one).
#pragma once
#include <string>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/checked.h>
#include "layout.h"
#include "param_text.h"
#include "workspace.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

enum class PoolType { kMax, kAvg };
enum class PoolingConvention { kValid, kFull };  // output floor((in + 2p - k) / s) + 1, or ceil(...) + 1

struct PoolingParam {
  std::vector<index_t> kernel;  // 1, 2 or 3 spatial extents (W; H,W; D,H,W); may be empty with global_pool
  std::vector<index_t> stride;  // empty means 1
  std::vector<index_t> pad;     // padding on both sides of each spatial dimension; empty means 0
  PoolType pool_type = PoolType::kMax;
  PoolingConvention pooling_convention = PoolingConvention::kValid;
  bool global_pool = false;       // the kernel is the whole image: stride 1, no padding. The kernel's values
                                  // are then ignored; its length (or, when empty, the data's number of
                                  // dimensions minus 2: (N, C, spatial...)) gives the spatial dimensions
  bool count_include_pad = true;  // average pooling divides by the padded window size
  // Channels first, data (..., C, spatial...), or last, (..., spatial..., C) (ops/layout.h). Channels-last
  // data is pooled channels first through the stream's workspace: moved, pooled, moved back.
  Layout layout = Layout::kNCHW;
};

// The resolved geometry, 3-D with leading extents of 1 for 1-D and 2-D. Trivially copyable: node plans
// carry it to the GPU.
struct PoolGeometry {
  int nd = 0;            // spatial dimensions of the data
  index_t planes = 0;    // the product of the leading (non-spatial) dimensions
  index_t in[3], out[3], k[3], s[3], p[3];
  bool is_max = true, include_pad = true;
};

namespace detail {

inline std::vector<index_t> PoolPerDim(const std::vector<index_t>& v, size_t nd, index_t fill, const char* name) {
  if (v.empty()) return std::vector<index_t>(nd, fill);
  TE_CHECK(v.size() == nd, "Pooling: ", name, " ", VecStr(v), " has ", v.size(), " entries but the pooling has ",
           nd, " spatial dimensions");
  return v;
}

}  // namespace detail

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
  g.include_pad = p.count_include_pad;
  g.planes = 1;
  for (size_t i = 0; i + nd < dims; ++i) g.planes = CheckedMul(g.planes, data_shape[i], "Pooling: data size");
  std::vector<index_t> kernel(nd), stride, pad;
  const size_t first = dims - nd;
  if (p.global_pool) {
    for (size_t i = 0; i < nd; ++i) kernel[i] = data_shape[first + i];
    stride.assign(nd, 1);
    pad.assign(nd, 0);
  } else {
    kernel = p.kernel;
    stride = detail::PoolPerDim(p.stride, nd, 1, "stride");
    pad = detail::PoolPerDim(p.pad, nd, 0, "pad");
  }
  const size_t off = 3 - nd;
  for (size_t i = 0; i < 3; ++i) g.in[i] = g.out[i] = g.k[i] = g.s[i] = 1, g.p[i] = 0;
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = data_shape[first + i], k = kernel[i], s = stride[i], pd = pad[i];
    if (p.global_pool) {
      TE_CHECK(in >= 1, "Pooling: global pooling of data shape ", detail::VecStr(data_shape),
               " with an empty spatial dimension ", i);
    } else {
      TE_CHECK(k >= 1, "Pooling: kernel[", i, "] = ", k, " in kernel ", detail::VecStr(kernel), " must be >= 1");
      TE_CHECK(s >= 1, "Pooling: stride[", i, "] = ", s, " in stride ", detail::VecStr(stride), " must be >= 1");
      TE_CHECK(pd >= 0 && pd < k, "Pooling: pad[", i, "] = ", pd, " in pad ", detail::VecStr(pad),
               " must be in [0, kernel[", i, "] = ", k, ") so that every window holds a real element");
      TE_CHECK(k <= CheckedAdd(in, CheckedMul(2, pd, "Pooling: 2 * pad"), "Pooling: input + 2 * pad"),
               "Pooling: kernel[", i, "] = ", k, " is larger than spatial dimension ", i,
               " of data shape ", detail::VecStr(data_shape), " after padding (", in, " + 2 * ", pd, ")");
    }
    index_t out;
    if (p.pooling_convention == PoolingConvention::kValid) {
      out = (in + 2 * pd - k) / s + 1;
    } else {
      out = CheckedAdd(in + 2 * pd - k, s - 1, "Pooling: full-convention window count") / s + 1;
      if ((out - 1) * s >= in + pd) --out;  // the last window must start inside the image or its left padding
    }
    g.in[off + i] = in;
    g.out[off + i] = out;
    g.k[off + i] = k;
    g.s[off + i] = s;
    g.p[off + i] = pd;
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

namespace detail {

// Window o along one dimension: [start, start + k) in image coordinates, clipped to the padded image
// (`span`, the divisor that counts the padding) and to the image itself ([lo, hi)).
struct PoolWindow {
  index_t lo, hi, span;
};
TE_XINLINE PoolWindow PoolWindowAt(index_t o, index_t in, index_t k, index_t s, index_t p) {
  const index_t start = o * s - p;
  const index_t end = start + k < in + p ? start + k : in + p;
  return PoolWindow{start > 0 ? start : 0, end < in ? end : in, end - start};
}

// ---- forward: one output element per Eval --------------------------------------------------------------
template <typename E>
struct PoolingNdExp : public expr::Exp<PoolingNdExp<E>, typename E::value_type, expr::type::kChainer> {
  using DType = typename E::value_type;
  static constexpr int kDim = E::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename E::device_type;
  E src_;
  PoolGeometry g_;
  Shape<kDim> shape_;
  PoolingNdExp(const E& src, const PoolGeometry& g, const Shape<kDim>& shape) : src_(src), g_(g), shape_(shape) {}
  Shape<kDim> shape() const { return shape_; }
  struct Plan {
    typename E::Plan src_;
    PoolGeometry g_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      const PoolGeometry& g = g_;
      // y = (plane * outD + od) * outH + oh, x = ow
      const index_t oh = y % g.out[1], t = y / g.out[1], od = t % g.out[0], plane = t / g.out[0];
      const PoolWindow wd = PoolWindowAt(od, g.in[0], g.k[0], g.s[0], g.p[0]);
      const PoolWindow wh = PoolWindowAt(oh, g.in[1], g.k[1], g.s[1], g.p[1]);
      const PoolWindow ww = PoolWindowAt(x, g.in[2], g.k[2], g.s[2], g.p[2]);
      A acc = g.is_max ? red::maximum::Init<A, DType>() : A(0);
      for (index_t d = wd.lo; d < wd.hi; ++d)
        for (index_t h = wh.lo; h < wh.hi; ++h) {
          const index_t row = (plane * g.in[0] + d) * g.in[1] + h;
          for (index_t w = ww.lo; w < ww.hi; ++w) {
            const A v = static_cast<A>(src_.Eval(row, w));
            if (g.is_max) {
              red::maximum::Reduce<A>(acc, v);
            } else {
              acc += v;
            }
          }
        }
      if (g.is_max) return static_cast<DType>(acc);
      const index_t count = g.include_pad ? wd.span * wh.span * ww.span
                                          : (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
      return static_cast<DType>(acc / static_cast<A>(count));
    }
  };
  Plan plan() const { return Plan{src_.plan(), g_}; }
};

// ---- backward: one input element per Eval, gathering over the windows that cover it --------------------
template <typename ES, typename EP, typename EG>
struct PoolingNdGradExp
    : public expr::Exp<PoolingNdGradExp<ES, EP, EG>, typename ES::value_type, expr::type::kChainer> {
  using DType = typename ES::value_type;
  static constexpr int kDim = ES::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename ES::device_type;
  ES src_;
  EP pooled_;
  EG grad_;
  PoolGeometry g_;
  PoolingNdGradExp(const ES& src, const EP& pooled, const EG& grad, const PoolGeometry& g)
      : src_(src), pooled_(pooled), grad_(grad), g_(g) {}
  Shape<kDim> shape() const { return src_.shape(); }
  struct Plan {
    typename ES::Plan src_;
    typename EP::Plan pooled_;
    typename EG::Plan grad_;
    PoolGeometry g_;
    // Windows o covering i: o s - p <= i < o s - p + k.
    TE_XINLINE static void Covering(index_t i, index_t out, index_t k, index_t s, index_t p, index_t* o0,
                                    index_t* o1) {
      *o0 = i + p < k ? 0 : (i + p - k) / s + 1;
      const index_t last = (i + p) / s;
      *o1 = last < out - 1 ? last : out - 1;  // inclusive; o0 > o1 when none
    }
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = accum_t<DType>;
      const PoolGeometry& g = g_;
      const index_t ih = y % g.in[1], t = y / g.in[1], id = t % g.in[0], plane = t / g.in[0];
      index_t d0, d1, h0, h1, w0, w1;
      Covering(id, g.out[0], g.k[0], g.s[0], g.p[0], &d0, &d1);
      Covering(ih, g.out[1], g.k[1], g.s[1], g.p[1], &h0, &h1);
      Covering(x, g.out[2], g.k[2], g.s[2], g.p[2], &w0, &w1);
      const DType v = g.is_max ? src_.Eval(y, x) : DType(0);
      A acc = A(0);
      for (index_t od = d0; od <= d1; ++od)
        for (index_t oh = h0; oh <= h1; ++oh) {
          const index_t row = (plane * g.out[0] + od) * g.out[1] + oh;
          for (index_t ow = w0; ow <= w1; ++ow) {
            if (g.is_max) {
              if (expr::unpool_route<red::maximum>::Routes(v, pooled_.Eval(row, ow))) acc += static_cast<A>(grad_.Eval(row, ow));
            } else {
              const PoolWindow wd = PoolWindowAt(od, g.in[0], g.k[0], g.s[0], g.p[0]);
              const PoolWindow wh = PoolWindowAt(oh, g.in[1], g.k[1], g.s[1], g.p[1]);
              const PoolWindow ww = PoolWindowAt(ow, g.in[2], g.k[2], g.s[2], g.p[2]);
              const index_t count = g.include_pad ? wd.span * wh.span * ww.span
                                                  : (wd.hi - wd.lo) * (wh.hi - wh.lo) * (ww.hi - ww.lo);
              acc += static_cast<A>(grad_.Eval(row, ow)) / static_cast<A>(count);
            }
          }
        }
      return static_cast<DType>(acc);
    }
  };
  Plan plan() const { return Plan{src_.plan(), pooled_.plan(), grad_.plan(), g_}; }
};

// Whether the core pool / unpool expressions compute this pooling exactly.
inline bool PoolUsesCoreExpr(const PoolingParam& p, const PoolGeometry& g) {
  return g.nd <= 2 && p.pooling_convention == PoolingConvention::kValid && g.p[1] == 0 && g.p[2] == 0;
}

// The view pool<> works on: (..., H, W). 1-D data (..., W) gains H = 1 before its last dimension.
template <int nd, typename Device, int dim, typename DType>
inline auto PoolImageView(const Tensor<Device, dim, DType>& t) {
  if constexpr (nd == 1) {
    Shape<dim + 1> s;
    for (int i = 0; i < dim - 1; ++i) s[i] = t.shape_[i];
    s[dim - 1] = 1;
    s[dim] = t.shape_[dim - 1];
    return Tensor<Device, dim + 1, DType>(t.dptr_, s, t.stride_, t.stream_);
  } else {
    return t;
  }
}

inline void CheckPoolReq(const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "Pooling ", what,
           ": unknown req ", static_cast<int>(req));
}

template <int dim>
inline std::vector<index_t> PoolShapeVec(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

// The axes that view channels-last data channels first ((..., s..., C) -> (..., C, s...), to_first) and
// back (to_first false), for nd spatial dimensions; output dimension i reads source dimension axes[i].
template <int dim>
Shape<dim> ChannelAxes(int nd, bool to_first) {
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
Shape<dim> Permute(const Shape<dim>& s, const Shape<dim>& axes) {
  Shape<dim> r;
  for (int i = 0; i < dim; ++i) r[i] = s[axes[i]];
  return r;
}

template <int nd, typename Device, int dim, typename DType>
void PoolForwardCore(const PoolGeometry& g, const Tensor<Device, dim, DType>& data, OpReqType req,
                     const Tensor<Device, dim, DType>& out) {
  const auto x = PoolImageView<nd>(data);
  const auto y = PoolImageView<nd>(out);
  const Shape<2> pshape = Shape2(g.out[1], g.out[2]);
  if (g.is_max) {
    Assign(y, req, expr::pool<red::maximum>(x, pshape, g.k[1], g.k[2], g.s[1], g.s[2]));
  } else {
    Assign(y, req, expr::avg_pool(x, pshape, g.k[1], g.k[2], g.s[1], g.s[2]));
  }
}

template <int nd, typename Device, int dim, typename DType>
void PoolBackwardCore(const PoolGeometry& g, const Tensor<Device, dim, DType>& out_grad,
                      const Tensor<Device, dim, DType>& data, const Tensor<Device, dim, DType>& out, OpReqType req,
                      const Tensor<Device, dim, DType>& in_grad) {
  const auto x = PoolImageView<nd>(data);
  const auto y = PoolImageView<nd>(out);
  const auto dy = PoolImageView<nd>(out_grad);
  const auto dx = PoolImageView<nd>(in_grad);
  if (g.is_max) {
    Assign(dx, req, expr::unpool<red::maximum>(x, y, dy, g.k[1], g.k[2], g.s[1], g.s[2]));
  } else {
    const DType scale(1.0 / static_cast<double>(g.k[1] * g.k[2]));
    Assign(dx, req, expr::unpool<red::sum>(x, y, dy, g.k[1], g.k[2], g.s[1], g.s[2]) * scale);
  }
}

}  // namespace detail

// out = pool(data), stored as req says. data (..., spatial...), rows may be padded; out as
// InferPoolingShape says.
template <typename Device, int dim, typename DType>
void PoolingForward(const PoolingParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                    const Tensor<Device, dim, DType>& out) {
  const PoolGeometry g = MakePoolGeometry(p, detail::PoolShapeVec(data.shape_));
  const Shape<dim> want = InferPoolingShape(p, data.shape_);
  TE_CHECK(out.shape_ == want, "Pooling forward: output shape ", out.shape_, " does not match the expected ", want,
           " for data shape ", data.shape_);
  detail::CheckPoolReq("forward", req);
  if (req == kNullOp || want.Size() == 0) return;
  if (p.layout == Layout::kNHWC) {
    // Moved channels first into the workspace (x, then y), pooled there, moved back into out.
    Stream<Device>* s = out.stream_;
    const Shape<dim> to_first = detail::ChannelAxes<dim>(g.nd, true), to_last = detail::ChannelAxes<dim>(g.nd, false);
    const Shape<dim> xs = detail::Permute(data.shape_, to_first), ys = detail::Permute(want, to_first);
    DType* ws = static_cast<DType*>(GetWorkspaceBytes<Device>(sizeof(DType) * size_t(xs.Size() + ys.Size()), s));
    Tensor<Device, dim, DType> x(ws, xs, s), y(ws + xs.Size(), ys, s);
    x = expr::transpose(data, to_first);
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    PoolingForward(q, x, kWriteTo, y);
    Assign(out, req, expr::transpose(y, to_last));
    return;
  }
  if (detail::PoolUsesCoreExpr(p, g)) {
    if (g.nd == 2) return detail::PoolForwardCore<2>(g, data, req, out);
    return detail::PoolForwardCore<1>(g, data, req, out);
  }
  Assign(out, req, detail::PoolingNdExp<Tensor<Device, dim, DType>>(data, g, want));
}

// in_grad = d pool / d data applied to out_grad, stored as req says. `out` is the forward output (max
// pooling routes the gradient to the inputs equal to it).
template <typename Device, int dim, typename DType>
void PoolingBackward(const PoolingParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& data, const Tensor<Device, dim, DType>& out, OpReqType req,
                     const Tensor<Device, dim, DType>& in_grad) {
  const PoolGeometry g = MakePoolGeometry(p, detail::PoolShapeVec(data.shape_));
  const Shape<dim> want = InferPoolingShape(p, data.shape_);
  TE_CHECK(out.shape_ == want && out_grad.shape_ == want, "Pooling backward: output shape ", out.shape_,
           " and output gradient shape ", out_grad.shape_, " must both be ", want, " for data shape ", data.shape_);
  TE_CHECK(in_grad.shape_ == data.shape_, "Pooling backward: input gradient shape ", in_grad.shape_,
           " does not match data shape ", data.shape_);
  detail::CheckPoolReq("backward", req);
  if (req == kNullOp || data.shape_.Size() == 0) return;
  if (want.Size() == 0) {  // no windows: every input's gradient is zero
    Tensor<Device, dim, DType> dx = in_grad;
    if (req != kAddTo) dx = DType(0);
    return;
  }
  if (p.layout == Layout::kNHWC) {
    // x, y, dy moved channels first into the workspace, the gradient computed there, moved back.
    Stream<Device>* s = in_grad.stream_;
    const Shape<dim> to_first = detail::ChannelAxes<dim>(g.nd, true), to_last = detail::ChannelAxes<dim>(g.nd, false);
    const Shape<dim> xs = detail::Permute(data.shape_, to_first), ys = detail::Permute(want, to_first);
    const index_t xn = xs.Size(), yn = ys.Size();
    DType* ws = static_cast<DType*>(GetWorkspaceBytes<Device>(sizeof(DType) * size_t(2 * xn + 2 * yn), s));
    Tensor<Device, dim, DType> x(ws, xs, s), dx(ws + xn, xs, s), y(ws + 2 * xn, ys, s), dy(ws + 2 * xn + yn, ys, s);
    x = expr::transpose(data, to_first);
    y = expr::transpose(out, to_first);
    dy = expr::transpose(out_grad, to_first);
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    PoolingBackward(q, dy, x, y, kWriteTo, dx);
    Assign(in_grad, req, expr::transpose(dx, to_last));
    return;
  }
  if (detail::PoolUsesCoreExpr(p, g)) {
    if (g.nd == 2) return detail::PoolBackwardCore<2>(g, out_grad, data, out, req, in_grad);
    return detail::PoolBackwardCore<1>(g, out_grad, data, out, req, in_grad);
  }
  using T = Tensor<Device, dim, DType>;
  Assign(in_grad, req, detail::PoolingNdGradExp<T, T, T>(data, out, out_grad, g));
}

}  // namespace ops
}  // namespace tensorexpr
