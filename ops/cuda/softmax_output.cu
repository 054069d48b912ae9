// ops/cuda/softmax_output.cu — ops/softmax_output.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../softmax_output.cc"
