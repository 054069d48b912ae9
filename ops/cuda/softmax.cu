// ops/cuda/softmax.cu — ops/softmax.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../softmax.cc"
