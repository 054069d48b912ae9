// ops/cuda/workspace_gpu.cuh — GPU memory for the workspace resource (ops/workspace.h): CUDA's
// stream-ordered pool, so that freeing a buffer that kernels queued on the stream still read is safe
// and regrowing costs no device synchronisation.
#pragma once
#include <cuda_runtime.h>
#include <tensorexpr/cuda/check.cuh>
#include <tensorexpr/cuda/stream.cuh>
#include "../workspace.h"

namespace tensorexpr {
namespace ops {

template <>
struct WorkspaceAllocator<gpu> {
  static void* Alloc(size_t bytes, Stream<gpu>* s) {
    void* p = nullptr;
    const cudaError_t err = cudaMallocAsync(&p, bytes, Stream<gpu>::GetStream(s));
    if (err != cudaSuccess) {
      cudaGetLastError();
      Fail("workspace<gpu>: ", err == cudaErrorMemoryAllocation ? "out of GPU memory" : "cudaMallocAsync failed",
           " allocating ", bytes, " bytes (", cudaGetErrorString(err), ")");
    }
    return p;
  }
  static void Free(void* p, Stream<gpu>* s) { TE_CUDA_CHECK(cudaFreeAsync(p, Stream<gpu>::GetStream(s))); }
};

}  // namespace ops
}  // namespace tensorexpr
