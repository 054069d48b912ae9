// The main of the GPU test binary. With no CUDA device it runs nothing and exits 77, which meson reports
// as "skipped" (a machine without a GPU is not a failure of the GPU suite).
#include <cuda_runtime.h>
#include <cstdio>
#include "../catch_runner.h"

int main(int argc, char* argv[]) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA GPU present; %d [gpu] test cases not run\n", te_test::CountTaggedCases("gpu"));
    std::printf("(cudaGetDeviceCount: %s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  return te_test::RunCatch(argc, argv);
}
