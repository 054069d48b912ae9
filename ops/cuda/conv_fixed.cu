// ops/cuda/conv_fixed.cu — ops/conv_fixed.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../conv_fixed.cc"
