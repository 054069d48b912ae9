// cpu/map.h — the CPU loop for one assignment: one fused pass, threaded over rows (or over a flat range
// when every tensor involved is contiguous and the expression is elementwise, which the compiler
// vectorises). A plain `=` into an output far larger than the caches streams its stores past them
// (streaming_store.h).
//
// Fewer rows than threads are cut into column chunks, each thread taking whole chunks: a parameter arena
// flattened to one row (the trainer's one-pass SGD update) otherwise ran on one of 16 threads, 3.0 ms a
// step on the 16-core Xeon where PyTorch's update took 0.84.
#pragma once
#include <algorithm>
#include "../tensor.h"
#include "device.h"
#include "streaming_store.h"
#include "threads.h"

namespace tensorexpr {
namespace detail {
// How many column chunks each of `rows` rows of `row_bytes` is cut into: 1 when the rows alone give every
// thread work, else enough for about 4 chunks per thread, each of 16 KB at least.
inline index_t RowChunks(index_t rows, index_t row_bytes) {
  const index_t threads = GetNumThreads();
  if (threads <= 1 || rows >= threads) return 1;
  return std::max<index_t>(1, std::min<index_t>((4 * threads + rows - 1) / rows, row_bytes / (index_t(16) << 10)));
}
// Item i of a loop over `chunks` chunks of `chunk` columns per row: row y, columns [x0, x1) (empty past
// the row's end).
struct RowChunk {
  index_t y, x0, x1;
  RowChunk(index_t i, index_t chunks, index_t chunk, index_t width)
      : y(i / chunks), x0(i % chunks * chunk), x1(std::max(x0, std::min(width, x0 + chunk))) {}
};
}  // namespace detail

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
  const index_t chunks = detail::RowChunks(s[0], width * index_t(sizeof(DType)));
  // Whole cache lines per chunk, so that threads share no line of a row that starts on one.
  constexpr index_t kLine = 64 / index_t(sizeof(DType)) > 0 ? 64 / index_t(sizeof(DType)) : 1;
  const index_t chunk = ((width + chunks - 1) / chunks + kLine - 1) / kLine * kLine;
  // Rows shorter than a cache line would stream nothing (streaming_store::Store stores a line's ends plainly).
  if (streaming && width * index_t(sizeof(DType)) >= streaming_store::kLineBytes) {
    DType* const out = dst.dptr_;
    const index_t stride = dst.stride_;
    ParallelFor(s[0] * chunks, chunk, [plan, out, stride, width, chunks, chunk](index_t begin, index_t end) {
      const auto p = plan;
      for (index_t i = begin; i < end; ++i) {
        const detail::RowChunk c(i, chunks, chunk, width);
        if (c.x1 > c.x0)
          streaming_store::Store(out + c.y * stride + c.x0, c.x1 - c.x0, [&p, c](index_t x) { return p.Eval(c.y, c.x0 + x); });
      }
      streaming_store::Fence();
    });
    return;
  }
  const auto out = dst.plan();
  if (chunks == 1) {
    // Whole rows, with no division per row to find them: on rows of a few elements (NCHW activations 7
    // wide) that division cost as much as the row.
    ParallelFor(s[0], width, [plan, out, width](index_t begin, index_t end) {
      const auto p = plan;
      const auto o = out;
      for (index_t y = begin; y < end; ++y)
        for (index_t x = 0; x < width; ++x) Saver::Save(o.REval(y, x), p.Eval(y, x));
    });
    return;
  }
  ParallelFor(s[0] * chunks, chunk, [plan, out, width, chunks, chunk](index_t begin, index_t end) {
    const auto p = plan;
    const auto o = out;
    for (index_t i = begin; i < end; ++i) {
      const detail::RowChunk c(i, chunks, chunk, width);
      const index_t y = c.y, x1 = c.x1;
      for (index_t x = c.x0; x < x1; ++x) Saver::Save(o.REval(y, x), p.Eval(y, x));
    }
  });
}

}  // namespace tensorexpr
