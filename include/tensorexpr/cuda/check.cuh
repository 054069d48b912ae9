// cuda/check.cuh — every CUDA and cuBLAS call goes through these: a failure throws tensorexpr::Error
// naming the call, the file and the line.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include "../base.h"

namespace tensorexpr {
namespace cuda {

inline const char* CublasStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "unknown cuBLAS status";
  }
}

inline void CheckCuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear a sticky-free error so the next call starts clean
    Fail(file, ":", line, ": ", call, " failed: ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  }
}
inline void CheckCublas(cublasStatus_t st, const char* call, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) Fail(file, ":", line, ": ", call, " failed: ", CublasStatusName(st));
}

}  // namespace cuda
}  // namespace tensorexpr

#define TE_CUDA_CHECK(call) ::tensorexpr::cuda::CheckCuda((call), #call, __FILE__, __LINE__)
#define TE_CUBLAS_CHECK(call) ::tensorexpr::cuda::CheckCublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here.
#define TE_CUDA_CHECK_LAUNCH(name) ::tensorexpr::cuda::CheckCuda(cudaGetLastError(), name, __FILE__, __LINE__)
