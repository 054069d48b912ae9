// cuda/memory.cuh — GPU memory for tensors and Copy between host and device.
//
// Memory comes from CUDA's stream-ordered pool (cudaMallocAsync / cudaFreeAsync on the tensor's stream)
// instead of a hand-written caching allocator. The pool is told to keep freed memory (release threshold
// = max) so that allocating in a loop does not return memory to the driver at every synchronisation;
// ReleaseCachedResources<gpu>() (engine.cuh) gives it back.
//
// Ordering: an allocation is usable on the stream it was made on (t->stream_, or the per-thread default
// stream when that is null); using it on another stream needs that stream to wait first, and FreeSpace
// must be called with the same stream_ the tensor was last used on (as with any stream-ordered memory).
//
// Copy is asynchronous on its stream, as mshadow's Copy is: it returns once the copy is queued. The host
// buffer of a cpu<-gpu or gpu<-cpu copy must stay alive and untouched until the stream is waited on
// (stream->Wait(), or StreamOrDefault(nullptr)->Wait() for the default stream); only then does a cpu<-gpu
// destination hold the data. Pinned host memory makes the copy truly overlap; pageable memory works too.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <cuda_runtime.h>
#include "../checked.h"
#include "../tensor.h"
#include "../cpu/memory.h"
#include "check.cuh"
#include "device.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {

// Makes the device's default memory pool keep freed memory for reuse (once per device).
inline void KeepPoolCached(int dev) {
  static std::once_flag done[kMaxDevices];
  TE_CHECK(0 <= dev && dev < kMaxDevices, "KeepPoolCached: device id ", dev, " is outside [0, ", kMaxDevices, ")");
  std::call_once(done[dev], [dev] {
    cudaMemPool_t pool;
    TE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    uint64_t keep_all = UINT64_MAX;
    TE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  });
}

// Copies `rows` rows of `width` bytes between pitched buffers, asynchronously on `s`. Contiguous data
// goes as one block; pitches above the device's 2-D copy limit go row by row.
inline void Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows,
                   cudaMemcpyKind kind, cudaStream_t s) {
  if (width == 0 || rows == 0) return;
  if ((dpitch == width && spitch == width) || rows == 1) {
    TE_CUDA_CHECK(cudaMemcpyAsync(dst, src, width * rows, kind, s));
    return;
  }
  const size_t limit = CurrentDeviceInfo().mem_pitch;
  if (dpitch <= limit && spitch <= limit) {
    TE_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, kind, s));
    return;
  }
  for (size_t r = 0; r < rows; ++r) {
    TE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                                  width, kind, s));
  }
}

// The stream a Copy runs on: the one passed, else the GPU tensor's own, else the per-thread default.
inline cudaStream_t CopyStream(Stream<gpu>* passed, Stream<gpu>* tensor_stream) {
  return Stream<gpu>::GetStream(passed != nullptr ? passed : tensor_stream);
}

template <int dim, typename DType, typename DevA, typename DevB>
inline void CopyTensor(const Tensor<DevA, dim, DType>& dst, const Tensor<DevB, dim, DType>& src, cudaMemcpyKind kind,
                       cudaStream_t s, const char* what) {
  TE_CHECK(dst.shape_ == src.shape_, "Copy (", what, "): shape mismatch, destination ", dst.shape_, " vs source ",
           src.shape_);
  if (dst.shape_.Size() == 0) return;
  const Shape<2> s2 = dst.shape_.FlatTo2D();
  const size_t e = sizeof(DType);
  Copy2D(dst.dptr_, static_cast<size_t>(dst.stride_) * e, src.dptr_, static_cast<size_t>(src.stride_) * e,
         static_cast<size_t>(s2[1]) * e, static_cast<size_t>(s2[0]), kind, s);
}

// Scratch memory of one evaluation, ordered on a stream (the GPU's pool, as tensors): the core's
// evaluators take their temporaries here (reduction partials, private operand copies, gemm partials),
// while operators take theirs from the stream's workspace (workspace.h), which a core call must not
// touch because the operator may hold a view of it. Release() frees it (checked) once the kernels using
// it are queued; the destructor frees it when an error is already on its way out (unchecked: a
// destructor cannot throw, and the stream reports later).
class TempBuffer {
 public:
  TempBuffer(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) TE_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream_));
  }
  ~TempBuffer() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
  }
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  void* get() const { return ptr_; }
  void Release() {
    void* p = ptr_;
    ptr_ = nullptr;
    if (p != nullptr) TE_CUDA_CHECK(cudaFreeAsync(p, stream_));
  }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace cuda

// Allocates memory for t->shape_ on the GPU, ordered on t->stream_ (stride_ set here; pad = true rounds
// each row up to kPadAlign bytes). Throws Error naming the bytes and the shape when memory runs out.
template <int dim, typename DType>
inline void AllocSpace(Tensor<gpu, dim, DType>* t, bool pad = false) {
  t->stride_ = PaddedStride<DType>(t->shape_[dim - 1], pad);
  const size_t bytes = CheckedSpanBytes(t->shape_, t->stride_, sizeof(DType), "AllocSpace<gpu>");
  if (bytes == 0) {
    t->dptr_ = nullptr;
    return;
  }
  const int dev = cuda::CurrentDevice();
  cuda::KeepPoolCached(dev);
  void* p = nullptr;
  const cudaError_t err = cudaMallocAsync(&p, bytes, Stream<gpu>::GetStream(t->stream_));
  if (err != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: clear it so later calls start clean
    size_t free_b = 0, total_b = 0;
    const bool known = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
    cudaGetLastError();
    Fail("AllocSpace<gpu>: ", err == cudaErrorMemoryAllocation ? "out of GPU memory" : "cudaMallocAsync failed",
         " allocating ", bytes, " bytes for shape ", t->shape_, " (", sizeof(DType), "-byte elements, row stride ",
         t->stride_, ") on device ", dev, ": ", cudaGetErrorName(err),
         known ? Message("; ", free_b, " of ", total_b, " bytes free") : std::string());
  }
  t->dptr_ = static_cast<DType*>(p);
}

namespace cuda {
// Returns p to the pool, ordered on `stream`. Errors are reported, except the ones that only mean the
// CUDA runtime is already shutting down (a static TensorContainer destroyed at exit).
inline void FreeOnStream(void* p, cudaStream_t stream) {
  if (p == nullptr) return;
  const cudaError_t err = cudaFreeAsync(p, stream);
  if (err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed) {
    cudaGetLastError();
    return;
  }
  TE_CUDA_CHECK(err);
}
}  // namespace cuda

// Returns the memory to the pool, ordered on t->stream_.
template <int dim, typename DType>
inline void FreeSpace(Tensor<gpu, dim, DType>* t) {
  DType* p = t->dptr_;
  t->dptr_ = nullptr;
  cuda::FreeOnStream(p, Stream<gpu>::GetStream(t->stream_));
}

// A share of the CUDA stream a container's memory is ordered on (stream.cuh's StreamHandle): the
// container frees on it even when the Stream<gpu> object is gone by then. A null stream means the freeing
// thread's default stream, as for FreeSpace.
template <>
class FreeQueue<gpu> {
 public:
  static FreeQueue Of(Stream<gpu>* s) {
    FreeQueue q;
    if (s != nullptr) q.handle_ = s->handle();
    return q;
  }
  template <int dim, typename DType>
  void Free(Tensor<gpu, dim, DType>* t) const {
    DType* p = t->dptr_;
    t->dptr_ = nullptr;
    cuda::FreeOnStream(p, handle_ ? handle_->stream : cudaStreamPerThread);
  }

 private:
  std::shared_ptr<cuda::StreamHandle> handle_;
};

// Copy(dst, src, stream): same shape, any row strides; asynchronous on `stream` (see the top of this
// file), which defaults to the GPU tensor's stream_ and then to the per-thread default stream.
// Page-locked host memory for AllocHost<gpu> (cpu/memory.h): portable across the host's devices.
template <>
struct HostAllocator<gpu> {
  static void* Alloc(size_t bytes) {
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess) {
      cudaGetLastError();
      Fail("AllocHost<gpu>: cudaHostAlloc of ", bytes, " bytes failed: ", cudaGetErrorName(err));
    }
    return p;
  }
  static void Free(void* p) { TE_CUDA_CHECK(cudaFreeHost(p)); }
};

template <int dim, typename DType>
inline void Copy(Tensor<gpu, dim, DType> dst, const Tensor<cpu, dim, DType>& src, Stream<gpu>* stream = nullptr) {
  cuda::CopyTensor(dst, src, cudaMemcpyHostToDevice, cuda::CopyStream(stream, dst.stream_), "gpu <- cpu");
}
template <int dim, typename DType>
inline void Copy(Tensor<cpu, dim, DType> dst, const Tensor<gpu, dim, DType>& src, Stream<gpu>* stream = nullptr) {
  cuda::CopyTensor(dst, src, cudaMemcpyDeviceToHost, cuda::CopyStream(stream, src.stream_), "cpu <- gpu");
}
template <int dim, typename DType>
inline void Copy(Tensor<gpu, dim, DType> dst, const Tensor<gpu, dim, DType>& src, Stream<gpu>* stream = nullptr) {
  cuda::CopyTensor(dst, src, cudaMemcpyDeviceToDevice, cuda::CopyStream(stream, dst.stream_), "gpu <- gpu");
}

}  // namespace tensorexpr
