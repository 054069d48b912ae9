// examples/fashion_mnist/fashion_mnist_gpu.cu — the CUDA build of the trainer: the same sources as the CPU
// program, compiled by nvcc, which defines __CUDACC__ and so turns on the GPU path (--device gpu, and
// auto picking the GPU when one is present). The CPU path stays available (--device cpu).
#include "main.cpp"
