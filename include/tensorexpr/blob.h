// blob.h — TShape, a shape whose number of dimensions is a run-time value, and TBlob, a tensor of any
// dimension, device and element type behind one type (mshadow's names and interface). They carry tensors
// through interfaces that cannot be templated on all three, MXNet's operator signatures for one; get<Device,
// dim, DType>() turns a blob back into a Tensor, checking device, type and dimension.
//
//   Tensor<cpu, 3> t = ...;
//   TBlob blob = t;                                    // remembers cpu, float32, (2,5,2) and the row stride
//   Tensor<cpu, 3> back = blob.get<cpu, 3, float>();   // Error on another device, type or dimension count
//   Tensor<cpu, 2> rows = blob.FlatTo2D<cpu, float>();
//
// Unlike mshadow, every index and conversion is checked: an axis out of range, a shape of another size, a
// dimension count that does not match, or a negative extent is an Error saying which.
#pragma once
#include <algorithm>
#include <ostream>
#include <vector>
#include "base.h"
#include "checked.h"
#include "dtype.h"
#include "shape.h"
#include "stream.h"
#include "tensor.h"

namespace tensorexpr {

class TShape {
 public:
  TShape() = default;
  // ndim dimensions of extent 1.
  explicit TShape(index_t ndim) : dims_(CheckedCount(ndim), index_t(1)) {}
  template <typename Iterator>
  TShape(Iterator begin, Iterator end) {
    CopyFrom(begin, end);
  }
  template <int dim>
  TShape(const Shape<dim>& s) : dims_(s.shape_, s.shape_ + dim) {}  // NOLINT: implicit, as mshadow's

  template <typename Iterator>
  void CopyFrom(Iterator begin, Iterator end) {
    dims_.assign(begin, end);
  }
  TShape& operator=(const std::vector<index_t>& dims) {
    dims_ = dims;
    return *this;
  }
  template <int dim>
  TShape& operator=(const Shape<dim>& s) {
    dims_.assign(s.shape_, s.shape_ + dim);
    return *this;
  }

  index_t ndim() const { return static_cast<index_t>(dims_.size()); }
  const index_t* data() const { return dims_.data(); }
  index_t* data() { return dims_.data(); }
  index_t& operator[](index_t i) { return dims_[CheckedAxis(i)]; }
  const index_t& operator[](index_t i) const { return dims_[CheckedAxis(i)]; }

  // The number of elements (1 for no dimensions); Error when an extent is negative or the count overflows.
  index_t Size() const { return ProdShape(0, static_cast<int>(ndim())); }
  // The product of the extents in [dimstart, dimend).
  index_t ProdShape(int dimstart, int dimend) const {
    TE_CHECK(0 <= dimstart && dimstart <= dimend && dimend <= ndim(), "TShape::ProdShape: the range [", dimstart,
             ", ", dimend, ") does not lie within the ", ndim(), " dimensions of ", *this);
    index_t n = 1;
    for (int i = dimstart; i < dimend; ++i) {
      TE_CHECK(dims_[static_cast<size_t>(i)] >= 0, "TShape: negative extent ", dims_[static_cast<size_t>(i)],
               " in dimension ", i, " of ", *this);
      n = CheckedMul(n, dims_[static_cast<size_t>(i)], "TShape::Size");
    }
    return n;
  }
  // (every dimension but the last, the last); (0, 0) for no dimensions, as mshadow.
  Shape<2> FlatTo2D() const {
    if (dims_.empty()) return Shape2(0, 0);
    return Shape2(ProdShape(0, static_cast<int>(ndim()) - 1), dims_.back());
  }
  // ([0, axis_begin), [axis_begin, axis_end], (axis_end, ndim)), each collapsed to one extent.
  Shape<3> FlatTo3D(index_t axis_begin, index_t axis_end) const {
    TE_CHECK(0 <= axis_begin && axis_begin <= axis_end && axis_end < ndim(), "TShape::FlatTo3D: axes [",
             axis_begin, ", ", axis_end, "] do not lie within the ", ndim(), " dimensions of ", *this);
    const int b = static_cast<int>(axis_begin), e = static_cast<int>(axis_end);
    return Shape3(ProdShape(0, b), ProdShape(b, e + 1), ProdShape(e + 1, static_cast<int>(ndim())));
  }
  Shape<3> FlatTo3D(index_t axis) const { return FlatTo3D(axis, axis); }
  // The fixed-dimension shape; Error when dim is not the number of dimensions.
  template <int dim>
  Shape<dim> get() const {
    TE_CHECK(ndim() == dim, "TShape::get<", dim, ">: the shape ", *this, " has ", ndim(), " dimensions");
    Shape<dim> s;
    for (int i = 0; i < dim; ++i) s[i] = dims_[static_cast<size_t>(i)];
    return s;
  }

  bool operator==(const TShape& o) const { return dims_ == o.dims_; }
  bool operator!=(const TShape& o) const { return !(*this == o); }
  template <int dim>
  bool operator==(const Shape<dim>& s) const {
    return ndim() == dim && std::equal(dims_.begin(), dims_.end(), s.shape_);
  }
  template <int dim>
  bool operator!=(const Shape<dim>& s) const {
    return !(*this == s);
  }

  // Python's tuple notation, as Shape prints: (2,3), (5,), ().
  friend std::ostream& operator<<(std::ostream& os, const TShape& s) {
    os << '(';
    for (size_t i = 0; i < s.dims_.size(); ++i) os << (i ? "," : "") << s.dims_[i];
    if (s.dims_.size() == 1) os << ',';
    return os << ')';
  }

 private:
  static size_t CheckedCount(index_t ndim) {
    TE_CHECK(ndim >= 0, "TShape: a negative number of dimensions, ", ndim);
    return static_cast<size_t>(ndim);
  }
  size_t CheckedAxis(index_t i) const {
    TE_CHECK(0 <= i && i < ndim(), "TShape: dimension ", i, " of a shape with ", ndim(), " dimensions, ", *this);
    return static_cast<size_t>(i);
  }

  std::vector<index_t> dims_;
};

class TBlob {
 public:
  void* dptr_ = nullptr;
  TShape shape_;
  index_t stride_ = 0;  // elements between consecutive rows of the last dimension
  int dev_mask_ = cpu::kDevMask;
  int type_flag_ = DataType<float>::kFlag;

  TBlob() = default;
  // Contiguous memory of the given shape.
  template <typename DType>
  TBlob(DType* dptr, const TShape& shape, int dev_mask)
      : TBlob(static_cast<void*>(dptr), shape, dev_mask, DataType<DType>::kFlag) {}
  TBlob(void* dptr, const TShape& shape, int dev_mask, int type_flag)
      : dptr_(dptr), shape_(shape), stride_(shape.ndim() == 0 ? 1 : shape[shape.ndim() - 1]),
        dev_mask_(dev_mask), type_flag_(type_flag) {}
  template <typename Device, int dim, typename DType>
  TBlob(const Tensor<Device, dim, DType>& src) {  // NOLINT: implicit, as mshadow's
    *this = src;
  }
  template <typename Device, int dim, typename DType>
  TBlob& operator=(const Tensor<Device, dim, DType>& src) {
    dptr_ = src.dptr_;
    shape_ = src.shape_;
    stride_ = src.stride_;
    dev_mask_ = Device::kDevMask;
    type_flag_ = DataType<DType>::kFlag;
    return *this;
  }

  int ndim() const { return static_cast<int>(shape_.ndim()); }
  index_t size(index_t axis) const { return shape_[axis]; }
  index_t Size() const { return shape_.Size(); }
  bool CheckContiguous() const { return shape_.ndim() == 0 || shape_[shape_.ndim() - 1] == stride_; }

  // The tensor this blob holds; Error when Device, DType or dim is not what it was made from.
  template <typename Device, int dim, typename DType>
  Tensor<Device, dim, DType> get(Stream<Device>* stream = nullptr) const {
    CheckType<Device, DType>("get");
    return Tensor<Device, dim, DType>(static_cast<DType*>(dptr_), shape_.get<dim>(), stride_, stream);
  }
  // The same memory seen in another shape of as many elements; the blob must be contiguous.
  template <typename Device, int dim, typename DType>
  Tensor<Device, dim, DType> get_with_shape(const Shape<dim>& shape, Stream<Device>* stream = nullptr) const {
    CheckType<Device, DType>("get_with_shape");
    TE_CHECK(CheckContiguous(), "TBlob::get_with_shape: the blob of shape ", shape_, " has padded rows (stride ",
             stride_, "), so it cannot be seen in another shape");
    TE_CHECK(CheckedSize(shape, "TBlob::get_with_shape") == Size(), "TBlob::get_with_shape: shape ", shape, " has ",
             shape.Size(), " elements, the blob's shape ", shape_, " has ", Size());
    return Tensor<Device, dim, DType>(static_cast<DType*>(dptr_), shape, shape[dim - 1], stream);
  }
  template <typename Device, typename DType>
  Tensor<Device, 2, DType> FlatTo2D(Stream<Device>* stream = nullptr) const {
    CheckType<Device, DType>("FlatTo2D");
    return Tensor<Device, 2, DType>(static_cast<DType*>(dptr_), shape_.FlatTo2D(), stride_, stream);
  }
  template <typename Device, typename DType>
  Tensor<Device, 3, DType> FlatTo3D(int axis, Stream<Device>* stream = nullptr) const {
    return get_with_shape<Device, 3, DType>(shape_.FlatTo3D(axis), stream);
  }
  template <typename Device, typename DType>
  Tensor<Device, 3, DType> FlatTo3D(int axis_begin, int axis_end, Stream<Device>* stream = nullptr) const {
    return get_with_shape<Device, 3, DType>(shape_.FlatTo3D(axis_begin, axis_end), stream);
  }

 private:
  template <typename Device, typename DType>
  void CheckType(const char* what) const {
    TE_CHECK(dev_mask_ == Device::kDevMask, "TBlob::", what, ": the blob is on ",
             dev_mask_ == gpu::kDevMask ? "gpu" : (dev_mask_ == cpu::kDevMask ? "cpu" : "an unknown device"),
             ", not ", Device::name());
    TE_CHECK(type_flag_ == DataType<DType>::kFlag, "TBlob::", what, ": the blob holds ", TypeFlagName(type_flag_),
             ", not ", DataType<DType>::name());
  }
};

}  // namespace tensorexpr
