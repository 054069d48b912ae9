// mshadow/map_exp.h — mshadow's low-level evaluation functions, on tensorexpr's evaluators:
//   MapExp<Saver>(&dst, e)                                 dst <Saver> e  (sv::saveto is dst = e, ...)
//   MapReduceKeepLowest<Saver, Reducer>(&dst, e, scale)    dst (C) <Saver> scale * the reduction of e's
//                                                          (rows, C) view over its rows
//   MapReduceKeepHighDim<Saver, Reducer, dimkeep>(&dst, e, scale)
//                                                          dst <Saver> scale * the reduction of e over
//                                                          every dimension but dimkeep
// Reducers are ours or written to mshadow's interface (SetInitValue / Reduce). Shape mismatches throw
// Error (mshadow: CHECK). An empty reduction gives the reducer's identity (mshadow refused it).
#pragma once
#include "../tensorexpr.h"

namespace mshadow {

template <typename Saver, typename Device, int dim, typename DType, typename E, int etype>
inline void MapExp(::tensorexpr::Tensor<Device, dim, DType>* dst, const ::tensorexpr::expr::Exp<E, DType, etype>& e) {
  dst->template Store<Saver>(e);
}

template <typename Saver, typename Reducer, typename Device, typename DType, typename E, int etype>
inline void MapReduceKeepLowest(::tensorexpr::Tensor<Device, 1, DType>* dst,
                                const ::tensorexpr::expr::Exp<E, DType, etype>& e, DType scale = DType(1)) {
  static_assert(E::kDim >= 1, "MapReduceKeepLowest reduces a tensor expression, not a scalar");
  dst->template Store<Saver>(::tensorexpr::expr::reduce_except_dim<Reducer, E::kDim - 1>(e) * scale);
}

template <typename Saver, typename Reducer, int dimkeep, typename Device, typename DType, typename E, int etype>
inline void MapReduceKeepHighDim(::tensorexpr::Tensor<Device, 1, DType>* dst,
                                 const ::tensorexpr::expr::Exp<E, DType, etype>& e, DType scale = DType(1)) {
  dst->template Store<Saver>(::tensorexpr::expr::reduce_except_dim<Reducer, dimkeep>(e) * scale);
}

}  // namespace mshadow
