// mshadow/reduce.h — the reductions whose mshadow spelling means something else in tensorexpr:
//   reduce_except_dim<dimkeep, Reducer>(e)   mshadow's argument order (tensorexpr's is <Reducer, dimkeep>)
//   reduce_with_axis<Reducer, mask>(e, axis) mask = true is the index the reducer settles on (argmax for
//                                            red::maximum); tensorexpr's second argument is keepdim
//   reduce_keepdim<Reducer, mask>(e, axis)  the same with the reduced axis kept at extent 1
// Both results have mshadow's shapes and compose like any tensorexpr expression.
//
// reduce_with_axis is a function object, not a function template: an unqualified call finds the object
// by ordinary lookup, which switches off argument-dependent lookup, so tensorexpr::expr::reduce_with_axis
// (found through the arguments' namespace otherwise) cannot make the call ambiguous or change its meaning.
// reduce_except_dim needs no such care: with an int first, tensorexpr's <typename, int> overload drops out.
#pragma once
#include "../tensorexpr.h"
#include "reduce_index.h"

namespace mshadow {
namespace expr {

template <int dimkeep, typename Reducer, typename SrcExp, typename DType, int etype>
inline auto reduce_except_dim(const ::tensorexpr::expr::Exp<SrcExp, DType, etype>& e) {
  return ::tensorexpr::expr::reduce_except_dim<Reducer, dimkeep>(e);
}

template <typename Reducer, bool mask, bool keepdim>
struct ReduceWithAxis {
  template <typename SrcExp, typename DType, int etype>
  auto operator()(const ::tensorexpr::expr::Exp<SrcExp, DType, etype>& e, int axis) const {
    if constexpr (mask) {
      return ReduceIndexExp<::tensorexpr::red::reducer_t<Reducer>, SrcExp, DType, keepdim>(e.self(), axis);
    } else {
      return ::tensorexpr::expr::reduce_with_axis<Reducer, keepdim>(e, axis);
    }
  }
};
template <typename Reducer, bool mask>
inline constexpr ReduceWithAxis<Reducer, mask, false> reduce_with_axis{};
template <typename Reducer, bool mask>
inline constexpr ReduceWithAxis<Reducer, mask, true> reduce_keepdim{};

}  // namespace expr
}  // namespace mshadow
