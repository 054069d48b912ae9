// base.h — the vocabulary every other header uses: index_t, device tags, the error type, checks.
#pragma once
// The library needs C++17 (if constexpr, inline variables, fold expressions): say so in one line rather
// than in pages of errors.
#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "tensorexpr needs C++17 or later: compile with -std=c++17 (or newer)"
#endif
#include "version.h"
#include <cstdint>
#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(__CUDACC__)
#define TE_XINLINE __host__ __device__ __forceinline__
#define TE_DEVICE_CODE 1
#else
#define TE_XINLINE inline
#endif
#define TE_CINLINE inline
// Unrolls a short fixed-count loop in device code.
#if defined(__CUDA_ARCH__)
#define TE_UNROLL _Pragma("unroll")
#else
#define TE_UNROLL
#endif

namespace tensorexpr {

// 64-bit everywhere in the API (mshadow's 32-bit index_t overflowed on large tensors).
// CUDA kernels pick a 32-bit loop index at launch when the sizes fit.
using index_t = int64_t;

// Device tags.
struct cpu {
  static constexpr bool kDevCPU = true;
  static constexpr int kDevMask = 1 << 0;
  static const char* name() { return "cpu"; }
};
struct gpu {
  static constexpr bool kDevCPU = false;
  static constexpr int kDevMask = 1 << 1;
  static const char* name() { return "gpu"; }
};

// Whether this translation unit is compiled by nvcc, where GPU tensors can be filled and evaluated
// (namespace-scope const: each translation unit has its own).
#if defined(__CUDACC__)
constexpr bool kCompiledForCuda = true;
#else
constexpr bool kCompiledForCuda = false;
#endif
#define TE_GPU_NEEDS_NVCC_MESSAGE                                                                         \
  "GPU tensors are filled and evaluated by CUDA kernels: compile this file with nvcc (a .cu file that " \
  "includes <tensorexpr/cuda/tensorexpr_cuda.cuh>)"

// The only exception type the library throws for user-facing errors.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
inline void AppendAll(std::ostringstream&) {}
template <typename T, typename... Rest>
inline void AppendAll(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  AppendAll(os, rest...);
}
}  // namespace detail

// Builds a message from any streamable pieces: throw Error(Message("bad ", x)).
template <typename... Args>
inline std::string Message(const Args&... args) {
  std::ostringstream os;
  detail::AppendAll(os, args...);
  return os.str();
}

template <typename... Args>
[[noreturn]] inline void Fail(const Args&... args) {
  throw Error(Message(args...));
}

// Calls fn(std::integral_constant<int, v>{}) for the v among kValues that equals `value`: a run-time value
// dispatched to code compiled for each (a kernel's unrolled loops); false when it is none of them.
template <int... kValues, typename Fn>
bool WithCompileTimeInt(int value, Fn&& fn) {
  return ((value == kValues ? (fn(std::integral_constant<int, kValues>{}), true) : false) || ...);
}

}  // namespace tensorexpr

// TE_CHECK(cond, pieces...): throws tensorexpr::Error with the pieces when cond is false.
#define TE_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) ::tensorexpr::Fail(__VA_ARGS__);            \
  } while (0)
