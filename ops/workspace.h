// ops/workspace.h — the per-stream temp-space resource that operators draw their workspace from.
//
//   Tensor<Device, 1, float> col = get_space_typed<Device, 1, float>(Shape1(n), stream);
//
// One buffer per (device, stream) — the null stream counts once per host thread, since on the GPU it is
// the per-thread default stream. A request larger than the buffer grows it; smaller requests reuse it,
// so after the first call an op allocates nothing (ops report their need up front, CUTLASS-style, and
// the caller's first run sizes the buffer). The view stays valid until the next request on the same
// stream, which may move the buffer: an op takes its space once per call and must not hold it across
// calls. Work queued on one stream runs in order, so reusing (or, on the GPU, stream-ordered freeing of)
// the buffer never races with the kernels still reading the old one.
// ReleaseWorkspace(stream) frees one stream's buffer; ReleaseAllWorkspaces<Device>() frees them all.
// Buffers still held at exit are left to the OS: freeing GPU memory from a static destructor can run
// after the CUDA runtime is gone.
#pragma once
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <tensorexpr/tensor.h>

namespace tensorexpr {
namespace ops {

// Raw memory for workspaces, per device. The GPU specialisation lives in ops/cuda/workspace_gpu.cuh
// (stream-ordered cudaMallocAsync / cudaFreeAsync).
template <typename Device>
struct WorkspaceAllocator;

template <>
struct WorkspaceAllocator<cpu> {
  static void* Alloc(size_t bytes, Stream<cpu>*) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    TE_CHECK(p != nullptr, "workspace<cpu>: out of memory allocating ", bytes, " bytes");
    return p;
  }
  static void Free(void* p, Stream<cpu>*) { std::free(p); }
};

namespace detail {

struct WorkspaceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

// The registry of buffers of one device, keyed by stream (and by host thread for the null stream).
template <typename Device>
struct WorkspaceRegistry {
  using Key = std::pair<const void*, std::thread::id>;
  std::mutex mutex;
  std::map<Key, WorkspaceBuffer> buffers;

  static WorkspaceRegistry& Get() {
    static WorkspaceRegistry* registry = new WorkspaceRegistry();  // never destroyed: see the header note
    return *registry;
  }
  static Key KeyOf(Stream<Device>* stream) {
    return Key(stream, stream == nullptr ? std::this_thread::get_id() : std::thread::id());
  }
};

}  // namespace detail

// Bytes of workspace currently held for `stream` (0 when none).
template <typename Device>
inline size_t WorkspaceBytesHeld(Stream<Device>* stream = nullptr) {
  auto& reg = detail::WorkspaceRegistry<Device>::Get();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.buffers.find(reg.KeyOf(stream));
  return it == reg.buffers.end() ? 0 : it->second.bytes;
}

// At least `bytes` of workspace on `stream`, grown when needed, reused otherwise. 256-byte aligned.
template <typename Device>
inline void* GetWorkspaceBytes(size_t bytes, Stream<Device>* stream) {
  auto& reg = detail::WorkspaceRegistry<Device>::Get();
  std::lock_guard<std::mutex> lock(reg.mutex);
  detail::WorkspaceBuffer& buf = reg.buffers[reg.KeyOf(stream)];
  if (bytes > buf.bytes || buf.ptr == nullptr) {
    // Grow geometrically so that a sequence of slightly larger requests does not reallocate each time.
    size_t want = bytes > buf.bytes + buf.bytes / 2 ? bytes : buf.bytes + buf.bytes / 2;
    want = (want + 255) / 256 * 256;
    if (want == 0) want = 256;
    if (buf.ptr != nullptr) WorkspaceAllocator<Device>::Free(buf.ptr, stream);
    buf.ptr = nullptr;
    buf.bytes = 0;
    buf.ptr = WorkspaceAllocator<Device>::Alloc(want, stream);
    buf.bytes = want;
  }
  return buf.ptr;
}

// A contiguous Tensor view of workspace memory for `shape` on `stream` (MXNet's get_space_typed).
template <typename Device, int dim, typename DType>
inline Tensor<Device, dim, DType> get_space_typed(const Shape<dim>& shape, Stream<Device>* stream = nullptr) {
  const size_t bytes = static_cast<size_t>(shape.Size()) * sizeof(DType);
  DType* p = static_cast<DType*>(GetWorkspaceBytes<Device>(bytes, stream));
  return Tensor<Device, dim, DType>(p, shape, stream);
}

// Frees the workspace of one stream (call before destroying the stream).
template <typename Device>
inline void ReleaseWorkspace(Stream<Device>* stream = nullptr) {
  auto& reg = detail::WorkspaceRegistry<Device>::Get();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.buffers.find(reg.KeyOf(stream));
  if (it == reg.buffers.end()) return;
  if (it->second.ptr != nullptr) WorkspaceAllocator<Device>::Free(it->second.ptr, stream);
  reg.buffers.erase(it);
}

// Frees every workspace of the device. The streams must still be alive (GPU frees are stream-ordered);
// buffers of the null stream are freed on the calling thread's default stream.
template <typename Device>
inline void ReleaseAllWorkspaces() {
  auto& reg = detail::WorkspaceRegistry<Device>::Get();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (auto& kv : reg.buffers) {
    Stream<Device>* s = static_cast<Stream<Device>*>(const_cast<void*>(kv.first.first));
    if (kv.second.ptr != nullptr) WorkspaceAllocator<Device>::Free(kv.second.ptr, s);
  }
  reg.buffers.clear();
}

}  // namespace ops
}  // namespace tensorexpr

// Under nvcc the GPU allocator comes with the resource, so get_space_typed<gpu> works from this header alone.
#if defined(__CUDACC__)
#include "cuda/workspace_gpu.cuh"
#endif
