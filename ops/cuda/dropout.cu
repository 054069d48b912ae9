// ops/cuda/dropout.cu — ops/dropout.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../dropout.cc"
