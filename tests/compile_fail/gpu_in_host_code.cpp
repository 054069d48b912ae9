// expect: GPU tensors are filled and evaluated by CUDA kernels: compile this file with nvcc
// A GPU tensor assigned in a file g++ compiles: one sentence, not pages of overload errors.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;

int main() {
  Tensor<gpu, 1, float> a(nullptr, Shape1(4));
  a = 1.0f;
  return 0;
}
