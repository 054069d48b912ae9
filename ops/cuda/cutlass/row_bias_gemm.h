// ops/cuda/cutlass/row_bias_gemm.h — CUTLASS gemms whose bias runs along the result's rows, behind a plain
// interface like conv_kernels.h's. They fuse a channels-first 1x1 convolution's epilogue, image by image:
//   y_n (K, P) = act(W (K, C) . x_n (C, P) + bias[k] + beta * source_n),   n < N,
// every matrix row-major, the filters shared by all images. cuBLASLt's bias runs along the columns of a
// column-major result only, i.e. along the pixels of such an output, so it cannot.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include <cuda_runtime_api.h>
#include "conv_kernels.h"

namespace tensorexpr {
namespace ops {
namespace cutlass_gemm {

using cutlass_conv::Element;
using cutlass_conv::Epilogue;

// D_l = A . B_l for l < L: A (M, K), B_l (K, N), D_l (M, N), all row-major and dense; B_l at l * K * N
// elements from B, D_l (and the source's l-th matrix) at l * M * N.
struct RowBiasShape {
  int M = 0, N = 0, K = 0, L = 0;
};

// D_l = act(A . B_l + bias[m] + beta * source_l) in float, rounded to the element type once; act is relu
// for kBiasRelu. source null: D itself. bias null: zeros. Every pointer 16-byte aligned.
struct RowBiasOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const void* source = nullptr;
  float beta = 0.0f;
  const void* bias = nullptr;  // M elements
};

struct RowBiasKernel {
  const char* name;
  Element element;
  Epilogue epilogue;  // kBias or kBiasRelu
  int alignment;      // elements per vector: N and K must be multiples of it
  int tile_m;         // rows of the result (filters) per tile
  // Why the kernel cannot run `shape` ("" when it can: CUTLASS's own can_implement agrees).
  std::string (*why_not)(const RowBiasShape& shape);
  size_t (*workspace_bytes)(const RowBiasShape& shape);
  // Queues the kernel on `stream`; workspace holds workspace_bytes(shape). Throws Error on failure.
  void (*run)(const RowBiasShape& shape, const RowBiasOperands& operands, void* workspace, cudaStream_t stream);
  int sm;  // the compute capability it runs on (90: Hopper alone)
};

// Every such kernel compiled into this build (none without Hopper's all-kernel units). The float ones
// multiply in TF32.
const std::vector<RowBiasKernel>& CompiledRowBiasKernels();

}  // namespace cutlass_gemm
}  // namespace ops
}  // namespace tensorexpr
