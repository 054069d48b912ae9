// ops/cuda/lrn.cu — ops/lrn.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../lrn.cc"
