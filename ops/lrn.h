// ops/lrn.h — the template implementation of <tensorexpr/ops/lrn.h> (see there), compiled into tensorexpr_ops /
// tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/lrn.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

template <int dim>
inline void CheckLRN(const char* what, const LRNParam& p, OpReqType req, const Shape<dim>& a, const char* a_name,
                     const Shape<dim>& b, const char* b_name) {
  InferLRNShape(p, a);
  DecodeReq(req, what);
  TE_CHECK(a == b, what, ": ", a_name, " shape ", a, " and ", b_name, " shape ", b, " differ");
}

// (N, C, spatial...) as (N, C, rows, W): the channels where chpool pools them, each row's stride kept.
template <typename Device, int dim, typename DType>
inline Tensor<Device, 4, DType> LRNView(const Tensor<Device, dim, DType>& t) {
  const Shape<dim>& s = t.shape_;
  return Tensor<Device, 4, DType>(t.dptr_, Shape4(s[0], s[1], s.ProdShape(2, dim - 1), s[dim - 1]), t.stride_,
                                  t.stream_);
}

// The window of each channel as pooling windows over (C, rows, W) of the (N, C, rows, W) view: along C,
// nsize channels starting `before` channels back, clipped to the channels that exist (a sum of the squares
// that are there); along rows and W, the element itself.
inline PoolWindows LRNWindows(const LRNParam& p, const Shape<4>& s, index_t before) {
  PoolWindows w;
  w.nd = 3;
  for (int a = 0; a < 3; ++a) w.in[a] = w.out[a] = s[a + 1];
  w.k[0] = p.nsize;
  w.p[0] = before;
  return w;
}

// The forward's window: channels [c - (nsize - 1) / 2, c + nsize / 2].
inline index_t LRNBefore(const LRNParam& p) { return (p.nsize - 1) / 2; }

// knorm + alpha / nsize * the window's sum of squares, from that sum.
template <typename A, typename E>
inline auto LRNNorm(const LRNParam& p, const E& sum) {
  return expr::scalar<A>(A(p.knorm)) + expr::scalar<A>(A(p.alpha / double(p.nsize))) * sum;
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void LRNForward(const LRNParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                const Tensor<Device, dim, DType>& out) {
  detail::CheckLRN("LRN forward", p, req, data.shape_, "data", out.shape_, "output");
  if (req == kNullOp || data.shape_.Size() == 0) return;
  using A = compute_t<DType>;
  const Tensor<Device, 4, DType> x = detail::LRNView(data);
  Tensor<Device, 4, A> sum = get_space_typed<Device, 4, A>(x.shape_, out.stream_);
  sum = expr::pool<red::sum>(expr::F<op::square>(expr::tcast<A>(x)), detail::LRNWindows(p, x.shape_, detail::LRNBefore(p)));
  Assign(detail::LRNView(out), req,
         expr::tcast<DType>(expr::tcast<A>(x) *
                            expr::F<op::power>(detail::LRNNorm<A>(p, sum), expr::scalar<A>(A(-p.beta)))));
}

template <typename Device, int dim, typename DType>
void LRNBackward(const LRNParam& p, const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data,
                 OpReqType req, const Tensor<Device, dim, DType>& data_grad) {
  detail::CheckLRN("LRN backward", p, req, data.shape_, "data", out_grad.shape_, "output gradient");
  detail::CheckLRN("LRN backward", p, req, data.shape_, "data", data_grad.shape_, "data gradient");
  if (req == kNullOp || data.shape_.Size() == 0) return;
  using A = compute_t<DType>;
  const Tensor<Device, 4, DType> x = detail::LRNView(data), dy = detail::LRNView(out_grad);
  const index_t n = x.shape_.Size();
  Stream<Device>* s = data_grad.stream_;
  // The window sums and t = dy * x * norm^(-beta - 1) side by side in one workspace (a second request would
  // reuse the first's memory).
  const Tensor<Device, 1, A> both = get_space_typed<Device, 1, A>(Shape1(2 * n), s);
  Tensor<Device, 4, A> sum(both.dptr_, x.shape_, s), t(both.dptr_ + n, x.shape_, s);
  sum = expr::pool<red::sum>(expr::F<op::square>(expr::tcast<A>(x)), detail::LRNWindows(p, x.shape_, detail::LRNBefore(p)));
  t = expr::tcast<A>(dy) * expr::tcast<A>(x) *
      expr::F<op::power>(detail::LRNNorm<A>(p, sum), expr::scalar<A>(A(-p.beta - 1)));
  // Channel j receives t from every channel c whose window holds it: c in [j - nsize / 2, j + (nsize - 1) / 2],
  // the forward's window mirrored (the same one for an odd nsize).
  Assign(detail::LRNView(data_grad), req,
         expr::tcast<DType>(
             expr::tcast<A>(dy) * expr::F<op::power>(detail::LRNNorm<A>(p, sum), expr::scalar<A>(A(-p.beta))) -
             expr::scalar<A>(A(2 * p.alpha * p.beta / double(p.nsize))) * expr::tcast<A>(x) *
                 expr::pool<red::sum>(t, detail::LRNWindows(p, x.shape_, p.nsize / 2))));
}

// Explicit instantiations for one device and dtype, ranks 3 to 5 (ops/lrn.cc).
#define TE_LRN_INSTANCE_(Device, dim, DType) \
  template void LRNForward<Device, dim, DType>(const LRNParam& p, const Tensor<Device, dim, DType>& data, \
      OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void LRNBackward<Device, dim, DType>(const LRNParam& p, const Tensor<Device, dim, DType>& out_grad, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& data_grad);
#define TE_INSTANTIATE_LRN(Device, DType) TE_OPS_RANKS_FROM_3(TE_LRN_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
