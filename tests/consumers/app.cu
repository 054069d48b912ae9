// The nvcc consumer of tests/consumers/check.sh: compiled and linked with `pkg-config tensorexpr-cuda`;
// it runs only where a GPU is present.
#include <cstdio>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/activation.h>

int main() {
  using namespace tensorexpr;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: built and linked only\n");
    return 0;
  }
  TensorContainer<gpu, 1, float> x(Shape1(8), -1.0f), y(Shape1(8));
  ops::ActivationParam p;
  ops::ActivationForward(p, x.view(), kWriteTo, y.view());
  TensorContainer<cpu, 1, float> h(Shape1(8));
  Copy(h.view(), y.view());
  WaitStream(static_cast<Stream<gpu>*>(nullptr));  // the per-thread default stream the tensors use
  std::printf("relu(-1) on the GPU = %g\n", h[0]);
  return h[0] == 0.0f ? 0 : 1;
}
