// dtype.h — the element types: half_t (IEEE fp16), bf16_t, run-time type flags and the type switch.
// half_t and bf16_t store 16 bits and compute in float, on the host and on the device.
#pragma once
#include <cstring>
#include <ostream>
#include <type_traits>
#include "base.h"
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace tensorexpr {
namespace detail {
TE_XINLINE uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
TE_XINLINE float BitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
}  // namespace detail

// IEEE 754 binary16.
struct half_t {
  // The 16 bits; half_ is mshadow's name for them (a union: g++, clang and nvcc define reading either).
  union {
    uint16_t bits_;
    uint16_t half_;
  };

  half_t() = default;
  TE_XINLINE half_t(float f) : bits_(FromFloat(f)) {}  // NOLINT: implicit, like mshadow's half_t
  TE_XINLINE half_t(double d) : bits_(FromFloat(static_cast<float>(d))) {}
  TE_XINLINE half_t(int i) : bits_(FromFloat(static_cast<float>(i))) {}
  TE_XINLINE half_t(int64_t i) : bits_(FromFloat(static_cast<float>(i))) {}
  TE_XINLINE operator float() const { return ToFloat(bits_); }
  static TE_XINLINE half_t FromBits(uint16_t b) { half_t h; h.bits_ = b; return h; }
  static TE_XINLINE half_t Binary(uint16_t b) { return FromBits(b); }  // mshadow's name for FromBits

  static TE_XINLINE uint16_t FromFloat(float f) {
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(f));
#else
    // Round to nearest even, with overflow to inf, subnormals and NaN kept.
    uint32_t x = detail::FloatBits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
    if (ax < 0x38800000u) {                                                // subnormal half or zero
      // Adding 0.5 (in float) shifts the mantissa so hardware rounding does the work.
      float r = detail::BitsFloat(ax) + 0.5f;
      return static_cast<uint16_t>(sign | (detail::FloatBits(r) - 0x3f000000u));
    }
    uint32_t mant_odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + mant_odd;  // re-bias exponent (-112 << 23) and round
    return static_cast<uint16_t>(sign | (ax >> 13));
#endif
  }
  static TE_XINLINE float ToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::BitsFloat(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
      float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return sign ? -v : v;
    }
    return detail::BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
#endif
  }
};

// bfloat16: the top half of an IEEE float.
struct bf16_t {
  uint16_t bits_;

  bf16_t() = default;
  TE_XINLINE bf16_t(float f) : bits_(FromFloat(f)) {}  // NOLINT
  TE_XINLINE bf16_t(double d) : bits_(FromFloat(static_cast<float>(d))) {}
  TE_XINLINE bf16_t(int i) : bits_(FromFloat(static_cast<float>(i))) {}
  TE_XINLINE bf16_t(int64_t i) : bits_(FromFloat(static_cast<float>(i))) {}
  TE_XINLINE operator float() const { return ToFloat(bits_); }
  static TE_XINLINE bf16_t FromBits(uint16_t b) { bf16_t h; h.bits_ = b; return h; }

  static TE_XINLINE uint16_t FromFloat(float f) {
    uint32_t x = detail::FloatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
  static TE_XINLINE float ToFloat(uint16_t b) { return detail::BitsFloat(static_cast<uint32_t>(b) << 16); }
};

template <typename T>
struct is_low_precision : std::integral_constant<bool, std::is_same<T, half_t>::value || std::is_same<T, bf16_t>::value> {};

// Arithmetic on half_t / bf16_t computes in float and rounds back. Mixed with a built-in number,
// the result is that number's promotion with float (so `h * 2.0f` is a float).
#define TE_LOWP_OPS(T)                                                                          \
  TE_XINLINE T operator+(T a, T b) { return T(float(a) + float(b)); }                          \
  TE_XINLINE T operator-(T a, T b) { return T(float(a) - float(b)); }                          \
  TE_XINLINE T operator*(T a, T b) { return T(float(a) * float(b)); }                          \
  TE_XINLINE T operator/(T a, T b) { return T(float(a) / float(b)); }                          \
  TE_XINLINE T operator-(T a) { return T::FromBits(static_cast<uint16_t>(a.bits_ ^ 0x8000u)); } \
  TE_XINLINE T& operator+=(T& a, T b) { return a = a + b; }                                    \
  TE_XINLINE T& operator-=(T& a, T b) { return a = a - b; }                                    \
  TE_XINLINE T& operator*=(T& a, T b) { return a = a * b; }                                    \
  TE_XINLINE T& operator/=(T& a, T b) { return a = a / b; }                                    \
  TE_XINLINE bool operator<(T a, T b) { return float(a) < float(b); }                          \
  TE_XINLINE bool operator>(T a, T b) { return float(a) > float(b); }                          \
  TE_XINLINE bool operator<=(T a, T b) { return float(a) <= float(b); }                        \
  TE_XINLINE bool operator>=(T a, T b) { return float(a) >= float(b); }                        \
  TE_XINLINE bool operator==(T a, T b) { return float(a) == float(b); }                        \
  TE_XINLINE bool operator!=(T a, T b) { return float(a) != float(b); }                        \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator+(T a, S b) { return float(a) + b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator+(S a, T b) { return a + float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator-(T a, S b) { return float(a) - b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator-(S a, T b) { return a - float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator*(T a, S b) { return float(a) * b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator*(S a, T b) { return a * float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator/(T a, S b) { return float(a) / b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE auto operator/(S a, T b) { return a / float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator<(T a, S b) { return float(a) < b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator>(T a, S b) { return float(a) > b; }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator<(S a, T b) { return a < float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator>(S a, T b) { return a > float(b); }                                 \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator<=(T a, S b) { return float(a) <= b; }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator<=(S a, T b) { return a <= float(b); }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator>=(T a, S b) { return float(a) >= b; }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator>=(S a, T b) { return a >= float(b); }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator==(T a, S b) { return float(a) == b; }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator==(S a, T b) { return a == float(b); }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator!=(T a, S b) { return float(a) != b; }                                \
  template <typename S, typename = typename std::enable_if<std::is_arithmetic<S>::value>::type> \
  TE_XINLINE bool operator!=(S a, T b) { return a != float(b); }                                \
  inline std::ostream& operator<<(std::ostream& os, T v) { return os << float(v); }

TE_LOWP_OPS(half_t)
TE_LOWP_OPS(bf16_t)
#undef TE_LOWP_OPS

// The type arithmetic runs in: double for double, float for float / half / bf16 / small ints,
// and the integer itself for 32/64-bit ints where float would lose digits.
template <typename DType> struct compute_type { using type = float; };
template <> struct compute_type<double> { using type = double; };
template <> struct compute_type<int32_t> { using type = double; };
template <> struct compute_type<int64_t> { using type = double; };
template <typename DType> using compute_t = typename compute_type<DType>::type;

// The type a reduction accumulates in.
template <typename DType> struct accum_type { using type = float; };
template <> struct accum_type<double> { using type = double; };
template <> struct accum_type<int8_t> { using type = int64_t; };
template <> struct accum_type<uint8_t> { using type = int64_t; };
template <> struct accum_type<int32_t> { using type = int64_t; };
template <> struct accum_type<int64_t> { using type = int64_t; };
template <typename DType> using accum_t = typename accum_type<DType>::type;

// Run-time type flags (values kept from mshadow where mshadow had them).
enum TypeFlag : int {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kUint8 = 3,
  kInt32 = 4,
  kInt8 = 5,
  kInt64 = 6,
  kBfloat16 = 12,
};

template <typename DType> struct DataType;
template <> struct DataType<float> { static constexpr int kFlag = kFloat32; static const char* name() { return "float32"; } };
template <> struct DataType<double> { static constexpr int kFlag = kFloat64; static const char* name() { return "float64"; } };
template <> struct DataType<half_t> { static constexpr int kFlag = kFloat16; static const char* name() { return "float16"; } };
template <> struct DataType<bf16_t> { static constexpr int kFlag = kBfloat16; static const char* name() { return "bfloat16"; } };
template <> struct DataType<uint8_t> { static constexpr int kFlag = kUint8; static const char* name() { return "uint8"; } };
template <> struct DataType<int8_t> { static constexpr int kFlag = kInt8; static const char* name() { return "int8"; } };
template <> struct DataType<int32_t> { static constexpr int kFlag = kInt32; static const char* name() { return "int32"; } };
template <> struct DataType<int64_t> { static constexpr int kFlag = kInt64; static const char* name() { return "int64"; } };

inline const char* TypeFlagName(int flag) {
  switch (flag) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kFloat16: return "float16";
    case kBfloat16: return "bfloat16";
    case kUint8: return "uint8";
    case kInt8: return "int8";
    case kInt32: return "int32";
    case kInt64: return "int64";
    default: return "unknown";
  }
}

}  // namespace tensorexpr

// TE_TYPE_SWITCH(flag, DType, { body using DType; }): run-time dtype dispatch over every dtype.
// An unknown flag throws tensorexpr::Error.
#define TE_TYPE_CASE_(flag_value, T, DType, ...) \
  case flag_value: {                             \
    using DType = T;                             \
    { __VA_ARGS__ }                              \
  } break;
#define TE_TYPE_SWITCH(type_flag, DType, ...)                                                    \
  switch (type_flag) {                                                                           \
    TE_TYPE_CASE_(::tensorexpr::kFloat32, float, DType, __VA_ARGS__)                             \
    TE_TYPE_CASE_(::tensorexpr::kFloat64, double, DType, __VA_ARGS__)                            \
    TE_TYPE_CASE_(::tensorexpr::kFloat16, ::tensorexpr::half_t, DType, __VA_ARGS__)              \
    TE_TYPE_CASE_(::tensorexpr::kBfloat16, ::tensorexpr::bf16_t, DType, __VA_ARGS__)             \
    TE_TYPE_CASE_(::tensorexpr::kUint8, uint8_t, DType, __VA_ARGS__)                             \
    TE_TYPE_CASE_(::tensorexpr::kInt8, int8_t, DType, __VA_ARGS__)                               \
    TE_TYPE_CASE_(::tensorexpr::kInt32, int32_t, DType, __VA_ARGS__)                             \
    TE_TYPE_CASE_(::tensorexpr::kInt64, int64_t, DType, __VA_ARGS__)                             \
    default:                                                                                     \
      ::tensorexpr::Fail("TE_TYPE_SWITCH: unknown type flag ", static_cast<int>(type_flag));    \
  }
// Only the floating-point dtypes (float, double, half, bf16).
#define TE_REAL_TYPE_SWITCH(type_flag, DType, ...)                                               \
  switch (type_flag) {                                                                           \
    TE_TYPE_CASE_(::tensorexpr::kFloat32, float, DType, __VA_ARGS__)                             \
    TE_TYPE_CASE_(::tensorexpr::kFloat64, double, DType, __VA_ARGS__)                            \
    TE_TYPE_CASE_(::tensorexpr::kFloat16, ::tensorexpr::half_t, DType, __VA_ARGS__)              \
    TE_TYPE_CASE_(::tensorexpr::kBfloat16, ::tensorexpr::bf16_t, DType, __VA_ARGS__)             \
    default:                                                                                     \
      ::tensorexpr::Fail("TE_REAL_TYPE_SWITCH: type flag ", static_cast<int>(type_flag), " (",  \
                         ::tensorexpr::TypeFlagName(type_flag), ") is not a floating-point type"); \
  }
