// softmax.h — mshadow's softmax functions, on any device:
//   Softmax(dst, energy)               2-D (N, K): along each row; 3-D (N, K, M): along dimension 1 (the
//                                      per-position softmax over K classes)
//   SoftmaxGrad(dst, prob, label)      dst = prob - onehot(label): the gradient of the cross-entropy of a
//                                      softmax; 2-D with label (N), 3-D with label (N, M)
//   SoftmaxGrad(dst, prob, label, ignore_label)   the same, with the rows (positions) whose label equals
//                                      ignore_label set to 0
// dst may be the input itself. Numerically stable (the maximum along the axis is subtracted before exp);
// the sums accumulate in accum_t (float for half / bf16). Softmax takes its scratch (the maxima and sums,
// one per row / position) from the stream's workspace (workspace.h). Labels are indices stored in any
// type; one that is not a whole number in [0, K) has an all-zero one-hot row (expr/row_element.h).
#pragma once
#include <cmath>
#include "tensor.h"
#include "op.h"
#include "red.h"
#include "workspace.h"
#include "expr/broadcast.h"
#include "expr/map.h"
#include "expr/reduce.h"
#include "expr/reshape.h"
#include "expr/row_element.h"
#include "expr/swapaxis.h"

namespace tensorexpr {

namespace detail {
// dst = softmax(energy) along dimension 1, with axis_max and axis_sum (energy's shape with extent 1 at
// dimension 1) as scratch; afterwards they hold the maxima and the sums of exp(energy - max). Operators
// that need those (the cross-entropy's log-sum-exp) call this rather than Softmax.
template <typename Device, int dim, typename DType>
inline void SoftmaxAlongAxis1(const Tensor<Device, dim, DType>& dst, const Tensor<Device, dim, DType>& energy,
                              Tensor<Device, dim, DType> axis_max, Tensor<Device, dim, DType> axis_sum) {
  const index_t K = energy.shape_[1];
  Tensor<Device, dim, DType> out = dst;
  axis_max = expr::reduce_with_axis<red::maximum, true>(energy, 1);
  out = expr::F<op::exp>(energy - expr::broadcast_keepdim(axis_max, 1, K));  // energy read before dst is written
  axis_sum = expr::reduce_with_axis<red::sum, true>(out, 1);
  out /= expr::broadcast_keepdim(axis_sum, 1, K);
}

template <int dim>
inline Shape<dim> ReducedAlongAxis1(Shape<dim> s) {
  s[1] = 1;
  return s;
}

// Whether a label equals ignore_label as mshadow compared them (as integers); NaN equals nothing.
struct label_kept {
  template <typename DType>
  TE_XINLINE static DType Map(DType label, DType ignore) {
    const double a = static_cast<double>(static_cast<compute_t<DType>>(label));
    const double b = static_cast<double>(static_cast<compute_t<DType>>(ignore));
    return trunc(a) == trunc(b) ? DType(0) : DType(1);
  }
};
}  // namespace detail

template <typename Device, int dim, typename DType>
inline void Softmax(Tensor<Device, dim, DType> dst, const Tensor<Device, dim, DType>& energy) {
  static_assert(dim == 2 || dim == 3, "Softmax(dst, energy) takes 2-D (N, K) or 3-D (N, K, M) tensors");
  TE_CHECK(dst.shape_ == energy.shape_, "Softmax: destination shape ", dst.shape_, " does not match energy shape ",
           energy.shape_);
  const Shape<dim> reduced = detail::ReducedAlongAxis1(energy.shape_);
  Tensor<Device, 1, DType> ws = get_space_typed<Device, 1, DType>(Shape1(2 * reduced.Size()), dst.stream_);
  detail::SoftmaxAlongAxis1(dst, energy, Tensor<Device, dim, DType>(ws.dptr_, reduced, dst.stream_),
                            Tensor<Device, dim, DType>(ws.dptr_ + reduced.Size(), reduced, dst.stream_));
}

namespace detail {
// The one-hot of label along dimension 1 of a (N, K[, M]) tensor.
template <typename DType, typename Device, typename LType>
inline auto OneHotAlongAxis1(const Tensor<Device, 1, LType>& label, const Shape<2>& s) {
  return expr::one_hot_encode<DType>(label, s[1]);
}
template <typename DType, typename Device, typename LType>
inline auto OneHotAlongAxis1(const Tensor<Device, 2, LType>& label, const Shape<3>& s) {
  const auto flat = expr::reshape(label, Shape1(s[0] * s[2]));
  return expr::swapaxis<1, 2>(expr::reshape(expr::one_hot_encode<DType>(flat, s[1]), Shape3(s[0], s[2], s[1])));
}

template <typename Device, int dim, typename DType>
inline void CheckSoftmaxGradShapes(const Tensor<Device, dim, DType>& dst, const Tensor<Device, dim, DType>& src,
                                   const Tensor<Device, dim - 1, DType>& label) {
  static_assert(dim == 2 || dim == 3, "SoftmaxGrad takes 2-D (N, K) or 3-D (N, K, M) tensors");
  TE_CHECK(dst.shape_ == src.shape_, "SoftmaxGrad: destination shape ", dst.shape_, " does not match source shape ",
           src.shape_);
  bool match = label.shape_[0] == src.shape_[0];
  if constexpr (dim == 3) match = match && label.shape_[1] == src.shape_[2];
  TE_CHECK(match, "SoftmaxGrad: label shape ", label.shape_, " does not match source shape ", src.shape_,
           dim == 2 ? " (one label per row)" : " (label (N, M) for source (N, K, M))");
}
}  // namespace detail

template <typename Device, int dim, typename DType>
inline void SoftmaxGrad(Tensor<Device, dim, DType> dst, const Tensor<Device, dim, DType>& src,
                        const Tensor<Device, dim - 1, DType>& label) {
  detail::CheckSoftmaxGradShapes(dst, src, label);
  dst = src - detail::OneHotAlongAxis1<DType>(label, src.shape_);
}

template <typename Device, int dim, typename DType>
inline void SoftmaxGrad(Tensor<Device, dim, DType> dst, const Tensor<Device, dim, DType>& src,
                        const Tensor<Device, dim - 1, DType>& label, const DType& ignore_label) {
  detail::CheckSoftmaxGradShapes(dst, src, label);
  const auto kept = expr::F<detail::label_kept>(label, expr::scalar<DType>(ignore_label));
  if constexpr (dim == 2) {
    dst = (src - detail::OneHotAlongAxis1<DType>(label, src.shape_)) * expr::broadcast<0>(kept, src.shape_);
  } else {
    const Shape<3> s = src.shape_;
    const auto kept3 = expr::broadcast_with_axis(kept, 0, s[1]);  // (N, M) -> (N, K, M)
    dst = (src - detail::OneHotAlongAxis1<DType>(label, s)) * kept3;
  }
}

}  // namespace tensorexpr
