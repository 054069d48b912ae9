// shape.h — Shape<N>: the extent of each dimension, row-major (last dimension fastest).
#pragma once
#include <ostream>
#include "base.h"

namespace tensorexpr {

template <int ndim>
struct Shape {
  static_assert(ndim >= 0, "a Shape needs a non-negative number of dimensions");
  static constexpr int kDimension = ndim;
  static constexpr int kSubdim = ndim > 0 ? ndim - 1 : 0;
  // ndim == 0 still gets one slot so the type stays an aggregate usable in kernels.
  index_t shape_[static_cast<size_t>(ndim > 0 ? ndim : 1)] = {};

  TE_XINLINE index_t& operator[](int i) { return shape_[i]; }
  TE_XINLINE const index_t& operator[](int i) const { return shape_[i]; }

  TE_XINLINE bool operator==(const Shape& s) const {
    for (int i = 0; i < ndim; ++i)
      if (shape_[i] != s.shape_[i]) return false;
    return true;
  }
  TE_XINLINE bool operator!=(const Shape& s) const { return !(*this == s); }

  // Number of elements.
  TE_XINLINE index_t Size() const {
    index_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape_[i];
    return n;
  }
  // Product of dimensions [begin, end).
  TE_XINLINE index_t ProdShape(int begin, int end) const {
    index_t n = 1;
    for (int i = begin; i < end; ++i) n *= shape_[i];
    return n;
  }
  // (all leading dimensions, last dimension): the 2-D view every evaluation loop runs over.
  TE_XINLINE Shape<2> FlatTo2D() const;
  // Shape of the trailing dimensions [begin, end) as a new shape.
  template <int begin, int end>
  TE_XINLINE Shape<end - begin> Slice() const {
    static_assert(0 <= begin && begin <= end && end <= ndim, "Shape::Slice<begin, end> is out of range");
    Shape<end - begin> s;
    for (int i = begin; i < end; ++i) s[i - begin] = shape_[i];
    return s;
  }
  // Shape without its first dimension.
  TE_XINLINE Shape<kSubdim> SubShape() const {
    Shape<kSubdim> s;
    for (int i = 1; i < ndim; ++i) s[i - 1] = shape_[i];
    return s;
  }
};

template <int ndim>
TE_XINLINE Shape<2> Shape<ndim>::FlatTo2D() const {
  Shape<2> s;
  if (ndim == 0) {
    s.shape_[0] = 1;
    s.shape_[1] = 1;
  } else {
    s.shape_[1] = shape_[ndim - 1];
    index_t ymax = 1;
    for (int i = 0; i + 1 < ndim; ++i) ymax *= shape_[i];
    s.shape_[0] = ymax;
  }
  return s;
}

TE_XINLINE Shape<1> Shape1(index_t s0) { Shape<1> s; s[0] = s0; return s; }
TE_XINLINE Shape<2> Shape2(index_t s0, index_t s1) { Shape<2> s; s[0] = s0; s[1] = s1; return s; }
TE_XINLINE Shape<3> Shape3(index_t s0, index_t s1, index_t s2) {
  Shape<3> s; s[0] = s0; s[1] = s1; s[2] = s2; return s;
}
TE_XINLINE Shape<4> Shape4(index_t s0, index_t s1, index_t s2, index_t s3) {
  Shape<4> s; s[0] = s0; s[1] = s1; s[2] = s2; s[3] = s3; return s;
}
TE_XINLINE Shape<5> Shape5(index_t s0, index_t s1, index_t s2, index_t s3, index_t s4) {
  Shape<5> s; s[0] = s0; s[1] = s1; s[2] = s2; s[3] = s3; s[4] = s4; return s;
}

template <int ndim>
std::ostream& operator<<(std::ostream& os, const Shape<ndim>& s) {
  os << '(';
  for (int i = 0; i < ndim; ++i) os << (i ? "," : "") << s[i];
  if (ndim == 1) os << ',';
  return os << ')';
}

}  // namespace tensorexpr
