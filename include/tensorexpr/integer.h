// integer.h — integer arithmetic defined for every value, on host and device. C++ leaves signed overflow,
// division by zero, INT_MIN / -1 and out-of-range float-to-integer conversion undefined; elementwise maps
// and reductions over integer tensors use these instead, so every input has a defined result.
#pragma once
#include <limits>
#include <type_traits>
#include "base.h"

namespace tensorexpr {
namespace math {

// Integer division defined for every pair of values, in the integer type itself: a / 0 is 0 and
// INT_MIN / -1 wraps to INT_MIN, where C++ leaves both undefined (SIGFPE on x86). A loop cannot throw on
// the GPU nor stop cheaply on the CPU, so a zero element of a divisor tensor gets this defined result; a
// zero scalar divisor is an Error before any loop runs (CheckIntegerDivisor in expr/map.h).
template <typename T>
TE_XINLINE T IntDiv(T a, T b) {
  static_assert(std::is_integral<T>::value, "IntDiv is for integer types");
  if (b == T(0)) return T(0);
  if constexpr (std::is_signed<T>::value) {
    using U = std::make_unsigned_t<T>;
    if (b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));  // -a, modulo 2^bits
  }
  return static_cast<T>(a / b);
}

// +, -, * and negation modulo 2^bits, as the hardware does. Types narrower than unsigned compute in
// unsigned: in their own unsigned type they would be promoted to int, where 65535 * 65535 overflows.
template <typename T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T>
TE_XINLINE T WrapAdd(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) + static_cast<wrap_t<T>>(b)); }
template <typename T>
TE_XINLINE T WrapSub(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) - static_cast<wrap_t<T>>(b)); }
template <typename T>
TE_XINLINE T WrapMul(T a, T b) { return static_cast<T>(static_cast<wrap_t<T>>(a) * static_cast<wrap_t<T>>(b)); }
template <typename T>
TE_XINLINE T WrapNeg(T a) { return WrapSub(T(0), a); }

// A double result as the integer type T: NaN is 0, out-of-range values saturate.
template <typename T>
TE_XINLINE T SaturatingCast(double v) {
  static_assert(std::is_integral<T>::value, "SaturatingCast is for integer types");
  if (v != v) return T(0);
  // The bounds as doubles: lowest is exact (-2^k or 0); highest + 1 is 2^k, exact too.
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi_excl = 2.0 * static_cast<double>(std::numeric_limits<T>::max() / 2 + 1);
  if (v <= lo) return std::numeric_limits<T>::lowest();
  if (v >= hi_excl) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}
}  // namespace math
}  // namespace tensorexpr
