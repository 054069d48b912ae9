// tensorexpr/ops/batch_norm.h — batch normalisation (MXNet's BatchNorm) over the channel axis 1 of (N, C), (N, C, W),
// (N, C, H, W) or (N, C, D, H, W) data, on the CPU and (compiled by nvcc) the GPU, for every float dtype.
//
//   training   mean_c = E[x_c], var_c = E[(x_c - mean_c)^2] over N and the spatial positions (biased, as
//              MXNet), inv_std_c = 1 / sqrt(var_c + eps), y = gamma_c (x - mean_c) inv_std_c + beta_c;
//              mean and inv_std are saved for backward, and the running statistics move towards the batch's:
//              moving = moving * momentum + batch * (1 - momentum).
//   inference  (or use_global_stats) the same with the running mean / variance; nothing is saved.
//   backward   with xhat = (x - mean) inv_std and m values per channel:
//              dbeta = sum dy,  dgamma = sum dy xhat,
//              dx = gamma inv_std (dy - dbeta / m - xhat dgamma / m)        (batch statistics)
//              dx = gamma inv_std dy                                        (use_global_stats: constants)
// fix_gamma (MXNet's default) uses gamma = 1 whatever the tensor holds, and its gradient is 0.
// Everything is composed of core expressions (broadcast<1>, sumall_except_dim<1>, F<op>), so the same code
// runs on both devices. Statistics and per-element arithmetic are in accum_t<DType> (float for half / bf16);
// the tensors the caller passes (gamma, beta, running and saved statistics) are DType.
//
// Declarations: the library tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for float, double,
// half_t and bf16_t; ops/batch_norm.h is the template implementation, for other dtypes.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {

struct BatchNormParam {
  double eps = 1e-3;              // added to the variance (MXNet's default)
  double momentum = 0.9;          // weight of the old running statistics
  bool fix_gamma = true;          // gamma taken as 1, its gradient 0 (MXNet's default)
  bool use_global_stats = false;  // normalise with the running statistics in training too
};

// out = BN(data), stored as req says. gamma, beta, moving_mean, moving_var: (C). In training without
// use_global_stats, save_mean and save_inv_std (C) receive the batch statistics and moving_mean /
// moving_var are updated; otherwise those four are only read (save_* may be empty). Rows may be padded.
template <typename Device, int dim, typename DType>
void BatchNormForward(const BatchNormParam& p, bool is_train, const Tensor<Device, dim, DType>& data,
                      const Tensor<Device, 1, DType>& gamma, const Tensor<Device, 1, DType>& beta,
                      const Tensor<Device, 1, DType>& moving_mean, const Tensor<Device, 1, DType>& moving_var,
                      OpReqType req, const Tensor<Device, dim, DType>& out, const Tensor<Device, 1, DType>& save_mean,
                      const Tensor<Device, 1, DType>& save_inv_std);

// Gradients of BatchNormForward in training. save_mean / save_inv_std are what the forward saved (with
// use_global_stats, moving_mean / moving_var are read instead and the statistics are constants). Each of
// data_grad, gamma_grad, beta_grad is stored as its req says; kNullOp skips it.
template <typename Device, int dim, typename DType>
void BatchNormBackward(const BatchNormParam& p, const Tensor<Device, dim, DType>& out_grad,
                       const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma,
                       const Tensor<Device, 1, DType>& save_mean, const Tensor<Device, 1, DType>& save_inv_std,
                       const Tensor<Device, 1, DType>& moving_mean, const Tensor<Device, 1, DType>& moving_var,
                       OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_gamma,
                       const Tensor<Device, 1, DType>& gamma_grad, OpReqType req_beta,
                       const Tensor<Device, 1, DType>& beta_grad);

}  // namespace ops
}  // namespace tensorexpr
