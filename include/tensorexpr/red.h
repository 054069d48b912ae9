// red.h — reducers for reductions and pooling: an identity value and a combining step.
// Reductions accumulate in accum_t<DType> (float for half/bf16, int64 for integers).
#pragma once
#include <cfloat>
#include <cstdint>
#include <limits>
#include "base.h"
#include "dtype.h"

namespace tensorexpr {
namespace red {

namespace detail {
// Largest / lowest finite value of an accumulation type, usable in device code.
template <typename T> TE_XINLINE T Lowest();
template <> TE_XINLINE float Lowest<float>() { return -FLT_MAX; }
template <> TE_XINLINE double Lowest<double>() { return -DBL_MAX; }
template <> TE_XINLINE int64_t Lowest<int64_t>() { return INT64_MIN; }
template <typename T> TE_XINLINE T Highest();
template <> TE_XINLINE float Highest<float>() { return FLT_MAX; }
template <> TE_XINLINE double Highest<double>() { return DBL_MAX; }
template <> TE_XINLINE int64_t Highest<int64_t>() { return INT64_MAX; }
}  // namespace detail

struct sum {
  static const char* name() { return "sum"; }
  template <typename A> TE_XINLINE static A Init() { return A(0); }
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) { acc += v; }
};
struct maximum {
  static const char* name() { return "maximum"; }
  template <typename A> TE_XINLINE static A Init() { return detail::Lowest<A>(); }
  // NaN propagates: a comparison with NaN is false, so NaN replaces the accumulator once seen.
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) { if (!(acc >= v)) acc = v; }
};
struct minimum {
  static const char* name() { return "minimum"; }
  template <typename A> TE_XINLINE static A Init() { return detail::Highest<A>(); }
  template <typename A> TE_XINLINE static void Reduce(A& acc, A v) { if (!(acc <= v)) acc = v; }
};

}  // namespace red
}  // namespace tensorexpr
