// ops/cuda/convolution_f16.cu — ops/convolution.cc compiled by nvcc for half_t alone: the GPU instances of one
// dtype, for tensorexpr_ops_cuda (the four units compile side by side).
#define TE_OPS_DTYPE ::tensorexpr::half_t
#include "../convolution.cc"
