// ops/activation.h — the elementwise activation operator (MXNet's Activation): relu, sigmoid, tanh and
// softrelu (log(1 + e^x)), forward and backward, on any device, for float, double, half_t and bf16_t.
//
//   forward   y = f(x)
//   backward  dx = dy * f'(y)      every derivative is written in terms of the OUTPUT y (op.h's *_grad
//                                  functors), so backward needs y, not x, as MXNet's does
// Each is one elementwise expression (F<op>), so the same code runs on the CPU and the GPU; any req
// (kNullOp, kWriteTo, kWriteInplace: y may alias x / dx may alias dy, kAddTo) and padded rows work.
#pragma once
#include <tensorexpr/tensorexpr.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

enum class ActType { kReLU, kSigmoid, kTanh, kSoftReLU };

inline const char* ActTypeName(ActType t) {
  switch (t) {
    case ActType::kReLU: return "relu";
    case ActType::kSigmoid: return "sigmoid";
    case ActType::kTanh: return "tanh";
    case ActType::kSoftReLU: return "softrelu";
  }
  return "unknown";
}

struct ActivationParam {
  ActType act_type = ActType::kReLU;
};

// The output has the data's shape.
template <int dim>
inline Shape<dim> InferActivationShape(const ActivationParam&, const Shape<dim>& data_shape) {
  return data_shape;
}

namespace detail {
inline void CheckActReq(const char* what, OpReqType req) {
  TE_CHECK(req == kNullOp || req == kWriteTo || req == kWriteInplace || req == kAddTo, "Activation ", what,
           ": unknown req ", static_cast<int>(req));
}
// Calls fn(forward functor, gradient-from-output functor) for the activation type.
template <typename Fn>
inline void WithActivation(ActType t, Fn&& fn) {
  switch (t) {
    case ActType::kReLU: fn(op::relu(), op::relu_grad()); return;
    case ActType::kSigmoid: fn(op::sigmoid(), op::sigmoid_grad()); return;
    case ActType::kTanh: fn(op::tanh(), op::tanh_grad()); return;
    case ActType::kSoftReLU: fn(op::softrelu(), op::softrelu_grad()); return;
  }
  Fail("Activation: unknown act_type ", static_cast<int>(t));
}
}  // namespace detail

// out = f(data), stored as req says. Shapes must match.
template <typename Device, int dim, typename DType>
void ActivationForward(const ActivationParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                       const Tensor<Device, dim, DType>& out) {
  detail::CheckActReq("forward", req);
  TE_CHECK(data.shape_ == out.shape_, "Activation(", ActTypeName(p.act_type), ") forward: data shape ", data.shape_,
           " and output shape ", out.shape_, " differ");
  if (req == kNullOp) return;
  detail::WithActivation(p.act_type, [&](auto f, auto) {
    using F = decltype(f);
    Assign(out, req, expr::F<F>(data));
  });
}

// in_grad = out_grad * f'(out), stored as req says; `out` is the forward output.
template <typename Device, int dim, typename DType>
void ActivationBackward(const ActivationParam& p, const Tensor<Device, dim, DType>& out_grad,
                        const Tensor<Device, dim, DType>& out, OpReqType req,
                        const Tensor<Device, dim, DType>& in_grad) {
  detail::CheckActReq("backward", req);
  TE_CHECK(out_grad.shape_ == out.shape_ && out.shape_ == in_grad.shape_, "Activation(", ActTypeName(p.act_type),
           ") backward: output gradient shape ", out_grad.shape_, ", output shape ", out.shape_,
           " and input gradient shape ", in_grad.shape_, " must be equal");
  if (req == kNullOp) return;
  detail::WithActivation(p.act_type, [&](auto, auto g) {
    using G = decltype(g);
    Assign(in_grad, req, out_grad * expr::F<G>(out));
  });
}

}  // namespace ops
}  // namespace tensorexpr
