// The nvcc consumer of tests/consumers/check.sh: compiled and linked with `pkg-config tensorexpr-cuda`;
// it runs only where a GPU is present. The convolution of app.cpp, on the GPU.
#include <cstdio>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/convolution.h>

int main() {
  using namespace tensorexpr;
  using namespace tensorexpr::ops;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: built and linked only\n");
    return 0;
  }
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 8;
  TensorContainer<gpu, 4, float> x(Shape4(2, 4, 9, 9), 1.0f), y(Shape4(2, 8, 9, 9));
  TensorContainer<gpu, 4, float> w(Shape4(8, 4, 3, 3), 0.5f);
  TensorContainer<gpu, 1, float> b(Shape1(8), 1.0f);
  ConvolutionForward(p, x, w, b, kWriteTo, y);
  TensorContainer<cpu, 4, float> h(y.shape_);
  Copy(h.view(), y.view());
  WaitStream(static_cast<Stream<gpu>*>(nullptr));  // the per-thread default stream the tensors use
  std::printf("convolution on the GPU: inner pixel %g, corner %g\n", h[1][7][4][4], h[0][0][0][0]);
  return h[1][7][4][4] == 4 * 9 * 0.5f + 1 && h[0][0][0][0] == 4 * 4 * 0.5f + 1 ? 0 : 1;
}
