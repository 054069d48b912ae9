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

template <int dim>
inline std::vector<index_t> PoolShapeVec(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void PoolingForward(const PoolingParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                    const Tensor<Device, dim, DType>& out) {
  const PoolGeometry g = MakePoolGeometry(p, detail::PoolShapeVec(data.shape_));
  const Shape<dim> want = InferPoolingShape(p, data.shape_);
  TE_CHECK(out.shape_ == want, "Pooling forward: output shape ", out.shape_, " does not match the expected ", want,
           " for data shape ", data.shape_);
  if (!DecodeReq(req, "Pooling forward").active || want.Size() == 0) return;
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
    if (g.is_max) {
      Assign(out, req, expr::pool<red::maximum>(data, g));
    } else {
      Assign(out, req, expr::pool<red::sum>(data, g));  // divided as g.divisor says
    }
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
  const ReqStore store = DecodeReq(req, "Pooling backward");
  if (!store.active || data.shape_.Size() == 0) return;
  if (want.Size() == 0) {  // no windows: every input's gradient is zero
    Tensor<Device, dim, DType> dx = in_grad;
    if (!store.add) dx = DType(0);
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
    if (g.is_max) {
      Assign(in_grad, req, expr::unpool<red::maximum>(data, out, out_grad, g));
    } else {
      Assign(in_grad, req, expr::unpool<red::sum>(data, out, out_grad, g));
    }
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
