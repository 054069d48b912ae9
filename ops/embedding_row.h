// ops/embedding_row.h — what the embedding's passes share on both devices: the row an index value picks,
// and one row of the weight gradient summed over its positions in sorted order (the same order, and so the
// same rounding, on the CPU and the GPU).
#pragma once
#include <type_traits>
#include <tensorexpr/base.h>
#include <tensorexpr/dtype.h>

namespace tensorexpr {
namespace ops {
namespace detail {

// The weight row of index value v among `rows` (>= 1): truncated toward zero, clipped to [0, rows); NaN picks
// row 0. The raise mode has checked beforehand that no value needs the clip.
template <typename IType>
TE_XINLINE index_t EmbeddingRow(IType v, index_t rows) {
  if constexpr (std::is_integral<IType>::value) {
    const index_t i = static_cast<index_t>(v);
    return i <= 0 ? 0 : (i >= rows ? rows - 1 : i);
  } else {
    const double d = static_cast<double>(static_cast<compute_t<IType>>(v));
    if (!(d >= 1)) return 0;  // NaN, negatives and what truncates to 0
    return d >= static_cast<double>(rows) ? rows - 1 : static_cast<index_t>(d);
  }
}

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
