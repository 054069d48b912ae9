// workspace.h — the temporary memory a stream owns (MXNet's kTempSpace resource, CUTLASS's workspace):
//
//   Tensor<Device, 1, float> col = get_space_typed<Device, 1, float>(Shape1(n), stream);
//
// Each Stream<Device> holds one buffer; a null stream means the calling thread's default stream, which
// has its own. A request larger than the buffer grows it (geometrically); smaller requests reuse it, so
// after the first call an operator allocates nothing (operators report their need up front and the first
// run sizes the buffer). A view stays valid until the next request on the same stream, which may move
// the buffer: an operator takes its space once per call and never holds it across calls. Work on one
// stream runs in order, so reusing (or, on the GPU, stream-ordered freeing of) the buffer never races
// with kernels still reading the old one. The buffer is freed with its stream, or earlier by
// ReleaseWorkspace(stream) / ReleaseAllWorkspaces<Device>().
// The workspace is the operators' temporary memory. The core's own evaluators never take it (an
// operator may hold a view of it while it calls them): on the GPU they use a cuda::TempBuffer
// (cuda/memory.cuh), on the CPU containers of their own.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>
#include "base.h"
#include "shape.h"

namespace tensorexpr {

template <typename Device>
struct Stream;
template <typename Device, int dim, typename DType>
struct Tensor;

// Raw memory for workspaces: Alloc(bytes, queue) / Free(p, queue), where a queue is what orders the
// device's work (nothing on the CPU, a cudaStream_t on the GPU: cuda/stream.cuh specialises it).
template <typename Device>
struct WorkspaceMemory;

template <>
struct WorkspaceMemory<cpu> {
  using Queue = int;
  static void* Alloc(size_t bytes, Queue) {
    void* p = std::aligned_alloc(256, bytes);
    TE_CHECK(p != nullptr, "workspace<cpu>: out of memory allocating ", bytes, " bytes");
    return p;
  }
  static void Free(void* p, Queue) noexcept { std::free(p); }
};

// Workspace comes in whole granules of this many bytes, each buffer starting on one.
constexpr size_t kWorkspaceGranule = 256;
// `bytes` rounded up to whole granules (bytes <= 2^62).
inline size_t InWorkspaceGranules(size_t bytes) {
  return (bytes + kWorkspaceGranule - 1) / kWorkspaceGranule * kWorkspaceGranule;
}

template <typename Device>
class Workspace {
 public:
  using Queue = typename WorkspaceMemory<Device>::Queue;
  Workspace() {
    std::lock_guard<std::mutex> lock(AllMutex());
    All().insert(this);
  }
  ~Workspace() {
    {
      std::lock_guard<std::mutex> lock(AllMutex());
      All().erase(this);
    }
    if (ptr_ != nullptr) WorkspaceMemory<Device>::Free(ptr_, queue_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // The queue that orders this workspace's allocations and frees (the owning stream's).
  void set_queue(Queue q) { queue_ = q; }

  // At least `bytes` of memory in whole granules: grown to exactly that when short (never past what was
  // asked, so that a caller's bound, such as ConvolutionWorkspaceBytes or a workspace cap, holds) and
  // reused otherwise. A network's layers ask their sizes again each step, so only its first step grows.
  void* Get(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > bytes_ || ptr_ == nullptr) {
      TE_CHECK(bytes <= kMaxRequest, "workspace: a request for ", bytes, " bytes is beyond any memory");
      const size_t want = GrownTo(bytes);
      FreeLocked();
      ptr_ = WorkspaceMemory<Device>::Alloc(want, queue_);
      bytes_ = want;
    }
    return ptr_;
  }
  size_t Held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }
  // What Get(bytes) would leave held (what is held now for no bytes: nothing is asked then).
  size_t HeldAfter(size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes == 0 || (bytes <= bytes_ && ptr_ != nullptr) ? bytes_ : GrownTo(bytes);
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    FreeLocked();
  }
  // Frees the memory of every workspace of the device (their streams are alive: they own them).
  static void ReleaseAll() {
    std::lock_guard<std::mutex> lock(AllMutex());
    for (Workspace* w : All()) w->Release();
  }

 private:
  static constexpr size_t kMaxRequest = size_t(1) << 62;  // more is beyond any memory
  // What a request for `bytes` that the memory held cannot serve grows it to: exactly that, in whole
  // granules (Get refuses more than kMaxRequest; HeldAfter answers for it as for kMaxRequest).
  static size_t GrownTo(size_t bytes) { return InWorkspaceGranules(std::min(std::max(bytes, size_t(1)), kMaxRequest)); }
  void FreeLocked() {
    if (ptr_ != nullptr) WorkspaceMemory<Device>::Free(ptr_, queue_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  static std::set<Workspace*>& All() {
    static auto* all = new std::set<Workspace*>();  // never destroyed: streams may outlive static teardown
    return *all;
  }
  static std::mutex& AllMutex() {
    static auto* m = new std::mutex();
    return *m;
  }
  mutable std::mutex mutex_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Queue queue_{};
};

// At least `bytes` of workspace on `stream` (null: the calling thread's default stream).
template <typename Device>
inline void* GetWorkspaceBytes(size_t bytes, Stream<Device>* stream) {
  return StreamOrDefault(stream)->workspace().Get(bytes);
}

// A contiguous Tensor view of workspace memory for `shape` on `stream` (MXNet's get_space_typed).
template <typename Device, int dim, typename DType>
inline Tensor<Device, dim, DType> get_space_typed(const Shape<dim>& shape, Stream<Device>* stream = nullptr) {
  const size_t bytes = static_cast<size_t>(shape.Size()) * sizeof(DType);
  return Tensor<Device, dim, DType>(static_cast<DType*>(GetWorkspaceBytes<Device>(bytes, stream)), shape, stream);
}

// Bytes of workspace `stream` holds (0 when none), its side stream's (cuda/stream.cuh) included.
template <typename Device>
inline size_t WorkspaceBytesHeld(Stream<Device>* stream = nullptr) {
  Stream<Device>* s = StreamOrDefault(stream);
  return s->workspace().Held() + (s->side() != nullptr ? s->side()->workspace().Held() : 0);
}
// Frees the workspace of one stream and of its side stream (they are freed with the stream anyway).
template <typename Device>
inline void ReleaseWorkspace(Stream<Device>* stream = nullptr) {
  Stream<Device>* s = StreamOrDefault(stream);
  s->workspace().Release();
  if (s->side() != nullptr) s->side()->workspace().Release();
}
// Frees the workspace of every stream of the device.
template <typename Device>
inline void ReleaseAllWorkspaces() {
  Workspace<Device>::ReleaseAll();
}

}  // namespace tensorexpr
