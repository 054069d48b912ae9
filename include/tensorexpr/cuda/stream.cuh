// cuda/stream.cuh — Stream<gpu>: a cudaStream_t (owned or wrapped) and its cuBLAS handle, created lazily
// and bound to the stream. A tensor whose stream_ is null uses the per-thread default stream
// (cudaStreamPerThread), never the legacy NULL stream.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <memory>
#include <new>
#include <string>
#include "../fault.h"
#include "../stream.h"
#include "check.cuh"
#include "device.cuh"

namespace tensorexpr {

// Workspace memory on the GPU: CUDA's stream-ordered pool, so that freeing a buffer that kernels queued on
// the stream still read is safe and regrowing costs no device synchronisation.
template <>
struct WorkspaceMemory<gpu> {
  using Queue = cudaStream_t;
  static void* Alloc(size_t bytes, cudaStream_t q) {
    void* p = nullptr;
    const cudaError_t err = cudaMallocAsync(&p, bytes, q);
    if (err != cudaSuccess) {
      cudaGetLastError();
      Fail("workspace<gpu>: ", err == cudaErrorMemoryAllocation ? "out of GPU memory" : "cudaMallocAsync failed",
           " allocating ", bytes, " bytes (", cudaGetErrorString(err), ")");
    }
    return p;
  }
  // Never throws: it runs from destructors. At process exit the runtime may already be gone; the
  // memory then goes with it.
  static void Free(void* p, cudaStream_t q) noexcept {
    if (cudaFreeAsync(p, q) != cudaSuccess) cudaGetLastError();
  }
};

namespace cuda {
// A CUDA stream, destroyed (if owned) when the last holder lets go: the Stream<gpu> that made it and
// every TensorContainer whose memory is ordered on it (FreeQueue<gpu>, memory.cuh), so that a container
// outliving DeleteStream still frees its memory on the stream its work was queued on.
struct StreamHandle {
  cudaStream_t stream = nullptr;
  bool owned = false;
  StreamHandle(cudaStream_t s, bool own) : stream(s), owned(own) {}
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  ~StreamHandle() {
    if (owned && cudaStreamDestroy(stream) != cudaSuccess) cudaGetLastError();  // at exit the runtime may be gone
  }
};
}  // namespace cuda

template <>
struct Stream<gpu> {
  // Wraps `s` (not owned) or, when s is null and own is true, creates a stream with `flags`: non-blocking
  // by default, so that its work never waits on the legacy NULL stream's (cudaStreamDefault: it does).
  explicit Stream(cudaStream_t s = nullptr, bool own = true, int dev_id = -1,
                  unsigned flags = cudaStreamNonBlocking)
      : dev_id_(dev_id) {
    if (dev_id_ >= 0) TE_CUDA_CHECK(cudaSetDevice(dev_id_));
    if (s == nullptr && own) {
      TE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, flags));
      handle_ = std::make_shared<cuda::StreamHandle>(stream_, true);
    } else {
      stream_ = s == nullptr ? cudaStreamPerThread : s;
      handle_ = std::make_shared<cuda::StreamHandle>(stream_, false);
    }
    workspace_.set_queue(stream_);
  }
  ~Stream() {
    ReleaseSide();
    workspace_.Release();  // stream-ordered: before the stream goes
    if (blas_ != nullptr) cublasDestroy(blas_);
    if (fault_ != nullptr && cudaFreeHost(fault_) != cudaSuccess) cudaGetLastError();
    if (arrivals_ != nullptr && cudaFreeAsync(arrivals_, stream_) != cudaSuccess) cudaGetLastError();
    // The CUDA stream itself goes with the last holder of handle_.
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t stream() const { return stream_; }
  // The CUDA stream as a shared handle: holding it keeps the stream alive past this object.
  const std::shared_ptr<cuda::StreamHandle>& handle() const { return handle_; }
  // The temporary memory operators on this stream draw from (workspace.h).
  Workspace<gpu>& workspace() { return workspace_; }
  // The stream of `s`, or the per-thread default stream when s is null.
  static cudaStream_t GetStream(const Stream<gpu>* s) { return s == nullptr ? cudaStreamPerThread : s->stream_; }
  // The cuBLAS handle bound to this stream; created on first use, with TF32 as set_tf32() says.
  cublasHandle_t blas_handle() {
    if (blas_ == nullptr) {
      TE_CUBLAS_CHECK(cublasCreate(&blas_));
      TE_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
      ApplyMathMode();
    }
    return blas_;
  }
  // TF32 tensor-core math for float gemm: off by default (strict fp32), per stream.
  void set_tf32(bool on) {
    tf32_ = on;
    if (blas_ != nullptr) ApplyMathMode();
  }
  bool tf32() const { return tf32_; }  // as set: set_tf32x3(true) overrides it
  // Float convolutions as three TF32 products (about fp32's accuracy, on tensor cores) where CUTLASS's
  // kernels run them; everything else on the stream computes float strictly, whatever set_tf32 says.
  // Off by default.
  void set_tf32x3(bool on) {
    tf32x3_ = on;
    if (blas_ != nullptr) ApplyMathMode();
  }
  bool tf32x3() const { return tf32x3_; }
  // Destroys the cuBLAS handle (and the workspace it holds); the next blas_handle() creates a fresh one.
  void ReleaseBlasHandle() {
    if (blas_ != nullptr) {
      cublasHandle_t h = blas_;
      blas_ = nullptr;
      TE_CUBLAS_CHECK(cublasDestroy(h));
    }
  }

  // A second stream beside this one, for work that may overlap this stream's (an operator's two independent
  // passes). ForkSide() orders the side after everything queued here so far and returns it; JoinSide()
  // orders what is queued here next after everything queued on the side. The side is made on first use,
  // on the current device, with a cuBLAS handle, workspace and arrival counters of its own; it takes this
  // stream's math modes at each fork, and its kernels record a failed check in this stream's record, so
  // that Wait() here reports it. Returns null (run the work here) when the current device is not the one
  // the side was made on.
  Stream<gpu>* ForkSide() {
    const int device = cuda::CurrentDevice();
    if (side_ == nullptr) {
      side_.reset(new Stream<gpu>(nullptr, true, -1, cudaStreamNonBlocking));
      side_->owner_ = this;
      side_device_ = device;
      TE_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
      TE_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
    }
    if (device != side_device_) return nullptr;
    side_->tf32_ = tf32_;
    side_->tf32x3_ = tf32x3_;
    if (side_->blas_ != nullptr) side_->ApplyMathMode();
    TE_CUDA_CHECK(cudaEventRecord(fork_, stream_));
    TE_CUDA_CHECK(cudaStreamWaitEvent(side_->stream_, fork_, 0));
    return side_.get();
  }
  void JoinSide() {
    if (side_ == nullptr) return;
    TE_CUDA_CHECK(cudaEventRecord(join_, side_->stream_));
    TE_CUDA_CHECK(cudaStreamWaitEvent(stream_, join_, 0));
  }
  // The side stream ForkSide made (null before the first fork, or after ReleaseSide).
  Stream<gpu>* side() const { return side_.get(); }
  // Lets the side stream go (its work still runs), with its handle and workspace; the next fork makes one
  // afresh.
  void ReleaseSide() {
    if (side_ == nullptr) return;
    side_.reset();
    if (cudaEventDestroy(fork_) != cudaSuccess || cudaEventDestroy(join_) != cudaSuccess) cudaGetLastError();
    fork_ = join_ = nullptr;
  }

  // Waits for the queued work; then a check that failed inside one of its kernels is thrown as an Error
  // (once: the record is cleared).
  void Wait() {
    TE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    ThrowRecordedFault();
  }
  // Where kernels on this stream record a failed check (fault.h): host memory mapped into the device's
  // address space, allocated on first use, read by Wait().
  KernelFault* fault_record() {
    if (owner_ != nullptr) return owner_->fault_record();
    if (fault_ == nullptr) {
      void* p = nullptr;
      TE_CUDA_CHECK(cudaHostAlloc(&p, sizeof(KernelFault), cudaHostAllocMapped));
      fault_ = new (p) KernelFault();
      TE_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&fault_device_), p, 0));
    }
    return fault_device_;
  }
  // Arrival counters for kernels whose last block to finish does the final step (cuda/reduce.cuh):
  // kArrivalCounters unsigned ints of device memory, zero between kernels. A kernel that counts arrivals
  // in them sets each counter it used back to zero before it ends; kernels on one stream never overlap, so
  // one set per stream serves them all. Allocated (stream-ordered, zeroed) on first use.
  static constexpr int kArrivalCounters = 2048;
  unsigned* arrival_counters() {
    if (arrivals_ == nullptr) {
      void* p = nullptr;
      TE_CUDA_CHECK(cudaMallocAsync(&p, sizeof(unsigned) * kArrivalCounters, stream_));
      TE_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(unsigned) * kArrivalCounters, stream_));
      arrivals_ = static_cast<unsigned*>(p);
    }
    return arrivals_;
  }
  bool CheckIdle() {
    cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    TE_CUDA_CHECK(e);
    return false;
  }

 private:
  void ThrowRecordedFault() {
    if (fault_ == nullptr || fault_->kind == 0) return;
    const std::string message = Describe(*fault_, "GPU");
    *fault_ = KernelFault();
    Fail(message);
  }
  void ApplyMathMode() {
    // Reductions inside a gemm (split-K) keep the fp32 compute type even when the output is half/bf16;
    // cuBLAS would otherwise sum partial products in the output type.
    const int mode = (tf32_ && !tf32x3_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) |
                     CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    TE_CUBLAS_CHECK(cublasSetMathMode(blas_, static_cast<cublasMath_t>(mode)));
  }
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::StreamHandle> handle_;
  int dev_id_ = -1;
  cublasHandle_t blas_ = nullptr;
  bool tf32_ = false;
  bool tf32x3_ = false;
  KernelFault* fault_ = nullptr;         // the record, as the host reads it
  KernelFault* fault_device_ = nullptr;  // the same record, as kernels write it
  unsigned* arrivals_ = nullptr;         // arrival_counters()
  Workspace<gpu> workspace_;
  std::unique_ptr<Stream<gpu>> side_;    // ForkSide()
  Stream<gpu>* owner_ = nullptr;         // for a side stream: the stream that forked it
  int side_device_ = -1;
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
};

namespace cuda {
// NewStream's work, with the CUDA stream's flags as a choice (mshadow's NewStream makes blocking ones).
inline Stream<gpu>* NewStreamWithFlags(bool create_blas_handle, int dev_id, unsigned flags) {
  auto* s = new Stream<gpu>(nullptr, true, dev_id, flags);
  if (create_blas_handle) s->blas_handle();
  return s;
}
}  // namespace cuda

template <>
inline Stream<gpu>* NewStream<gpu>(bool create_blas_handle, bool /*create_dnn_handle*/, int dev_id) {
  return cuda::NewStreamWithFlags(create_blas_handle, dev_id, cudaStreamNonBlocking);
}

// The stream object used for tensors whose stream_ is null: wraps cudaStreamPerThread, one per host
// thread, so that cuBLAS work on it has a handle too.
inline Stream<gpu>* DefaultStream() {
  thread_local Stream<gpu> s(cudaStreamPerThread, false);
  return &s;
}
inline Stream<gpu>* StreamOrDefault(Stream<gpu>* s) { return s == nullptr ? DefaultStream() : s; }

// What device-neutral code may ask of the GPU through a stream (the twins of cpu/device.h's): the
// current device's name, threads per run (the GPU's own parallelism is not budgeted: 1), whether float
// gemms on this stream may use TF32, where its kernels record a failed check, waiting until the
// stream's work is done (which reports such a failure), and forking / joining its side stream.
inline const std::string& DeviceName(Stream<gpu>*) { return cuda::CurrentDeviceInfo().name; }
inline int ThreadBudget(Stream<gpu>*) { return 1; }
inline bool UsesTF32(Stream<gpu>* s) { return StreamOrDefault(s)->tf32() && !StreamOrDefault(s)->tf32x3(); }
inline bool UsesTF32x3(Stream<gpu>* s) { return StreamOrDefault(s)->tf32x3(); }
inline KernelFault* FaultRecord(Stream<gpu>* s) { return StreamOrDefault(s)->fault_record(); }
inline void WaitStream(Stream<gpu>* s) { StreamOrDefault(s)->Wait(); }
inline Stream<gpu>* ForkSideStream(Stream<gpu>* s) { return StreamOrDefault(s)->ForkSide(); }
inline void JoinSideStream(Stream<gpu>* s) { StreamOrDefault(s)->JoinSide(); }

}  // namespace tensorexpr
