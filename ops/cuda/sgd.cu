// ops/cuda/sgd.cu — ops/sgd.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../sgd.cc"
