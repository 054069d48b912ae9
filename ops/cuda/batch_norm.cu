// ops/cuda/batch_norm.cu — ops/batch_norm.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../batch_norm.cc"
