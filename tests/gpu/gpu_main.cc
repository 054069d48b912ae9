// Catch2 main of the GPU test binary. With no CUDA device it runs nothing and exits 77, which meson
// reports as "skipped" (a machine without a GPU is not a failure of the GPU suite).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>

namespace {

int CountTaggedCases(const char* tag) {
  int n = 0;
  for (const Catch::TestCase& tc : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
    if (std::find(tc.lcaseTags.begin(), tc.lcaseTags.end(), tag) != tc.lcaseTags.end()) ++n;
  }
  return n;
}

}  // namespace

int main(int argc, char* argv[]) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("skipped: no CUDA GPU present; %d [gpu] test cases not run\n", CountTaggedCases("gpu"));
    std::printf("(cudaGetDeviceCount: %s)\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
