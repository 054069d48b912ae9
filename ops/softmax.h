// ops/softmax.h — the template implementation of <tensorexpr/ops/softmax.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/softmax.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

// The checks every pass makes; returns the axis counted from the front.
template <int dim>
inline int CheckSoftmax(const char* what, const SoftmaxParam& p, OpReqType req, const Shape<dim>& a,
                        const char* a_name, const Shape<dim>& b, const char* b_name) {
  InferSoftmaxShape(p, a);
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, what, ": unknown req ",
           static_cast<int>(req));
  TE_CHECK(a == b, what, ": ", a_name, " shape ", a, " and ", b_name, " shape ", b, " differ");
  return p.axis < 0 ? p.axis + dim : p.axis;
}

// Every rank runs as rank 4, so the passes are compiled once per dtype rather than once per rank: the
// leading dimensions of a tensor are one run of rows at its pitch, so any tensor has the view
// (before, axis, between, last) with the axis at 1, or (before, 1, 1, last) with the axis at 3 when it is
// the last one. Both keep the tensor's own row pitch, so padded views still work.
constexpr int kSoftmaxRank = 4;

inline int SoftmaxAxisInView(int axis, int dim) { return axis == dim - 1 ? 3 : 1; }

template <typename Device, int dim, typename DType>
inline Tensor<Device, kSoftmaxRank, DType> SoftmaxView(const Tensor<Device, dim, DType>& t, int axis) {
  const index_t last = t.shape_[dim - 1];
  index_t before = 1, between = 1;
  for (int i = 0; i < axis; ++i) before *= t.shape_[i];
  Shape<kSoftmaxRank> view = Shape4(before, 1, 1, last);
  if constexpr (dim > 1) {
    if (axis < dim - 1) {
      for (int i = axis + 1; i < dim - 1; ++i) between *= t.shape_[i];
      view = Shape4(before, t.shape_[axis], between, last);
    }
  }
  return Tensor<Device, kSoftmaxRank, DType>(t.dptr_, view, t.stride_, t.stream_);
}

// The data's shape with extent 1 at `axis`: one value per softmax.
template <int dim>
inline Shape<dim> SoftmaxReducedShape(Shape<dim> s, int axis) {
  s[axis] = 1;
  return s;
}

// The two halves of log-sum-exp along the axis, lse = max + log_sum: max = max_axis x and
// log_sum = log(sum_axis exp(x - max)), in compute_t<DType>, in the workspace of `s`. Kept apart
// because (x - max) - log_sum is exact to the ulp of small numbers, where x - lse would carry the
// rounding of lse, which is as large as x (an ulp of 1000 is 6e-5 in float).
template <typename Device, int dim, typename A>
struct LogSumExpParts {
  Tensor<Device, dim, A> max, log_sum;
};

template <typename Device, int dim, typename DType>
inline LogSumExpParts<Device, dim, compute_t<DType>> LogSumExp(const Tensor<Device, dim, DType>& x, int axis,
                                                               Stream<Device>* s) {
  using A = compute_t<DType>;
  const Shape<dim> r = SoftmaxReducedShape(x.shape_, axis);
  Tensor<Device, 1, A> both = get_space_typed<Device, 1, A>(Shape1(2 * r.Size()), s);
  LogSumExpParts<Device, dim, A> p{Tensor<Device, dim, A>(both.dptr_, r, s),
                                   Tensor<Device, dim, A>(both.dptr_ + r.Size(), r, s)};
  p.max = expr::reduce_with_axis<red::maximum, true>(expr::tcast<A>(x), axis);
  p.log_sum = expr::reduce_with_axis<red::sum, true>(
      expr::F<op::exp>(expr::tcast<A>(x) - expr::broadcast_keepdim(p.max, axis, x.shape_[axis])), axis);
  p.log_sum = expr::F<op::log>(p.log_sum);
  return p;
}

// Forward of softmax (kLog false) or log-softmax on the rank-4 views: out = exp(x - lse) or x - lse.
template <bool kLog, typename Device, typename DType>
void SoftmaxForwardView(int axis, const Tensor<Device, kSoftmaxRank, DType>& data, OpReqType req,
                        const Tensor<Device, kSoftmaxRank, DType>& out) {
  using A = compute_t<DType>;
  const auto lse = LogSumExp(data, axis, out.stream_);
  const index_t n = data.shape_[axis];
  const auto shifted = (expr::tcast<A>(data) - expr::broadcast_keepdim(lse.max, axis, n)) -
                       expr::broadcast_keepdim(lse.log_sum, axis, n);
  if constexpr (kLog) {
    Assign(out, req, expr::tcast<DType>(shifted));
  } else {
    Assign(out, req, expr::tcast<DType>(expr::F<op::exp>(shifted)));
  }
}

// Backward from the forward output y, on the rank-4 views: softmax dx = y * (dy - sum(dy * y));
// log-softmax dx = dy - exp(y) * sum(dy).
template <bool kLog, typename Device, typename DType>
void SoftmaxBackwardView(int axis, const Tensor<Device, kSoftmaxRank, DType>& out_grad,
                         const Tensor<Device, kSoftmaxRank, DType>& out, OpReqType req,
                         const Tensor<Device, kSoftmaxRank, DType>& in_grad) {
  using A = compute_t<DType>;
  const auto y = expr::tcast<A>(out);
  const auto dy = expr::tcast<A>(out_grad);
  Tensor<Device, kSoftmaxRank, A> sum =
      get_space_typed<Device, kSoftmaxRank, A>(SoftmaxReducedShape(out.shape_, axis), in_grad.stream_);
  const auto sum_all = expr::broadcast_keepdim(sum, axis, out.shape_[axis]);
  if constexpr (kLog) {
    sum = expr::reduce_with_axis<red::sum, true>(dy, axis);
    Assign(in_grad, req, expr::tcast<DType>(dy - expr::F<op::exp>(y) * sum_all));
  } else {
    sum = expr::reduce_with_axis<red::sum, true>(dy * y, axis);
    Assign(in_grad, req, expr::tcast<DType>(y * (dy - sum_all)));
  }
}

template <bool kLog, typename Device, int dim, typename DType>
void SoftmaxForwardPass(const char* what, const SoftmaxParam& p, const Tensor<Device, dim, DType>& data,
                        OpReqType req, const Tensor<Device, dim, DType>& out) {
  const int axis = CheckSoftmax(what, p, req, data.shape_, "data", out.shape_, "output");
  if (req == kNullOp || data.shape_.Size() == 0) return;
  SoftmaxForwardView<kLog>(SoftmaxAxisInView(axis, dim), SoftmaxView(data, axis), req, SoftmaxView(out, axis));
}

template <bool kLog, typename Device, int dim, typename DType>
void SoftmaxBackwardPass(const char* what, const SoftmaxParam& p, const Tensor<Device, dim, DType>& out_grad,
                         const Tensor<Device, dim, DType>& out, OpReqType req,
                         const Tensor<Device, dim, DType>& in_grad) {
  const int axis = CheckSoftmax(what, p, req, out.shape_, "output", out_grad.shape_, "output gradient");
  CheckSoftmax(what, p, req, out.shape_, "output", in_grad.shape_, "input gradient");
  if (req == kNullOp || out.shape_.Size() == 0) return;
  SoftmaxBackwardView<kLog>(SoftmaxAxisInView(axis, dim), SoftmaxView(out_grad, axis), SoftmaxView(out, axis), req,
                            SoftmaxView(in_grad, axis));
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void SoftmaxForward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                    const Tensor<Device, dim, DType>& out) {
  detail::SoftmaxForwardPass<false>("Softmax forward", p, data, req, out);
}

template <typename Device, int dim, typename DType>
void LogSoftmaxForward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                       const Tensor<Device, dim, DType>& out) {
  detail::SoftmaxForwardPass<true>("LogSoftmax forward", p, data, req, out);
}

template <typename Device, int dim, typename DType>
void SoftmaxBackward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& out_grad,
                     const Tensor<Device, dim, DType>& out, OpReqType req, const Tensor<Device, dim, DType>& in_grad) {
  detail::SoftmaxBackwardPass<false>("Softmax backward", p, out_grad, out, req, in_grad);
}

template <typename Device, int dim, typename DType>
void LogSoftmaxBackward(const SoftmaxParam& p, const Tensor<Device, dim, DType>& out_grad,
                        const Tensor<Device, dim, DType>& out, OpReqType req,
                        const Tensor<Device, dim, DType>& in_grad) {
  detail::SoftmaxBackwardPass<true>("LogSoftmax backward", p, out_grad, out, req, in_grad);
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/softmax.cc).
#define TE_SOFTMAX_INSTANCE_(Device, dim, DType) \
  template void SoftmaxForward<Device, dim, DType>(const SoftmaxParam& p, const Tensor<Device, dim, DType>& data, \
      OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void SoftmaxBackward<Device, dim, DType>(const SoftmaxParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& out, OpReqType req, \
      const Tensor<Device, dim, DType>& in_grad); \
  template void LogSoftmaxForward<Device, dim, DType>(const SoftmaxParam& p, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void LogSoftmaxBackward<Device, dim, DType>(const SoftmaxParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& out, OpReqType req, \
      const Tensor<Device, dim, DType>& in_grad);
#define TE_INSTANTIATE_SOFTMAX(Device, DType) TE_OPS_RANKS_FROM_1(TE_SOFTMAX_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
