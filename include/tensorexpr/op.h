// op.h — built-in elementwise functors for F<OP>(a) and F<OP>(a, b).
// A functor is a struct with `static DType Map(DType a)` or `Map(DType a, DType b)`, marked TE_XINLINE
// so that it runs on host and device. Math happens in compute_t<DType> (float for half/bf16).
#pragma once
#include <math.h>
#include <cmath>
#include <type_traits>
#include "base.h"
#include "dtype.h"

namespace tensorexpr {
// Float and double overloads of the math the functors need, callable on host and device.
namespace math {
#define TE_MATH1(NAME)                                          \
  TE_XINLINE float NAME(float x) { return ::NAME##f(x); }      \
  TE_XINLINE double NAME(double x) { return ::NAME(x); }
TE_MATH1(exp)
TE_MATH1(log)
TE_MATH1(log1p)
TE_MATH1(sqrt)
TE_MATH1(tanh)
#undef TE_MATH1
TE_XINLINE float pow(float a, float b) { return ::powf(a, b); }
TE_XINLINE double pow(double a, double b) { return ::pow(a, b); }

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
}  // namespace math

namespace op {

#define TE_UNARY_OP(NAME, EXPR)                                  \
  struct NAME {                                                  \
    static const char* name() { return #NAME; }                  \
    template <typename DType>                                    \
    TE_XINLINE static DType Map(DType a_) {                      \
      using C = compute_t<DType>;                                \
      const C a = static_cast<C>(a_);                            \
      return static_cast<DType>(EXPR);                           \
    }                                                            \
  };
#define TE_BINARY_OP(NAME, EXPR)                                 \
  struct NAME {                                                  \
    static const char* name() { return #NAME; }                  \
    template <typename DType>                                    \
    TE_XINLINE static DType Map(DType a_, DType b_) {            \
      using C = compute_t<DType>;                                \
      const C a = static_cast<C>(a_), b = static_cast<C>(b_);    \
      (void)a;                                                   \
      (void)b;                                                   \
      return static_cast<DType>(EXPR);                           \
    }                                                            \
  };

TE_UNARY_OP(identity, a)
TE_UNARY_OP(negation, -a)
TE_UNARY_OP(relu, a > C(0) ? a : C(0))
TE_UNARY_OP(relu_grad, a > C(0) ? C(1) : C(0))           // derivative, given the input (or output)
TE_UNARY_OP(sigmoid, C(1) / (C(1) + math::exp(-a)))
TE_UNARY_OP(sigmoid_grad, a * (C(1) - a))                // derivative, given the sigmoid output
TE_UNARY_OP(tanh, math::tanh(a))
TE_UNARY_OP(tanh_grad, C(1) - a * a)                     // derivative, given the tanh output
TE_UNARY_OP(softrelu, a > C(0) ? a + math::log1p(math::exp(-a)) : math::log1p(math::exp(a)))  // log(1 + e^a), no overflow, full precision in every type
TE_UNARY_OP(softrelu_grad, C(1) - math::exp(-a))               // derivative, given the softrelu output
TE_UNARY_OP(exp, math::exp(a))
TE_UNARY_OP(log, math::log(a))
TE_UNARY_OP(sqrt, math::sqrt(a))
TE_UNARY_OP(rsqrt, C(1) / math::sqrt(a))
TE_UNARY_OP(square, a * a)
TE_UNARY_OP(abs, a < C(0) ? -a : a)
TE_UNARY_OP(sign, a > C(0) ? C(1) : (a < C(0) ? C(-1) : C(0)))

TE_BINARY_OP(plus, a + b)
TE_BINARY_OP(minus, a - b)
TE_BINARY_OP(mul, a * b)
// Integers divide in their own type through math::IntDiv (compute_t is double for int32 / int64: the
// quotient of int64 values beyond 2^53 would round, and a / 0 would cast an infinity back to an integer);
// floating types as IEEE says.
struct div {
  static const char* name() { return "div"; }
  template <typename DType>
  TE_XINLINE static DType Map(DType a, DType b) {
    if constexpr (std::is_integral<DType>::value) {
      return math::IntDiv(a, b);
    } else {
      using C = compute_t<DType>;
      return static_cast<DType>(static_cast<C>(a) / static_cast<C>(b));
    }
  }
};
TE_BINARY_OP(right, b)
// NaN propagates, as in red::maximum / red::minimum: a NaN operand is the result (a != a only for NaN).
TE_BINARY_OP(maximum, (a > b || a != a) ? a : b)
TE_BINARY_OP(minimum, (a < b || a != a) ? a : b)
TE_BINARY_OP(power, math::pow(a, b))
TE_BINARY_OP(clip, a > b ? b : (a < -b ? -b : a))        // clip a into [-b, b]

#undef TE_UNARY_OP
#undef TE_BINARY_OP

}  // namespace op
}  // namespace tensorexpr
