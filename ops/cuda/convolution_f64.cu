// ops/cuda/convolution_f64.cu — ops/convolution.cc compiled by nvcc for double alone: the GPU instances of one
// dtype, for tensorexpr_ops_cuda (the four units compile side by side).
#define TE_OPS_DTYPE double
#include "../convolution.cc"
