// cpu/map.h — the CPU loop for one assignment: one fused pass, threaded over rows (or over a flat range
// when every tensor involved is contiguous and the expression is elementwise, which the compiler
// vectorises).
#pragma once
#include "../tensor.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {

template <typename Saver, int dim, typename DType, typename E>
inline void MapPlan(Tensor<cpu, dim, DType> dst, const E& e) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  const Shape<2> s = dst.shape_.FlatTo2D();
  if (s.Size() == 0) return;
  const auto plan = e.plan();
  // Everything the loops read is copied into locals: a byte store could otherwise alias a captured
  // reference and stop vectorisation (int8/uint8 would run 10x slower).
  if constexpr (E::kFlat) {
    if (dst.CheckContiguous() && e.contiguous()) {
      DType* const out = dst.dptr_;
      ParallelFor(s.Size(), 1, [plan, out](index_t begin, index_t end) {
        const auto p = plan;
        DType* const o = out;
        for (index_t i = begin; i < end; ++i) Saver::Save(o[i], p.EvalFlat(i));
      });
      return;
    }
  }
  const auto out = dst.plan();
  const index_t width = s[1];
  ParallelFor(s[0], width, [plan, out, width](index_t begin, index_t end) {
    const auto p = plan;
    const auto o = out;
    const index_t w = width;
    for (index_t y = begin; y < end; ++y) {
      for (index_t x = 0; x < w; ++x) Saver::Save(o.REval(y, x), p.Eval(y, x));
    }
  });
}

}  // namespace tensorexpr
