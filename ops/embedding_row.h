// ops/embedding_row.h — what the embedding's gradient shares on both devices: one row of the weight gradient
// summed over its positions in sorted order (the same order, and so the same rounding, on the CPU and the
// GPU). The row an index picks is take's (expr/take.h: TakeRow<true>, the forward's clip).
#pragma once
#include <type_traits>
#include <tensorexpr/base.h>
#include <tensorexpr/dtype.h>
#include <tensorexpr/expr/take.h>

namespace tensorexpr {
namespace ops {
namespace detail {

// weight_grad[row, col] += the sum over q in [begin, end) of out_grad[pos[q], col], added in that order in
// accum_t<DType>.
template <typename DType>
TE_XINLINE void EmbeddingAddRow(const index_t* pos, index_t begin, index_t end, const DType* dy, index_t dy_stride,
                                index_t col, DType* dw_elem) {
  using A = accum_t<DType>;
  A acc = A(0);
  for (index_t q = begin; q < end; ++q) acc += static_cast<A>(dy[pos[q] * dy_stride + col]);
  *dw_elem = static_cast<DType>(static_cast<A>(*dw_elem) + acc);
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
