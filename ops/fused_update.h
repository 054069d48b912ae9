// ops/fused_update.h — what the one-pass optimiser updates share (ops/sgd.h, ops/adaptive_update.h): the
// gradient's rescale / clip / weight-decay rule, and the expression node that runs an update rule.
//
// One pass: the update is an expression node whose per-element evaluation also stores the element's new
// state (the map loops on both devices evaluate each output element exactly once), and whose value is the
// new weight, assigned to `out` with the req. Nothing is materialised in between. A rule has
// `static constexpr int kStates` and `A Step(A w, A g, A* state) const`: it updates the state in place and
// returns the new weight, in A = compute_t<DType>.
#pragma once
#include <tensorexpr/tensorexpr.h>

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
}  // namespace ops
}  // namespace tensorexpr
