// expect: GPU tensors are filled and evaluated by CUDA kernels: compile this file with nvcc
// A GPU TensorContainer (it allocates with CUDA) in a file g++ compiles.
#include <tensorexpr/tensorexpr.h>
using namespace tensorexpr;

int main() {
  TensorContainer<gpu, 1, float> c(Shape1(3));
  return 0;
}
