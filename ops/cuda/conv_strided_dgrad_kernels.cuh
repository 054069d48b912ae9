// ops/cuda/conv_strided_dgrad_kernels.cuh — the kernel of "gpu_strided_dgrad" (ops/cuda/conv_strided_dgrad.h
// says what it computes and why it is shaped so). Included by the units that instantiate it
// (conv_strided_dgrad_*.cu).
#pragma once
#include <algorithm>
#include "conv_strided_dgrad.h"

namespace tensorexpr {
namespace ops {
namespace strided_dgrad {

// A block of kThreadsX x kThreadsY threads computes, for one phase (py, px) of image n at a time, a tile of
// kThreadsY * kRows phase rows x kThreadsX * kCols phase columns, every one of the C channels; T bounds
// the phase's taps along either axis (the taps past its own are zeros in shared memory, and skipped).
template <typename DType, int C, int T>
__global__ void __launch_bounds__(kThreadsX* kThreadsY)
    DataGradKernel(Problem p, const DType* __restrict__ out_grad, const DType* __restrict__ weight,
                   DType* __restrict__ data_grad, bool add) {
  __shared__ float taps[kFilterChunk][C][T][T];
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int j0 = (blockIdx.y * kThreadsY + threadIdx.y) * kRows;  // the thread's first phase row
  const int i0 = (blockIdx.x * kThreadsX + threadIdx.x) * kCols;  // and phase column
  const int phases = p.Phases();
  for (int z = blockIdx.z; z < p.N * phases; z += gridDim.z) {
    const int n = z / phases, phase = z % phases, py = phase / p.stride_x, px = phase % p.stride_x;
    // Inputs y = stride_y * j + py take the taps ky = ky0 + stride_y * a (a < taps_y) from the outputs
    // oy = j + qy - a; likewise along x.
    const int ky0 = (py + p.pad_y) % p.stride_y, kx0 = (px + p.pad_x) % p.stride_x;
    const int taps_y = ky0 < p.R ? (p.R - ky0 + p.stride_y - 1) / p.stride_y : 0;
    const int taps_x = kx0 < p.S ? (p.S - kx0 + p.stride_x - 1) / p.stride_x : 0;
    const int qy = (py + p.pad_y - ky0) / p.stride_y, qx = (px + p.pad_x - kx0) / p.stride_x;
    // The output gradient's window under the tile: window[r][q] is (oy0 + r, ox0 + q), at row_at[r] +
    // col_at[q] in filter k's plane (channels first; 32-bit: MakeProblem keeps an image's tensors under
    // 2^31 elements); -1 is outside.
    const int oy0 = j0 + qy - (T - 1), ox0 = i0 + qx - (T - 1);
    int row_at[kRows + T - 1], col_at[kCols + T - 1];
#pragma unroll
    for (int r = 0; r < kRows + T - 1; ++r) row_at[r] = oy0 + r >= 0 && oy0 + r < p.OH ? (oy0 + r) * p.OW : -1;
#pragma unroll
    for (int q = 0; q < kCols + T - 1; ++q) col_at[q] = ox0 + q >= 0 && ox0 + q < p.OW ? ox0 + q : -1;
    const DType* const image = out_grad + index_t(n) * p.K * p.OH * p.OW;
    const int filter_step = p.OH * p.OW;
    float acc[kRows][kCols][C];
#pragma unroll
    for (int v = 0; v < kRows; ++v)
#pragma unroll
      for (int u = 0; u < kCols; ++u)
#pragma unroll
        for (int c = 0; c < C; ++c) acc[v][u][c] = 0.0f;
    for (int k0 = 0; k0 < p.K; k0 += kFilterChunk) {
      const int chunk = min(kFilterChunk, p.K - k0);
      __syncthreads();  // every thread is done with the previous chunk's taps
      for (int e = tid; e < kFilterChunk * C * T * T; e += kThreadsX * kThreadsY) {
        const int b = e % T, a = (e / T) % T, c = (e / (T * T)) % C, kk = e / (T * T * C);
        float w = 0.0f;
        if (kk < chunk && a < taps_y && b < taps_x)
          w = float(weight[p.WeightAt(k0 + kk, c, ky0 + p.stride_y * a, kx0 + p.stride_x * b)]);
        taps[kk][c][a][b] = w;
      }
      __syncthreads();
#pragma unroll 1
      for (int kk = 0; kk < chunk; ++kk) {
        const DType* const plane = image + (k0 + kk) * filter_step;
        float window[kRows + T - 1][kCols + T - 1];
#pragma unroll
        for (int r = 0; r < kRows + T - 1; ++r)
#pragma unroll
          for (int q = 0; q < kCols + T - 1; ++q)
            window[r][q] = row_at[r] >= 0 && col_at[q] >= 0 ? float(plane[row_at[r] + col_at[q]]) : 0.0f;
        // Taps past the phase's own are skipped, not multiplied as zeros: 0 * inf would put a NaN where
        // no tap reaches an infinite output gradient (the same test for the whole block: no divergence).
#pragma unroll
        for (int a = 0; a < T; ++a)
#pragma unroll
          for (int b = 0; b < T; ++b) {
            if (a >= taps_y || b >= taps_x) continue;
#pragma unroll
            for (int c = 0; c < C; ++c) {
              const float w = taps[kk][c][a][b];
#pragma unroll
              for (int v = 0; v < kRows; ++v)
#pragma unroll
                for (int u = 0; u < kCols; ++u) acc[v][u][c] += window[v + T - 1 - a][u + T - 1 - b] * w;
            }
          }
      }
    }
#pragma unroll
    for (int v = 0; v < kRows; ++v)
#pragma unroll
      for (int u = 0; u < kCols; ++u) {
        // (64-bit: a stride past the input would wrap the last tile's coordinates in int)
        const index_t y = index_t(j0 + v) * p.stride_y + py, x = index_t(i0 + u) * p.stride_x + px;
        if (y >= p.H || x >= p.W) continue;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          DType* o = data_grad + p.DataGradAt(n, c, int(y), int(x));
          *o = DType(add ? float(*o) + acc[v][u][c] : acc[v][u][c]);
        }
      }
  }
}

// Calls fn with `value` (1 to 4) as a compile-time constant.
template <typename Fn>
void WithOneToFour(int value, const char* what, Fn&& fn) {
  if (!WithCompileTimeInt<1, 2, 3, 4>(value, fn)) Fail("gpu_strided_dgrad: ", value, " ", what, " (it runs 1 to 4)");
}

template <typename DType>
void DataGrad(const Problem& p, const DType* out_grad, const DType* weight, DType* data_grad, bool add,
              cudaStream_t stream) {
  if (p.N == 0 || p.C == 0 || p.H == 0 || p.W == 0) return;  // no inputs to write
  const dim3 grid(unsigned((p.PhaseCols() + kThreadsX * kCols - 1) / (kThreadsX * kCols)),
                  unsigned((p.PhaseRows() + kThreadsY * kRows - 1) / (kThreadsY * kRows)),
                  unsigned(std::min<index_t>(index_t(p.N) * p.Phases(), cuda::kMaxGridYZ)));
  WithOneToFour(p.C, "input channels", [&](auto c) {
    WithOneToFour(p.PhaseTaps(), "taps per stride", [&](auto t) {
      DataGradKernel<DType, c.value, t.value>
          <<<grid, dim3(kThreadsX, kThreadsY), 0, stream>>>(p, out_grad, weight, data_grad, add);
    });
  });
  TE_CUDA_CHECK_LAUNCH("gpu_strided_dgrad");
}

#define TE_STRIDED_DGRAD_INSTANTIATE(DType) \
  template void DataGrad<DType>(const Problem&, const DType*, const DType*, DType*, bool, cudaStream_t);

}  // namespace strided_dgrad
}  // namespace ops
}  // namespace tensorexpr
