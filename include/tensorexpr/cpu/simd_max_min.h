// cpu/simd_max_min.h — maximum and minimum of float and double runs on x86 with the vector instructions
// themselves, for the CPU reductions (cpu/reduce.h's keep-middle form). The ordered compares of the NaN
// rule (red.h) may trap, so under the default -ftrapping-math compilers keep the plain loop scalar (0.4 of
// memcpy); intrinsics are not held back. maxps / minps compare as the NaN rule does, one instruction per
// vector, but return their second operand when either is NaN, so a NaN would be dropped by the next value:
// an unordered test of each value keeps a NaN flag beside them. The result is the same value (a NaN
// becomes the canonical quiet NaN; of -0 and +0 either may be kept), in a fixed order for a given shape and
// instruction set.
// Four accumulator vectors: maxps has a latency of 4 cycles, so two (8 floats in SSE2) held a core to
// 8 bytes a cycle, below what 16 cores share of memory bandwidth. SSE2 everywhere; AVX2's 256-bit vectors
// (cpu/isa.h) for runs long enough to pay for the call into code compiled for it.
// Other targets keep the plain loop.
#pragma once
#include <cstddef>
#include <limits>
#include <type_traits>
#include "../base.h"
#include "../red.h"
#include "isa.h"
#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tensorexpr {
namespace reduce_cpu {

constexpr int kLanes = 8;  // independent accumulators of one run (keep-middle form)

using cpu_isa::Isa;

// The vector operations, in place and on references: the generic loops below are compiled for the
// baseline target before they are inlined into AVX2 code, and a 256-bit vector passed or returned by value
// there would change the ABI (an error in clang, a -Wpsabi warning in GCC).
template <typename A, Isa isa>
struct SimdMaxMin;
#if defined(__SSE2__)
template <>
struct SimdMaxMin<float, Isa::kBaseline> {
  using V = __m128;
  static void Zero(V& v) { v = _mm_setzero_ps(); }
  static void Load(V& v, const float* p) { v = _mm_loadu_ps(p); }
  static void Store(float* p, const V& v) { _mm_storeu_ps(p, v); }
  static void MaxInto(V& acc, const V& v) { acc = _mm_max_ps(acc, v); }
  static void MinInto(V& acc, const V& v) { acc = _mm_min_ps(acc, v); }
  static void OrUnordered(V& flag, const V& a, const V& b) { flag = _mm_or_ps(flag, _mm_cmpunord_ps(a, b)); }
  static int Mask(const V& v) { return _mm_movemask_ps(v); }
};
template <>
struct SimdMaxMin<double, Isa::kBaseline> {
  using V = __m128d;
  static void Zero(V& v) { v = _mm_setzero_pd(); }
  static void Load(V& v, const double* p) { v = _mm_loadu_pd(p); }
  static void Store(double* p, const V& v) { _mm_storeu_pd(p, v); }
  static void MaxInto(V& acc, const V& v) { acc = _mm_max_pd(acc, v); }
  static void MinInto(V& acc, const V& v) { acc = _mm_min_pd(acc, v); }
  static void OrUnordered(V& flag, const V& a, const V& b) { flag = _mm_or_pd(flag, _mm_cmpunord_pd(a, b)); }
  static int Mask(const V& v) { return _mm_movemask_pd(v); }
};
template <typename A>
constexpr bool kSimdMaxMin = std::is_same<A, float>::value || std::is_same<A, double>::value;
#else
template <typename A>
constexpr bool kSimdMaxMin = false;  // elsewhere the plain loop of cpu/reduce.h's LaneSteps
#endif

#if TE_HAVE_AVX2_DISPATCH
template <>
struct SimdMaxMin<float, Isa::kAvx2> {
  using V = __m256;
  TE_TARGET_AVX2 static void Zero(V& v) { v = _mm256_setzero_ps(); }
  TE_TARGET_AVX2 static void Load(V& v, const float* p) { v = _mm256_loadu_ps(p); }
  TE_TARGET_AVX2 static void Store(float* p, const V& v) { _mm256_storeu_ps(p, v); }
  TE_TARGET_AVX2 static void MaxInto(V& acc, const V& v) { acc = _mm256_max_ps(acc, v); }
  TE_TARGET_AVX2 static void MinInto(V& acc, const V& v) { acc = _mm256_min_ps(acc, v); }
  TE_TARGET_AVX2 static void OrUnordered(V& flag, const V& a, const V& b) {
    flag = _mm256_or_ps(flag, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
  }
  TE_TARGET_AVX2 static int Mask(const V& v) { return _mm256_movemask_ps(v); }
};
template <>
struct SimdMaxMin<double, Isa::kAvx2> {
  using V = __m256d;
  TE_TARGET_AVX2 static void Zero(V& v) { v = _mm256_setzero_pd(); }
  TE_TARGET_AVX2 static void Load(V& v, const double* p) { v = _mm256_loadu_pd(p); }
  TE_TARGET_AVX2 static void Store(double* p, const V& v) { _mm256_storeu_pd(p, v); }
  TE_TARGET_AVX2 static void MaxInto(V& acc, const V& v) { acc = _mm256_max_pd(acc, v); }
  TE_TARGET_AVX2 static void MinInto(V& acc, const V& v) { acc = _mm256_min_pd(acc, v); }
  TE_TARGET_AVX2 static void OrUnordered(V& flag, const V& a, const V& b) {
    flag = _mm256_or_pd(flag, _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
  }
  TE_TARGET_AVX2 static int Mask(const V& v) { return _mm256_movemask_pd(v); }
};
#endif

// Runs at least this long take AVX2's loop: it is a call (code for another target does not inline into
// the caller), which a short run would not repay.
constexpr index_t kWideMinRun = 64;

#if defined(__GNUC__)
#define TE_SIMD_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define TE_SIMD_ALWAYS_INLINE inline
#endif

// Values that lie in memory one after another: value(t) is p[t]. The vector loops load them directly.
template <typename A>
struct ContiguousValues {
  const A* p;
  A operator()(index_t t) const { return p[t]; }
};

// v = value(t + i) for i below the vector width.
template <typename S, typename A, typename Value>
TE_SIMD_ALWAYS_INLINE void LoadValues(typename S::V& v, const Value& value, index_t t) {
  if constexpr (std::is_same<Value, ContiguousValues<A>>::value) {
    S::Load(v, value.p + t);
  } else {
    // The compiler turns this round trip into a vector load when value() reads memory (not always when it
    // spans several vectors: then it copies in pieces and the loads wait for the stores).
    constexpr int kWidth = static_cast<int>(sizeof(typename S::V) / sizeof(A));
    A at[static_cast<size_t>(kWidth)];
    for (int i = 0; i < kWidth; ++i) at[i] = value(t + i);
    S::Load(v, at);
  }
}

// acc[j] combined with the values value(t + j * width + i), i below the vector width, for j below `vecs`;
// the NaN flag takes their unordered test, one test for two vectors.
template <typename S, bool kMax, int vecs, typename A, typename Value>
TE_SIMD_ALWAYS_INLINE void MaxMinVectors(typename S::V* acc, typename S::V& nan, const Value& value, index_t t) {
  constexpr int kWidth = static_cast<int>(sizeof(typename S::V) / sizeof(A));
  typename S::V v[static_cast<size_t>(vecs)];
  for (int j = 0; j < vecs; ++j) LoadValues<S, A>(v[j], value, t + j * kWidth);
  for (int j = 0; j < vecs; ++j) {
    if constexpr (kMax) S::MaxInto(acc[j], v[j]);
    else S::MinInto(acc[j], v[j]);
  }
  for (int j = 0; j < vecs; j += 2) S::OrUnordered(nan, v[j], v[j + 1 < vecs ? j + 1 : j]);
}

// lanes[i] combined (Reducer: maximum or minimum) with value(t + i) for t = 0, kLanes, ... below n (a
// multiple of kLanes), through the vector operations S. Every lane reduces the same output
// (cpu/reduce.h's AccumulateRuns), so values may enter any lane and a NaN in any lane is the NaN of all.
// Always inlined, and no lambdas inside: in the AVX2 entry below, S's functions (compiled for AVX2) then
// inline into one AVX2 loop.
template <typename S, typename Reducer, typename A, typename Value>
TE_SIMD_ALWAYS_INLINE void SimdLaneSteps(A (&lanes)[kLanes], index_t n, const Value& value) {
  using V = typename S::V;
  constexpr int kWidth = static_cast<int>(sizeof(V) / sizeof(A)), kVecs = kLanes / kWidth;
  constexpr int kAcc = 4, kStep = kAcc * kWidth;  // independent accumulators; elements per unrolled step
  static_assert(kStep % kLanes == 0 && kVecs <= kAcc, "an unrolled step is whole lane steps");
  constexpr bool kMax = std::is_same<Reducer, red::maximum>::value;
  V acc[static_cast<size_t>(kAcc)];
  for (int j = 0; j < kAcc; ++j) S::Load(acc[j], lanes + (j % kVecs) * kWidth);
  V nan;  // a lane may come in as NaN (from a short run's scalar steps)
  S::Zero(nan);
  for (int j = 0; j < kVecs; ++j) S::OrUnordered(nan, acc[j], acc[j]);
  index_t t = 0;
  for (; t + kStep <= n; t += kStep) MaxMinVectors<S, kMax, kAcc, A>(acc, nan, value, t);
  for (; t < n; t += kLanes) MaxMinVectors<S, kMax, kVecs, A>(acc, nan, value, t);
  for (int j = kVecs; j < kAcc; ++j) {
    if constexpr (kMax) S::MaxInto(acc[j % kVecs], acc[j]);
    else S::MinInto(acc[j % kVecs], acc[j]);
  }
  for (int j = 0; j < kVecs; ++j) S::Store(lanes + j * kWidth, acc[j]);
  if (S::Mask(nan) != 0)
    for (int i = 0; i < kLanes; ++i) lanes[i] = std::numeric_limits<A>::quiet_NaN();
}

#if TE_HAVE_AVX2_DISPATCH
template <typename Reducer, typename A, typename Value>
TE_TARGET_AVX2 void SimdLaneStepsAvx2(A (&lanes)[kLanes], index_t n, const Value& value) {
  SimdLaneSteps<SimdMaxMin<A, Isa::kAvx2>, Reducer>(lanes, n, value);
}
#endif

// SimdLaneSteps with the widest vectors allowed (`wide`: cpu_isa::ActiveIsa() has AVX2) that pay for n.
template <typename Reducer, typename A, typename Value>
inline void VectorMaxMinSteps(A (&lanes)[kLanes], index_t n, const Value& value, bool wide) {
#if TE_HAVE_AVX2_DISPATCH
  if (wide && n >= kWideMinRun) {
    SimdLaneStepsAvx2<Reducer>(lanes, n, value);
    return;
  }
#else
  (void)wide;
#endif
  if (n > 0) SimdLaneSteps<SimdMaxMin<A, Isa::kBaseline>, Reducer>(lanes, n, value);  // short runs skip the round trip
}

}  // namespace reduce_cpu
}  // namespace tensorexpr
