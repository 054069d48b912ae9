// ops/cuda/leaky_relu.cu — ops/leaky_relu.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../leaky_relu.cc"
