// expect: is evaluated only as the epilogue of ops::ConvolutionForward
// The convolution's placeholder assigned as if it were a tensor.
#include <tensorexpr/ops/conv_epilogue.h>
using namespace tensorexpr;

void Misuse(Tensor<cpu, 4, float> out) { out = ops::conv_output(out) + 1.0f; }
