// ops/cuda/cutlass/operator_calls.cuh — the calls every CUTLASS device operator here takes the same way:
// can_implement as a reason ("" when it can), and initialize + run as one launch that throws on failure.
// The kernel adapters build the operators' arguments and call these: conv_kernel.cuh only Refusal (its
// launch skips initialize's clearing of split slices), sm90_conv_kernel.cuh and sm90_row_bias_gemm.cuh
// both. Included only by the kernel units.
#pragma once
#include <string>
#include <cuda_runtime.h>
#include <cutlass/cutlass.h>
#include <tensorexpr/base.h>

namespace tensorexpr {
namespace ops {
namespace cutlass_calls {

// Why Operator cannot run these arguments, in CUTLASS's words; "" when it can.
template <typename Operator>
std::string Refusal(const typename Operator::Arguments& args) {
  const cutlass::Status st = Operator::can_implement(args);
  if (st == cutlass::Status::kSuccess) return std::string();
  return std::string("CUTLASS cannot implement it: ") + cutlassGetStatusString(st);
}

// Operator's initialize and run on `stream`; an Error naming `what`, CUTLASS's status and CUDA's last error
// when either fails.
template <typename Operator>
void InitializeAndRun(const typename Operator::Arguments& args, void* workspace, cudaStream_t stream, const char* what) {
  Operator op;
  cutlass::Status st = op.initialize(args, workspace, stream);
  if (st == cutlass::Status::kSuccess) st = op.run(stream);
  TE_CHECK(st == cutlass::Status::kSuccess, what, " failed: ", cutlassGetStatusString(st), " (",
           cudaGetErrorString(cudaGetLastError()), ")");
}

}  // namespace cutlass_calls
}  // namespace ops
}  // namespace tensorexpr
