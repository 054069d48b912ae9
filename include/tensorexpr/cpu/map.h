// cpu/map.h — the CPU loop for one assignment: one fused pass, threaded over rows (or over a flat range
// when every tensor involved is contiguous and the expression is elementwise, which the compiler
// vectorises).
#pragma once
#include "../tensor.h"
#include "threads.h"

namespace tensorexpr {

template <typename Saver, int dim, typename DType, typename E>
inline void MapPlan(Tensor<cpu, dim, DType> dst, const E& e) {
  const Shape<2> s = dst.shape_.FlatTo2D();
  if (s.Size() == 0) return;
  const auto plan = e.plan();
  if constexpr (E::kFlat) {
    if (dst.CheckContiguous() && e.contiguous()) {
      DType* out = dst.dptr_;
      ParallelFor(s.Size(), 1, [&](index_t begin, index_t end) {
        const auto p = plan;  // a private copy keeps the loop free of aliasing doubts
        for (index_t i = begin; i < end; ++i) Saver::Save(out[i], p.EvalFlat(i));
      });
      return;
    }
  }
  const auto out = dst.plan();
  ParallelFor(s[0], s[1], [&](index_t begin, index_t end) {
    const auto p = plan;
    for (index_t y = begin; y < end; ++y) {
      for (index_t x = 0; x < s[1]; ++x) Saver::Save(out.REval(y, x), p.Eval(y, x));
    }
  });
}

}  // namespace tensorexpr
