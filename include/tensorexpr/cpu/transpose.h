// cpu/transpose.h — transposes whose last dimension moves, in cache blocks (the CPU twin of
// cuda/transpose.cuh). Row by row, such a transpose writes consecutive output elements but reads each
// from a different source row, one cache line per x. While a row's X lines fit in L1 (X up to a few
// hundred), the next rows find them there and the row loop (map.h) is as good as anything. Past that,
// a thread takes a block of 32 values of c (TransposeTiles in expr/transpose.h: the source's contiguous
// direction) and walks x in steps of 256: the block's source lines stay in L1 across its 32 rows.
// expr/transpose.h's EvalTranspose chooses between the two (TransposeTilesPay).
#pragma once
#include <algorithm>
#include "../expr/transpose.h"
#include "../tensor.h"
#include "device.h"
#include "map.h"
#include "threads.h"

namespace tensorexpr {
namespace cpu_transpose {
constexpr index_t kBlockC = 32, kBlockX = 256;  // measured: wider x blocks prefetch better than 32
}  // namespace cpu_transpose

// Blocks pay once a row's source lines overflow L1, and need c long enough to fill a block.
inline bool TransposeTilesPay(Stream<cpu>*, const expr::TransposeTiles& t) {
  return t.c >= 8 && t.x > cpu_transpose::kBlockX;
}

// dst <Saver> (an expression with plan `plan` whose output has tiles `t`), in cache blocks.
template <typename Saver, int dim, typename DType, typename Plan>
inline void RunTransposeTiles(const Tensor<cpu, dim, DType>& dst, const expr::TransposeTiles& t, const Plan& plan) {
  using cpu_transpose::kBlockC;
  using cpu_transpose::kBlockX;
  const StreamThreadScope threads(dst.stream_);
  const index_t c_blocks = (t.c + kBlockC - 1) / kBlockC;
  DType* const out = dst.dptr_;
  const index_t stride = dst.stride_;
  ParallelFor(t.planes * c_blocks, kBlockC * t.x, [plan, t, c_blocks, out, stride](index_t begin, index_t end) {
    const auto p = plan;
    for (index_t item = begin; item < end; ++item) {
      const index_t plane = item / c_blocks, c0 = (item - plane * c_blocks) * kBlockC;
      const index_t outer = plane / t.inner, in = plane - outer * t.inner;
      const index_t c1 = std::min(c0 + kBlockC, t.c);
      for (index_t x0 = 0; x0 < t.x; x0 += kBlockX) {
        const index_t x1 = std::min(x0 + kBlockX, t.x);
        for (index_t c = c0; c < c1; ++c) {
          const index_t row = t.Row(outer, in, c);
          const auto at = p.AtRow(row);
          DType* const o = out + row * stride;
          for (index_t x = x0; x < x1; ++x) Saver::Save(o[x], at(x));
        }
      }
    }
  });
}

}  // namespace tensorexpr
