// cpu/pool.h — the CPU evaluator of unpool<Reducer>(...) (expr/pool.h) at the top level of an assignment.
#pragma once
#include <algorithm>
#include <type_traits>
#include <vector>
#include "../expr/pool.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {
namespace expr {

// On the CPU, `dst = unpool<Reducer>(...)` at the top level walks the windows instead of the pixels: a
// thread owns whole planes, adds each window's gradient into a private plane buffer (a fixed order:
// deterministic), then saves the buffer. The per-pixel gather of the plan branches on data (is this
// pixel its window's max?) in a way a CPU mispredicts; this loop is several times faster. Windows that
// tile the image without overlapping (kernel = stride, as in 2x2 stride 2) give each pixel at most one
// window: the pixels are then saved straight from their window, with no buffer.
template <typename Saver, int dim, typename DType, typename Reducer, typename ES, typename EP, typename EG>
inline void EvalInto(Tensor<cpu, dim, DType> dst,
                     const Exp<UnPoolingExp<Reducer, ES, EP, EG>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  using E = UnPoolingExp<Reducer, ES, EP, EG>;
  using A = accum_t<DType>;
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the operands of unpool live on a different device than the tensor it is assigned to; Copy() them first");
  const E& e = exp.self();
  const Shape<dim> s = e.shape(), p = e.pooled_.shape();
  TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression unpool ", s);
  if (s.Size() == 0) return;
  const index_t h = s[dim - 2], w = s[dim - 1], ph = p[dim - 2], pw = p[dim - 1];
  const index_t ky = e.ksize_y_, kx = e.ksize_x_, sy = e.stride_y_, sx = e.stride_x_;
  const auto src_plan = e.src_.plan();
  const auto pooled_plan = e.pooled_.plan();
  const auto grad_plan = e.grad_.plan();
  ParallelFor(s.ProdShape(0, dim - 2), h * w + ph * pw * ky * kx, [&](index_t begin, index_t end) {
    const auto src = src_plan;
    const auto pooled = pooled_plan;
    const auto grad = grad_plan;
    if (ky == sy && kx == sx) {
      for (index_t row = begin * h; row < end * h; ++row) {  // rows of the planes [begin, end)
        const index_t plane = row / h, y = row - plane * h, py = y / sy, prow = plane * ph + py;
        DType* out = dst.dptr_ + row * dst.stride_;
        index_t x = 0;
        for (index_t px = 0; py < ph && px < pw; ++px) {
          const DType g = grad.Eval(prow, px);
          if constexpr (unpool_route<Reducer>::kEveryWindow) {
            for (x = px * sx; x < std::min(px * sx + kx, w); ++x) Saver::Save(out[x], g);
          } else {
            const DType m = pooled.Eval(prow, px);
            for (x = px * sx; x < std::min(px * sx + kx, w); ++x)
              Saver::Save(out[x], unpool_route<Reducer>::Routes(src.Eval(row, x), m) ? g : DType(0));
          }
        }
        for (; x < w; ++x) Saver::Save(out[x], DType(0));  // pixels no window covers
      }
      return;
    }
    std::vector<A> acc(static_cast<size_t>(h * w));
    for (index_t plane = begin; plane < end; ++plane) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (index_t py = 0; py < ph; ++py) {
        const index_t y0 = py * sy, y1 = std::min(y0 + ky, h);
        for (index_t px = 0; px < pw; ++px) {
          const index_t x0 = px * sx, x1 = std::min(x0 + kx, w);
          const A g = static_cast<A>(grad.Eval(plane * ph + py, px));
          if constexpr (unpool_route<Reducer>::kEveryWindow) {
            for (index_t y = y0; y < y1; ++y) {
              A* a = acc.data() + y * w;
              for (index_t x = x0; x < x1; ++x) a[x] += g;
            }
          } else {
            const DType m = pooled.Eval(plane * ph + py, px);
            for (index_t y = y0; y < y1; ++y) {
              A* a = acc.data() + y * w;
              const index_t row = plane * h + y;
              for (index_t x = x0; x < x1; ++x) a[x] += static_cast<A>(unpool_route<Reducer>::Routes(src.Eval(row, x), m)) * g;
            }
          }
        }
      }
      for (index_t y = 0; y < h; ++y) {
        DType* out = dst.dptr_ + (plane * h + y) * dst.stride_;
        for (index_t x = 0; x < w; ++x) Saver::Save(out[x], static_cast<DType>(acc[y * w + x]));
      }
    }
  });
}

}  // namespace expr
}  // namespace tensorexpr
