// ops/cuda/conv_stem_mma_f16.cu — gpu_stem_mma's kernel for half_t (ops/cuda/conv_stem_mma.h), in a unit of its own.
#include "conv_stem_mma_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace stem_mma {
TE_STEM_MMA_INSTANTIATE(half_t)
}  // namespace stem_mma
}  // namespace ops
}  // namespace tensorexpr
