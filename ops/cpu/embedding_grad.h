// ops/cpu/embedding_grad.h — the embedding's weight gradient on the CPU: the positions stably sorted by the
// row they pick, then each row's positions summed in that order (ops/embedding_row.h), rows dealt out to
// the threads. Deterministic whatever the thread count: a row is summed by one thread, in one order.
#pragma once
#include <algorithm>
#include <numeric>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include "../embedding_row.h"

namespace tensorexpr {
namespace ops {
namespace detail {

// weight_grad (rows, cols) += out_grad (n, cols) summed into the rows idx (n) picks.
template <typename IType, typename DType>
void EmbeddingGradRows(Stream<cpu>* s, const IType* idx, index_t n, index_t rows, const DType* dy,
                       index_t dy_stride, index_t cols, DType* dw, index_t dw_stride) {
  std::vector<index_t> row(static_cast<size_t>(n)), pos(static_cast<size_t>(n));
  for (index_t i = 0; i < n; ++i) row[size_t(i)] = expr::TakeRow<true>(idx[i], rows);
  std::iota(pos.begin(), pos.end(), index_t(0));
  std::stable_sort(pos.begin(), pos.end(), [&](index_t a, index_t b) { return row[size_t(a)] < row[size_t(b)]; });
  std::vector<index_t> starts;  // where each row's run of positions begins, then n
  for (index_t q = 0; q < n; ++q)
    if (q == 0 || row[size_t(pos[size_t(q)])] != row[size_t(pos[size_t(q - 1)])]) starts.push_back(q);
  starts.push_back(n);
  const index_t runs = static_cast<index_t>(starts.size()) - 1;
  const StreamThreadScope threads(s);
  ParallelFor(runs, std::max<index_t>(1, n / runs) * cols, [&](index_t begin, index_t end) {
    for (index_t r = begin; r < end; ++r) {
      const index_t q0 = starts[size_t(r)], q1 = starts[size_t(r + 1)];
      DType* out = dw + row[size_t(pos[size_t(q0)])] * dw_stride;
      for (index_t col = 0; col < cols; ++col) EmbeddingAddRow(pos.data(), q0, q1, dy, dy_stride, col, out + col);
    }
  });
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
