// ops/cuda/embedding.cu — ops/embedding.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../embedding.cc"
