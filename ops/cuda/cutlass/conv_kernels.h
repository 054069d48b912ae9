// ops/cuda/cutlass/conv_kernels.h — the CUTLASS implicit-GEMM convolution kernels this build holds, behind
// a plain interface: the kernel units (ops/cuda/cutlass/*.cu) each instantiate a few CUTLASS device
// operators, which is slow to compile, and nothing else in the library includes CUTLASS. The algorithm
// that chooses among them is ops/conv_cutlass.h.
#pragma once
#include <cstddef>
#include <string>
#include <vector>
#include <cuda_runtime_api.h>

namespace tensorexpr {
namespace ops {
namespace cutlass_conv {

// The element type of the activations, filters and output (accumulation is always in float).
enum class Element { kF16, kBF16, kF32 };
// How the products are formed: tensor cores in the element type (f16, bf16, or TF32 for float inputs),
// or strict fp32 FMAs on the CUDA cores (SIMT).
// kTensorOp: the element type's tensor-core products (TF32 for float); kTensorOpTF32x3: float as three
// TF32 products (big and small halves of each operand: CUTLASS's OpMultiplyAddFastF32), about fp32's
// accuracy at a third of TF32's speed; kSimt: strict fp32 FMAs on the CUDA cores.
enum class Math { kTensorOp, kTensorOpTF32x3, kSimt };
enum class Pass { kFprop, kDgrad, kWgrad };
// What the epilogue computes from the accumulators before the store, per output element (n, p, q, k):
//   kLinear    D = acc + beta * C
//   kBias      D = acc + bias[k] + beta * C
//   kBiasRelu  D = max(acc + bias[k] + beta * C, 0)
// in float, rounded to the element type once. With C another tensor (ConvOperands::source) the last two
// are a convolution's bias, residual add and activation in its one store.
enum class Epilogue { kLinear, kBias, kBiasRelu };

// A 2-D convolution, channels last: activations (N, H, W, C), filters (K, R, S, C), output (N, P, Q, K).
// pad_h / pad_w are the padding before; the padding after is whatever P and Q leave. split_k > 1 cuts
// the implicit GEMM's reduction into that many slices (kernels whose output is a float workspace).
struct Conv2dShape {
  int N = 0, H = 0, W = 0, C = 0, K = 0, R = 0, S = 0, P = 0, Q = 0;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int split_k = 1;
};

// The implicit GEMM's operands, C (=) A * B, beta 0 writing C and 1 adding what `source` holds (C itself
// when source is null):
//   fprop  A = activations, B = filters,     C = output
//   dgrad  A = output grad, B = filters,     C = activations grad
//   wgrad  A = output grad, B = activations, C = filter grad partials: split_k float slices, one after
//          the other, each the size of the filters (beta is 0: the caller sums the slices into the result)
struct ConvOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  float beta = 0.0f;
  const void* source = nullptr;  // read where beta != 0, laid out like C; null: C
  bool source_is_row = false;    // source is one row of K values read for every output row (a bias through C)
  const void* bias = nullptr;    // K elements for the kBias* epilogues, 16-byte aligned; null: zeros
                                 // (bias_in_source kernels ignore it: their bias is the source)
};

struct ConvKernel {
  const char* name;  // e.g. "f16_tensorop_fprop_128x128x64_3"
  Pass pass;
  Element element;
  Math math;
  Epilogue epilogue;
  bool fixed_channels;  // its K steps pack several filter taps: inputs of exactly `alignment` channels
  bool bias_in_source;  // a kBias / kBiasRelu kernel without a bias vector: the bias is its source C, a row
                        // read for every output row (ConvOperands::source_is_row), so it takes no residual
  int alignment;      // elements per vector access: C and K must be multiples of it
  bool float_output;  // C is float slices of a split reduction (the wgrad kernels)
  int tile_m, tile_n, tile_k;  // the thread block's tile of the implicit GEMM
  // Why the kernel cannot run `shape` ("" when it can: CUTLASS's own can_implement agrees).
  std::string (*why_not)(const Conv2dShape& shape);
  size_t (*workspace_bytes)(const Conv2dShape& shape);
  // The implicit GEMM's (M, N, K) for `shape`: M x N is the output, K the length of its reductions.
  void (*gemm_size)(const Conv2dShape& shape, long long mnk[3]);
  // The thread-block tiles (tile_m x tile_n) that cover the output: M and N each rounded up to the tile,
  // except where a kernel tiles N by parts (Hopper's weight gradient: each tap's channels on their own).
  long long (*output_tiles)(const Conv2dShape& shape);
  // Queues the kernel on `stream`; workspace holds workspace_bytes(shape). Throws Error on failure.
  void (*run)(const Conv2dShape& shape, const ConvOperands& operands, void* workspace, cudaStream_t stream);
  // 0: runs on compute capability 8.0 and newer (Ampere's instructions); 90: only on 9.0 (Hopper's TMA and
  // wgmma, compiled for sm_90a alone).
  int sm = 0;
};

// Every kernel compiled into this build (the Meson option cutlass_kernels may leave some out).
const std::vector<ConvKernel>& CompiledConvKernels();

}  // namespace cutlass_conv
}  // namespace ops
}  // namespace tensorexpr
