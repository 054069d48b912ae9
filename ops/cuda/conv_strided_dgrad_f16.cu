// ops/cuda/conv_strided_dgrad_f16.cu — gpu_strided_dgrad's kernels for half_t (ops/cuda/conv_strided_dgrad.h), in a unit of their own.
#include "conv_strided_dgrad_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace strided_dgrad {
TE_STRIDED_DGRAD_INSTANTIATE(half_t)
}  // namespace strided_dgrad
}  // namespace ops
}  // namespace tensorexpr
