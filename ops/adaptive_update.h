// ops/adaptive_update.h — the template implementation of <tensorexpr/ops/adaptive_update.h> (see there),
// compiled into tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
//
// One pass (ops/fused_update.h): each element's new state is stored as its new weight is computed.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/adaptive_update.h>
#include "fused_update.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

struct AdamRule {
  GradientRule grad;
  double lr, beta1, beta2, epsilon;
  static constexpr int kStates = 2;
  template <typename A>
  TE_XINLINE A Step(A w, A g, A* state) const {  // state: mean, var
    state[0] = A(beta1) * state[0] + A(1 - beta1) * g;
    state[1] = A(beta2) * state[1] + A(1 - beta2) * g * g;
    return w - A(lr) * state[0] / (math::sqrt(state[1]) + A(epsilon));
  }
};

struct RMSPropRule {
  GradientRule grad;
  double lr, gamma1, epsilon;
  static constexpr int kStates = 1;
  template <typename A>
  TE_XINLINE A Step(A w, A g, A* state) const {  // state: n
    state[0] = A(gamma1) * state[0] + A(1 - gamma1) * g * g;
    return w - A(lr) * g / math::sqrt(state[0] + A(epsilon));
  }
};

inline void CheckUpdateParams(const char* op, OpReqType req, double lr, double epsilon,
                              std::initializer_list<double> decays) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, op, ": unknown req ",
           static_cast<int>(req));
  TE_CHECK(std::isfinite(lr), op, ": lr = ", lr, " must be a finite number");
  TE_CHECK(epsilon >= 0, op, ": epsilon = ", epsilon, " must be >= 0");
  for (double d : decays) TE_CHECK(d >= 0 && d <= 1, op, ": a decay rate of ", d, " is outside [0, 1]");
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void AdamUpdate(const AdamParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
                const Tensor<Device, dim, DType>& mean, const Tensor<Device, dim, DType>& var, OpReqType req,
                const Tensor<Device, dim, DType>& out) {
  const char* op = "adam_update";
  detail::CheckUpdateParams(op, req, p.lr, p.epsilon, {p.beta1, p.beta2});
  detail::CheckUpdateTensor(op, "gradient", grad, weight.shape_);
  detail::CheckUpdateTensor(op, "mean", mean, weight.shape_);
  detail::CheckUpdateTensor(op, "var", var, weight.shape_);
  detail::CheckUpdateTensor(op, "output", out, weight.shape_);
  const detail::AdamRule rule{{p.rescale_grad, p.clip_gradient, p.wd}, p.lr, p.beta1, p.beta2, p.epsilon};
  const Tensor<Device, dim, DType> states[2] = {mean, var};
  detail::RunFusedUpdate(rule, weight, grad, states, req, out);
}

template <typename Device, int dim, typename DType>
void RMSPropUpdate(const RMSPropParam& p, const Tensor<Device, dim, DType>& weight,
                   const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& n, OpReqType req,
                   const Tensor<Device, dim, DType>& out) {
  const char* op = "rmsprop_update";
  detail::CheckUpdateParams(op, req, p.lr, p.epsilon, {p.gamma1});
  detail::CheckUpdateTensor(op, "gradient", grad, weight.shape_);
  detail::CheckUpdateTensor(op, "n", n, weight.shape_);
  detail::CheckUpdateTensor(op, "output", out, weight.shape_);
  const detail::RMSPropRule rule{{p.rescale_grad, p.clip_gradient, p.wd}, p.lr, p.gamma1, p.epsilon};
  const Tensor<Device, dim, DType> states[1] = {n};
  detail::RunFusedUpdate(rule, weight, grad, states, req, out);
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/adaptive_update.cc).
#define TE_ADAPTIVE_UPDATE_INSTANCE_(Device, dim, DType) \
  template void AdamUpdate<Device, dim, DType>(const AdamParam& p, const Tensor<Device, dim, DType>& weight, \
      const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& mean, \
      const Tensor<Device, dim, DType>& var, OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void RMSPropUpdate<Device, dim, DType>(const RMSPropParam& p, const Tensor<Device, dim, DType>& weight, \
      const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& n, OpReqType req, \
      const Tensor<Device, dim, DType>& out);
#define TE_INSTANTIATE_ADAPTIVE_UPDATE(Device, DType) TE_OPS_RANKS_FROM_1(TE_ADAPTIVE_UPDATE_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
