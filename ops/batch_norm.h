// ops/batch_norm.h — the template implementation of <tensorexpr/ops/batch_norm.h> (see there), compiled into
// tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/batch_norm.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

namespace detail {

template <int dim>
struct check_bn_dims {
  static_assert(dim >= 2 && dim <= 5, "BatchNorm normalises (N, C, spatial...) data with 0 to 3 spatial dimensions");
  static constexpr bool value = true;
};

inline void CheckBatchNormParam(const BatchNormParam& p) {
  TE_CHECK(p.eps > 0, "BatchNorm: eps = ", p.eps, " must be > 0");
  TE_CHECK(p.momentum >= 0 && p.momentum <= 1, "BatchNorm: momentum = ", p.momentum, " must lie in [0, 1]");
}

template <typename Device, int dim, typename DType>
inline void CheckChannelVector(const Tensor<Device, 1, DType>& v, const Shape<dim>& data, const char* name) {
  TE_CHECK(v.shape_[0] == data[1], "BatchNorm: ", name, " of shape ", v.shape_, " does not match the ", data[1],
           " channels of data shape ", data);
}

template <typename Device, int dim, typename DType>
inline void CheckSameShape(const Tensor<Device, dim, DType>& t, const Shape<dim>& want, const char* op,
                           const char* name) {
  TE_CHECK(t.shape_ == want, op, ": ", name, " of shape ", t.shape_, " does not match data shape ", want);
}

inline void CheckReq(OpReqType r, const char* op) {
  TE_CHECK(r == kNullOp || r == kWriteTo || r == kWriteInplace || r == kAddTo, op, ": unknown req ",
           static_cast<int>(r));
}

// Ranks 2, 3 and 5 as rank 4: (N, C) as (N, C, 1, 1), (N, C, W) as (N, C, 1, W) and (N, C, D, H, W) as
// (N, C, D * H, W). The channel axis stays where it is, so one instance of the kernels serves every rank.
// The view is exact when the last dimension is kept (ranks 3 and 5: padded rows stay padded) or when the
// rows are dense (rank 2, whose rows become channels: Dense2D says whether they are).
template <typename Device, int dim, typename DType>
inline Tensor<Device, 4, DType> AsRank4(const Tensor<Device, dim, DType>& t) {
  static_assert(dim == 2 || dim == 3 || dim == 5, "");
  const Shape<dim>& s = t.shape_;
  if constexpr (dim == 2) {
    return Tensor<Device, 4, DType>(t.dptr_, Shape4(s[0], s[1], 1, 1), 1, t.stream_);
  } else if constexpr (dim == 3) {
    return Tensor<Device, 4, DType>(t.dptr_, Shape4(s[0], s[1], 1, s[2]), t.stride_, t.stream_);
  } else {
    return Tensor<Device, 4, DType>(t.dptr_, Shape4(s[0], s[1], s[2] * s[3], s[4]), t.stride_, t.stream_);
  }
}
template <typename Device, typename DType>
inline bool Dense2D(const Tensor<Device, 2, DType>& t) {
  return t.CheckContiguous() || t.shape_[0] <= 1;
}

// A dense tensor of t's shape on t's stream, holding t's values when `copy` (the rank-4 view needs dense
// rows; an output is only read when its request adds to it).
template <typename Device, typename DType>
inline TensorContainer<Device, 2, DType> DenseCopy(const Tensor<Device, 2, DType>& t, bool copy = true) {
  TensorContainer<Device, 2, DType> c;
  c.set_stream(t.stream_);
  c.Resize(t.shape_);
  if (copy) Copy(c.view(), t, t.stream_);
  return c;
}

}  // namespace detail

template <typename Device, int dim, typename DType>
void BatchNormForward(const BatchNormParam& p, bool is_train, const Tensor<Device, dim, DType>& data,
                      const Tensor<Device, 1, DType>& gamma, const Tensor<Device, 1, DType>& beta,
                      const Tensor<Device, 1, DType>& moving_mean, const Tensor<Device, 1, DType>& moving_var,
                      OpReqType req, const Tensor<Device, dim, DType>& out, const Tensor<Device, 1, DType>& save_mean,
                      const Tensor<Device, 1, DType>& save_inv_std) {
  static_assert(detail::check_bn_dims<dim>::value, "");
  using A = accum_t<DType>;  // statistics and the arithmetic per element: float for half / bf16
  using expr::broadcast;
  using expr::tcast;
  detail::CheckBatchNormParam(p);
  detail::CheckReq(req, "BatchNorm forward");
  const Shape<dim> s = data.shape_;
  detail::CheckSameShape(out, s, "BatchNorm forward", "output");
  detail::CheckChannelVector(gamma, s, "gamma");
  detail::CheckChannelVector(beta, s, "beta");
  detail::CheckChannelVector(moving_mean, s, "moving_mean");
  detail::CheckChannelVector(moving_var, s, "moving_var");
  const index_t C = s[1], m = C > 0 ? s.Size() / C : 0;
  const bool batch_stats = is_train && !p.use_global_stats;
  if (batch_stats) {
    detail::CheckChannelVector(save_mean, s, "save_mean");
    detail::CheckChannelVector(save_inv_std, s, "save_inv_std");
    TE_CHECK(m > 0 || C == 0, "BatchNorm: training needs at least one value per channel; data shape ", s,
             " has none");
  }
  if constexpr (dim == 2) {
    if (!detail::Dense2D(data) || !detail::Dense2D(out)) {  // padded rows: through dense copies
      const TensorContainer<Device, 2, DType> x = detail::DenseCopy(data);
      TensorContainer<Device, 2, DType> y = detail::DenseCopy(out, req == kAddTo);
      BatchNormForward(p, is_train, x.view(), gamma, beta, moving_mean, moving_var, req, y.view(), save_mean,
                       save_inv_std);
      if (req != kNullOp) Copy(out, y.view(), out.stream_);
      return;
    }
  }
  if constexpr (dim != 4) {  // run as the rank-4 view
    BatchNormForward(p, is_train, detail::AsRank4(data), gamma, beta, moving_mean, moving_var, req,
                     detail::AsRank4(out), save_mean, save_inv_std);
  } else {
    if (C == 0 || (req == kNullOp && !batch_stats)) return;
    Stream<Device>* stream = out.stream_;
    Tensor<Device, 2, A> ws = get_space_typed<Device, 2, A>(Shape2(3, C), stream);
    Tensor<Device, 1, A> mean = ws[0], var = ws[1], scale = ws[2];
    if (batch_stats) {
      const A inv_m = A(1.0 / double(m));
      // Each reduction is a whole assignment, so the fast parallel reduction runs (see expr/reduce.h).
      mean = expr::sumall_except_dim<1>(tcast<A>(data));
      mean *= inv_m;
      // Two passes: the variance of the centred data keeps the digits E[x^2] - E[x]^2 would lose.
      var = expr::sumall_except_dim<1>(expr::F<op::square>(tcast<A>(data) - broadcast<1>(mean, s)));
      var *= inv_m;
      const A mom = A(p.momentum), rest = A(1.0 - p.momentum);
      Tensor<Device, 1, DType> mm = moving_mean, mv = moving_var, sm = save_mean, si = save_inv_std;
      mm = tcast<DType>(tcast<A>(moving_mean) * mom + mean * rest);
      mv = tcast<DType>(tcast<A>(moving_var) * mom + var * rest);
      sm = tcast<DType>(mean);
      si = tcast<DType>(expr::F<op::rsqrt>(var + A(p.eps)));
    } else {
      mean = tcast<A>(moving_mean);
      var = tcast<A>(moving_var);
    }
    if (req == kNullOp) return;
    if (p.fix_gamma) {
      scale = expr::F<op::rsqrt>(var + A(p.eps));
    } else {
      scale = expr::F<op::rsqrt>(var + A(p.eps)) * tcast<A>(gamma);
    }
    Assign(out, req,
           tcast<DType>((tcast<A>(data) - broadcast<1>(mean, s)) * broadcast<1>(scale, s) +
                        broadcast<1>(tcast<A>(beta), s)));
  }
}

template <typename Device, int dim, typename DType>
void BatchNormBackward(const BatchNormParam& p, const Tensor<Device, dim, DType>& out_grad,
                       const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma,
                       const Tensor<Device, 1, DType>& save_mean, const Tensor<Device, 1, DType>& save_inv_std,
                       const Tensor<Device, 1, DType>& moving_mean, const Tensor<Device, 1, DType>& moving_var,
                       OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, OpReqType req_gamma,
                       const Tensor<Device, 1, DType>& gamma_grad, OpReqType req_beta,
                       const Tensor<Device, 1, DType>& beta_grad) {
  static_assert(detail::check_bn_dims<dim>::value, "");
  using A = accum_t<DType>;
  using expr::broadcast;
  using expr::tcast;
  detail::CheckBatchNormParam(p);
  for (OpReqType r : {req_data, req_gamma, req_beta}) detail::CheckReq(r, "BatchNorm backward");
  const Shape<dim> s = data.shape_;
  detail::CheckSameShape(out_grad, s, "BatchNorm backward", "output gradient");
  if (req_data != kNullOp) detail::CheckSameShape(data_grad, s, "BatchNorm backward", "data gradient");
  detail::CheckChannelVector(gamma, s, "gamma");
  if (req_gamma != kNullOp) detail::CheckChannelVector(gamma_grad, s, "gamma gradient");
  if (req_beta != kNullOp) detail::CheckChannelVector(beta_grad, s, "beta gradient");
  if (p.use_global_stats) {
    detail::CheckChannelVector(moving_mean, s, "moving_mean");
    detail::CheckChannelVector(moving_var, s, "moving_var");
  } else {
    detail::CheckChannelVector(save_mean, s, "save_mean");
    detail::CheckChannelVector(save_inv_std, s, "save_inv_std");
  }
  if constexpr (dim == 2) {
    if (!detail::Dense2D(out_grad) || !detail::Dense2D(data) || (req_data != kNullOp && !detail::Dense2D(data_grad))) {
      // padded rows: through dense copies
      const TensorContainer<Device, 2, DType> dy = detail::DenseCopy(out_grad), x = detail::DenseCopy(data);
      TensorContainer<Device, 2, DType> dx;
      if (req_data != kNullOp) dx = detail::DenseCopy(data_grad, req_data == kAddTo);
      BatchNormBackward(p, dy.view(), x.view(), gamma, save_mean, save_inv_std, moving_mean, moving_var, req_data,
                        dx.view(), req_gamma, gamma_grad, req_beta, beta_grad);
      if (req_data != kNullOp) Copy(data_grad, dx.view(), data_grad.stream_);
      return;
    }
  }
  if constexpr (dim != 4) {  // run as the rank-4 view
    BatchNormBackward(p, detail::AsRank4(out_grad), detail::AsRank4(data), gamma, save_mean, save_inv_std,
                      moving_mean, moving_var, req_data, detail::AsRank4(data_grad), req_gamma, gamma_grad,
                      req_beta, beta_grad);
  } else {
    const index_t C = s[1], m = C > 0 ? s.Size() / C : 0;
    if (C == 0) return;
    Stream<Device>* stream = out_grad.stream_;
    Tensor<Device, 2, A> ws = get_space_typed<Device, 2, A>(Shape2(7, C), stream);
    Tensor<Device, 1, A> mean = ws[0], inv_std = ws[1], sum_dy = ws[2], sum_dy_xhat = ws[3];
    Tensor<Device, 1, A> k_dy = ws[4], k_mean = ws[5], k_xhat = ws[6];
    if (p.use_global_stats) {
      mean = tcast<A>(moving_mean);
      inv_std = expr::F<op::rsqrt>(tcast<A>(moving_var) + A(p.eps));
    } else {
      mean = tcast<A>(save_mean);
      inv_std = tcast<A>(save_inv_std);
    }
    const auto dy = tcast<A>(out_grad);
    const auto centred = tcast<A>(data) - broadcast<1>(mean, s);
    sum_dy = expr::sumall_except_dim<1>(dy);
    // sum dy (x - mean), times inv_std afterwards: one multiply per channel instead of one per element.
    sum_dy_xhat = expr::sumall_except_dim<1>(dy * centred);
    sum_dy_xhat *= inv_std;
    Assign(beta_grad, req_beta, tcast<DType>(sum_dy));
    if (p.fix_gamma) {
      if (req_gamma != kAddTo) Assign(gamma_grad, req_gamma, expr::scalar<DType>(DType(0.0f)));
    } else {
      Assign(gamma_grad, req_gamma, tcast<DType>(sum_dy_xhat));
    }
    if (req_data == kNullOp) return;
    if (p.fix_gamma) {
      k_dy = expr::F<op::identity>(inv_std);
    } else {
      k_dy = inv_std * tcast<A>(gamma);
    }
    if (p.use_global_stats) {  // the statistics are constants: dx = gamma inv_std dy
      Assign(data_grad, req_data, tcast<DType>(dy * broadcast<1>(k_dy, s)));
      return;
    }
    // dx = gamma inv_std (dy - sum_dy / m - (x - mean) inv_std sum_dy_xhat / m)
    const A inv_m = A(1.0 / double(m));
    k_mean = sum_dy * inv_m;
    k_xhat = inv_std * sum_dy_xhat * inv_m;
    Assign(data_grad, req_data,
           tcast<DType>(broadcast<1>(k_dy, s) * (dy - broadcast<1>(k_mean, s) - centred * broadcast<1>(k_xhat, s))));
  }
}

// Explicit instantiations for one device and dtype, ranks 2 to 5 (ops/batch_norm.cc).
#define TE_BATCH_NORM_INSTANCE_(Device, dim, DType) \
  template void BatchNormForward<Device, dim, DType>(const BatchNormParam& p, bool is_train, \
      const Tensor<Device, dim, DType>& data, const Tensor<Device, 1, DType>& gamma, \
      const Tensor<Device, 1, DType>& beta, const Tensor<Device, 1, DType>& moving_mean, \
      const Tensor<Device, 1, DType>& moving_var, OpReqType req, const Tensor<Device, dim, DType>& out, \
      const Tensor<Device, 1, DType>& save_mean, const Tensor<Device, 1, DType>& save_inv_std); \
  template void BatchNormBackward<Device, dim, DType>(const BatchNormParam& p, \
      const Tensor<Device, dim, DType>& out_grad, const Tensor<Device, dim, DType>& data, \
      const Tensor<Device, 1, DType>& gamma, const Tensor<Device, 1, DType>& save_mean, \
      const Tensor<Device, 1, DType>& save_inv_std, const Tensor<Device, 1, DType>& moving_mean, \
      const Tensor<Device, 1, DType>& moving_var, OpReqType req_data, const Tensor<Device, dim, DType>& data_grad, \
      OpReqType req_gamma, const Tensor<Device, 1, DType>& gamma_grad, OpReqType req_beta, \
      const Tensor<Device, 1, DType>& beta_grad);
#define TE_INSTANTIATE_BATCH_NORM(Device, DType) TE_OPS_RANKS_FROM_2(TE_BATCH_NORM_INSTANCE_, Device, DType)

}  // namespace ops
}  // namespace tensorexpr
