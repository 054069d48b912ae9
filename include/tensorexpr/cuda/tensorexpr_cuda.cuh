// cuda/tensorexpr_cuda.cuh — the umbrella include for .cu files: the whole library plus the CUDA backend.
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/tensorexpr_cuda.cuh is the CUDA backend and must be compiled by nvcc (a .cu file); CPU-only code includes tensorexpr/tensorexpr.h instead."
#endif
#include "../tensorexpr.h"
#include "check.cuh"
#include "device.cuh"
#include "stream.cuh"
#include "memory.cuh"
#include "map.cuh"
#include "engine.cuh"
#include "reduce.cuh"
#include "sum_slices.cuh"
#include "blas.cuh"
#include "patch.cuh"
#include "transpose.cuh"
#include "row_copy.cuh"
#include "random.cuh"
#include "random_philox.cuh"
