// stream.h — Stream<Device>: the device object. Work is queued on it, and it owns the temporary memory
// operators draw from (its Workspace, workspace.h). On the CPU work runs at once, so Wait() is free, and
// the stream holds a thread budget: evaluation for its tensors uses at most that many threads (two
// streams driven from two host threads can split the cores between them).
// The GPU stream (cuda/stream.cuh) also owns a cudaStream_t and a lazily created cuBLAS handle.
#pragma once
#include <type_traits>
#include "base.h"
#include "workspace.h"

namespace tensorexpr {

template <typename Device>
struct Stream;

template <>
struct Stream<cpu> {
  void Wait() {}
  bool CheckIdle() { return true; }
  Workspace<cpu>& workspace() { return workspace_; }
  // The GPU stream's side stream (cuda/stream.cuh) for work that may overlap; the CPU runs it here.
  Stream<cpu>* side() const { return nullptr; }
  // Threads evaluation for this stream may use; 0 (the default): the process's (GetNumThreads).
  int num_threads() const { return num_threads_; }
  void set_num_threads(int n) {
    TE_CHECK(n >= 0, "Stream<cpu>::set_num_threads: need a thread count >= 0 (0: the process's), got ", n);
    num_threads_ = n;
  }

 private:
  Workspace<cpu> workspace_;
  int num_threads_ = 0;
};

// The stream object of tensors whose stream_ is null: one per host thread (as on the GPU), so that each
// thread's operators have a workspace of their own. A template taking only Stream<cpu>*, so that the GPU's
// StreamOrDefault(nullptr) (cuda/stream.cuh) stays unambiguous.
template <typename S, typename = std::enable_if_t<std::is_same<S, Stream<cpu>>::value>>
inline Stream<cpu>* StreamOrDefault(S* s) {
  thread_local Stream<cpu> default_stream;
  return s == nullptr ? &default_stream : s;
}

// What a TensorContainer keeps of the stream its memory is ordered on, so that it can free the memory
// even after that Stream object was deleted (or the engine shut down): cpu/memory.h, cuda/memory.cuh.
template <typename Device>
class FreeQueue;

// mshadow's signature: the handle flags and device id only matter on the GPU.
template <typename Device>
inline Stream<Device>* NewStream(bool create_blas_handle = true, bool create_dnn_handle = false, int dev_id = -1);

template <>
inline Stream<cpu>* NewStream<cpu>(bool, bool, int) {
  return new Stream<cpu>();
}

template <typename Device>
inline void DeleteStream(Stream<Device>* stream) {
  delete stream;
}

// Engine set-up / tear-down. Nothing to do on the CPU.
template <typename Device>
inline void InitTensorEngine(int dev_id = 0);
template <typename Device>
inline void ShutdownTensorEngine();
template <>
inline void InitTensorEngine<cpu>(int) {}
template <>
inline void ShutdownTensorEngine<cpu>() {}

// Makes device `dev_id` the calling thread's current one (cuda/engine.cuh for the GPU); the CPU has one.
template <typename Device>
inline void SetDevice(int dev_id);
template <>
inline void SetDevice<cpu>(int) {}

}  // namespace tensorexpr
