// tensor.h — Tensor<Device, dim, DType>: a non-owning view of memory, and the leaf of every expression.
// Element (i0, ..., i_{n-1}) lives at dptr_[((i0 * s1 + i1) * ... ) * stride_ + i_{n-1}]: only the last
// dimension may be padded (stride_ >= shape_[dim-1]).
#pragma once
#include <type_traits>
#include "base.h"
#include "shape.h"
#include "checked.h"
#include "dtype.h"
#include "op.h"
#include "stream.h"
#include "expr/base.h"

namespace tensorexpr {

// Assignment savers: how a computed value is stored. alpha/beta are what a BLAS call uses instead.
namespace sv {
struct saveto {
  template <typename D> TE_XINLINE static void Save(D& a, D b) { a = b; }
  static constexpr float kAlphaBLAS = 1.0f, kBetaBLAS = 0.0f;
  static constexpr bool kBLAS = true;
  static const char* name() { return "="; }
};
struct plusto {
  template <typename D> TE_XINLINE static void Save(D& a, D b) { a = static_cast<D>(a + b); }
  static constexpr float kAlphaBLAS = 1.0f, kBetaBLAS = 1.0f;
  static constexpr bool kBLAS = true;
  static const char* name() { return "+="; }
};
struct minusto {
  template <typename D> TE_XINLINE static void Save(D& a, D b) { a = static_cast<D>(a - b); }
  static constexpr float kAlphaBLAS = -1.0f, kBetaBLAS = 1.0f;
  static constexpr bool kBLAS = true;
  static const char* name() { return "-="; }
};
struct multo {
  template <typename D> TE_XINLINE static void Save(D& a, D b) { a = static_cast<D>(a * b); }
  static constexpr bool kBLAS = false;
  static const char* name() { return "*="; }
};
struct divto {
  template <typename D> TE_XINLINE static void Save(D& a, D b) {
    if constexpr (std::is_integral<D>::value) a = math::IntDiv(a, b);  // defined for b = 0 and INT_MIN / -1
    else a = static_cast<D>(a / b);
  }
  static constexpr bool kBLAS = false;
  static const char* name() { return "/="; }
};
}  // namespace sv

// Allocation with pad = true rounds each row up to a multiple of this many bytes (on every device).
constexpr size_t kPadAlign = 64;

// Row stride in elements for a last dimension of `width`, padded or not.
template <typename DType>
TE_XINLINE index_t PaddedStride(index_t width, bool pad) {
  if (!pad || width == 0 || kPadAlign % sizeof(DType) != 0) return width;
  const index_t lanes = static_cast<index_t>(kPadAlign / sizeof(DType));
  return (width + lanes - 1) / lanes * lanes;
}

namespace expr {
template <typename DType> struct ScalarExp;
template <typename E> inline void CheckIntegerDivisor(const E& divisor, const char* where);  // expr/map.h
}
// These declarations make `EvalInto<Saver>(dst, e)` and `MapPlan<Saver>(dst, e)` template calls, so
// argument-dependent lookup finds the real overloads (assign.h, dot.h, cpu/map.h, cuda/map.cuh, ...)
// declared after this header.
template <typename Saver> void EvalInto();
template <typename Saver> void MapPlan();
template <typename Saver> void RunTransposeTiles();  // cpu/transpose.h, cuda/transpose.cuh

template <typename Device, int dim, typename DType = float>
struct Tensor : public expr::Exp<Tensor<Device, dim, DType>, DType, expr::type::kRValue> {
  static_assert(dim >= 1, "a Tensor has at least one dimension");
  static constexpr int kDim = dim;
  static constexpr int kSubdim = dim - 1;
  static constexpr bool kFlat = true;
  using device_type = Device;

  DType* dptr_ = nullptr;
  Shape<dim> shape_;
  index_t stride_ = 0;  // elements between consecutive rows of the last dimension
  Stream<Device>* stream_ = nullptr;

  TE_XINLINE Tensor() {}
  TE_XINLINE Tensor(const Shape<dim>& shape) : shape_(shape), stride_(shape[dim - 1]) {}
  TE_XINLINE Tensor(DType* dptr, const Shape<dim>& shape, Stream<Device>* stream = nullptr)
      : dptr_(dptr), shape_(shape), stride_(shape[dim - 1]), stream_(stream) {}
  TE_XINLINE Tensor(DType* dptr, const Shape<dim>& shape, index_t stride, Stream<Device>* stream)
      : dptr_(dptr), shape_(shape), stride_(stride), stream_(stream) {}

  void set_stream(Stream<Device>* stream) { stream_ = stream; }
  TE_XINLINE index_t size(int i) const { return shape_[i]; }
  TE_XINLINE const Shape<dim>& shape() const { return shape_; }
  // Elements the view spans in memory, padding included.
  TE_XINLINE index_t MSize() const { return shape_.ProdShape(0, dim - 1) * stride_; }
  // The same for one sub-tensor at depth startdim (mshadow's MemSize<1>() is the span of t[i]).
  template <int startdim>
  TE_XINLINE index_t MemSize() const {
    static_assert(0 <= startdim && startdim <= dim, "MemSize<startdim>: startdim must lie in [0, dim]");
    if constexpr (startdim >= dim - 1) {
      return startdim == dim ? 1 : stride_;
    } else {
      return shape_.ProdShape(startdim, dim - 1) * stride_;
    }
  }
  TE_XINLINE bool CheckContiguous() const { return shape_[dim - 1] == stride_; }
  TE_XINLINE bool contiguous() const { return CheckContiguous(); }
  bool aligned_for(int lanes) const {
    return reinterpret_cast<uintptr_t>(dptr_) % (static_cast<uintptr_t>(lanes) * sizeof(DType)) == 0;
  }

  // The elements as one row; a padded view has gaps between its rows, so it has no such view.
  Tensor<Device, 1, DType> FlatTo1D() const {
    TE_CHECK(CheckContiguous() || shape_.ProdShape(0, dim - 1) <= 1, "FlatTo1D: the tensor of shape ", shape_,
             " has padded rows (row stride ", stride_, "), so its elements are not one contiguous row");
    return Tensor<Device, 1, DType>(dptr_, Shape1(shape_.Size()), shape_.Size(), stream_);
  }
  TE_XINLINE Tensor<Device, 2, DType> FlatTo2D() const {
    return Tensor<Device, 2, DType>(dptr_, shape_.FlatTo2D(), stride_, stream_);
  }
  // The sub-tensor at index idx of the first dimension (an element reference for 1-D tensors).
  TE_XINLINE decltype(auto) operator[](index_t idx) const {
    if constexpr (dim == 1) {
      return (dptr_[idx]);
    } else {
      return Tensor<Device, dim - 1, DType>(dptr_ + idx * shape_.ProdShape(1, dim - 1) * stride_,
                                            shape_.SubShape(), stride_, stream_);
    }
  }
  // Rows [begin, end) of the first dimension.
  Tensor Slice(index_t begin, index_t end) const {
    TE_CHECK(0 <= begin && begin <= end && end <= shape_[0], "Tensor::Slice(", begin, ", ", end,
             "): out of range for shape ", shape_);
    Tensor t = *this;
    t.dptr_ = dptr_ + begin * (dim == 1 ? 1 : shape_.ProdShape(1, dim - 1) * stride_);
    t.shape_[0] = end - begin;
    return t;
  }

  // Evaluation of the leaf.
  struct Plan {
    DType* dptr_;
    index_t stride_;
    TE_XINLINE DType Eval(index_t y, index_t x) const { return dptr_[y * stride_ + x]; }
    TE_XINLINE DType& REval(index_t y, index_t x) const { return dptr_[y * stride_ + x]; }
    TE_XINLINE DType EvalFlat(index_t i) const { return dptr_[i]; }
    template <int N>
    TE_XINLINE expr::VecN<DType, N> EvalVec(index_t i) const {
      return *reinterpret_cast<const expr::VecN<DType, N>*>(dptr_ + i);
    }
  };
  // Built on the host once per evaluation, so reading a view without memory is caught here, not per element.
  Plan plan() const {
    CheckUsable("reading a tensor");
    return Plan{dptr_, stride_};
  }

  // Throws Error unless the view can be read or written: no negative extent, and memory when it has elements.
  void CheckUsable(const char* use) const {
    const index_t n = CheckedSize(shape_, use);
    TE_CHECK(dptr_ != nullptr || n == 0, use, ": the tensor of shape ", shape_,
             " has no memory (null dptr_); allocate it (NewTensor, TensorContainer) or point it at memory first");
  }
  // Copying a Tensor copies the view (as in mshadow); `dst = src * 1` or Copy() copies data.
  Tensor(const Tensor&) = default;
  Tensor& operator=(const Tensor&) = default;

  // Evaluate an expression into this view.
  template <typename E, typename D2, int etype>
  Tensor& operator=(const expr::Exp<E, D2, etype>& e) { return Store<sv::saveto>(e); }
  template <typename E, typename D2, int etype>
  Tensor& operator+=(const expr::Exp<E, D2, etype>& e) { return Store<sv::plusto>(e); }
  template <typename E, typename D2, int etype>
  Tensor& operator-=(const expr::Exp<E, D2, etype>& e) { return Store<sv::minusto>(e); }
  template <typename E, typename D2, int etype>
  Tensor& operator*=(const expr::Exp<E, D2, etype>& e) { return Store<sv::multo>(e); }
  template <typename E, typename D2, int etype>
  Tensor& operator/=(const expr::Exp<E, D2, etype>& e) { return Store<sv::divto>(e); }
  Tensor& operator=(DType s) { return Store<sv::saveto>(expr::ScalarExp<DType>(s)); }
  Tensor& operator+=(DType s) { return Store<sv::plusto>(expr::ScalarExp<DType>(s)); }
  Tensor& operator-=(DType s) { return Store<sv::minusto>(expr::ScalarExp<DType>(s)); }
  Tensor& operator*=(DType s) { return Store<sv::multo>(expr::ScalarExp<DType>(s)); }
  Tensor& operator/=(DType s) { return Store<sv::divto>(expr::ScalarExp<DType>(s)); }

  // Evaluates e into this view with any saver (sv::saveto, plusto, ...): what the operators above call,
  // and mshadow's MapExp<Saver>(&dst, e).
  template <typename Saver, typename E, typename D2, int etype>
  Tensor& Store(const expr::Exp<E, D2, etype>& e) {
    static_assert(kCompiledForCuda || !std::is_same<Device, gpu>::value, TE_GPU_NEEDS_NVCC_MESSAGE);
    static_assert(std::is_same<D2, DType>::value,
                  "the right-hand side has a different dtype than the tensor it is assigned to; convert it with tcast<T>(e)");
    CheckUsable("assigning to a tensor");
    if constexpr (std::is_same<Saver, sv::divto>::value) expr::CheckIntegerDivisor(e.self(), "/=");
    EvalInto<Saver>(*this, e.self());  // found by argument-dependent lookup (assign.h and node headers)
    return *this;
  }
};

// Whether E is a tensor (memory with a row stride) rather than an expression over one: evaluators with
// a memory-reading fast path ask.
template <typename E>
struct is_tensor : std::false_type {};
template <typename Device, int dim, typename DType>
struct is_tensor<Tensor<Device, dim, DType>> : std::true_type {};

}  // namespace tensorexpr
