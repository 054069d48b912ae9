// ops/cuda/conv_stem_mma_bf16.cu — gpu_stem_mma's kernel for bf16_t (ops/cuda/conv_stem_mma.h), in a unit of its own.
#include "conv_stem_mma_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace stem_mma {
TE_STEM_MMA_INSTANTIATE(bf16_t)
}  // namespace stem_mma
}  // namespace ops
}  // namespace tensorexpr
