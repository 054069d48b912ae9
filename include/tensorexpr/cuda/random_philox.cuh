// cuda/random_philox.cuh — PhiloxRandom<gpu>'s loop: the counter-based generator of random_philox.h (see
// there for the numbers) as one kernel per call on the generator's stream (set_stream; null: the
// destination's).
//
//   PhiloxRandom<gpu> rnd(42, 0, stream);     // seed, sequence, stream
//   rnd.SampleUniform(t, 0.0f, 1.0f);         // the same numbers as PhiloxRandom<cpu>(42) gives
//
// Each thread computes whole Philox blocks and writes their values, so a block's four words are drawn once;
// uniforms equal the CPU's bit for bit, normals to a few ulps (CUDA's log / sin / cos are not the host's).
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/random_philox.cuh is CUDA code: compile it with nvcc (a .cu file); CPU-only code includes tensorexpr/random_philox.h."
#endif
#include <algorithm>
#include "../random_philox.h"
#include "check.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {

// Block k (offset + k of the counter) gives elements k * kPerBlock ... of the n elements of a (rows, cols)
// destination with rows `stride` apart, in row-major order.
template <typename OutT, typename Sampler>
__global__ void PhiloxFillKernel(OutT* out, index_t n, index_t cols, index_t stride, index_t blocks,
                                 uint64_t seed, uint64_t sequence, uint64_t offset, Sampler sampler) {
  constexpr int kPer = Sampler::kPerBlock;
  static_assert(kPer >= 1 && kPer <= 4, "a block has 4 words: at most 4 values per block");
  const bool contiguous = stride == cols;
  for (index_t k = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < blocks;
       k += static_cast<index_t>(gridDim.x) * blockDim.x) {
    OutT values[4];
    sampler(detail::PhiloxBlockAt(seed, sequence, offset, static_cast<uint64_t>(k)), values);
    TE_UNROLL
    for (int j = 0; j < kPer; ++j) {
      const index_t e = k * kPer + j;
      if (e < n) out[contiguous ? e : (e / cols) * stride + e % cols] = values[j];
    }
  }
}

}  // namespace cuda

namespace detail {
// One kernel on the stream: a thread per block of the call, grid-strided.
template <>
struct PhiloxFill<gpu> {
  template <typename OutT, typename Sampler>
  static void Run(const Tensor<gpu, 2, OutT>& d, index_t n, index_t blocks, const Sampler& sampler,
                  Stream<gpu>* stream, PhiloxCall call) {
    const int threads = 256;
    const index_t grid = std::min<index_t>((blocks + threads - 1) / threads, index_t(1) << 16);
    cuda::PhiloxFillKernel<<<static_cast<unsigned>(grid), threads, 0, Stream<gpu>::GetStream(stream)>>>(
        d.dptr_, n, d.shape_[1], d.stride_, blocks, call.seed, call.sequence, call.offset, sampler);
    TE_CUDA_CHECK_LAUNCH("PhiloxRandom<gpu> fill kernel");
  }
};
}  // namespace detail

}  // namespace tensorexpr
