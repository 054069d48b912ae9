// ops/cuda/embedding_grad.cuh — the embedding's weight gradient on the GPU, deterministic: the positions
// sorted by the row they pick with CUB's radix sort (stable, so each row's positions stay in order), then
// one thread per (row, column) sums the row's positions in that order (ops/embedding_row.h), as the CPU
// does. No atomics: the result does not depend on scheduling.
#pragma once
#if !defined(__CUDACC__)
#error "ops/cuda/embedding_grad.cuh holds CUDA kernels: compile it with nvcc (a .cu file)."
#endif
#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <tensorexpr/tensorexpr.h>
#include "../embedding_row.h"

namespace tensorexpr {
namespace ops {
namespace detail {

template <typename IType>
__global__ void __launch_bounds__(cuda::kMapBlock)
    EmbeddingKeysKernel(const IType* idx, index_t n, index_t rows, index_t* keys, index_t* pos) {
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    keys[i] = expr::TakeRow<true>(idx[i], rows);
    pos[i] = i;
  }
}

// Thread (q, col) of the sorted positions: the first position of a row sums the row's run into column col.
template <typename DType>
__global__ void __launch_bounds__(cuda::kMapBlock)
    EmbeddingRunsKernel(const index_t* keys, const index_t* pos, index_t n, IndexDiv cols, const DType* dy,
                        index_t dy_stride, DType* dw, index_t dw_stride) {
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n * cols.divisor_; t += step) {
    index_t col;
    const index_t q = cols.DivMod(t, &col);
    if (q > 0 && keys[q - 1] == keys[q]) continue;
    index_t end = q + 1;
    while (end < n && keys[end] == keys[q]) ++end;
    EmbeddingAddRow(pos, q, end, dy, dy_stride, col, dw + keys[q] * dw_stride + col);
  }
}

// weight_grad (rows, cols) += out_grad (n, cols) summed into the rows idx (n) picks.
template <typename IType, typename DType>
void EmbeddingGradRows(Stream<gpu>* s, const IType* idx, index_t n, index_t rows, const DType* dy,
                       index_t dy_stride, index_t cols, DType* dw, index_t dw_stride) {
  TE_CHECK(n <= INT_MAX, "Embedding backward on the GPU: ", n, " indices; the radix sort takes at most ", INT_MAX);
  const cudaStream_t stream = Stream<gpu>::GetStream(s);
  int end_bit = 1;  // the sort looks at the bits a row number can have
  while (end_bit < 63 && (index_t(1) << end_bit) < rows) ++end_bit;
  size_t temp_bytes = 0;
  TE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, static_cast<const index_t*>(nullptr),
                                                static_cast<index_t*>(nullptr), static_cast<const index_t*>(nullptr),
                                                static_cast<index_t*>(nullptr), static_cast<int>(n), 0, end_bit, stream));
  const size_t array = InWorkspaceGranules(static_cast<size_t>(n) * sizeof(index_t));
  char* ws = static_cast<char*>(GetWorkspaceBytes<gpu>(4 * array + temp_bytes, s));
  index_t* keys_in = reinterpret_cast<index_t*>(ws);
  index_t* pos_in = reinterpret_cast<index_t*>(ws + array);
  index_t* keys = reinterpret_cast<index_t*>(ws + 2 * array);
  index_t* pos = reinterpret_cast<index_t*>(ws + 3 * array);
  cuda::LaunchMap<&EmbeddingKeysKernel<IType>>(n, stream, "tensorexpr embedding keys kernel", idx, n, rows, keys_in,
                                               pos_in);
  TE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(ws + 4 * array, temp_bytes, keys_in, keys, pos_in, pos,
                                                static_cast<int>(n), 0, end_bit, stream));
  cuda::LaunchMap<&EmbeddingRunsKernel<DType>>(n * cols, stream, "tensorexpr embedding gradient kernel", keys, pos,
                                               n, IndexDiv::Make(cols), dy, dy_stride, dw, dw_stride);
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
