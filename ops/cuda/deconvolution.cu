// ops/cuda/deconvolution.cu — ops/deconvolution.cc compiled by nvcc: the GPU instances, for tensorexpr_ops_cuda.
#include "../deconvolution.cc"
