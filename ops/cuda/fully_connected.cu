// ops/cuda/fully_connected.cu — ops/fully_connected.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../fully_connected.cc"
