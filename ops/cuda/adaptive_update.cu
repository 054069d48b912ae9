// ops/cuda/adaptive_update.cu — ops/adaptive_update.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../adaptive_update.cc"
