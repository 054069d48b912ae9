// ops/cuda/conv_direct_kernels.cuh — the kernels of "gpu_direct" (ops/cuda/conv_direct.h says what they
// compute and why they are shaped so). Included by the units that instantiate them (conv_direct_*.cu).
#pragma once
#include "conv_direct.h"

namespace tensorexpr {
namespace ops {
namespace gpu_direct {

// The tap index of filter element t of the correlation (flipped for the data gradient).
TE_XINLINE int TapIndex(const Correlation& c, int t) { return c.flip ? c.Taps() - 1 - t : t; }

// Loads n (a multiple of 4, from a 16-byte aligned address) shared floats into registers.
template <int n>
__device__ __forceinline__ void LoadShared(const float* from, float (&to)[n]) {
  static_assert(n % 4 == 0, "whole vectors");
#pragma unroll
  for (int i = 0; i < n / 4; ++i) {
    const float4 v = reinterpret_cast<const float4*>(from)[i];
    to[4 * i] = v.x, to[4 * i + 1] = v.y, to[4 * i + 2] = v.z, to[4 * i + 3] = v.w;
  }
}

// Rows of `cols` input values at x = phase + origin_x + dilate_x * (x0 + col) into shared memory, one row
// per (plane, row) pair, zero outside the input: teams of up to 32 threads (a warp, or the whole of a
// smaller block) take the rows, their lanes the columns.
template <typename DType, typename RowOf>
__device__ __forceinline__ void FillRows(const Correlation& c, const DType* image, int rows, int cols, int pitch,
                                         int phase, int x0, RowOf row_of, float* to) {
  const int threads = blockDim.x * blockDim.y, tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int lanes = min(threads, 32), teams = threads / lanes, team = tid / lanes, lane = tid % lanes;
  if (team >= teams) return;  // a block's last, partial team: the whole teams cover every column
  for (int r = team; r < rows; r += teams) {
    const int offset = row_of(r);  // the input row's start, or -1: a row of padding
    float* dst = to + r * pitch;
    for (int col = lane; col < pitch; col += lanes) {
      const int ix = phase + c.origin[2] + c.dilate[2] * (x0 + col);
      float v = 0.0f;
      if (offset >= 0 && col < cols && ix >= 0 && ix < c.in[2]) v = float(image[offset + ix]);
      dst[col] = v;
    }
  }
}

// The correlation: a block of kThreadsX x kThreadsY threads computes KB filters of a tile of
// kThreadsY rows x kThreadsX * RX columns (of one phase) of output plane z of image n's group g
// (c.tile is KB x RX).
template <typename DType, int TX, int KB, int RX>
__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    CorrelateKernel(Correlation c, const DType* __restrict__ input, const DType* __restrict__ filters,
                    DType* __restrict__ output, bool add) {
  constexpr int BX = kThreadsX * RX, BY = kThreadsY;
  constexpr int pitch = RoundUp4(BX + TX - 1), window = RoundUp4(RX + TX - 1);
  extern __shared__ float4 shared4[];
  const int TY = c.taps[1], slab_rows = BY + (TY - 1) * c.dilate[1];
  float* const slab = reinterpret_cast<float*>(shared4);  // [slab_rows][pitch]
  float* const taps = slab + slab_rows * pitch;            // [TY][TX][KB] of the current (ci, tz)

  const int x_tiles = (c.PhaseWidth(0) + BX - 1) / BX, y_tiles = (c.out[1] + BY - 1) / BY,
            filter_blocks = (c.Co + KB - 1) / KB;
  int b = blockIdx.x;
  const int xt = b % x_tiles;
  b /= x_tiles;
  const int yt = b % y_tiles;
  b /= y_tiles;
  const int kb = b % filter_blocks;
  b /= filter_blocks;
  const int phase = b % c.dilate[2];
  b /= c.dilate[2];
  const int z = b % c.out[0], ng = b / c.out[0], g = ng % c.G;
  const int x0 = xt * BX, y0 = yt * BY, width = c.PhaseWidth(phase);
  if (x0 >= width) return;  // this phase has fewer columns than phase 0

  float acc[KB][RX];
#pragma unroll
  for (int f = 0; f < KB; ++f)
#pragma unroll
    for (int r = 0; r < RX; ++r) acc[f][r] = 0.0f;

  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const DType* const image = input + size_t(ng) * c.Ci * c.InSize();
  for (int ci = 0; ci < c.Ci; ++ci)
    for (int tz = 0; tz < c.taps[0]; ++tz) {
      const int iz = z + c.origin[0] + tz * c.dilate[0];
      __syncthreads();  // the previous plane's products are done with the shared rows
      FillRows(c, image, slab_rows, BX + TX - 1, pitch, phase, x0, [&](int r) {
        const int iy = y0 + c.origin[1] + r;
        return iz >= 0 && iz < c.in[0] && iy >= 0 && iy < c.in[1] ? ((ci * c.in[0] + iz) * c.in[1] + iy) * c.in[2] : -1;
      }, slab);
      for (int e = tid; e < TY * TX * KB; e += kThreadsX * kThreadsY) {
        const int f = e % KB, tx = e / KB % TX, ty = e / (KB * TX), co = kb * KB + f;
        const int t = (tz * TY + ty) * TX + tx;
        taps[e] = co < c.Co ? float(filters[g * c.filter_g + co * c.filter_co + ci * c.filter_ci + TapIndex(c, t)])
                            : 0.0f;
      }
      __syncthreads();
      for (int ty = 0; ty < TY; ++ty) {
        float v[window];
        LoadShared(slab + (threadIdx.y + ty * c.dilate[1]) * pitch + threadIdx.x * RX, v);
        const float* const w = taps + ty * TX * KB;
#pragma unroll
        for (int tx = 0; tx < TX; ++tx) {
          float wk[KB];
#pragma unroll
          for (int f = 0; f < KB; ++f) wk[f] = w[tx * KB + f];
#pragma unroll
          for (int f = 0; f < KB; ++f)
#pragma unroll
            for (int r = 0; r < RX; ++r) acc[f][r] = fmaf(wk[f], v[r + tx], acc[f][r]);
        }
      }
    }

  const int y = y0 + threadIdx.y;
  if (y >= c.out[1]) return;
#pragma unroll
  for (int f = 0; f < KB; ++f) {
    const int co = kb * KB + f;
    if (co >= c.Co) break;
    DType* const row = output + (size_t(ng) * c.Co + co) * c.OutSize() + (size_t(z) * c.out[1] + y) * c.out[2];
#pragma unroll
    for (int r = 0; r < RX; ++r) {
      const int xp = x0 + threadIdx.x * RX + r;
      if (xp < width) {
        DType* const o = row + phase + c.dilate[2] * xp;
        *o = DType(add ? float(*o) + acc[f][r] : acc[f][r]);
      }
    }
  }
}

// The products of one run of kGradRun columns: acc[f][tx] += dy[f][x] * input[x + tx], x < valid.
template <int TX, int KB, bool kWhole>
__device__ __forceinline__ void GradRun(const float* dy, int dy_pitch, const float* in, int valid, float (&acc)[KB][TX]) {
  constexpr int RX = kGradRun;
  float v[RoundUp4(RX + TX - 1)];
  LoadShared(in, v);
#pragma unroll
  for (int f = 0; f < KB; ++f) {
    float d[RX];
    LoadShared(dy + f * dy_pitch, d);
#pragma unroll
    for (int tx = 0; tx < TX; ++tx)
#pragma unroll
      for (int r = 0; r < RX; ++r)
        if (kWhole || r < valid) acc[f][tx] = fmaf(d[r], v[r + tx], acc[f][tx]);
  }
}

// The weight gradient of one (group, filter block, input channel, group of (tz, ty) pairs) over a chunk of
// output tiles, into that chunk's partial. Threads: combos_per_block pairs x slices of columns.
template <typename DType, int TX, int KB>
__global__ void __launch_bounds__(kGradMaxThreads)
    WeightGradKernel(Correlation c, GradLaunch l, const DType* __restrict__ input, const DType* __restrict__ out_grad,
                     float* __restrict__ partials) {
  constexpr int BY = kGradRows, BX = kGradCols, RX = kGradRun, pitch = RoundUp4(BX + TX - 1);
  extern __shared__ float4 shared4[];
  float* const dy = reinterpret_cast<float*>(shared4);  // [KB][BY][BX]
  float* const slab = dy + KB * BY * BX;                 // [TZ][slab_rows][pitch]
  const int TZ = c.taps[0], TY = c.taps[1], slab_rows = BY + (TY - 1) * c.dilate[1];

  int b = blockIdx.x;
  const int chunk = b % l.chunks;
  b /= l.chunks;
  const int group = b % l.combo_groups;
  b /= l.combo_groups;
  const int ci = b % c.Ci;
  b /= c.Ci;
  const int kb = b % l.filter_blocks, g = b / l.filter_blocks;
  const int local = threadIdx.x / l.slices, slice = threadIdx.x % l.slices;
  const int combo = group * l.combos_per_block + local;
  const bool active = local < l.combos_per_block && combo < l.combos;
  const int tz = active ? combo / TY : 0, ty = active ? combo % TY : 0;
  const int runs = BX / RX / l.slices;  // per slice

  float acc[KB][TX];
#pragma unroll
  for (int f = 0; f < KB; ++f)
#pragma unroll
    for (int tx = 0; tx < TX; ++tx) acc[f][tx] = 0.0f;

  // Chunk `chunk`'s tiles: an even deal of the items.
  const int64_t per = l.items / l.chunks, extra = l.items % l.chunks;
  const int64_t first = chunk * per + (chunk < extra ? chunk : extra), last = first + per + (chunk < extra ? 1 : 0);
  for (int64_t item = first; item < last; ++item) {
    int64_t i = item;
    const int xt = int(i % l.x_tiles);
    i /= l.x_tiles;
    const int yt = int(i % l.y_tiles);
    i /= l.y_tiles;
    const int z = int(i % c.out[0]);
    i /= c.out[0];
    const int n = int(i % c.N), phase = int(i / c.N);
    const int x0 = xt * BX, y0 = yt * BY, width = c.PhaseWidth(phase);
    if (x0 >= width) continue;  // the same for the whole block
    const int rows = min(BY, c.out[1] - y0), cols = min(BX, width - x0);
    const int ng = n * c.G + g;
    __syncthreads();  // the previous tile's products are done with the shared rows
    const DType* const dy_image = out_grad + size_t(ng) * c.Co * c.OutSize();
    const Correlation dy_geometry = [&] {  // the output gradient read through FillRows: origin 0, its extents
      Correlation o = c;
      o.origin[2] = 0;
      o.in[2] = c.out[2];
      return o;
    }();
    FillRows(dy_geometry, dy_image, KB * BY, cols, BX, phase, x0, [&](int r) {
      const int f = r / BY, y = r % BY, co = kb * KB + f;
      return co < c.Co && y < rows ? (co * c.out[0] + z) * c.out[1] * c.out[2] + (y0 + y) * c.out[2] : -1;
    }, dy);
    const DType* const image = input + (size_t(ng) * c.Ci + ci) * c.InSize();
    FillRows(c, image, TZ * slab_rows, BX + TX - 1, pitch, phase, x0, [&](int r) {
      const int iz = z + c.origin[0] + r / slab_rows * c.dilate[0], iy = y0 + c.origin[1] + r % slab_rows;
      return iz >= 0 && iz < c.in[0] && iy >= 0 && iy < c.in[1] ? (iz * c.in[1] + iy) * c.in[2] : -1;
    }, slab);
    __syncthreads();
    if (!active) continue;
    for (int r = 0; r < rows; ++r) {
      const float* const in_row = slab + (tz * slab_rows + r + ty * c.dilate[1]) * pitch;
      for (int run = 0; run < runs; ++run) {
        const int x = (slice * runs + run) * RX;
        if (x >= cols) break;
        if (x + RX <= cols)
          GradRun<TX, KB, true>(dy + r * BX + x, BY * BX, in_row + x, RX, acc);
        else
          GradRun<TX, KB, false>(dy + r * BX + x, BY * BX, in_row + x, cols - x, acc);
      }
    }
  }

  // The slices' sums, added in slice order, into the partial.
  __syncthreads();
  float* const sums = reinterpret_cast<float*>(shared4);  // [combos_per_block][slices][KB][TX]
  if (active)
#pragma unroll
    for (int f = 0; f < KB; ++f)
#pragma unroll
      for (int tx = 0; tx < TX; ++tx) sums[(local * l.slices + slice) * KB * TX + f * TX + tx] = acc[f][tx];
  __syncthreads();
  float* const partial = partials + size_t(chunk) * l.weight_elems;
  const int T = c.Taps();
  for (int e = threadIdx.x; e < l.combos_per_block * KB * TX; e += blockDim.x) {
    const int cl = e / (KB * TX), f = e / TX % KB, tx = e % TX;
    const int cb = group * l.combos_per_block + cl, co = kb * KB + f;
    if (cb >= l.combos || co >= c.Co) continue;
    float s = 0.0f;
    for (int sl = 0; sl < l.slices; ++sl) s += sums[(cl * l.slices + sl) * KB * TX + f * TX + tx];
    partial[(size_t(g) * c.Co + co) * c.Ci * T + size_t(ci) * T + cb * TX + tx] = s;
  }
}

// Calls fn with the compile-time taps along x.
template <typename Fn>
void WithTapsX(int taps_x, Fn&& fn) {
  if (!WithCompileTimeInt<1, 3, 5, 7>(taps_x, fn)) Fail("gpu_direct: ", taps_x, " taps along x (it runs 1, 3, 5 or 7)");
}

// Calls fn with tile number I of kRegisterTiles as compile-time (filters, run) when it is `tile`, else
// tries the next one.
template <int I = 0, typename Fn>
void WithRegisterTile(RegisterTile tile, Fn&& fn) {
  if constexpr (I < int(std::size(kRegisterTiles))) {
    constexpr RegisterTile t = kRegisterTiles[I];
    if (tile.filters == t.filters && tile.run == t.run)
      return fn(std::integral_constant<int, t.filters>{}, std::integral_constant<int, t.run>{});
    return WithRegisterTile<I + 1>(tile, fn);
  } else {
    Fail("gpu_direct: no kernel for a register tile of ", tile.filters, " filters x ", tile.run, " outputs");
  }
}

template <typename DType>
void Correlate(const Correlation& c, const DType* input, const DType* filters, DType* output, bool add,
               cudaStream_t stream) {
  const int64_t blocks = CorrelateBlocks(c);
  if (blocks == 0) return;  // an empty output
  WithTapsX(c.taps[2], [&](auto tx) {
    WithRegisterTile(c.tile, [&](auto kb, auto rx) {
      CorrelateKernel<DType, tx.value, kb.value, rx.value><<<unsigned(blocks), dim3(kThreadsX, kThreadsY),
                                                             CorrelateSharedBytes(c), stream>>>(c, input, filters,
                                                                                                output, add);
    });
  });
  TE_CUDA_CHECK_LAUNCH("gpu_direct correlation");
}

template <typename DType>
void WeightGrad(const Correlation& c, const DType* input, const DType* out_grad, DType* weight_grad, bool add,
                float* partials, cudaStream_t stream) {
  const GradLaunch l = PlanWeightGrad(c);
  if (l.weight_elems == 0) return;
  if (l.blocks > 0) {
    // The weight gradient's tile: KB filters times TX taps per thread (PlanWeightGrad).
    WithTapsX(c.taps[2], [&](auto tx) {
      WithRegisterTile(HeuristicTile(c.Co), [&](auto kb, auto) {
        WeightGradKernel<DType, tx.value, kb.value><<<unsigned(l.blocks), l.combos_per_block * l.slices,
                                                      l.shared_bytes, stream>>>(c, l, input, out_grad, partials);
      });
    });
    TE_CUDA_CHECK_LAUNCH("gpu_direct weight gradient");
  }
  // weight_grad (add ? += : =) the sum of the chunks' partials. No tiles (an empty output): no chunks, and
  // the sum is zero.
  const index_t elems = index_t(l.weight_elems);
  cuda::SumSlices(partials, index_t(l.blocks > 0 ? l.chunks : 0), elems, elems, index_t(0), add ? 1.0f : 0.0f,
                  weight_grad, stream);
}

#define TE_GPU_DIRECT_INSTANTIATE(DType)                                                                  \
  template void Correlate<DType>(const Correlation&, const DType*, const DType*, DType*, bool, cudaStream_t); \
  template void WeightGrad<DType>(const Correlation&, const DType*, const DType*, DType*, bool, float*, cudaStream_t);

}  // namespace gpu_direct
}  // namespace ops
}  // namespace tensorexpr
