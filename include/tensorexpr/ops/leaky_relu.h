// tensorexpr/ops/leaky_relu.h — the leaky rectifiers (MXNet's LeakyReLU operator; ONNX's LeakyRelu, Elu and
// PRelu), forward and backward, on any device, for float, double, half_t and bf16_t, data of rank 1 to 5:
//
//   kLeaky   y = x > 0 ? x : slope * x                 dx = dy * (x > 0 ? 1 : slope)
//   kELU     y = x > 0 ? x : slope * (exp(x) - 1)      dx = dy * (x > 0 ? 1 : slope * exp(x))
//   kPReLU   y = x > 0 ? x : gamma[c] * x              dx = dy * (x > 0 ? 1 : gamma[c])
//            dgamma[c] = sum over every element of channel c of dy * (x > 0 ? 0 : x)
// PReLU's gamma, learned, holds one slope per channel (data (N, C, ...), gamma (C)) or one for all (gamma
// (1)). The backward takes the forward's INPUT x (unlike Activation's, which takes the output).
// Leaky and ELU are elementwise: any req, padded rows, y may alias x and dx may alias dy. PReLU reads gamma
// across the data and needs contiguous data of rank 2 or more when gamma has C slopes (Error otherwise).
// Arithmetic in compute_t<DType> (float for half / bf16).
//
// Defaults: slope 0.25 as MXNet's; ONNX's LeakyRelu defaults to alpha = 0.01 and Elu to alpha = 1.0.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/leaky_relu.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

enum class LeakyReLUType { kLeaky, kELU, kPReLU };

inline const char* LeakyReLUTypeName(LeakyReLUType t) {
  switch (t) {
    case LeakyReLUType::kLeaky: return "leaky";
    case LeakyReLUType::kELU: return "elu";
    case LeakyReLUType::kPReLU: return "prelu";
  }
  return "unknown";
}

struct LeakyReLUParam {
  LeakyReLUType act_type = LeakyReLUType::kLeaky;
  double slope = 0.25;  // kLeaky's slope, kELU's alpha; kPReLU takes gamma instead
};

// out = f(data), stored as req says; `gamma` is read by kPReLU only (the other types take an empty one).
template <typename Device, int dim, typename DType>
void LeakyReLUForward(const LeakyReLUParam& p, const Tensor<Device, dim, DType>& data,
                      const Tensor<Device, 1, DType>& gamma, OpReqType req, const Tensor<Device, dim, DType>& out);

// data_grad = out_grad * f'(data) (req_data) and, for kPReLU, gamma_grad (req_gamma).
template <typename Device, int dim, typename DType>
void LeakyReLUBackward(const LeakyReLUParam& p, const Tensor<Device, dim, DType>& out_grad,
                       const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma,
                       OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_gamma,
                       const Tensor<Device, 1, DType>& gamma_grad);

}  // namespace ops
}  // namespace tensorexpr
