// ops/cuda/pooling.cu — ops/pooling.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../pooling.cc"
