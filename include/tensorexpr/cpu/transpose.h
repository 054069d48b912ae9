// cpu/transpose.h — transposes whose last dimension moves, in cache blocks (the CPU twin of
// cuda/transpose.cuh). Row by row, such a transpose writes consecutive output elements but reads each
// from a different source row, one cache line per x. While a row's X lines fit in L1, the next rows find
// them there and the row loop (map.h) is as good as anything. Past that, a thread takes a block of
// kBlockC values of c (TransposeTiles in expr/transpose.h: the source's contiguous direction) and walks x
// in steps of kBlockX: the block's source lines stay in L1 across its rows.
// expr/transpose.h's EvalTranspose chooses between the two (TransposeTilesPay).
//
// When the source is a tensor and the store a plain `=`, a block moves in register tiles
// (cpu/transpose_tiles.h: W x W elements, W loads along c, a shuffle transpose, W stores along x; AVX2's
// 8 x 8 where the processor has it, else SSE2's 4 x 4), as bits, so any such type of 4 or 8 bytes takes
// them. One element at a time the loop is bound by its loads (one per element, each from another source
// row), at 0.4 of memcpy. Outputs far larger than the caches stream:
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
#include "transpose_tiles.h"

namespace tensorexpr {
namespace cpu_transpose {
// Measured (float, SSE2 register tiles): 64 x 64 blocks; 32 x 128 and 64 x 128 were within noise of it at
// 16 threads. The element loop alone did best with 32 x 256 but reached only 0.4 of memcpy.
constexpr index_t kBlockC = 64, kBlockX = 64;

}  // namespace cpu_transpose

// Blocks pay once a row's source lines overflow L1, and need c long enough to fill a block.
inline bool TransposeTilesPay(Stream<cpu>*, const expr::TransposeTiles& t) {
  return t.c >= 8 && t.x > cpu_transpose::kBlockX;
}

namespace cpu_transpose {
// dst <Saver> plan in cache blocks, with register tiles Tile where they apply (Tile::kWidth 0: none).
template <typename Saver, typename Tile, int dim, typename DType, typename Plan>
inline void RunBlocks(const Tensor<cpu, dim, DType>& dst, const expr::TransposeTiles& t, const Plan& plan) {
  using Source = expr::TransposeTensorSource<Plan, cpu, dim, DType>;
  constexpr bool kTiled = Tile::kWidth > 0;
  constexpr index_t kW = kTiled ? Tile::kWidth : 1;
  constexpr bool kMayStream = std::is_same<Saver, sv::saveto>::value && std::is_trivially_copyable<DType>::value;
  const index_t c_blocks = (t.c + kBlockC - 1) / kBlockC;
  DType* const out = dst.dptr_;
  const index_t stride = dst.stride_;
  // A block that streams (streaming_store.h) lands in an L1 buffer first and leaves it a row of whole
  // lines at a time: register tiles alone write W rows at once, a fraction of a line each.
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
          const index_t tiles = (x1 - x0) / kW;
          for (; c + kW <= c1; c += kW) {
            // Source addresses only grow with c (c runs along the source's rows, padding between them), so
            // the group's sources are kW adjacent elements exactly when the last is kW - 1 past the first:
            // two row lookups (each a few divisions) per group, not one per row.
            const index_t row = t.Row(outer, in, c);
            const auto first = p.AtRow(row);
            const DType* src = Source::Address(first, x0);
            const index_t x_step = Source::Step(first);
            const bool adjacent = Source::Address(p.AtRow(row + (kW - 1) * t.inner), x0) == src + (kW - 1);
            DType* const o = Target(c, row);
            index_t x = x0;
            if (adjacent) {
              MoveStrip<Tile>(src, x_step, o + (x - x_base), row_step, tiles);
              x += tiles * kW;
            }
            if (x < x1) {
              for (index_t k = 0; k < kW; ++k) {
                const auto at = p.AtRow(row + k * t.inner);
                for (index_t xr = x; xr < x1; ++xr) Saver::Save(o[k * row_step + (xr - x_base)], at(xr));
              }
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
}  // namespace cpu_transpose

// dst <Saver> (an expression with plan `plan` whose output has tiles `t`), in cache blocks. Register tiles
// move a plain `=` from a tensor; the widest the processor runs is chosen once per call.
template <typename Saver, int dim, typename DType, typename Plan>
inline void RunTransposeTiles(const Tensor<cpu, dim, DType>& dst, const expr::TransposeTiles& t, const Plan& plan) {
  const StreamThreadScope threads(dst.stream_);
  constexpr bool kTileable = std::is_same<Saver, sv::saveto>::value &&
                             expr::TransposeTensorSource<Plan, cpu, dim, DType>::kTensorSource &&
                             std::is_trivially_copyable<DType>::value;
  if constexpr (kTileable) {
    cpu_transpose::WithMicroTile<static_cast<int>(sizeof(DType))>([&](auto tile) {
      cpu_transpose::RunBlocks<Saver, decltype(tile)>(dst, t, plan);
    });
  } else {
    cpu_transpose::RunBlocks<Saver, cpu_transpose::NoTile>(dst, t, plan);
  }
}

}  // namespace tensorexpr
