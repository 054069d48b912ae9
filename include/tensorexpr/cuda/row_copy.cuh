// cuda/row_copy.cuh — RowCopies (expr/row_copy.h) on the GPU: one launch for all blocks, each thread
// moving units of the widest size (16 bytes down to 1) that every address, pitch and row length of the
// assignment is a multiple of. Thread i of the grid-stride loop takes unit i of the blocks laid end to
// end; the row is found with an IndexDiv (no hardware division per unit).
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/row_copy.cuh holds CUDA kernels: compile it with nvcc (a .cu file)."
#endif
#include <climits>
#include <cstdint>
#include <cuda_runtime.h>
#include "../expr/row_copy.h"
#include "../index_div.h"
#include "map.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {

// The blocks in units of U, and where each starts among all units.
struct UnitBlocks {
  RowBlock block[RowCopies::kMaxBlocks];
  IndexDiv units_per_row[RowCopies::kMaxBlocks];
  index_t first[RowCopies::kMaxBlocks + 1];
  int count;
};

// Where unit i of the blocks laid end to end is read and written. The block is chosen by comparisons,
// not by an index into the kernel's parameters (a computed index makes the compiler copy them to local
// memory in every thread).
struct UnitAt {
  const char* src;
  char* dst;
  __device__ __forceinline__ static UnitAt Of(const UnitBlocks& c, index_t i, index_t unit_bytes) {
    static_assert(RowCopies::kMaxBlocks == 2, "UnitAt::Of picks one of two blocks");
    const bool second = c.count > 1 && i >= c.first[1];
    const RowBlock& b = second ? c.block[1] : c.block[0];
    const IndexDiv& per_row = second ? c.units_per_row[1] : c.units_per_row[0];
    index_t col;
    const index_t row = per_row.DivMod(i - (second ? c.first[1] : 0), &col);
    return UnitAt{b.src + row * b.src_pitch + col * unit_bytes, b.dst + row * b.dst_pitch + col * unit_bytes};
  }
};

template <typename U>
__global__ void __launch_bounds__(kMapBlock) RowCopyKernel(UnitBlocks c) {
  const index_t total = c.first[c.count];
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const UnitAt at = UnitAt::Of(c, i, sizeof(U));
    *reinterpret_cast<U*>(at.dst) = *reinterpret_cast<const U*>(at.src);
  }
}

// One thread per unit, in as many blocks as that takes (up to the grid's limit): when only the blocks that
// fit at once looped over the units, a concat of 103 MB or 1 GB moved at 0.92-0.93 of a copy's bandwidth
// on an H200, and at 0.96 with one thread per unit.
constexpr index_t kRowCopyMaxBlocks = INT32_MAX;

template <typename U>
inline void LaunchRowCopies(const RowCopies& c, cudaStream_t stream) {
  UnitBlocks u;
  u.count = c.count;
  u.first[0] = 0;
  for (int k = 0; k < c.count; ++k) {
    u.block[k] = c.block[k];
    const index_t per_row = c.block[k].row_bytes / index_t(sizeof(U));
    u.units_per_row[k] = IndexDiv::Make(per_row);
    u.first[k + 1] = u.first[k] + c.block[k].rows * per_row;
  }
  if (u.first[c.count] == 0) return;
  LaunchMapBlocks<&RowCopyKernel<U>>(kRowCopyMaxBlocks, u.first[c.count], stream, "tensorexpr row copy kernel", u);
}

}  // namespace cuda

inline void RunRowCopies(Stream<gpu>* s, const RowCopies& c) {
  // The widest unit dividing every address, pitch and row length: the lowest set bit of their union.
  uintptr_t bits = 16;
  for (int k = 0; k < c.count; ++k) {
    const RowBlock& b = c.block[k];
    bits |= reinterpret_cast<uintptr_t>(b.src) | reinterpret_cast<uintptr_t>(b.dst) |
            static_cast<uintptr_t>(b.src_pitch) | static_cast<uintptr_t>(b.dst_pitch) |
            static_cast<uintptr_t>(b.row_bytes);
  }
  const cudaStream_t stream = Stream<gpu>::GetStream(s);
  switch (bits & (~bits + 1)) {
    case 16: cuda::LaunchRowCopies<uint4>(c, stream); break;
    case 8: cuda::LaunchRowCopies<uint2>(c, stream); break;
    case 4: cuda::LaunchRowCopies<uint32_t>(c, stream); break;
    case 2: cuda::LaunchRowCopies<uint16_t>(c, stream); break;
    default: cuda::LaunchRowCopies<uint8_t>(c, stream); break;
  }
}

}  // namespace tensorexpr
