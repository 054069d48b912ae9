// checked.h — extent arithmetic that cannot wrap. Products and sums of extents, strides and byte counts are
// computed with these wherever a shape is built, allocated or validated on the host; an overflow or a
// negative extent is an Error that names the operation and the values. Shape::Size() and the kernels stay
// unchecked: they only ever see shapes that passed through here.
#pragma once
#include <cstddef>
#include <limits>
#include "base.h"
#include "shape.h"

namespace tensorexpr {

// `what` names the operation in messages: a string literal or a std::string (nothing is built unless a
// check fails, so the checks cost no allocation on the paths that run once per assignment).

// a * b, or an Error naming `what` and both values when the product does not fit in index_t.
template <typename What>
inline index_t CheckedMul(index_t a, index_t b, const What& what) {
  index_t r = 0;
  TE_CHECK(!__builtin_mul_overflow(a, b, &r), what, ": ", a, " * ", b, " overflows a 64-bit index");
  return r;
}
// a + b, or an Error naming `what` and both values when the sum does not fit in index_t.
template <typename What>
inline index_t CheckedAdd(index_t a, index_t b, const What& what) {
  index_t r = 0;
  TE_CHECK(!__builtin_add_overflow(a, b, &r), what, ": ", a, " + ", b, " overflows a 64-bit index");
  return r;
}

// For plans that size a buffer and then compare it with a limit: a * b or a + b of non-negative counts, or
// the largest index_t when the result does not fit (more than any limit allows, so the plan is refused).
inline index_t SaturatingMul(index_t a, index_t b) {
  index_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<index_t>::max() : r;
}
inline index_t SaturatingAdd(index_t a, index_t b) {
  index_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<index_t>::max() : r;
}

// Checks that every extent of s is non-negative and that their product fits; returns the product.
template <int ndim, typename What>
inline index_t CheckedSize(const Shape<ndim>& s, const What& what) {
  for (int i = 0; i < ndim; ++i) {
    TE_CHECK(s[i] >= 0, what, ": negative extent ", s[i], " in dimension ", i, " of shape ", s);
  }
  index_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    TE_CHECK(!__builtin_mul_overflow(n, s[i], &n), what, ": the number of elements of shape ", s,
             " overflows a 64-bit index");
  }
  return n;
}

// Bytes spanned by a tensor of `shape` whose rows are `stride` elements of `elem` bytes apart (the
// allocation size); an Error when an extent is negative or the count does not fit in size_t.
template <int ndim, typename What>
inline size_t CheckedSpanBytes(const Shape<ndim>& shape, index_t stride, size_t elem, const What& what) {
  CheckedSize(shape, what);
  TE_CHECK(stride >= shape[ndim - 1], what, ": row stride ", stride, " is shorter than the last extent of shape ",
           shape);
  index_t elems = stride;
  size_t bytes = 0;
  bool overflow = false;
  for (int i = 0; i + 1 < ndim; ++i) overflow = overflow || __builtin_mul_overflow(elems, shape[i], &elems);
  overflow = overflow || __builtin_mul_overflow(static_cast<size_t>(elems), elem, &bytes);
  TE_CHECK(!overflow, what, ": shape ", shape, " with row stride ", stride, " of ", elem,
           "-byte elements spans more bytes than memory can address");
  return bytes;
}

}  // namespace tensorexpr
