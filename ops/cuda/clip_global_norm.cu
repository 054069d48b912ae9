// ops/cuda/clip_global_norm.cu — ops/clip_global_norm.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../clip_global_norm.cc"
