// ops/activation.h — the template implementation of <tensorexpr/ops/activation.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/activation.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

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

template <typename Device, int dim, typename DType>
void ActivationForward(const ActivationParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                       const Tensor<Device, dim, DType>& out) {
  detail::CheckActReq("forward", req);
  TE_CHECK(data.shape_ == out.shape_, "Activation(", ActTypeName(p.act_type), ") forward: data shape ", data.shape_,
           " and output shape ", out.shape_, " differ");
  // Elementwise, so every rank runs as its (rows, last dimension) view: one instance of the kernels.
  if constexpr (dim != 2) {
    ActivationForward(p, data.FlatTo2D(), req, out.FlatTo2D());
  } else {
    if (req == kNullOp) return;
    detail::WithActivation(p.act_type, [&](auto f, auto) {
      using F = decltype(f);
      Assign(out, req, expr::F<F>(data));
    });
  }
}

template <typename Device, int dim, typename DType>
void ActivationBackward(const ActivationParam& p, const Tensor<Device, dim, DType>& out_grad,
                        const Tensor<Device, dim, DType>& out, OpReqType req,
                        const Tensor<Device, dim, DType>& in_grad) {
  detail::CheckActReq("backward", req);
  TE_CHECK(out_grad.shape_ == out.shape_ && out.shape_ == in_grad.shape_, "Activation(", ActTypeName(p.act_type),
           ") backward: output gradient shape ", out_grad.shape_, ", output shape ", out.shape_,
           " and input gradient shape ", in_grad.shape_, " must be equal");
  if constexpr (dim != 2) {
    ActivationBackward(p, out_grad.FlatTo2D(), out.FlatTo2D(), req, in_grad.FlatTo2D());
  } else {
    if (req == kNullOp) return;
    detail::WithActivation(p.act_type, [&](auto, auto g) {
      using G = decltype(g);
      Assign(in_grad, req, out_grad * expr::F<G>(out));
    });
  }
}

// Explicit instantiations for one device and dtype, ranks 1 to 5 (ops/activation.cc).
#define TE_ACTIVATION_INSTANCE_(Device, dim, DType) \
  template void ActivationForward<Device, dim, DType>(const ActivationParam& p, \
      const Tensor<Device, dim, DType>& data, OpReqType req, const Tensor<Device, dim, DType>& out); \
  template void ActivationBackward<Device, dim, DType>(const ActivationParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& out, OpReqType req, \
      const Tensor<Device, dim, DType>& in_grad);
#define TE_INSTANTIATE_ACTIVATION(Device, DType) TE_OPS_RANKS_FROM_1(TE_ACTIVATION_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
