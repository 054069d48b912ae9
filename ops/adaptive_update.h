// ops/adaptive_update.h — the template implementation of <tensorexpr/ops/adaptive_update.h> (see there),
// compiled into tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
//
// One pass: the update is an expression node whose per-element evaluation also stores the element's new
// state (the map loops on both devices evaluate each output element exactly once), and whose value is the
// new weight, assigned to `out` with the req. Nothing is materialised in between.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/adaptive_update.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

// g = clip(rescale * grad, clip) + wd * w, in A.
struct GradientRule {
  double rescale, clip, wd;
  template <typename A>
  TE_XINLINE A Apply(A grad, A w) const {
    A g = grad * A(rescale);
    if (clip >= 0) g = g > A(clip) ? A(clip) : (g < A(-clip) ? A(-clip) : g);
    return g + A(wd) * w;
  }
};

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

// The new weight of Rule, element by element, storing the element's new state as it goes.
template <typename Device, typename DType, typename Rule>
struct FusedUpdateExp : public expr::Exp<FusedUpdateExp<Device, DType, Rule>, DType, expr::type::kChainer> {
  static constexpr int kDim = 2;
  static constexpr bool kFlat = false;  // per (row, column): the state is addressed with its own stride
  using device_type = Device;
  Tensor<Device, 2, DType> weight_, grad_, state_[Rule::kStates];
  Rule rule_;
  Shape<2> shape() const { return weight_.shape_; }
  struct Plan {
    DType *weight_, *grad_, *state_[Rule::kStates];
    index_t weight_stride_, grad_stride_, state_stride_[Rule::kStates];
    Rule rule_;
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      using A = compute_t<DType>;
      const A w = static_cast<A>(weight_[y * weight_stride_ + x]);
      const A g = rule_.grad.Apply(static_cast<A>(grad_[y * grad_stride_ + x]), w);
      A state[Rule::kStates];
      for (int i = 0; i < Rule::kStates; ++i) state[i] = static_cast<A>(state_[i][y * state_stride_[i] + x]);
      const A out = rule_.Step(w, g, state);
      for (int i = 0; i < Rule::kStates; ++i) state_[i][y * state_stride_[i] + x] = static_cast<DType>(state[i]);
      return static_cast<DType>(out);
    }
  };
  Plan plan() const {
    Plan p{};
    p.weight_ = weight_.dptr_, p.weight_stride_ = weight_.stride_;
    p.grad_ = grad_.dptr_, p.grad_stride_ = grad_.stride_;
    for (int i = 0; i < Rule::kStates; ++i) p.state_[i] = state_[i].dptr_, p.state_stride_[i] = state_[i].stride_;
    p.rule_ = rule_;
    return p;
  }
};

template <typename Device, int dim, typename DType>
inline void CheckUpdateTensor(const char* op, const char* name, const Tensor<Device, dim, DType>& t,
                              const Shape<dim>& weight) {
  TE_CHECK(t.shape_ == weight, op, ": ", name, " shape ", t.shape_, " does not match weight shape ", weight);
}

inline void CheckUpdateParams(const char* op, OpReqType req, double lr, double epsilon,
                              std::initializer_list<double> decays) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, op, ": unknown req ",
           static_cast<int>(req));
  TE_CHECK(std::isfinite(lr), op, ": lr = ", lr, " must be a finite number");
  TE_CHECK(epsilon >= 0, op, ": epsilon = ", epsilon, " must be >= 0");
  for (double d : decays) TE_CHECK(d >= 0 && d <= 1, op, ": a decay rate of ", d, " is outside [0, 1]");
}

// Runs Rule over the flattened tensors: out = the new weight (req), the states updated in place.
template <typename Device, int dim, typename DType, typename Rule>
inline void RunFusedUpdate(const Rule& rule, const Tensor<Device, dim, DType>& weight,
                           const Tensor<Device, dim, DType>& grad,
                           const Tensor<Device, dim, DType> (&states)[Rule::kStates], OpReqType req,
                           const Tensor<Device, dim, DType>& out) {
  if (req == kNullOp || weight.shape_.Size() == 0) return;
  FusedUpdateExp<Device, DType, Rule> e;
  e.weight_ = weight.FlatTo2D();
  e.grad_ = grad.FlatTo2D();
  for (int i = 0; i < Rule::kStates; ++i) e.state_[i] = states[i].FlatTo2D();
  e.rule_ = rule;
  Assign(out.FlatTo2D(), req, e);
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
