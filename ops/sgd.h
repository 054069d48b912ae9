// ops/sgd.h — the template implementation of <tensorexpr/ops/sgd.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/sgd.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

template <typename Device, int dim, typename DType>
inline void CheckSGDShape(const Tensor<Device, dim, DType>& t, const Shape<dim>& weight, const char* op,
                          const char* name) {
  TE_CHECK(t.shape_ == weight, op, ": ", name, " shape ", t.shape_, " does not match weight shape ", weight);
}

inline void CheckSGDReq(OpReqType req, const char* op) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, op, ": unknown req ",
           static_cast<int>(req));
}

// Calls fn(g) with g = clip(rescale * grad) as a compute_t<DType> expression (the clip only when asked).
template <typename A, typename Device, int dim, typename DType, typename Fn>
inline void WithRescaledGrad(const Tensor<Device, dim, DType>& grad, double rescale, double clip, Fn&& fn) {
  const auto g = expr::tcast<A>(grad) * A(rescale);
  if (clip >= 0) {
    fn(expr::F<op::clip>(g, A(clip)));
  } else {
    fn(g);
  }
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void SGDUpdate(const SGDParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
               OpReqType req, const Tensor<Device, dim, DType>& out) {
  using A = compute_t<DType>;
  detail::CheckSGDReq(req, "sgd_update");
  detail::CheckSGDShape(grad, weight.shape_, "sgd_update", "gradient");
  detail::CheckSGDShape(out, weight.shape_, "sgd_update", "output");
  // Elementwise, so every rank runs as its (rows, last dimension) view: one instance of the kernels.
  if constexpr (dim != 2) {
    SGDUpdate(p, weight.FlatTo2D(), grad.FlatTo2D(), req, out.FlatTo2D());
  } else {
    if (req == kNullOp) return;
    const A decay = A(1.0 - p.lr * p.wd), lr = A(p.lr);
    detail::WithRescaledGrad<A>(grad, p.rescale_grad, p.clip_gradient, [&](const auto& g) {
      Assign(out, req, expr::tcast<DType>(expr::tcast<A>(weight) * decay - g * lr));
    });
  }
}

template <typename Device, int dim, typename DType>
void SGDMomUpdate(const SGDMomParam& p, const Tensor<Device, dim, DType>& weight,
                  const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& mom, OpReqType req,
                  const Tensor<Device, dim, DType>& out) {
  using A = compute_t<DType>;
  detail::CheckSGDReq(req, "sgd_mom_update");
  detail::CheckSGDShape(grad, weight.shape_, "sgd_mom_update", "gradient");
  detail::CheckSGDShape(mom, weight.shape_, "sgd_mom_update", "momentum");
  detail::CheckSGDShape(out, weight.shape_, "sgd_mom_update", "output");
  if constexpr (dim != 2) {
    SGDMomUpdate(p, weight.FlatTo2D(), grad.FlatTo2D(), mom.FlatTo2D(), req, out.FlatTo2D());
  } else {
    if (req == kNullOp) return;
    const A momentum = A(p.momentum), lr = A(p.lr), lr_wd = A(p.lr * p.wd);
    Tensor<Device, dim, DType> state = mom;
    detail::WithRescaledGrad<A>(grad, p.rescale_grad, p.clip_gradient, [&](const auto& g) {
      state = expr::tcast<DType>(expr::tcast<A>(mom) * momentum - expr::tcast<A>(weight) * lr_wd - g * lr);
    });
    Assign(out, req, weight + mom);
  }
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/sgd.cc).
#define TE_SGD_INSTANCE_(Device, dim, DType) \
  template void SGDUpdate<Device, dim, DType>(const SGDParam& p, const Tensor<Device, dim, DType>& weight, \
      const Tensor<Device, dim, DType>& grad, OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void SGDMomUpdate<Device, dim, DType>(const SGDMomParam& p, const Tensor<Device, dim, DType>& weight, \
      const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& mom, OpReqType req, \
      const Tensor<Device, dim, DType>& out);
#define TE_INSTANTIATE_SGD(Device, DType) TE_OPS_RANKS_FROM_1(TE_SGD_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
