// ops/pooling.h — the template implementation of <tensorexpr/ops/pooling.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <string>
#include <type_traits>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/pooling.h>
#include <tensorexpr/workspace.h>
#include "border.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

// Channels-first data as (planes, D, H, W): the leading dimensions (batch, channels, ...) merged into
// one, and spatial dimensions of extent 1 in front of 1-D and 2-D data. Only the last dimension may be
// padded, so the view is exact; the rank-4 instance of the pooling kernels then serves every rank.
template <typename Device, int dim, typename DType>
inline Tensor<Device, 4, DType> PoolVolumes(const Tensor<Device, dim, DType>& t, int nd) {
  Shape<4> s = Shape4(t.shape_.ProdShape(0, dim - nd), 1, 1, 1);
  for (int i = 0; i < nd; ++i) s[4 - nd + i] = t.shape_[dim - nd + i];
  return Tensor<Device, 4, DType>(t.dptr_, s, t.stride_, t.stream_);
}

// The parameters for the volumes view: global pooling names its spatial dimensions (the view has other
// leading ones, from which they would otherwise be inferred).
inline PoolingParam VolumesParam(const PoolingParam& p, const PoolGeometry& g) {
  PoolingParam q = p;
  if (q.global_pool) q.kernel.assign(g.k + 3 - g.nd, g.k + 3);
  return q;
}

// Channels-last data (leading..., spatial..., C) as (L, S, C): leading and spatial dimensions merged
// (only the last dimension may be padded, so the view is exact). Moving channels first or back is then
// one rank-3 transpose, (L, S, C) <-> (L, C, S), whatever the rank: one instance serves every rank.
template <int dim, typename Device, typename DType>
inline Tensor<Device, 3, DType> ChannelsLastRows(const Tensor<Device, dim, DType>& t, int nd) {
  return Tensor<Device, 3, DType>(t.dptr_,
                                  Shape3(t.shape_.ProdShape(0, dim - 1 - nd), t.shape_.ProdShape(dim - 1 - nd, dim - 1),
                                         t.shape_[dim - 1]),
                                  t.stride_, t.stream_);
}
// The same (L, S, C) tensor moved channels first, (L, C, S), in memory at ws; and its shape as a
// channels-first tensor of rank dim.
template <typename Device, typename DType>
inline Tensor<Device, 3, DType> ChannelsFirstRows(DType* ws, const Shape<3>& lsc, Stream<Device>* s) {
  return Tensor<Device, 3, DType>(ws, Shape3(lsc[0], lsc[2], lsc[1]), s);
}
inline const Shape<3> kSwapLastTwo = Shape3(0, 2, 1);

// Integer data pools by its maximum only: an average would have to round.
template <typename DType>
[[noreturn]] inline void FailIntegerAverage(const char* pass) {
  Fail("Pooling ", pass, ": average pooling of ", DataType<DType>::name(),
       " data; integer types take max pooling only");
}

// A border that is data (PoolBorderIsData): the padding of the data's spatial dimensions, the end grown to
// the last window's reach (the full convention) or cut to it, and the parameters that pool the padded copy
// without padding into the same output shape (the valid convention).
template <int dim>
BorderPads<dim> PoolBorderPads(const PoolingParam& p, const PoolGeometry& g) {
  index_t after[3];
  for (int i = 0; i < 3; ++i)
    after[i] = std::max<index_t>(0, (g.out[i] - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] + 1 - g.in[i] - g.p[i]);
  return MakeBorderPads<dim>(p.layout == Layout::kNHWC ? dim - 1 - g.nd : dim - g.nd, g.nd, g.p, after);
}
// The border to pad, any = false when the border is not data (PoolBorderIsData) or nothing is padded.
template <int dim>
BorderPads<dim> PoolBorder(const PoolingParam& p, const PoolGeometry& g) {
  return PoolBorderIsData(p) ? PoolBorderPads<dim>(p, g) : BorderPads<dim>();
}
inline PoolingParam PoolWithoutPadding(const PoolingParam& p) {
  PoolingParam q = WithoutPadding(p);
  q.pooling_convention = PoolingConvention::kValid;
  return q;
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
  if (PoolBorderIsData(p)) detail::BorderValue<DType>("Pooling", p.pad_value.value_or(0.0));  // with or without padding
  const detail::BorderPads<dim> border = detail::PoolBorder<dim>(p, g);
  if (p.layout == Layout::kNHWC) {
    // Moved channels first into the workspace (x, then y), pooled there, moved back into out.
    Stream<Device>* s = out.stream_;
    const Shape<dim> to_first = ChannelAxes<dim>(g.nd, true);
    const Shape<dim> xs = Permute(data.shape_, to_first), ys = Permute(want, to_first);
    DType* ws = static_cast<DType*>(GetWorkspaceBytes<Device>(sizeof(DType) * size_t(xs.Size() + ys.Size()), s));
    using detail::ChannelsLastRows, detail::ChannelsFirstRows, detail::kSwapLastTwo;
    const Tensor<Device, 3, DType> x_rows = ChannelsLastRows(data, g.nd), y_rows = ChannelsLastRows(out, g.nd);
    ChannelsFirstRows(ws, x_rows.shape_, s) = expr::transpose(x_rows, kSwapLastTwo);
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    PoolingForward(q, Tensor<Device, dim, DType>(ws, xs, s), kWriteTo, Tensor<Device, dim, DType>(ws + xs.Size(), ys, s));
    Assign(y_rows, req, expr::transpose(ChannelsFirstRows(ws + xs.Size(), y_rows.shape_, s), kSwapLastTwo));
    return;
  }
  if constexpr (dim != 4) {  // the rank-4 views run the kernels (detail::PoolVolumes)
    PoolingForward(detail::VolumesParam(p, g), detail::PoolVolumes(data, g.nd), req, detail::PoolVolumes(out, g.nd));
  } else if (border.any) {
    // A border that is data, on the rank-4 view only: one instance of pad per dtype.
    const auto padded = detail::PadBorder("Pooling", data, border, p.pad_mode, p.pad_value.value_or(0.0), out.stream_);
    PoolingForward(detail::PoolWithoutPadding(p), padded.view(), req, out);
  } else if (g.is_max) {
    Assign(out, req, expr::pool<red::maximum>(data, g));
  } else if constexpr (std::is_integral<DType>::value) {
    detail::FailIntegerAverage<DType>("forward");
  } else {
    Assign(out, req, expr::pool<red::sum>(data, g));  // divided as g.divisor says
  }
}

template <typename Device, int dim, typename DType>
void PoolingForwardWithIndices(const PoolingParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                               const Tensor<Device, dim, DType>& out, const Tensor<Device, dim, int64_t>& indices) {
  TE_CHECK(p.pool_type == PoolType::kMax, "Pooling forward with indices: the indices are max pooling's; pool_type is average");
  TE_CHECK(p.layout == Layout::kNCHW, "Pooling forward with indices: channels-first data only (the indices number the ",
           "data's elements in that order)");
  TE_CHECK(!PoolBorderIsData(p), "Pooling forward with indices: pad_mode ", PadModeName(p.pad_mode),
           p.pad_value ? " with a pad_value" : "", " makes the border data, and the indices number only the data's own elements");
  const PoolGeometry g = MakePoolGeometry(p, detail::PoolShapeVec(data.shape_));
  TE_CHECK(indices.shape_ == InferPoolingShape(p, data.shape_), "Pooling forward with indices: indices shape ",
           indices.shape_, " does not match the output shape ", InferPoolingShape(p, data.shape_), " for data shape ",
           data.shape_);
  PoolingForward(p, data, req, out);
  if (indices.shape_.Size() == 0) return;
  // As (planes, D, H, W), the views the pooling runs on: the windows' flat indices are the data's.
  Assign(detail::PoolVolumes(indices, g.nd), kWriteTo, expr::pool_argmax(detail::PoolVolumes(data, g.nd), g));
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
  const detail::BorderPads<dim> border = detail::PoolBorder<dim>(p, g);
  if (PoolBorderIsData(p)) {
    detail::BorderValue<DType>("Pooling", p.pad_value.value_or(0.0));
    // A window holding an element twice (itself and a copy of it in the border) would pass it the
    // gradient once per copy: max pooling's rule sends it to every element equal to the maximum.
    TE_CHECK(!g.is_max || p.pad_mode == PadMode::kConstant || !border.any,
             "Pooling backward: max pooling with pad_mode ", PadModeName(p.pad_mode),
             " has no gradient here (a window can hold an element and its copy in the border); the forward ",
             "takes it, and pad_mode constant has one");
  }
  if (p.layout == Layout::kNHWC) {
    // x, y, dy moved channels first into the workspace, the gradient computed there, moved back.
    Stream<Device>* s = in_grad.stream_;
    const Shape<dim> to_first = ChannelAxes<dim>(g.nd, true);
    const Shape<dim> xs = Permute(data.shape_, to_first), ys = Permute(want, to_first);
    const index_t xn = xs.Size(), yn = ys.Size();
    DType* ws = static_cast<DType*>(GetWorkspaceBytes<Device>(sizeof(DType) * size_t(2 * xn + 2 * yn), s));
    using detail::ChannelsLastRows, detail::ChannelsFirstRows, detail::kSwapLastTwo;
    const Tensor<Device, 3, DType> x_rows = ChannelsLastRows(data, g.nd), y_rows = ChannelsLastRows(out, g.nd);
    DType *x = ws, *dx = ws + xn, *y = ws + 2 * xn, *dy = ws + 2 * xn + yn;
    ChannelsFirstRows(x, x_rows.shape_, s) = expr::transpose(x_rows, kSwapLastTwo);
    ChannelsFirstRows(y, y_rows.shape_, s) = expr::transpose(y_rows, kSwapLastTwo);
    ChannelsFirstRows(dy, y_rows.shape_, s) = expr::transpose(ChannelsLastRows(out_grad, g.nd), kSwapLastTwo);
    PoolingParam q = p;
    q.layout = Layout::kNCHW;
    using T = Tensor<Device, dim, DType>;
    PoolingBackward(q, T(dy, ys, s), T(x, xs, s), T(y, ys, s), kWriteTo, T(dx, xs, s));
    Assign(ChannelsLastRows(in_grad, g.nd), req, expr::transpose(ChannelsFirstRows(dx, x_rows.shape_, s), kSwapLastTwo));
    return;
  }
  if constexpr (dim != 4) {  // the rank-4 views run the kernels (detail::PoolVolumes)
    using detail::PoolVolumes;
    PoolingBackward(detail::VolumesParam(p, g), PoolVolumes(out_grad, g.nd), PoolVolumes(data, g.nd),
                    PoolVolumes(out, g.nd), req, PoolVolumes(in_grad, g.nd));
  } else if (border.any) {
    // The padded copy's gradient, summed back onto the data; on the rank-4 view only.
    Stream<Device>* s = in_grad.stream_;
    const auto padded = detail::PadBorder("Pooling", data, border, p.pad_mode, p.pad_value.value_or(0.0), s);
    TensorContainer<Device, dim, DType> padded_grad;
    padded_grad.set_stream(s);
    padded_grad.Resize(padded.shape_);
    PoolingBackward(detail::PoolWithoutPadding(p), out_grad, padded.view(), out, kWriteTo, padded_grad.view());
    detail::UnpadInto(in_grad, req, padded_grad.view(), border, p.pad_mode, s);
  } else if (g.is_max) {
    Assign(in_grad, req, expr::unpool<red::maximum>(data, out, out_grad, g));
  } else if constexpr (std::is_integral<DType>::value) {
    detail::FailIntegerAverage<DType>("backward");
  } else {
    Assign(in_grad, req, expr::unpool<red::sum>(data, out, out_grad, g));
  }
}

// Explicit instantiations for one device and dtype, ranks 2 to 5 (ops/pooling.cc).
#define TE_POOLING_INSTANCE_(Device, dim, DType) \
  template void PoolingForward<Device, dim, DType>(const PoolingParam& p, const Tensor<Device, dim, DType>& data, \
      OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void PoolingForwardWithIndices<Device, dim, DType>(const PoolingParam& p, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out, \
      const Tensor<Device, dim, int64_t>& indices); \
  template void PoolingBackward<Device, dim, DType>(const PoolingParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data, \
      const Tensor<Device, dim, DType>& out, OpReqType req, const Tensor<Device, dim, DType>& in_grad);
#define TE_INSTANTIATE_POOLING(Device, DType) TE_OPS_RANKS_FROM_2(TE_POOLING_INSTANCE_, Device, DType)
// The standard dtypes and the integer types max pooling takes (ONNX's MaxPool: int8 and uint8; int32 and
// int64 too).
#define TE_POOLING_FOR_EACH_DTYPE(INSTANCE, Device) \
  TE_OPS_FOR_EACH_DTYPE(INSTANCE, Device) \
  INSTANCE(Device, int8_t) INSTANCE(Device, uint8_t) INSTANCE(Device, int32_t) INSTANCE(Device, int64_t)

}  // namespace ops
}  // namespace tensorexpr
