// cpu/memory.h — host memory for tensors: 64-byte aligned, rows optionally padded to 64 bytes; Copy.
#pragma once
#include <cstdlib>
#include <cstring>
#include <new>
#include "../checked.h"
#include "../tensor.h"
#include "threads.h"

namespace tensorexpr {

constexpr size_t kCPUAlign = 64;

// Allocates memory for t.shape_ (stride_ set here). Throws Error when the memory cannot be had.
template <int dim, typename DType>
inline void AllocSpace(Tensor<cpu, dim, DType>* t, bool pad = false) {
  t->stride_ = PaddedStride<DType>(t->shape_[dim - 1], pad);
  const size_t bytes = CheckedSpanBytes(t->shape_, t->stride_, sizeof(DType), "AllocSpace<cpu>");
  if (bytes == 0) {
    t->dptr_ = nullptr;
    return;
  }
  const size_t rounded = (bytes + kCPUAlign - 1) / kCPUAlign * kCPUAlign;
  void* p = std::aligned_alloc(kCPUAlign, rounded);
  TE_CHECK(p != nullptr, "AllocSpace<cpu>: out of memory allocating ", bytes, " bytes for shape ", t->shape_);
  t->dptr_ = static_cast<DType*>(p);
}

template <int dim, typename DType>
inline void FreeSpace(Tensor<cpu, dim, DType>* t) {
  std::free(t->dptr_);
  t->dptr_ = nullptr;
}

// Copy(dst, src): same shape, any strides, both on the host.
template <int dim, typename DType>
inline void Copy(Tensor<cpu, dim, DType> dst, const Tensor<cpu, dim, DType>& src, Stream<cpu>* = nullptr) {
  TE_CHECK(dst.shape_ == src.shape_, "Copy: shape mismatch, destination ", dst.shape_, " vs source ", src.shape_);
  if (dst.shape_.Size() == 0) return;
  if (dst.CheckContiguous() && src.CheckContiguous()) {
    std::memcpy(dst.dptr_, src.dptr_, sizeof(DType) * static_cast<size_t>(dst.shape_.Size()));
    return;
  }
  const Tensor<cpu, 2, DType> d = dst.FlatTo2D(), s = src.FlatTo2D();
  ParallelFor(d.shape_[0], d.shape_[1], [&](index_t begin, index_t end) {
    for (index_t y = begin; y < end; ++y)
      std::memcpy(d.dptr_ + y * d.stride_, s.dptr_ + y * s.stride_, sizeof(DType) * static_cast<size_t>(d.shape_[1]));
  });
}

}  // namespace tensorexpr
