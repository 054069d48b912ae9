// ops/cuda/activation.cu — ops/activation.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../activation.cc"
