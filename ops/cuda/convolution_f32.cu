// ops/cuda/convolution_f32.cu — ops/convolution.cc compiled by nvcc for float alone: the GPU instances of one
// dtype, for tensorexpr_ops_cuda (the four units compile side by side).
#define TE_OPS_DTYPE float
#include "../convolution.cc"
