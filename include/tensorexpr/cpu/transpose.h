// cpu/transpose.h — transposes whose last dimension moves, in cache blocks (the CPU twin of
// cuda/transpose.cuh). Row by row, such a transpose writes consecutive output elements but reads each
// from a different source row, one cache line per x. While a row's X lines fit in L1, the next rows find
// them there and the row loop (map.h) is as good as anything. Past that, a thread takes a block of
// kBlockC values of c (TransposeTiles in expr/transpose.h: the source's contiguous direction) and walks x
// in steps of kBlockX: the block's source lines stay in L1 across its rows.
// expr/transpose.h's EvalTranspose chooses between the two (TransposeTilesPay).
//
// When the source is a tensor and the store a plain `=`, a block moves in SSE2 register tiles (MicroTile:
// 4 x 4 of a 4-byte type, 2 x 2 of an 8-byte one; W loads along c, a shuffle transpose, W stores along x),
// as bits, so any such type takes it. One element at a time the loop is bound by its loads (one per
// element, each from another source row), at 0.4 of memcpy. Outputs far larger than the caches stream:
// a block's tiles fill an L1 buffer whose rows leave in whole-line streaming stores (streaming stores
// straight from the tiles, a quarter line per row each, halved the speed instead).
// Tile edges, rows of c that are not adjacent in the source (c spanning rows of a padded tensor), other
// savers, sources and element sizes take the element loop.
#pragma once
#include <algorithm>
#include <type_traits>
#include "../expr/transpose.h"
#include "../tensor.h"
#include "device.h"
#include "map.h"
#include "streaming_store.h"
#include "threads.h"
#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tensorexpr {
namespace cpu_transpose {
// Measured (float, register tiles): 64 x 64 blocks; 32 x 128 and 64 x 128 were within noise of it at
// 16 threads. The element loop alone did best with 32 x 256 but reached only 0.4 of memcpy.
constexpr index_t kBlockC = 64, kBlockX = 64;

// out[k * out_stride + j] = in[j * in_stride + k] for j, k below kWidth (strides in elements of `bytes`).
// kWidth 0: no register tile for this element size on this target.
template <int bytes>
struct MicroTile {
  static constexpr int kWidth = 0;
};
#if defined(__SSE2__)
template <>
struct MicroTile<4> {
  static constexpr int kWidth = 4;
  static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const float* i = static_cast<const float*>(in);
    float* o = static_cast<float*>(out);
    __m128 r0 = _mm_loadu_ps(i), r1 = _mm_loadu_ps(i + in_stride), r2 = _mm_loadu_ps(i + 2 * in_stride),
           r3 = _mm_loadu_ps(i + 3 * in_stride);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(o, r0);
    _mm_storeu_ps(o + out_stride, r1);
    _mm_storeu_ps(o + 2 * out_stride, r2);
    _mm_storeu_ps(o + 3 * out_stride, r3);
  }
};
template <>
struct MicroTile<8> {
  static constexpr int kWidth = 2;
  static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const double* i = static_cast<const double*>(in);
    double* o = static_cast<double*>(out);
    const __m128d r0 = _mm_loadu_pd(i), r1 = _mm_loadu_pd(i + in_stride);
    _mm_storeu_pd(o, _mm_unpacklo_pd(r0, r1));
    _mm_storeu_pd(o + out_stride, _mm_unpackhi_pd(r0, r1));
  }
};
#endif

// Where a transpose of a tensor reads: the address of output element x of the row `at` (a RowAt of the
// plan below), for the two plans whose source is a tensor; kTensorSource false for any other.
template <typename Plan, int dim, typename DType>
struct TensorSource {
  static constexpr bool kAxes = std::is_same<Plan, typename expr::TransposeAxesExp<Tensor<cpu, dim, DType>, DType, dim>::Plan>::value;
  static constexpr bool k2D = dim == 2 && std::is_same<Plan, typename expr::TransposeExp<Tensor<cpu, 2, DType>>::Plan>::value;
  static constexpr bool kTensorSource = kAxes || k2D;
  template <typename RowAt>
  static const DType* Address(const RowAt& at, index_t x) {
    if constexpr (kAxes) {
      return &at.src_.REval(at.row_ + x * at.x_to_row_, at.col_ + x * at.x_to_col_);
    } else {
      return &at.src_.REval(x, at.y_);
    }
  }
};
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
  using Source = cpu_transpose::TensorSource<Plan, dim, DType>;
  using Tile = cpu_transpose::MicroTile<static_cast<int>(sizeof(DType))>;
  constexpr bool kTiled = std::is_same<Saver, sv::saveto>::value && Source::kTensorSource && Tile::kWidth > 0 &&
                          std::is_trivially_copyable<DType>::value;
  constexpr index_t kW = kTiled ? Tile::kWidth : 1;
  constexpr bool kMayStream = std::is_same<Saver, sv::saveto>::value && std::is_trivially_copyable<DType>::value;
  const StreamThreadScope threads(dst.stream_);
  const index_t c_blocks = (t.c + kBlockC - 1) / kBlockC;
  DType* const out = dst.dptr_;
  const index_t stride = dst.stride_;
  // A block that streams (streaming_store.h) lands in an L1 buffer first and leaves it a row of whole
  // lines at a time: register tiles alone write four rows at once, a quarter line each.
  const bool streaming = streaming_store::Pays<Saver, DType>(dst.shape_.Size() * index_t(sizeof(DType)));
  ParallelFor(t.planes * c_blocks, kBlockC * t.x, [plan, t, c_blocks, out, stride, streaming](index_t begin, index_t end) {
    const auto p = plan;
    alignas(64) unsigned char staging[kMayStream ? static_cast<size_t>(kBlockC * kBlockX) * sizeof(DType) : 1];
    DType* const buf = reinterpret_cast<DType*>(staging);
    const index_t c_step = t.inner * stride;  // output rows between c and c + 1
    for (index_t item = begin; item < end; ++item) {
      const index_t plane = item / c_blocks, c0 = (item - plane * c_blocks) * kBlockC;
      const index_t outer = plane / t.inner, in = plane - outer * t.inner;
      const index_t c1 = std::min(c0 + kBlockC, t.c);
      for (index_t x0 = 0; x0 < t.x; x0 += kBlockX) {
        const index_t x1 = std::min(x0 + kBlockX, t.x);
        // Element (c, x) is stored at Target(c, row)[x - x_base], the rows of c and c + 1 row_step apart.
        const index_t x_base = streaming ? x0 : 0, row_step = streaming ? kBlockX : c_step;
        const auto Target = [&](index_t c, index_t row) {
          return streaming ? buf + (c - c0) * kBlockX : out + row * stride;
        };
        index_t c = c0;
        if constexpr (kTiled) {
          // Groups of kW rows whose sources are adjacent elements: tiles, then the x tail element by element.
          const index_t x_tiled = x0 + (x1 - x0) / kW * kW;
          for (; c + kW <= c1; c += kW) {
            const index_t row = t.Row(outer, in, c);
            const DType* src = Source::Address(p.AtRow(row), x0);
            const index_t x_step = Source::Address(p.AtRow(row), x0 + 1) - src;
            bool adjacent = true;
            for (index_t k = 1; k < kW; ++k) adjacent = adjacent && Source::Address(p.AtRow(row + k * t.inner), x0) == src + k;
            DType* const o = Target(c, row);
            index_t x = x0;
            if (adjacent) {
              for (; x < x_tiled; x += kW, src += kW * x_step) Tile::Move(src, x_step, o + (x - x_base), row_step);
            }
            for (index_t k = 0; k < kW; ++k) {
              const auto at = p.AtRow(row + k * t.inner);
              for (index_t xr = x; xr < x1; ++xr) Saver::Save(o[k * row_step + (xr - x_base)], at(xr));
            }
          }
        }
        for (; c < c1; ++c) {
          const index_t row = t.Row(outer, in, c);
          const auto at = p.AtRow(row);
          DType* const o = Target(c, row);
          for (index_t x = x0; x < x1; ++x) Saver::Save(o[x - x_base], at(x));
        }
        if constexpr (kMayStream) {
          if (streaming)
            for (c = c0; c < c1; ++c)
              streaming_store::Copy(out + t.Row(outer, in, c) * stride + x0, buf + (c - c0) * kBlockX, x1 - x0);
        }
      }
    }
    if (streaming) streaming_store::Fence();
  });
}

}  // namespace tensorexpr
