// tensorexpr/ops/activation.h — the elementwise activation operator (MXNet's Activation): relu, sigmoid, tanh and
// softrelu (log(1 + e^x)), forward and backward, on any device, for float, double, half_t and bf16_t.
//
//   forward   y = f(x)
//   backward  dx = dy * f'(y)      every derivative is written in terms of the OUTPUT y (op.h's *_grad
//                                  functors), so backward needs y, not x, as MXNet's does
// Each is one elementwise expression (F<op>), so the same code runs on the CPU and the GPU; any req
// (kNullOp, kWriteTo, kWriteInplace: y may alias x / dx may alias dy, kAddTo) and padded rows work.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/activation.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

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

// out = f(data), stored as req says. Shapes must match.
template <typename Device, int dim, typename DType>
void ActivationForward(const ActivationParam& p, const Tensor<Device, dim, DType>& data, OpReqType req,
                       const Tensor<Device, dim, DType>& out);

// in_grad = out_grad * f'(out), stored as req says; `out` is the forward output.
template <typename Device, int dim, typename DType>
void ActivationBackward(const ActivationParam& p, const Tensor<Device, dim, DType>& out_grad,
                        const Tensor<Device, dim, DType>& out, OpReqType req,
                        const Tensor<Device, dim, DType>& in_grad);

}  // namespace ops
}  // namespace tensorexpr
