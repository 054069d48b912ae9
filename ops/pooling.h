// ops/pooling.h — the template implementation of <tensorexpr/ops/pooling.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <string>
#include <type_traits>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/pooling.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

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

// Channels-first data as (planes, spatial...) of rank R = nd + 1: the leading dimensions (batch,
// channels, ...) merged into one. Only the last dimension may be padded, so the view is exact; each rank's
// instance of the pooling kernels then serves every rank with as many spatial dimensions.
template <int R, typename Device, int dim, typename DType>
inline Tensor<Device, R, DType> PoolPlanes(const Tensor<Device, dim, DType>& t) {
  static_assert(R <= dim, "");
  Shape<R> s;
  s[0] = t.shape_.ProdShape(0, dim - R + 1);
  for (int i = 1; i < R; ++i) s[i] = t.shape_[dim - R + i];
  return Tensor<Device, R, DType>(t.dptr_, s, t.stride_, t.stream_);
}

// The parameters for the planes view: global pooling names its spatial dimensions (the view has fewer
// leading ones, from which they would otherwise be inferred).
inline PoolingParam PlanesParam(const PoolingParam& p, const PoolGeometry& g) {
  PoolingParam q = p;
  if (q.global_pool) q.kernel.assign(g.k + 3 - g.nd, g.k + 3);
  return q;
}

// Calls fn(std::integral_constant<int, nd + 1>()) for a rank nd + 1 below dim (MakePoolGeometry has checked
// nd + 1 <= dim, and the caller that nd + 1 != dim).
template <int dim, typename Fn>
inline void WithPlanesRank(int nd, Fn&& fn) {
  if constexpr (dim >= 3) {
    if (nd == 1) return fn(std::integral_constant<int, 2>());
  }
  if constexpr (dim >= 4) {
    if (nd == 2) return fn(std::integral_constant<int, 3>());
  }
  if constexpr (dim >= 5) {
    if (nd == 3) return fn(std::integral_constant<int, 4>());
  }
  Fail("Pooling: ", nd, " spatial dimensions do not fit data of ", dim, " dimensions");
}

inline void CheckPoolReq(const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "Pooling ", what,
           ": unknown req ", static_cast<int>(req));
}

template <int dim>
inline std::vector<index_t> PoolShapeVec(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
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
    const Shape<dim> to_first = ChannelAxes<dim>(g.nd, true), to_last = ChannelAxes<dim>(g.nd, false);
    const Shape<dim> xs = Permute(data.shape_, to_first), ys = Permute(want, to_first);
    DType* ws = static_cast<DType*>(GetWorkspaceBytes<Device>(sizeof(DType) * size_t(xs.Size() + ys.Size()), s));
    Tensor<Device, dim, DType> x(ws, xs, s), y(ws + xs.Size(), ys, s);
    x = expr::transpose(data, to_first);
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    PoolingForward(q, x, kWriteTo, y);
    Assign(out, req, expr::transpose(y, to_last));
    return;
  }
  // The rank nd + 1 views (planes, spatial...) run the kernels (detail::PoolPlanes).
  if (g.nd + 1 != dim) {
    const PoolingParam q = detail::PlanesParam(p, g);
    return detail::WithPlanesRank<dim>(g.nd, [&](auto rank) {
      constexpr int R = decltype(rank)::value;
      PoolingForward(q, detail::PoolPlanes<R>(data), req, detail::PoolPlanes<R>(out));
    });
  }
  if constexpr (dim <= 4) {
    if constexpr (dim <= 3) {
      if (detail::PoolUsesCoreExpr(p, g)) return detail::PoolForwardCore<dim - 1>(g, data, req, out);
    }
    Assign(out, req, detail::PoolingNdExp<Tensor<Device, dim, DType>>(data, g, want));
  }
}

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
    const Shape<dim> to_first = ChannelAxes<dim>(g.nd, true), to_last = ChannelAxes<dim>(g.nd, false);
    const Shape<dim> xs = Permute(data.shape_, to_first), ys = Permute(want, to_first);
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
  if (g.nd + 1 != dim) {
    const PoolingParam q = detail::PlanesParam(p, g);
    return detail::WithPlanesRank<dim>(g.nd, [&](auto rank) {
      constexpr int R = decltype(rank)::value;
      using detail::PoolPlanes;
      PoolingBackward(q, PoolPlanes<R>(out_grad), PoolPlanes<R>(data), PoolPlanes<R>(out), req,
                      PoolPlanes<R>(in_grad));
    });
  }
  if constexpr (dim <= 4) {
    if constexpr (dim <= 3) {
      if (detail::PoolUsesCoreExpr(p, g)) return detail::PoolBackwardCore<dim - 1>(g, out_grad, data, out, req, in_grad);
    }
    using T = Tensor<Device, dim, DType>;
    Assign(in_grad, req, detail::PoolingNdGradExp<T, T, T>(data, out, out_grad, g));
  }
}

// Explicit instantiations for one device and dtype, ranks 2 to 5 (ops/pooling.cc).
#define TE_POOLING_INSTANCE_(Device, dim, DType) \
  template void PoolingForward<Device, dim, DType>(const PoolingParam& p, const Tensor<Device, dim, DType>& data, \
      OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void PoolingBackward<Device, dim, DType>(const PoolingParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data, \
      const Tensor<Device, dim, DType>& out, OpReqType req, const Tensor<Device, dim, DType>& in_grad);
#define TE_INSTANTIATE_POOLING(Device, DType) TE_OPS_RANKS_FROM_2(TE_POOLING_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
