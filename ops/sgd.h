// ops/sgd.h — stochastic gradient descent updates (MXNet's sgd_update and sgd_mom_update), written as
// elementwise expressions, so the same code runs on the CPU and (compiled by nvcc) the GPU.
//
//   g      = clip(rescale_grad * grad, clip_gradient)       (no clipping when clip_gradient < 0)
//   plain  out = (1 - lr * wd) * weight - lr * g
//   mom    mom = momentum * mom - lr * wd * weight - lr * g;  out = weight + mom
// Weight decay is applied to the weight, not clipped with the gradient (as MXNet). The arithmetic runs in
// compute_t<DType> (float for half / bf16) and rounds once per stored value. `out` is normally the weight
// itself (req kWriteInplace); every read is elementwise, so the aliasing is safe.
#pragma once
#include <tensorexpr/tensorexpr.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

struct SGDParam {
  double lr = 0.01;             // learning rate
  double wd = 0.0;              // weight decay (L2) coefficient
  double rescale_grad = 1.0;    // the gradient is multiplied by this first (e.g. 1 / batch size)
  double clip_gradient = -1.0;  // clip the rescaled gradient into [-clip, clip]; < 0: no clipping
};

struct SGDMomParam {
  double lr = 0.01;
  double momentum = 0.9;        // the weight of the previous update
  double wd = 0.0;
  double rescale_grad = 1.0;
  double clip_gradient = -1.0;
};

namespace detail {

template <typename Device, int dim, typename DType>
inline void CheckSGDShape(const Tensor<Device, dim, DType>& t, const Shape<dim>& weight, const char* op,
                          const char* name) {
  TE_CHECK(t.shape_ == weight, op, ": ", name, " shape ", t.shape_, " does not match weight shape ", weight);
}

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

}  // namespace detail

// out = (1 - lr * wd) * weight - lr * clip(rescale_grad * grad), stored as req says.
template <typename Device, int dim, typename DType>
void SGDUpdate(const SGDParam& p, const Tensor<Device, dim, DType>& weight, const Tensor<Device, dim, DType>& grad,
               OpReqType req, const Tensor<Device, dim, DType>& out) {
  using A = compute_t<DType>;
  detail::CheckSGDReq(req, "sgd_update");
  detail::CheckSGDShape(grad, weight.shape_, "sgd_update", "gradient");
  detail::CheckSGDShape(out, weight.shape_, "sgd_update", "output");
  if (req == kNullOp) return;
  const A decay = A(1.0 - p.lr * p.wd), lr = A(p.lr);
  detail::WithRescaledGrad<A>(grad, p.rescale_grad, p.clip_gradient, [&](const auto& g) {
    Assign(out, req, expr::tcast<DType>(expr::tcast<A>(weight) * decay - g * lr));
  });
}

// mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad);  out = weight + mom (req).
// mom (the optimiser's state) is updated in place whatever req says, except kNullOp, which does nothing.
template <typename Device, int dim, typename DType>
void SGDMomUpdate(const SGDMomParam& p, const Tensor<Device, dim, DType>& weight,
                  const Tensor<Device, dim, DType>& grad, const Tensor<Device, dim, DType>& mom, OpReqType req,
                  const Tensor<Device, dim, DType>& out) {
  using A = compute_t<DType>;
  detail::CheckSGDReq(req, "sgd_mom_update");
  detail::CheckSGDShape(grad, weight.shape_, "sgd_mom_update", "gradient");
  detail::CheckSGDShape(mom, weight.shape_, "sgd_mom_update", "momentum");
  detail::CheckSGDShape(out, weight.shape_, "sgd_mom_update", "output");
  if (req == kNullOp) return;
  const A momentum = A(p.momentum), lr = A(p.lr), lr_wd = A(p.lr * p.wd);
  Tensor<Device, dim, DType> state = mom;
  detail::WithRescaledGrad<A>(grad, p.rescale_grad, p.clip_gradient, [&](const auto& g) {
    state = expr::tcast<DType>(expr::tcast<A>(mom) * momentum - expr::tcast<A>(weight) * lr_wd - g * lr);
  });
  Assign(out, req, weight + mom);
}

}  // namespace ops
}  // namespace tensorexpr
