// ops/sgd.h — the template implementation of <tensorexpr/ops/sgd.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/sgd.h>
#include "fused_update.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

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

// mom = momentum * mom - lr * wd * w - lr * g;  the new weight is w + mom. (MXNet's order of terms: the
// decay is not part of the clipped gradient.)
struct SGDMomRule {
  GradientRule grad;  // rescale and clip only (wd = 0)
  double lr, momentum, lr_wd;
  static constexpr int kStates = 1;
  template <typename A>
  TE_XINLINE A Step(A w, A g, A* state) const {
    state[0] = state[0] * A(momentum) - w * A(lr_wd) - g * A(lr);
    return w + state[0];
  }
};

}  // namespace detail

template <typename Device, int dim, typename DType>
void SGDUpdate(const SGDParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
               OpReqType req, const Tensor<Device, dim, DType>& out) {
  using A = compute_t<DType>;
  detail::CheckSGDReq(req, "sgd_update");
  detail::CheckUpdateTensor("sgd_update", "gradient", grad, weight.shape_);
  detail::CheckUpdateTensor("sgd_update", "output", out, weight.shape_);
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
  const char* op = "sgd_mom_update";
  detail::CheckSGDReq(req, op);
  detail::CheckUpdateTensor(op, "gradient", grad, weight.shape_);
  detail::CheckUpdateTensor(op, "momentum", mom, weight.shape_);
  detail::CheckUpdateTensor(op, "output", out, weight.shape_);
  // One pass: each element's momentum is stored as its new weight is computed (ops/fused_update.h).
  const detail::SGDMomRule rule{{p.rescale_grad, p.clip_gradient, 0.0}, p.lr, p.momentum, p.lr * p.wd};
  const Tensor<Device, dim, DType> states[1] = {mom};
  detail::RunFusedUpdate(rule, weight, grad, states, req, out);
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
