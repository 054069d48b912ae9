// ops/clip_global_norm.h — the template implementation of <tensorexpr/ops/clip_global_norm.h> (see there),
// compiled into tensorexpr_ops / tensorexpr_ops_cuda for the standard dtypes. Include it to use another dtype.
#pragma once
#include <cmath>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/clip_global_norm.h>
#include <tensorexpr/workspace.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {

template <typename Device, typename DType>
void ClipByGlobalNorm(const std::vector<Tensor<Device, 2, DType>>& grads, double max_norm,
                      const Tensor<Device, 1, DType>& norm) {
  TE_CHECK(max_norm > 0 && std::isfinite(max_norm), "clip_global_norm: max_norm = ", max_norm,
           " must be a finite number > 0");
  TE_CHECK(norm.shape_ == Shape1(1), "clip_global_norm: norm shape ", norm.shape_, " must be (1)");
  using A = compute_t<DType>;
  Stream<Device>* s = norm.stream_;
  // The sum of squares, then the scale min(1, max_norm / norm), in A.
  Tensor<Device, 1, A> ws = get_space_typed<Device, 1, A>(Shape1(2), s);
  Tensor<Device, 1, A> sum(ws.dptr_, Shape1(1), s), scale(ws.dptr_ + 1, Shape1(1), s);
  sum = A(0);
  for (const Tensor<Device, 2, DType>& g : grads)
    if (g.shape_.Size() > 0) sum += expr::sumall(expr::F<op::square>(expr::tcast<A>(g)));
  Tensor<Device, 1, DType> out = norm;
  out = expr::tcast<DType>(expr::F<op::sqrt>(sum));
  scale = expr::F<op::minimum>(expr::scalar<A>(A(1)), expr::scalar<A>(A(max_norm)) / expr::F<op::sqrt>(sum));
  const Tensor<Device, 2, A> scale11(scale.dptr_, Shape2(1, 1), s);
  for (Tensor<Device, 2, DType> g : grads) {
    if (g.shape_.Size() == 0) continue;
    g = expr::tcast<DType>(expr::tcast<A>(g) * expr::broadcast_keepdim(expr::broadcast_keepdim(scale11, 0, g.shape_[0]),
                                                                      1, g.shape_[1]));
  }
}

// Explicit instantiations for one device and dtype (ops/clip_global_norm.cc).
#define TE_INSTANTIATE_CLIP_GLOBAL_NORM(Device, DType) \
  template void ClipByGlobalNorm<Device, DType>(const std::vector<Tensor<Device, 2, DType>>& grads, \
      double max_norm, const Tensor<Device, 1, DType>& norm);

}  // namespace ops
}  // namespace tensorexpr
