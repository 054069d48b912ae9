// cuda/sum_slices.cuh — the sum of `count` dense slices of one size, in a fixed order: the last step of a
// reduction split into slices (the summed form of BatchedGemm, a split weight gradient). Each output
// needs every slice, so one thread per output would wait on `count` loads one after another with few
// threads in flight; here 8 threads share each run of outputs, each summing every 8th slice with vector
// loads, and their 8 partial sums are added in the order of their first slice. The order depends only
// on count, so the result is the same on every run.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include "../base.h"
#include "../dtype.h"
#include "check.cuh"
#include "device.cuh"

namespace tensorexpr {
namespace cuda {
namespace sum_slices {

constexpr int kRuns = 32;   // runs of V outputs per block (its x threads)
constexpr int kShares = 8;  // threads summing one run (its y threads), each every kShares-th slice

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// out[j] = beta * out[j] + sum over s of slices[s * size + j] for the `size` elements j, accumulated in
// AccT; output element j lives at out + (j / rows) * ld + j % rows (rows = size, ld = 0: dense). beta 0
// never reads out. V consecutive elements share a column of `rows` (the caller checks rows % V == 0).
// The same for each of `products` sums (the y blocks): product p's slices follow product p - 1's, and its
// output starts out_stride elements after p - 1's.
template <int V, typename In, typename Out>
__global__ void __launch_bounds__(kRuns * kShares)
    SumSlicesKernel(const In* __restrict__ slices, index_t count, index_t size, index_t rows, index_t ld, float beta,
                    Out* out, index_t products, index_t out_stride) {
  using AccT = accum_t<In>;
  __shared__ AccT partial[kShares][kRuns][V];
  const index_t runs = size / V;
  for (index_t product = blockIdx.y; product < products; product += gridDim.y) {
    for (index_t run0 = index_t(blockIdx.x) * kRuns; run0 < runs; run0 += index_t(gridDim.x) * kRuns) {
      const index_t run = run0 + threadIdx.x;
      AccT acc[V];
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = AccT(0);
      if (run < runs) {
        const In* p = slices + product * count * size + run * V;
        for (index_t s = threadIdx.y; s < count; s += kShares) {
          const Vec<In, V> x = *reinterpret_cast<const Vec<In, V>*>(p + s * size);
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += static_cast<AccT>(x.v[k]);
        }
      }
#pragma unroll
      for (int k = 0; k < V; ++k) partial[threadIdx.y][threadIdx.x][k] = acc[k];
      __syncthreads();
      if (threadIdx.y == 0 && run < runs) {
        for (int y = 1; y < kShares; ++y)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += partial[y][threadIdx.x][k];
        const index_t j = run * V;
        Out* o = out + product * out_stride + (j / rows) * ld + j % rows;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          AccT r = acc[k];
          if (beta != 0.0f) r += static_cast<AccT>(beta) * static_cast<AccT>(o[k]);
          o[k] = static_cast<Out>(r);
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace sum_slices

// Queues the sum on `stream` (see SumSlicesKernel), or `products` of them; slices must not overlap out.
template <typename In, typename Out>
inline void SumSlices(const In* slices, index_t count, index_t size, index_t rows, index_t ld, float beta, Out* out,
                      cudaStream_t stream, index_t products = 1, index_t out_stride = 0) {
  using namespace sum_slices;
  if (size == 0) return;
  const bool vector = size % 4 == 0 && rows % 4 == 0 && reinterpret_cast<uintptr_t>(slices) % (4 * sizeof(In)) == 0;
  const index_t runs = vector ? size / 4 : size;
  // Blocks for every run, up to 64 Ki (a grid-stride loop takes the rest).
  const dim3 grid(static_cast<unsigned>(std::min<index_t>((runs + kRuns - 1) / kRuns, index_t(1) << 16)),
                  static_cast<unsigned>(std::min<index_t>(products, cuda::kMaxGridYZ)));
  const dim3 block(kRuns, kShares);
  if (vector) {
    SumSlicesKernel<4, In, Out><<<grid, block, 0, stream>>>(slices, count, size, rows, ld, beta, out, products,
                                                               out_stride);
  } else {
    SumSlicesKernel<1, In, Out><<<grid, block, 0, stream>>>(slices, count, size, rows, ld, beta, out, products,
                                                               out_stride);
  }
  TE_CUDA_CHECK_LAUNCH("slice-sum kernel");
}

}  // namespace cuda
}  // namespace tensorexpr
