// cpu/transpose.h — transposes whose last dimension moves, in cache blocks (the CPU twin of
// cuda/transpose.cuh). Row by row, such a transpose writes consecutive output elements but reads each
// from a different source row, one cache line per x. While a row's X lines fit in L1 (X up to a few
// hundred), the next rows find them there and the row loop (map.h) is as good as anything. Past that,
// a thread takes a block of 32 values of c (TransposeTiles in expr/transpose.h: the source's contiguous
// direction) and walks x in steps of 256: the block's source lines stay in L1 across its 32 rows.
#pragma once
#include <algorithm>
#include "../expr/transpose.h"
#include "../expr/transpose2d.h"
#include "../tensor.h"
#include "device.h"
#include "map.h"
#include "threads.h"

namespace tensorexpr {
namespace cpu_transpose {

constexpr index_t kBlockC = 32, kBlockX = 256;  // measured: wider x blocks prefetch better than 32

template <typename Saver, int dim, typename DType, typename Plan>
inline void RunBlocks(const Tensor<cpu, dim, DType>& dst, const expr::TransposeTiles& t, const Plan& plan) {
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

// Blocks pay once a row's source lines overflow L1, and need c long enough to fill a block.
inline bool UseBlocks(const expr::TransposeTiles& t) { return t.c >= 8 && t.x > kBlockX; }

}  // namespace cpu_transpose

namespace expr {

// dst <Saver> transpose(e, axes) / swapaxis<a, b>(e) on the CPU: cache blocks when the last dimension
// moves and its rows are long (UseBlocks), else the row loop.
template <typename Saver, int dim, typename DType, typename SrcExp>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const Exp<TransposeAxesExp<SrcExp, DType, dim>, DType, type::kChainer>& exp) {
  static_assert(std::is_same<typename SrcExp::device_type, cpu>::value,
                "the source of transpose/swapaxis lives on a different device than the tensor it is assigned to; Copy() it first");
  const TransposeAxesExp<SrcExp, DType, dim>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", e.shape());
  TransposeTiles t;
  if (TransposeTiles::Make(e.shape(), e.axes_, &t) && cpu_transpose::UseBlocks(t)) {
    cpu_transpose::RunBlocks<Saver>(dst, t, e.plan());
  } else {
    MapPlan<Saver>(dst, e);
  }
}

// dst <Saver> e.T() on the CPU: the same blocks.
template <typename Saver, typename DType, typename E>
inline void EvalInto(Tensor<cpu, 2, DType> dst, const Exp<TransposeExp<E>, DType, type::kChainer>& exp) {
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the source of .T() lives on a different device than the tensor it is assigned to; Copy() it first");
  const TransposeExp<E>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", e.shape());
  TransposeTiles t;
  if (TransposeTiles::Make(e.shape(), Shape2(1, 0), &t) && cpu_transpose::UseBlocks(t)) {
    cpu_transpose::RunBlocks<Saver>(dst, t, e.plan());
  } else {
    MapPlan<Saver>(dst, e);
  }
}

}  // namespace expr
}  // namespace tensorexpr
