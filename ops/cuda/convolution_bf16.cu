// ops/cuda/convolution_bf16.cu — ops/convolution.cc compiled by nvcc for bf16_t alone: the GPU instances of one
// dtype, for tensorexpr_ops_cuda (the four units compile side by side).
#define TE_OPS_DTYPE ::tensorexpr::bf16_t
#include "../convolution.cc"
