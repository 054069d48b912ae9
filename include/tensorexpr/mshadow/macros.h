// mshadow/macros.h — the macros mshadow user code touches, mapped onto tensorexpr's: MSHADOW_XINLINE,
// MSHADOW_CINLINE, MSHADOW_FORCE_INLINE, MSHADOW_USE_CUDA, MSHADOW_DEFAULT_DTYPE and the run-time dtype
// switches. Each is defined only where it is not already (a project that still has mshadow's base.h
// somewhere keeps its own).
#pragma once
#include "../base.h"
#include "../dtype.h"

// Host and device (__host__ __device__ under nvcc), inline.
#ifndef MSHADOW_XINLINE
#define MSHADOW_XINLINE TE_XINLINE
#endif
#ifndef MSHADOW_CINLINE
#define MSHADOW_CINLINE TE_CINLINE
#endif
#ifndef MSHADOW_FORCE_INLINE
#define MSHADOW_FORCE_INLINE TE_CINLINE
#endif
// Whether the GPU backend is there: nvcc compiles it in (tensorexpr.h), g++ never does. Client code guards
// its GPU-only parts with `#if MSHADOW_USE_CUDA`, which then holds exactly where Tensor<gpu> code compiles.
#ifndef MSHADOW_USE_CUDA
#if defined(__CUDACC__)
#define MSHADOW_USE_CUDA 1
#else
#define MSHADOW_USE_CUDA 0
#endif
#endif
// The default template argument mshadow writes as `typename DType MSHADOW_DEFAULT_DTYPE`; qualified, so it
// also works outside `using namespace mshadow`.
#ifndef MSHADOW_DEFAULT_DTYPE
#define MSHADOW_DEFAULT_DTYPE = ::mshadow::default_real_t
#endif

// MSHADOW_TYPE_SWITCH(flag, DType, { body }): tensorexpr's switch, so it also knows bf16 and int64, and
// an unknown flag throws tensorexpr::Error. The flags are tensorexpr's (kFloat32 = 0, ... kInt64 = 6,
// kBfloat16 = 12): those of current mshadow, not of its oldest versions (kInt8 = 4, kInt32 = 6).
#ifndef MSHADOW_TYPE_SWITCH
#define MSHADOW_TYPE_SWITCH(type, DType, ...) TE_TYPE_SWITCH(type, DType, __VA_ARGS__)
#endif
// The floating-point dtypes only (float, double, half and bf16); an integer flag throws Error.
#ifndef MSHADOW_REAL_TYPE_SWITCH
#define MSHADOW_REAL_TYPE_SWITCH(type, DType, ...) TE_REAL_TYPE_SWITCH(type, DType, __VA_ARGS__)
#endif
// As above, with DLargeType the type to accumulate in: float for half and bf16, else DType itself.
#ifndef MSHADOW_REAL_TYPE_SWITCH_EX
#define MSHADOW_REAL_TYPE_SWITCH_EX(type, DType, DLargeType, ...)                       \
  TE_REAL_TYPE_SWITCH(type, DType, {                                                   \
    using DLargeType = ::tensorexpr::compute_t<DType>;                                 \
    { __VA_ARGS__ }                                                                    \
  })
#endif
