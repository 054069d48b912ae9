// cpu/memory.h — host memory for tensors: 64-byte aligned, rows optionally padded to 64 bytes; Copy.
#pragma once
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "../checked.h"
#include "../tensor.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {

constexpr size_t kCPUAlign = 64;

namespace cpu_memory {
// Large tensors sit on 2 MB pages where the kernel grants them (Linux's transparent huge pages, which many
// systems give only on request: madvise). Walks across rows, a transpose's reads above all, touch a new 4 KB
// page every few cache lines, and the page-table walks of their TLB misses cost a fifth of the bandwidth
// (b = a.T() of 16000^2 floats at 16 threads: 0.77 of memcpy on 4 KB pages, 0.97 on huge pages).
constexpr size_t kHugePage = size_t(2) << 20;

inline void* AllocLarge(size_t bytes) {
  const size_t align = bytes >= 2 * kHugePage ? kHugePage : kCPUAlign;
  const size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr && align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}
}  // namespace cpu_memory

// Allocates memory for t.shape_ (stride_ set here). Throws Error when the memory cannot be had.
template <int dim, typename DType>
inline void AllocSpace(Tensor<cpu, dim, DType>* t, bool pad = false) {
  t->stride_ = PaddedStride<DType>(t->shape_[dim - 1], pad);
  const size_t bytes = CheckedSpanBytes(t->shape_, t->stride_, sizeof(DType), "AllocSpace<cpu>");
  if (bytes == 0) {
    t->dptr_ = nullptr;
    return;
  }
  void* p = cpu_memory::AllocLarge(bytes);
  TE_CHECK(p != nullptr, "AllocSpace<cpu>: out of memory allocating ", bytes, " bytes for shape ", t->shape_);
  t->dptr_ = static_cast<DType*>(p);
}

template <int dim, typename DType>
inline void FreeSpace(Tensor<cpu, dim, DType>* t) {
  std::free(t->dptr_);
  t->dptr_ = nullptr;
}

// ---- AllocHost<Device> / FreeHost<Device> (mshadow's names) ---------------------------------------------
// Contiguous host memory for a CPU tensor, staged for transfers to Device: page-locked (pinned) for the
// GPU, so that copies to and from it run asynchronously (cuda/memory.cuh), plain aligned memory for the
// CPU. HostAllocator<Device> is the device's half.
template <typename Device>
struct HostAllocator;
template <>
struct HostAllocator<cpu> {
  static void* Alloc(size_t bytes) { return cpu_memory::AllocLarge(bytes); }
  static void Free(void* p) { std::free(p); }
};

template <typename Device, int dim, typename DType>
inline void AllocHost(Tensor<cpu, dim, DType>* t) {
  static_assert(kCompiledForCuda || !std::is_same<Device, gpu>::value, TE_GPU_NEEDS_NVCC_MESSAGE);
  t->stride_ = t->shape_[dim - 1];
  const size_t bytes = CheckedSpanBytes(t->shape_, t->stride_, sizeof(DType), "AllocHost");
  t->dptr_ = nullptr;
  if (bytes == 0) return;
  void* p = HostAllocator<Device>::Alloc(bytes);
  TE_CHECK(p != nullptr, "AllocHost: out of memory allocating ", bytes, " bytes for shape ", t->shape_);
  t->dptr_ = static_cast<DType*>(p);
}
// Frees what AllocHost<Device> gave; freeing a tensor without memory is an Error (mshadow: "double free").
template <typename Device, int dim, typename DType>
inline void FreeHost(Tensor<cpu, dim, DType>* t) {
  static_assert(kCompiledForCuda || !std::is_same<Device, gpu>::value, TE_GPU_NEEDS_NVCC_MESSAGE);
  TE_CHECK(t->dptr_ != nullptr || t->shape_.Size() == 0, "FreeHost: the tensor of shape ", t->shape_,
           " has no memory (freed twice?)");
  if (t->dptr_ != nullptr) HostAllocator<Device>::Free(t->dptr_);
  t->dptr_ = nullptr;
}

// The CPU frees at once: nothing of the stream is needed.
template <>
class FreeQueue<cpu> {
 public:
  static FreeQueue Of(Stream<cpu>*) { return FreeQueue(); }
  template <int dim, typename DType>
  void Free(Tensor<cpu, dim, DType>* t) const {
    FreeSpace(t);
  }
};

// Whether the memory spans of two views share a byte.
template <int dim, typename DType>
inline bool SpansOverlap(const Tensor<cpu, dim, DType>& a, const Tensor<cpu, dim, DType>& b) {
  const auto span_end = [](const Tensor<cpu, dim, DType>& t) {  // one past the last element
    return t.dptr_ + (t.shape_.ProdShape(0, dim - 1) - 1) * t.stride_ + t.shape_[dim - 1];
  };
  return a.dptr_ < span_end(b) && b.dptr_ < span_end(a);
}

// Copy(dst, src): same shape, any strides, both on the host. Views of one buffer may overlap.
template <int dim, typename DType>
inline void Copy(Tensor<cpu, dim, DType> dst, const Tensor<cpu, dim, DType>& src, Stream<cpu>* = nullptr) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  TE_CHECK(dst.shape_ == src.shape_, "Copy: shape mismatch, destination ", dst.shape_, " vs source ", src.shape_);
  dst.CheckUsable("Copy destination");
  src.CheckUsable("Copy source");
  if (dst.shape_.Size() == 0 || (dst.dptr_ == src.dptr_ && dst.stride_ == src.stride_)) return;
  if (dst.CheckContiguous() && src.CheckContiguous()) {
    std::memmove(dst.dptr_, src.dptr_, sizeof(DType) * static_cast<size_t>(dst.shape_.Size()));
    return;
  }
  if (SpansOverlap(dst, src)) {
    // Row copies in parallel could read rows already overwritten: go through a contiguous temporary.
    std::vector<DType> buffer(static_cast<size_t>(src.shape_.Size()));
    const Tensor<cpu, dim, DType> tmp(buffer.data(), src.shape_);
    Copy(tmp, src);
    Copy(dst, tmp);
    return;
  }
  const Tensor<cpu, 2, DType> d = dst.FlatTo2D(), s = src.FlatTo2D();
  ParallelFor(d.shape_[0], d.shape_[1], [&](index_t begin, index_t end) {
    for (index_t y = begin; y < end; ++y)
      std::memcpy(d.dptr_ + y * d.stride_, s.dptr_ + y * s.stride_, sizeof(DType) * static_cast<size_t>(d.shape_[1]));
  });
}

}  // namespace tensorexpr
