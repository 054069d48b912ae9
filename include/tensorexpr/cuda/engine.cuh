// cuda/engine.cuh — GPU engine set-up and tear-down: InitTensorEngine<gpu>, ShutdownTensorEngine<gpu>,
// ReleaseCachedResources<gpu>.
//
// Nothing here is required before using the GPU (the CUDA runtime initialises itself on first use);
// InitTensorEngine<gpu>(dev) selects the device for the calling thread and pays the start-up costs
// (context creation, property reads, memory-pool set-up) up front instead of inside the first kernel.
#pragma once
#include <cuda_runtime.h>
#include "../stream.h"
#include "check.cuh"
#include "device.cuh"
#include "memory.cuh"
#include "stream.cuh"

namespace tensorexpr {

// Gives cached memory and library handles back (no-op where nothing is cached).
template <typename Device>
inline void ReleaseCachedResources();

// Selects device `dev_id` for the calling thread and initialises it.
template <>
inline void InitTensorEngine<gpu>(int dev_id) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    Fail("InitTensorEngine<gpu>(", dev_id, "): no usable CUDA device (cudaGetDeviceCount: ", cudaGetErrorName(err),
         ", ", cudaGetErrorString(err), ")");
  }
  TE_CHECK(0 <= dev_id && dev_id < count, "InitTensorEngine<gpu>(", dev_id, "): device id out of range; ", count,
           " CUDA device(s) present");
  TE_CUDA_CHECK(cudaSetDevice(dev_id));
  TE_CUDA_CHECK(cudaFree(nullptr));  // creates the primary context now
  cuda::GetDeviceInfo(dev_id);
  cuda::KeepPoolCached(dev_id);
}

// Selects device `dev_id` for the calling thread (cudaSetDevice), without InitTensorEngine's start-up work.
template <>
inline void SetDevice<gpu>(int dev_id) {
  int count = 0;
  TE_CUDA_CHECK(cudaGetDeviceCount(&count));
  TE_CHECK(0 <= dev_id && dev_id < count, "SetDevice<gpu>(", dev_id, "): device id out of range; ", count,
           " CUDA device(s) present");
  TE_CUDA_CHECK(cudaSetDevice(dev_id));
}

// On the current device: waits for pending work (frees queued with cudaFreeAsync must have run), drops
// the calling thread's default-stream cuBLAS handle and side stream, and trims the stream-ordered memory pool so that
// its unused memory goes back to the driver. Streams made with NewStream keep their own handles
// and side streams (Stream<gpu>::ReleaseBlasHandle() and ReleaseSide() drop them).
template <>
inline void ReleaseCachedResources<gpu>() {
  TE_CUDA_CHECK(cudaDeviceSynchronize());
  DefaultStream()->ReleaseBlasHandle();
  DefaultStream()->ReleaseSide();
  cudaMemPool_t pool;
  TE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, cuda::CurrentDevice()));
  TE_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
}


// Waits for all work on the current device and releases what the engine caches. Tensors still
// allocated stay valid; the engine can be used again afterwards.
template <>
inline void ShutdownTensorEngine<gpu>() {
  ReleaseCachedResources<gpu>();
}

}  // namespace tensorexpr
