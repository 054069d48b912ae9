// cuda/transpose.cuh — transposes whose last dimension moves, through shared-memory tiles.
// Evaluated element by element (map.cuh), such a transpose writes consecutive output elements but reads
// the source with a stride: each 32-byte sector fetched serves one element, and the copy runs at about a
// third of memory bandwidth. Here a block reads a 32 x 32 tile along the source's last dimension (c,
// TransposeTiles in expr/transpose.h), keeps it in shared memory, and writes it along the output's last
// dimension (x): both sides coalesced. The tile row is padded by one element so that reading a column of
// it touches 32 different banks. The source is read through the expression's plan, so any source
// expression works (a tensor under transpose / swapaxis through a pointer instead: TilePointerReader); the
// tiles pay only when it reads memory in order along c (a tensor, or a map of them).
// expr/transpose.h's EvalTranspose calls RunTransposeTiles for dst <saver> transpose(e, axes) / swapaxis /
// e.T() at the top of an assignment when TransposeTilesPay; otherwise, and inside larger expressions, the
// map kernel runs.
#pragma once
#include <algorithm>
#include <climits>
#include <type_traits>
#include <cuda_runtime.h>
#include "../expr/transpose.h"
#include "../tensor.h"
#include "check.cuh"
#include "device.cuh"
#include "map.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {

constexpr int kTile = 32;      // a tile is kTile x kTile elements
constexpr int kTileRows = 4;   // threads per block: kTile x kTileRows
constexpr int kPerThread = kTile / kTileRows;  // elements each thread moves per tile
constexpr int kTilesPerBlockX = 2;             // tiles along x a block moves in turn
// Below this many elements along c or x a tile would be mostly empty: the map kernel runs instead.
constexpr index_t kMinTileSide = 16;

// How a thread reads output element x of its source row: through a pointer and a step in IndexT when the
// source is a tensor of 3 or more dimensions under transpose(e, axes) / swapaxis, else through the plan.
// On an H200, swapaxis of 1 GB went from 0.84 of copy (the plan's 64-bit row and column arithmetic per
// element) to 0.92 through the pointer; 2-D transposes measured the other way round (a.T() 0.92 of copy
// through its plan, transpose(a, (1, 0)) and swapaxis<1, 0>(a) 0.89 through the pointer), so they keep
// their plans. A plan that maps a tensor's elements (an epilogue's bias and relu as a staged convolution
// result is moved back) reads the tensor through the pointer too, each element then mapped.
template <typename Source>
constexpr bool kTileReadsPointer = (Source::kAxes || Source::kMapped) && Source::kDim > 2;
struct IdentityMap {
  template <typename DType>
  __device__ __forceinline__ DType operator()(DType v, index_t) const { return v; }
};
template <typename IndexT, typename DType, typename Map = IdentityMap>
struct TilePointerReader {
  const DType* p;
  IndexT step;
  Map map;
  __device__ __forceinline__ DType operator()(IndexT x) const { return map(p[x * step], static_cast<index_t>(x)); }
};
template <typename Source, typename IndexT, typename DType, typename RowAt>
__device__ __forceinline__ auto MakeTileReader(const RowAt& at) {
  if constexpr (kTileReadsPointer<Source> && Source::kMapped) {
    using Map = decltype(Source::Map(at));
    return TilePointerReader<IndexT, DType, Map>{Source::Address(at, 0), static_cast<IndexT>(Source::Step(at)),
                                                 Source::Map(at)};
  } else if constexpr (kTileReadsPointer<Source>) {
    return TilePointerReader<IndexT, DType>{Source::Address(at, 0), static_cast<IndexT>(Source::Step(at)), IdentityMap{}};
  } else {
    return at;  // called with an IndexT x, which widens to its index_t
  }
}

// Block (bx, by, bz) moves tiles (x tile, c tile, plane), kTilesPerBlockX or fewer along x, striding by the
// grid where a dimension has more tiles than a grid dimension may hold (65535 along y and z). A thread
// finds its source column once for all its tiles, and issues all its loads of a tile before it stores any
// to shared memory, so that they are in flight together. On an H200 (bench/bandwidth --families), a.T()
// of 1 GB went from 0.83 to 0.92 of a copy's bandwidth; 1, 4 and 8 tiles per block measured below 2,
// and 64 x 64 tiles of 512 threads (more registers per block) at 0.70.
template <typename Saver, typename DType, typename Plan, typename IndexT, typename Source>
__global__ void __launch_bounds__(kTile * kTileRows)
    TransposeTileKernel(DType* out, IndexT out_stride, expr::TransposeTiles t, Plan plan) {
  // Raw storage: a __shared__ array may not run constructors (half_t and bf16_t have them).
  __shared__ alignas(DType) unsigned char storage[kTile * (kTile + 1) * sizeof(DType)];
  auto tile = reinterpret_cast<DType(*)[kTile + 1]>(storage);
  const IndexT inner = static_cast<IndexT>(t.inner), C = static_cast<IndexT>(t.c), X = static_cast<IndexT>(t.x);
  const IndexT planes = static_cast<IndexT>(t.planes);
  for (IndexT plane = blockIdx.z; plane < planes; plane += gridDim.z) {
    const IndexT outer = plane / inner, in = plane - outer * inner;
    for (IndexT c0 = IndexT(blockIdx.y) * kTile; c0 < C; c0 += IndexT(gridDim.y) * kTile) {
      // Where this thread's source column starts, once for all the block's tiles along x (the plan
      // divides the output row by each source dimension to find it). Past C it is C - 1's, unused.
      const IndexT read_c = c0 + threadIdx.x;
      const auto at = MakeTileReader<Source, IndexT, DType>(
          plan.AtRow(static_cast<index_t>((outer * C + (read_c < C ? read_c : C - 1)) * inner + in)));
      for (IndexT x0 = IndexT(blockIdx.x) * kTile; x0 < X; x0 += IndexT(gridDim.x) * kTile) {
        // Read: threads along c (the source's contiguous direction); thread row y takes tile rows
        // y, y + kTileRows, ... (output rows x0 + those).
        if (read_c < C) {
          DType v[kPerThread];
TE_UNROLL
          for (int k = 0; k < kPerThread; ++k) {
            const IndexT x = x0 + threadIdx.y + k * kTileRows;
            if (x < X) v[k] = at(x);
          }
TE_UNROLL
          for (int k = 0; k < kPerThread; ++k)
            if (x0 + threadIdx.y + k * kTileRows < X) tile[threadIdx.y + k * kTileRows][threadIdx.x] = v[k];
        }
        __syncthreads();
        // Write: threads along x (the output's contiguous direction).
        {
          const IndexT x = x0 + threadIdx.x;
          if (x < X) {
TE_UNROLL
            for (int k = 0; k < kPerThread; ++k) {
              const IndexT c = c0 + threadIdx.y + k * kTileRows;
              if (c < C)
                Saver::template Save<DType>(out[((outer * C + c) * inner + in) * out_stride + x],
                                            tile[threadIdx.x][threadIdx.y + k * kTileRows]);
            }
          }
        }
        __syncthreads();  // the tile is rewritten next
      }
    }
  }
}

}  // namespace cuda

// Tiles pay when both of their sides are long enough to fill most of a tile.
inline bool TransposeTilesPay(Stream<gpu>*, const expr::TransposeTiles& t) {
  return t.c >= cuda::kMinTileSide && t.x >= cuda::kMinTileSide;
}

// dst <Saver> (an expression with plan `plan` whose output has tiles `t`), on dst's stream.
template <typename Saver, int dim, typename DType, typename Plan>
inline void RunTransposeTiles(const Tensor<gpu, dim, DType>& dst, const expr::TransposeTiles& t, const Plan& plan) {
  using namespace cuda;
  const index_t tiles_c = (t.c + kTile - 1) / kTile, tiles_x = (t.x + kTile - 1) / kTile;
  const Shape<2> s = dst.shape_.FlatTo2D();
  using Source = expr::TransposeTensorSource<Plan, gpu, dim, DType>;
  // 32-bit indices when every index formed fits: rows * stride + x, the strided tile starts, and for a
  // tensor source the offsets x * step from a row's first element.
  index_t read_step = 0;
  if constexpr (kTileReadsPointer<Source>) read_step = Source::Step(plan.AtRow(0));
  const bool fits32 = s[0] * dst.stride_ + kTile <= INT32_MAX && t.c + kTile <= INT32_MAX && t.x + kTile <= INT32_MAX &&
                      (t.x + kTile) * read_step <= INT32_MAX && !Force64BitIndexFlag().load();
  const cudaStream_t stream = Stream<gpu>::GetStream(dst.stream_);
  const dim3 grid(static_cast<unsigned>(std::min<index_t>((tiles_x + kTilesPerBlockX - 1) / kTilesPerBlockX, INT32_MAX)),
                  static_cast<unsigned>(std::min<index_t>(tiles_c, cuda::kMaxGridYZ)),
                  static_cast<unsigned>(std::min<index_t>(t.planes, cuda::kMaxGridYZ)));
  const dim3 block(kTile, kTileRows);
  if (fits32) {
    TransposeTileKernel<Saver, DType, Plan, uint32_t, Source><<<grid, block, 0, stream>>>(
        dst.dptr_, static_cast<uint32_t>(dst.stride_), t, plan);
  } else {
    TransposeTileKernel<Saver, DType, Plan, int64_t, Source><<<grid, block, 0, stream>>>(
        dst.dptr_, static_cast<int64_t>(dst.stride_), t, plan);
  }
  TE_CUDA_CHECK_LAUNCH("tensorexpr transpose tile kernel");
}

}  // namespace tensorexpr
