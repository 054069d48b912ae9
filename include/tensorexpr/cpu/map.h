// cpu/map.h — the CPU loop for one assignment: one fused pass, threaded over rows (or over a flat range
// when every tensor involved is contiguous and the expression is elementwise, which the compiler
// vectorises). A plain `=` into an output far larger than the caches streams its stores past them
// (streaming_store.h).
#pragma once
#include "../tensor.h"
#include "device.h"
#include "streaming_store.h"
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
  const bool streaming = streaming_store::Pays<Saver, DType>(s.Size() * index_t(sizeof(DType)));
  if constexpr (E::kFlat) {
    if (dst.CheckContiguous() && e.contiguous()) {
      DType* const out = dst.dptr_;
      if (streaming) {
        ParallelFor(s.Size(), 1, [plan, out](index_t begin, index_t end) {
          const auto p = plan;
          streaming_store::Store(out + begin, end - begin, [&p, begin](index_t i) { return p.EvalFlat(begin + i); });
          streaming_store::Fence();
        });
        return;
      }
      ParallelFor(s.Size(), 1, [plan, out](index_t begin, index_t end) {
        const auto p = plan;
        DType* const o = out;
        for (index_t i = begin; i < end; ++i) Saver::Save(o[i], p.EvalFlat(i));
      });
      return;
    }
  }
  const index_t width = s[1];
  if (streaming) {
    DType* const out = dst.dptr_;
    const index_t stride = dst.stride_;
    ParallelFor(s[0], width, [plan, out, stride, width](index_t begin, index_t end) {
      const auto p = plan;
      for (index_t y = begin; y < end; ++y)
        streaming_store::Store(out + y * stride, width, [&p, y](index_t x) { return p.Eval(y, x); });
      streaming_store::Fence();
    });
    return;
  }
  const auto out = dst.plan();
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
