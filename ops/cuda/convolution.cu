// ops/cuda/convolution.cu — ops/convolution.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../convolution.cc"
