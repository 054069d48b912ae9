// ops/cuda/init.cu — ops/init.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../init.cc"
