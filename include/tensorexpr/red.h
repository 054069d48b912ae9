// red.h — reducers for reductions and pooling: an identity value and a combining step.
// Reductions accumulate in accum_t<DType> (float for half/bf16, int64 for integers).
#pragma once
#include <cstdint>
#include <limits>
#include <type_traits>
#include "base.h"
#include "dtype.h"
#include "integer.h"

// On compute capability 8.0 and newer a float maximum or minimum that propagates NaN is one instruction
// (PTX max.NaN / min.NaN) where red::maximum / red::minimum's rule takes a compare, a NaN test and a
// select. Its NaN is the canonical quiet NaN, as the CPU's vector loops give (cpu/simd_max_min.h); of -0
// and +0 either may be kept.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TE_FLOAT_MAX_NAN_INSTRUCTION 1
#endif

namespace tensorexpr {
namespace red {

// Semantics of maximum / minimum (CPU and GPU alike, in reductions and pooling): NaN propagates (a NaN
// anywhere makes the result NaN); -inf and +inf are ordinary values; an empty reduction gives the identity:
// -inf for maximum and +inf for minimum in floating types, the lowest / highest value of the element type
// for integers. Init<A, DType>() is the identity for elements of type DType accumulated in A (which for
// integers is wider: its own lowest value would wrap when stored back as DType).

namespace detail {
template <typename A, typename DType>
TE_XINLINE A MaxIdentity() {
  if constexpr (std::is_floating_point<A>::value) {
    return -std::numeric_limits<A>::infinity();
  } else {
    return static_cast<A>(std::numeric_limits<DType>::lowest());
  }
}
template <typename A, typename DType>
TE_XINLINE A MinIdentity() {
  if constexpr (std::is_floating_point<A>::value) {
    return std::numeric_limits<A>::infinity();
  } else {
    return static_cast<A>(std::numeric_limits<DType>::max());
  }
}
// NaN is the only value that differs from itself (always false for integers).
template <typename A>
TE_XINLINE bool IsNaN(A v) {
  return v != v;
}
}  // namespace detail

struct sum {
  static const char* name() { return "sum"; }
  template <typename A, typename DType = A> TE_XINLINE static A Init() { return A(0); }
  // Integer sums wrap modulo 2^64 (the int64 accumulator) rather than overflow.
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) {
    if constexpr (std::is_integral<A>::value) acc = math::WrapAdd(acc, v);
    else acc += v;
  }
};
struct maximum {
  static const char* name() { return "maximum"; }
  template <typename A, typename DType = A> TE_XINLINE static A Init() { return detail::MaxIdentity<A, DType>(); }
  // Once acc is NaN no comparison replaces it; a NaN v replaces anything.
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) {
#if defined(TE_FLOAT_MAX_NAN_INSTRUCTION)
    if constexpr (std::is_same<A, float>::value) {
      asm("max.NaN.f32 %0, %0, %1;" : "+f"(acc) : "f"(v));
      return;
    }
#endif
    if (v > acc || detail::IsNaN(v)) acc = v;
  }
};
struct minimum {
  static const char* name() { return "minimum"; }
  template <typename A, typename DType = A> TE_XINLINE static A Init() { return detail::MinIdentity<A, DType>(); }
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) {
#if defined(TE_FLOAT_MAX_NAN_INSTRUCTION)
    if constexpr (std::is_same<A, float>::value) {
      asm("min.NaN.f32 %0, %0, %1;" : "+f"(acc) : "f"(v));
      return;
    }
#endif
    if (v < acc || detail::IsNaN(v)) acc = v;
  }
};

// ---- reducers written to mshadow's interface --------------------------------------------------------
// mshadow's reducers have `SetInitValue(DType& v)` and `Reduce(volatile DType& dst, volatile DType src)`
// instead of Init / Reduce(A&, A). Every builder that takes a Reducer (reductions, pool, chpool) reads it
// through reducer_t<R>, which is R itself for a reducer of ours and FromMshadow<R> for one of mshadow's,
// so a user reducer from mshadow code works unchanged (host and device alike when its functions are
// MSHADOW_XINLINE). Its identity is what SetInitValue leaves in the accumulator type.
template <typename R>
struct FromMshadow {
  static const char* name() { return "user reducer"; }
  template <typename A, typename DType = A>
  TE_XINLINE static A Init() {
    A v = A(0);
    R::SetInitValue(v);
    return v;
  }
  template <typename A>
  TE_XINLINE static void Reduce(A& acc, A v) {
    R::Reduce(acc, v);
  }
};

namespace detail {
template <typename R, typename = void>
struct has_tensorexpr_reducer_interface : std::false_type {};
template <typename R>
struct has_tensorexpr_reducer_interface<R, decltype(void(R::template Init<float, float>()))> : std::true_type {};
}  // namespace detail

template <typename R>
using reducer_t = std::conditional_t<detail::has_tensorexpr_reducer_interface<R>::value, R, FromMshadow<R>>;

}  // namespace red
}  // namespace tensorexpr
