// ops/cuda/conv_direct_f16.cu — gpu_direct's kernels for half_t (ops/cuda/conv_direct.h), in a unit of their own.
#include "conv_direct_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace gpu_direct {
TE_GPU_DIRECT_INSTANTIATE(half_t)
}  // namespace gpu_direct
}  // namespace ops
}  // namespace tensorexpr
