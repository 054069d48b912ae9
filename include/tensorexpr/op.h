// op.h — built-in elementwise functors for F<OP>(a) and F<OP>(a, b).
// A functor is a struct with `static DType Map(DType a)` or `Map(DType a, DType b)`, marked TE_XINLINE
// so that it runs on host and device. Math happens in compute_t<DType> (float for half/bf16); integers have
// rules of their own (below).
#pragma once
#include <math.h>
#include <cmath>
#include <type_traits>
#include "base.h"
#include "dtype.h"
#include "integer.h"

namespace tensorexpr {
// Float and double overloads of the math the functors need, callable on host and device.
namespace math {
#define TE_MATH1(NAME)                                          \
  TE_XINLINE float NAME(float x) { return ::NAME##f(x); }      \
  TE_XINLINE double NAME(double x) { return ::NAME(x); }
TE_MATH1(exp)
TE_MATH1(log)
TE_MATH1(log1p)
TE_MATH1(expm1)
TE_MATH1(sqrt)
TE_MATH1(tanh)
TE_MATH1(sin)
TE_MATH1(cos)
#undef TE_MATH1
TE_XINLINE float pow(float a, float b) { return ::powf(a, b); }
TE_XINLINE double pow(double a, double b) { return ::pow(a, b); }
}  // namespace math

namespace op {

// Integer elements: +, -, * and negation wrap around modulo 2^bits (integer.h); comparisons, abs, clip and
// the like run in the integer type itself, exact at 64 bits; the rest (exp, sigmoid, power, ...) runs in
// double and converts back saturating: NaN is 0, values beyond the type's range are its lowest / highest.
// Floating types compute in compute_t<DType> (float for half / bf16) and convert back as C++ does.
//
// NAME's Map for every element type: EXPR in compute_t<DType> for floating types. For integers, either
// INT_EXPR in the integer type itself (TE_*_OP_INT, C is DType there; TE_*_OP_EXACT when that is EXPR), or
// EXPR in double converted back by math::SaturatingCast (TE_*_OP).
#define TE_UNARY_OP_(NAME, EXPR, INT_C, INT_EXPR)               \
  struct NAME {                                                  \
    static const char* name() { return #NAME; }                  \
    template <typename DType>                                    \
    TE_XINLINE static DType Map(DType a_) {                      \
      if constexpr (std::is_integral<DType>::value) {            \
        using C = INT_C;                                         \
        const C a = static_cast<C>(a_);                          \
        return INT_EXPR;                                         \
      } else {                                                   \
        using C = compute_t<DType>;                              \
        const C a = static_cast<C>(a_);                          \
        return static_cast<DType>(EXPR);                         \
      }                                                          \
    }                                                            \
  };
#define TE_BINARY_OP_(NAME, EXPR, INT_C, INT_EXPR)               \
  struct NAME {                                                  \
    static const char* name() { return #NAME; }                  \
    template <typename DType>                                    \
    TE_XINLINE static DType Map(DType a_, DType b_) {            \
      if constexpr (std::is_integral<DType>::value) {            \
        using C = INT_C;                                         \
        const C a = static_cast<C>(a_), b = static_cast<C>(b_);  \
        (void)a;                                                 \
        (void)b;                                                 \
        return INT_EXPR;                                         \
      } else {                                                   \
        using C = compute_t<DType>;                              \
        const C a = static_cast<C>(a_), b = static_cast<C>(b_);  \
        (void)a;                                                 \
        (void)b;                                                 \
        return static_cast<DType>(EXPR);                         \
      }                                                          \
    }                                                            \
  };
#define TE_UNARY_OP(NAME, EXPR) TE_UNARY_OP_(NAME, EXPR, double, math::SaturatingCast<DType>(EXPR))
#define TE_BINARY_OP(NAME, EXPR) TE_BINARY_OP_(NAME, EXPR, double, math::SaturatingCast<DType>(EXPR))
#define TE_UNARY_OP_INT(NAME, EXPR, INT_EXPR) TE_UNARY_OP_(NAME, EXPR, DType, INT_EXPR)
#define TE_BINARY_OP_INT(NAME, EXPR, INT_EXPR) TE_BINARY_OP_(NAME, EXPR, DType, INT_EXPR)
// EXPR itself in the integer type: for expressions that cannot overflow (comparisons, selections).
#define TE_UNARY_OP_EXACT(NAME, EXPR) TE_UNARY_OP_INT(NAME, EXPR, static_cast<DType>(EXPR))
#define TE_BINARY_OP_EXACT(NAME, EXPR) TE_BINARY_OP_INT(NAME, EXPR, static_cast<DType>(EXPR))

TE_UNARY_OP_EXACT(identity, a)
TE_UNARY_OP_INT(negation, -a, math::WrapNeg(a))
TE_UNARY_OP_EXACT(relu, a > C(0) ? a : C(0))
TE_UNARY_OP_EXACT(relu_grad, a > C(0) ? C(1) : C(0))   // derivative, given the input (or output)
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
TE_UNARY_OP_INT(square, a * a, math::WrapMul(a, a))
TE_UNARY_OP_INT(abs, a < C(0) ? -a : a, a < C(0) ? math::WrapNeg(a) : a)
TE_UNARY_OP_EXACT(sign, a > C(0) ? C(1) : (a < C(0) ? static_cast<C>(-1) : C(0)))

TE_BINARY_OP_INT(plus, a + b, math::WrapAdd(a, b))
TE_BINARY_OP_INT(minus, a - b, math::WrapSub(a, b))
TE_BINARY_OP_INT(mul, a * b, math::WrapMul(a, b))
// Integers divide in their own type through math::IntDiv (a / 0 is 0, INT_MIN / -1 wraps); floating types
// as IEEE says.
TE_BINARY_OP_INT(div, a / b, math::IntDiv(a, b))
TE_BINARY_OP_EXACT(right, b)
// NaN propagates, as in red::maximum / red::minimum: a NaN operand is the result (a != a only for NaN).
TE_BINARY_OP_EXACT(maximum, (a > b || a != a) ? a : b)
TE_BINARY_OP_EXACT(minimum, (a < b || a != a) ? a : b)
TE_BINARY_OP(power, math::pow(a, b))
// The leaky rectifiers, b the slope (LeakyReLU's, PReLU's learned one) or ELU's alpha; derivatives given
// the input a.
TE_BINARY_OP(leaky_relu, a > C(0) ? a : b * a)
TE_BINARY_OP(leaky_relu_grad, a > C(0) ? C(1) : b)
TE_BINARY_OP(elu, a > C(0) ? a : b * math::expm1(a))
TE_BINARY_OP(elu_grad, a > C(0) ? C(1) : b * math::exp(a))
// clip a into [-b, b] (for integers, -b wraps: a bound of the lowest value clips to it)
TE_BINARY_OP_INT(clip, a > b ? b : (a < -b ? -b : a), a > b ? b : (a < math::WrapNeg(b) ? math::WrapNeg(b) : a))

#undef TE_UNARY_OP_
#undef TE_BINARY_OP_
#undef TE_UNARY_OP_INT
#undef TE_BINARY_OP_INT
#undef TE_UNARY_OP_EXACT
#undef TE_BINARY_OP_EXACT
#undef TE_UNARY_OP
#undef TE_BINARY_OP

}  // namespace op
}  // namespace tensorexpr
