// cuda/device.cuh — what the backend needs to know about a GPU (multiprocessor count, copy pitch limit),
// read once per device and cached: cudaGetDeviceProperties costs far more than a kernel launch, and the
// map loop asks on every assignment.
#pragma once
#include <cuda_runtime.h>
#include <mutex>
#include <string>
#include "../base.h"
#include "check.cuh"

namespace tensorexpr {
namespace cuda {

// Devices beyond this index are rejected with an Error (no host has this many GPUs).
constexpr int kMaxDevices = 64;
// The most blocks a grid holds along y and along z (along x: 2^31 - 1).
constexpr int kMaxGridYZ = 65535;

struct DeviceInfo {
  int sm_count = 0;             // streaming multiprocessors
  int max_threads_per_sm = 0;   // resident threads per multiprocessor
  size_t mem_pitch = 0;         // largest row pitch cudaMemcpy2D accepts, in bytes
  size_t shared_per_block = 0;  // shared memory a block may opt in to, in bytes
  int major = 0, minor = 0;     // compute capability
  std::string name;             // "NVIDIA H100 80GB HBM3", say
};

inline int CurrentDevice() {
  int dev = 0;
  TE_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

// The cached properties of device `dev` (read on first use; thread-safe).
inline const DeviceInfo& GetDeviceInfo(int dev) {
  static DeviceInfo infos[kMaxDevices];
  static std::once_flag read[kMaxDevices];
  TE_CHECK(0 <= dev && dev < kMaxDevices, "GetDeviceInfo: device id ", dev, " is outside [0, ", kMaxDevices, ")");
  // A throw inside call_once leaves the flag unset, so a later call tries again.
  std::call_once(read[dev], [dev] {
    cudaDeviceProp p;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    DeviceInfo& info = infos[dev];
    info.sm_count = p.multiProcessorCount;
    info.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    info.mem_pitch = p.memPitch;
    info.shared_per_block = p.sharedMemPerBlockOptin;
    info.major = p.major;
    info.minor = p.minor;
    info.name = p.name;
  });
  return infos[dev];
}

inline const DeviceInfo& CurrentDeviceInfo() { return GetDeviceInfo(CurrentDevice()); }

}  // namespace cuda
}  // namespace tensorexpr
