// expr/swapaxis.h — swapaxis<a1, a2>(e): e with dimensions a1 and a2 exchanged (mshadow's name). It is the
// permutation that swaps two axes, so it is a transpose(e, axes) node (transpose.h) built for you.
#pragma once
#include "base.h"
#include "transpose.h"

namespace tensorexpr {
namespace expr {

template <int a1, int a2, typename SrcExp, typename DType, int etype>
inline TransposeAxesExp<SrcExp, DType, SrcExp::kDim> swapaxis(const Exp<SrcExp, DType, etype>& src) {
  constexpr int dim = SrcExp::kDim;
  static_assert(dim >= 1, "swapaxis<a1, a2>(e) needs an expression with at least one dimension, not a scalar");
  static_assert(0 <= a1 && a1 < dim && 0 <= a2 && a2 < dim,
                "swapaxis<a1, a2>(e): both axes must be dimensions of e (0 <= a1, a2 < e's number of dimensions)");
  Shape<dim> axes;
  for (int i = 0; i < dim; ++i) axes[i] = i;
  axes[a1] = a2;
  axes[a2] = a1;
  return TransposeAxesExp<SrcExp, DType, dim>(src.self(), axes, "swapaxis");
}

}  // namespace expr
}  // namespace tensorexpr
