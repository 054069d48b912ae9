// cpu/pool.h — the CPU evaluators of pool<Reducer>(...) and unpool<Reducer>(...) (expr/pool.h) at the top
// level of an assignment.
//
// pool works a row of windows at a time: the row's plane and window ranges are found once, not once per
// element as the plan's Eval must.
//
// unpool walks the windows instead of the pixels: a thread owns whole planes, adds each window's gradient
// into a private plane buffer (a fixed order: deterministic), then saves the buffer. The per-pixel
// gather of the plan branches on data (is this pixel its window's max?) in a way a CPU mispredicts; this
// loop is several times faster. Windows that tile the image without overlapping or padding (kernel =
// stride, as in 2x2 stride 2) give each pixel at most one window: the pixels are then saved straight
// from their window, with no buffer.
#pragma once
#include <algorithm>
#include <type_traits>
#include <vector>
#include "../expr/pool.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {
namespace expr {

template <typename Saver, int dim, typename DType, typename Reducer, typename E>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const Exp<PoolingExp<Reducer, E>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  using P = PoolingExp<Reducer, E>;
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the source of pool lives on a different device than the tensor it is assigned to; Copy() it first");
  const P& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression pool ", e.shape());
  if (dst.shape_.Size() == 0) return;
  const PoolWindows& w = e.w_;
  const index_t OD = w.out[0], OH = w.out[1], OW = w.out[2];
  const auto src_plan = e.src_.plan();
  // 2 x 2 windows of stride 2 over a tensor (the commonest pooling): the row's windows that lie whole in
  // the image read two source rows directly, with no window ranges to compute (4x faster for the trainer's
  // max pooling); windows clipped by the image's edge take the general loop.
  constexpr bool kTensorSource = std::is_same<E, Tensor<cpu, dim, DType>>::value;
  [[maybe_unused]] bool pairs = false;
  if constexpr (kTensorSource) pairs = w.TwoByTwoTiles();
  ParallelFor(dst.shape_.Size() / OW, OW * w.k[0] * w.k[1] * w.k[2], [&](index_t begin, index_t end) {
    const auto src = src_plan;
    for (index_t row = begin; row < end; ++row) {  // (plane, od, oh)
      const index_t oh = row % OH, od = (row / OH) % OD, plane = row / (OH * OD);
      const PoolWindows::Range rd = w.At(0, od), rh = w.At(1, oh);
      DType* out = dst.dptr_ + row * dst.stride_;
      index_t ow = 0;
      if constexpr (kTensorSource) {
        if (pairs && rh.hi - rh.lo == 2) {
          const DType* r0 = e.src_.dptr_ + (plane * w.in[1] + rh.lo) * e.src_.stride_;
          const DType* r1 = r0 + e.src_.stride_;
          using A = accum_t<DType>;
          for (const index_t whole = std::min(OW, w.in[2] / 2); ow < whole; ++ow) {
            A acc = Reducer::template Init<A, DType>();
            Reducer::template Reduce<A>(acc, static_cast<A>(r0[2 * ow]));
            Reducer::template Reduce<A>(acc, static_cast<A>(r0[2 * ow + 1]));
            Reducer::template Reduce<A>(acc, static_cast<A>(r1[2 * ow]));
            Reducer::template Reduce<A>(acc, static_cast<A>(r1[2 * ow + 1]));
            if constexpr (P::kDivides) {
              if (w.divisor != PoolDivisor::kNone) acc = acc / static_cast<A>(4);  // whole windows: both divisors
            }
            Saver::Save(out[ow], static_cast<DType>(acc));
          }
        }
      }
      for (; ow < OW; ++ow) Saver::Save(out[ow], P::Window(src, w, plane, rd, rh, w.At(2, ow)));
    }
  });
}

template <typename Saver, int dim, typename DType, typename Reducer, typename ES, typename EP, typename EG>
inline void EvalInto(Tensor<cpu, dim, DType> dst,
                     const Exp<UnPoolingExp<Reducer, ES, EP, EG>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  using E = UnPoolingExp<Reducer, ES, EP, EG>;
  using A = accum_t<DType>;
  using Route = unpool_route<Reducer>;
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the operands of unpool live on a different device than the tensor it is assigned to; Copy() them first");
  const E& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression unpool ", e.shape());
  if (dst.shape_.Size() == 0) return;
  const PoolWindows& w = e.w_;
  const index_t D = w.in[0], H = w.in[1], W = w.in[2], OD = w.out[0], OH = w.out[1], OW = w.out[2];
  const index_t planes = dst.shape_.Size() / (D * H * W);
  const auto src_plan = e.src_.plan();
  const auto pooled_plan = e.pooled_.plan();
  const auto grad_plan = e.grad_.plan();
  const bool tiles = w.divisor == PoolDivisor::kNone && w.Tiles();
  // 2 x 2 windows of stride 2 with tensors for operands (the trainer's max pooling) read their rows
  // directly, as the forward does.
  constexpr bool kTensorOperands = std::is_same<ES, Tensor<cpu, dim, DType>>::value &&
                                   std::is_same<EP, Tensor<cpu, dim, DType>>::value &&
                                   std::is_same<EG, Tensor<cpu, dim, DType>>::value;
  [[maybe_unused]] const bool pairs = w.TwoByTwoTiles();
  const index_t window_taps = w.k[0] * w.k[1] * w.k[2];
  ParallelFor(planes, D * H * W + OD * OH * OW * window_taps, [&](index_t begin, index_t end) {
    const auto src = src_plan;
    const auto pooled = pooled_plan;
    const auto grad = grad_plan;
    if (tiles) {
      const index_t sz = w.s[0], sy = w.s[1], sx = w.s[2];  // = the kernel
      for (index_t plane = begin; plane < end; ++plane)
        for (index_t z = 0; z < D; ++z)
          for (index_t y = 0; y < H; ++y) {
            const index_t row = (plane * D + z) * H + y, od = z / sz, oh = y / sy;
            DType* out = dst.dptr_ + row * dst.stride_;
            index_t x = 0;
            if (od < OD && oh < OH) {
              const index_t prow = (plane * OD + od) * OH + oh;
              index_t ow = 0;
              if constexpr (kTensorOperands) {
                if (pairs) {  // 2 x 2 windows: two pixels per window, selected without branches
                  const DType* s = e.src_.dptr_ + row * e.src_.stride_;
                  const DType* gr = e.grad_.dptr_ + prow * e.grad_.stride_;
                  const DType* pm = e.pooled_.dptr_ + prow * e.pooled_.stride_;
                  for (const index_t whole = std::min(OW, W / 2); ow < whole; ++ow) {
                    const DType g = gr[ow];
                    if constexpr (Route::kEveryWindow) {
                      Saver::Save(out[2 * ow], g);
                      Saver::Save(out[2 * ow + 1], g);
                    } else {
                      const DType m = pm[ow];
                      Saver::Save(out[2 * ow], Route::Routes(s[2 * ow], m) ? g : DType(0));
                      Saver::Save(out[2 * ow + 1], Route::Routes(s[2 * ow + 1], m) ? g : DType(0));
                    }
                  }
                  x = 2 * ow;
                }
              }
              for (; ow < OW; ++ow) {
                const DType g = grad.Eval(prow, ow);
                const index_t x1 = std::min(ow * sx + sx, W);
                if constexpr (Route::kEveryWindow) {
                  for (x = ow * sx; x < x1; ++x) Saver::Save(out[x], g);
                } else {
                  const DType m = pooled.Eval(prow, ow);
                  for (x = ow * sx; x < x1; ++x) Saver::Save(out[x], Route::Routes(src.Eval(row, x), m) ? g : DType(0));
                }
              }
            }
            for (; x < W; ++x) Saver::Save(out[x], DType(0));  // pixels no window covers
          }
      return;
    }
    std::vector<A> acc(static_cast<size_t>(D * H * W));
    for (index_t plane = begin; plane < end; ++plane) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (index_t od = 0; od < OD; ++od) {
        const PoolWindows::Range rd = w.At(0, od);
        for (index_t oh = 0; oh < OH; ++oh) {
          const PoolWindows::Range rh = w.At(1, oh);
          const index_t prow = (plane * OD + od) * OH + oh;
          for (index_t ow = 0; ow < OW; ++ow) {
            const PoolWindows::Range rw = w.At(2, ow);
            A g = static_cast<A>(grad.Eval(prow, ow));
            if constexpr (Route::kEveryWindow) {
              if (w.divisor != PoolDivisor::kNone) g = g / static_cast<A>(w.Count(rd, rh, rw));
            }
            DType m = DType(0);
            if constexpr (!Route::kEveryWindow) m = pooled.Eval(prow, ow);
            for (index_t z = rd.lo; z < rd.hi; z += rd.step)
              for (index_t y = rh.lo; y < rh.hi; y += rh.step) {
                A* a = acc.data() + (z * H + y) * W;
                const index_t row = (plane * D + z) * H + y;
                for (index_t x = rw.lo; x < rw.hi; x += rw.step) {
                  if constexpr (Route::kEveryWindow) {
                    a[x] += g;
                  } else {
                    if (Route::Routes(src.Eval(row, x), m)) a[x] += g;
                  }
                }
              }
          }
        }
      }
      for (index_t r = 0; r < D * H; ++r) {
        DType* out = dst.dptr_ + (plane * D * H + r) * dst.stride_;
        for (index_t x = 0; x < W; ++x) Saver::Save(out[x], static_cast<DType>(acc[r * W + x]));
      }
    }
  });
}

}  // namespace expr
}  // namespace tensorexpr
