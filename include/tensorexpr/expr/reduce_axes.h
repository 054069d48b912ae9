// expr/reduce_axes.h — reductions over several axes at once, each reduced axis kept with extent 1 (ONNX's
// ReduceSum / ReduceMax / ReduceMean with keepdims = 1):
//   out = reduce_axes<red::maximum>(x, {0, 2});     // (N, C, W) -> (1, C, 1)
//   out = mean(x, {-1});                            // the mean over the last axis: (N, C, 1)
//   out = mean(x, {});                              // no axes: every axis, as ONNX's default
// Axes may be negative (counted from the end) and come in any order; a repeated or out-of-range axis is an
// Error. reshape() the result to drop the extents of 1.
//
// Composed from the core's nodes, so it runs wherever they do and inside any expression: transpose moves
// the reduced axes last, reshape views that as (kept, reduced), reduce_with_axis reduces the second axis
// (accumulating in accum_t<DType>), and reshape puts the extents of 1 back; mean scales by 1 / (number of
// reduced elements). Each output element is one sequential loop over its reduced elements (one thread per
// output on the GPU), so for a few outputs over many elements reduce_with_axis / sumall are faster.
// The mean of an empty set is NaN (0 / 0), as in ONNX.
#pragma once
#include <string>
#include <type_traits>
#include <vector>
#include "base.h"
#include "map.h"
#include "reduce.h"
#include "reshape.h"
#include "transpose.h"

namespace tensorexpr {
namespace expr {

// How reduce_axes sees a shape: the permutation that puts the reduced axes last, the counts of kept and
// reduced elements, and the output shape (extent 1 at each reduced axis).
template <int dim>
struct ReduceAxesLayout {
  Shape<dim> perm, out;
  index_t kept = 1, reduced = 1;
};

template <int dim>
inline ReduceAxesLayout<dim> MakeReduceAxesLayout(const Shape<dim>& s, const std::vector<int>& axes, const char* what) {
  bool reduce[dim > 0 ? static_cast<size_t>(dim) : 1] = {};
  for (int a : axes) {
    TE_CHECK(-dim <= a && a < dim, what, ": axis ", a, " is out of range for shape ", s, " (need ", -dim,
             " <= axis < ", dim, ")");
    const int d = a < 0 ? a + dim : a;
    TE_CHECK(!reduce[d], what, ": axis ", a, " is given twice (shape ", s, ")");
    reduce[d] = true;
  }
  if (axes.empty())
    for (int d = 0; d < dim; ++d) reduce[d] = true;
  ReduceAxesLayout<dim> l;
  l.out = s;
  int next = 0;
  for (int d = 0; d < dim; ++d)
    if (!reduce[d]) l.perm[next++] = d, l.kept *= s[d];
  for (int d = 0; d < dim; ++d)
    if (reduce[d]) l.perm[next++] = d, l.reduced *= s[d], l.out[d] = 1;
  return l;
}

// reduce_axes<Reducer>(e, axes): e reduced over `axes` (all of them when empty), the axes kept as extent 1.
template <typename Reducer, typename E, typename DType, int etype>
inline auto reduce_axes(const Exp<E, DType, etype>& e, const std::vector<int>& axes) {
  const ReduceAxesLayout<E::kDim> l =
      MakeReduceAxesLayout(e.self().shape(), axes, Message("reduce_axes<", Reducer::name(), ">").c_str());
  return reshape(reduce_with_axis<Reducer>(reshape(transpose(e.self(), l.perm), Shape2(l.kept, l.reduced)), 1), l.out);
}

// mean(e, axes): the sum over `axes` (all of them when empty) divided by the number of reduced elements.
template <typename E, typename DType, int etype>
inline auto mean(const Exp<E, DType, etype>& e, const std::vector<int>& axes) {
  static_assert(!std::is_integral<DType>::value, "mean(e, axes) of an integer expression would round the mean "
                                                 "to an integer; take mean(tcast<double>(e), axes)");
  const ReduceAxesLayout<E::kDim> l = MakeReduceAxesLayout(e.self().shape(), axes, "mean");
  const double count = static_cast<double>(l.reduced);
  return reduce_axes<red::sum>(e, axes) * DType(static_cast<compute_t<DType>>(1.0 / count));
}

}  // namespace expr
}  // namespace tensorexpr
