// ops/instantiate.h — what the operator libraries hold: each ops/<op>.cc expands its op's instance macro for
// the device it is compiled for (the CPU by g++ into tensorexpr_ops; the GPU by nvcc, through
// ops/cuda/<op>.cu, into tensorexpr_ops_cuda) and each standard dtype and rank.
#pragma once
#include <tensorexpr/tensorexpr.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#define TE_OPS_DEVICE ::tensorexpr::gpu
#else
#define TE_OPS_DEVICE ::tensorexpr::cpu
#endif

// INSTANCE(Device, DType) for float, double, half_t and bf16_t.
#define TE_OPS_FOR_EACH_DTYPE(INSTANCE, Device) \
  INSTANCE(Device, float) INSTANCE(Device, double) INSTANCE(Device, ::tensorexpr::half_t) INSTANCE(Device, ::tensorexpr::bf16_t)
// The instances of the dtypes this unit holds: ALL(INSTANCE, Device), every dtype the operator takes, unless
// the unit is one of those ops/meson.build splits the slowest operators' GPU instances into, so that nvcc
// compiles them side by side (ops/cuda/per_dtype.cu.in defines TE_OPS_UNIT_DTYPES).
#if defined(TE_OPS_UNIT_DTYPES)
#define TE_OPS_FOR_UNIT_DTYPES(INSTANCE, Device, ALL) TE_OPS_UNIT_DTYPES(INSTANCE, Device)
#else
#define TE_OPS_FOR_UNIT_DTYPES(INSTANCE, Device, ALL) ALL(INSTANCE, Device)
#endif
// INSTANCE(Device, dim, DType) for the ranks lo..5 an operator takes (lo = 1, 2 or 3).
#define TE_OPS_RANKS_FROM_3(INSTANCE, Device, DType) \
  INSTANCE(Device, 3, DType) INSTANCE(Device, 4, DType) INSTANCE(Device, 5, DType)
#define TE_OPS_RANKS_FROM_2(INSTANCE, Device, DType) \
  INSTANCE(Device, 2, DType) TE_OPS_RANKS_FROM_3(INSTANCE, Device, DType)
#define TE_OPS_RANKS_FROM_1(INSTANCE, Device, DType) \
  INSTANCE(Device, 1, DType) TE_OPS_RANKS_FROM_2(INSTANCE, Device, DType)
