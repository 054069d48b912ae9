// ops/cuda/conv_strided_dgrad_bf16.cu — gpu_strided_dgrad's kernels for bf16_t (ops/cuda/conv_strided_dgrad.h), in a unit of their own.
#include "conv_strided_dgrad_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace strided_dgrad {
TE_STRIDED_DGRAD_INSTANTIATE(bf16_t)
}  // namespace strided_dgrad
}  // namespace ops
}  // namespace tensorexpr
