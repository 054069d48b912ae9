// cuda/map.cuh — the GPU loop for one assignment: ONE kernel launch per `dst = e` (or +=, ...), the plan
// passed by value as a kernel parameter, a grid-stride loop over the elements.
//
// The route is chosen at launch from what the operands allow, best first:
//   kVector  elementwise (E::kFlat), everything contiguous, dst and every operand aligned to 16 bytes:
//            16-byte loads and stores through Plan::EvalVec<N>, N = 16 / sizeof(DType), and a scalar tail;
//   kFlat    elementwise and contiguous but not aligned: one flat index per element (Plan::EvalFlat);
//   kRowsVector  anything else (padded rows, non-elementwise nodes) when every row of dst is 16-byte aligned
//            and a whole number of vectors long: N consecutive Plan::Eval(y, x + k) of one row per thread,
//            stored as one 16-byte vector (the row mapping of y is computed once for the N, and each thread
//            has N loads in flight, which scalar code lacks to reach bandwidth);
//   kRows2D  the rest: Plan::Eval(y, x) over the (rows, last-dim) view of dst.
// Rows split y = i / cols by IndexDiv (a multiply; a 32-bit hardware division is a software routine).
// The routes an expression allows live in one kernel (the route is a launch argument), instanced with
// 32-bit indices, used when every index it computes fits in int32 (integer division and address
// arithmetic are much cheaper), and with 64-bit ones otherwise: the choice is made per launch, never by a
// build flag. The grid is sized from the device's multiprocessors and the kernel's occupancy,
// so there is no 65535-block limit and no grid larger than the GPU can hold at once.
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/map.cuh holds CUDA kernels: compile it with nvcc (a .cu file), or include tensorexpr/tensorexpr.h for the CPU only."
#endif
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>
#include "../index_div.h"
#include "../tensor.h"
#include "check.cuh"
#include "device.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {

// Threads per block of the map kernels.
constexpr int kMapBlock = 256;

enum class MapPath { kVector, kFlat, kRowsVector, kRows2D };

inline const char* MapPathName(MapPath p) {
  switch (p) {
    case MapPath::kVector: return "vector";
    case MapPath::kFlat: return "flat";
    case MapPath::kRowsVector: return "rows vector";
    case MapPath::kRows2D: return "rows2d";
  }
  return "unknown";
}

// How one assignment is run: which kernel, with which index width, with how many lanes per vector.
struct MapRoute {
  MapPath path;
  bool index32;
  int lanes;
};

// Testing aid: forces the 64-bit-index kernels for every size, so that they can be checked without a
// tensor of 2^31 elements. Process-wide; off by default.
inline std::atomic<bool>& Force64BitIndexFlag() {
  static std::atomic<bool> on{false};
  return on;
}
inline void SetForce64BitIndex(bool on) { Force64BitIndexFlag().store(on); }

// Elements per 16-byte vector, or 1 for types that do not divide 16 bytes.
template <typename DType>
constexpr int VectorLanes() {
  return (sizeof(DType) <= 16 && 16 % sizeof(DType) == 0) ? static_cast<int>(16 / sizeof(DType)) : 1;
}

// The route MapPlan takes for `dst <saver> e` (exposed so that tests can check which kernel ran).
template <int dim, typename DType, typename E>
inline MapRoute ChooseMapRoute(const Tensor<gpu, dim, DType>& dst, const E& e) {
  const Shape<2> s = dst.shape_.FlatTo2D();
  const index_t n = s.Size();
  MapRoute route{MapPath::kRows2D, true, 1};
  constexpr int lanes = VectorLanes<DType>();
  if constexpr (E::kFlat) {
    if (dst.CheckContiguous() && e.contiguous()) {
      if (lanes > 1 && dst.aligned_for(lanes) && e.aligned_for(lanes)) {
        route.path = MapPath::kVector;
        route.lanes = lanes;
      } else {
        route.path = MapPath::kFlat;
      }
    }
  }
  if (route.path == MapPath::kRows2D && lanes > 1 && s[1] % lanes == 0 && dst.stride_ % lanes == 0 &&
      dst.aligned_for(lanes)) {
    route.path = MapPath::kRowsVector;
    route.lanes = lanes;
  }
  // The largest index the kernel forms: the element count, and for the 2-D route also y * stride + x.
  const bool rows = route.path == MapPath::kRows2D || route.path == MapPath::kRowsVector;
  const index_t largest = rows ? std::max(n, s[0] * dst.stride_) : n;
  route.index32 = largest <= INT32_MAX && !Force64BitIndexFlag().load();
  return route;
}

// ---- the kernel -------------------------------------------------------------------------------------
// One kernel per expression, saver and index width holds every route the expression allows, chosen by a
// launch argument (a branch every thread takes the same way): a third of the kernels that one kernel per
// route would make, which is a third of the code to compile in every program that assigns expressions.
// IndexT is uint32_t (when every index fits in int32: i + grid stride then stays below 2^32) or int64_t.
// kFlat: the expression is elementwise (E::kFlat), so the flat and vector routes exist; N: the lanes of
// the vector routes (1: none for this dtype). `row_len` divides an index into (row, position): by the row
// length in elements, or in vectors for kRowsVector.
template <typename Saver, bool kFlat, int N, typename DType, typename Plan, typename IndexT>
__global__ void __launch_bounds__(kMapBlock) MapKernel(MapPath path, DType* out, IndexT stride, IndexDiv row_len,
                                                       IndexT n, Plan plan) {
  const IndexT first = static_cast<IndexT>(blockIdx.x) * blockDim.x + threadIdx.x;
  const IndexT step = static_cast<IndexT>(gridDim.x) * blockDim.x;
  if constexpr (kFlat && N > 1) {
    // Vector i covers elements [i * N, i * N + N); the n % N elements past the last whole vector are done
    // one each by the first threads of the grid.
    if (path == MapPath::kVector) {
      using V = expr::VecN<DType, N>;
      V* vout = reinterpret_cast<V*>(out);
      const IndexT nvec = n / N;
      for (IndexT i = first; i < nvec; i += step) {
        const V r = plan.template EvalVec<N>(static_cast<index_t>(i) * N);
        if constexpr (std::is_same<Saver, sv::saveto>::value) {
          vout[i] = r;  // a plain store: the old value is not read
        } else {
          V cur = vout[i];
TE_UNROLL
          for (int k = 0; k < N; ++k) Saver::template Save<DType>(cur.v[k], r.v[k]);
          vout[i] = cur;
        }
      }
      const IndexT t = nvec * N + first;
      if (t < n) Saver::template Save<DType>(out[t], plan.EvalFlat(static_cast<index_t>(t)));
      return;
    }
  }
  if constexpr (kFlat) {
    if (path == MapPath::kFlat) {
      for (IndexT i = first; i < n; i += step) Saver::template Save<DType>(out[i], plan.EvalFlat(static_cast<index_t>(i)));
      return;
    }
  }
  if constexpr (N > 1) {
    if (path == MapPath::kRowsVector) {
      using V = expr::VecN<DType, N>;
      const IndexT nvec = n / N;
      for (IndexT i = first; i < nvec; i += step) {
        const IndexT y = static_cast<IndexT>(row_len.Div(static_cast<index_t>(i)));
        const IndexT x = (i - y * static_cast<IndexT>(row_len.divisor_)) * N;
        V r;
TE_UNROLL
        for (int k = 0; k < N; ++k) r.v[k] = plan.Eval(static_cast<index_t>(y), static_cast<index_t>(x + k));
        V* dst = reinterpret_cast<V*>(out + y * stride + x);
        if constexpr (std::is_same<Saver, sv::saveto>::value) {
          *dst = r;
        } else {
          V cur = *dst;
TE_UNROLL
          for (int k = 0; k < N; ++k) Saver::template Save<DType>(cur.v[k], r.v[k]);
          *dst = cur;
        }
      }
      return;
    }
  }
  for (IndexT i = first; i < n; i += step) {
    const IndexT y = static_cast<IndexT>(row_len.Div(static_cast<index_t>(i))), x = i - y * static_cast<IndexT>(row_len.divisor_);
    Saver::template Save<DType>(out[y * stride + x], plan.Eval(static_cast<index_t>(y), static_cast<index_t>(x)));
  }
}

// Blocks of kMapBlock threads of `Kernel` resident per multiprocessor, asked once per device.
template <auto Kernel>
inline int MapBlocksPerSM(int dev) {
  static std::atomic<int> cached[kMaxDevices];  // zero (= not asked yet): static storage starts zeroed
  int blocks = cached[dev].load(std::memory_order_relaxed);
  if (blocks == 0) {
    TE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, kMapBlock, 0));
    blocks = std::max(blocks, 1);
    cached[dev].store(blocks, std::memory_order_relaxed);
  }
  return blocks;
}

// Launches `Kernel` in blocks of kMapBlock threads, one thread per item of `work` but no more than
// `max_blocks` blocks (the kernel's grid-stride loop covers the rest).
template <auto Kernel, typename... Args>
inline void LaunchMapBlocks(index_t max_blocks, index_t work, cudaStream_t stream, const char* name, Args... args) {
  const index_t wanted = (work + kMapBlock - 1) / kMapBlock;
  const unsigned grid = static_cast<unsigned>(std::max<index_t>(1, std::min(wanted, max_blocks)));
  Kernel<<<grid, kMapBlock, 0, stream>>>(args...);
  TE_CUDA_CHECK_LAUNCH(name);
}

// The same with no more blocks than fit on the GPU at once.
template <auto Kernel, typename... Args>
inline void LaunchMap(index_t work, cudaStream_t stream, const char* name, Args... args) {
  const int dev = CurrentDevice();
  const index_t resident = static_cast<index_t>(GetDeviceInfo(dev).sm_count) * MapBlocksPerSM<Kernel>(dev);
  LaunchMapBlocks<Kernel>(resident, work, stream, name, args...);
}

template <typename Saver, typename DType, typename Plan, typename IndexT, typename E>
inline void RunMap(const MapRoute& route, DType* out, const Shape<2>& s, index_t stride, const Plan& plan,
                   cudaStream_t stream) {
  constexpr int N = VectorLanes<DType>();
  const bool vector = route.path == MapPath::kVector || route.path == MapPath::kRowsVector;
  const index_t work = vector ? std::max<index_t>(s.Size() / N, 1) : s.Size();
  const IndexDiv row_len = IndexDiv::Make(route.path == MapPath::kRowsVector ? s[1] / N : s[1]);
  LaunchMap<&MapKernel<Saver, E::kFlat, N, DType, Plan, IndexT>>(
      work, stream, "tensorexpr map kernel", route.path, out, static_cast<IndexT>(stride), row_len,
      static_cast<IndexT>(s.Size()), plan);
}

}  // namespace cuda

// dst <Saver> e on the GPU, on dst's stream. Shapes were checked by EvalInto (assign.h).
template <typename Saver, int dim, typename DType, typename E>
inline void MapPlan(Tensor<gpu, dim, DType> dst, const E& e) {
  const Shape<2> s = dst.shape_.FlatTo2D();
  if (s.Size() == 0) return;
  using Plan = decltype(e.plan());
  static_assert(std::is_trivially_copyable<Plan>::value,
                "an expression's Plan is passed by value to a CUDA kernel, so it must be trivially copyable: hold "
                "child plans and plain numbers, never std:: containers or references");
  const Plan plan = e.plan();
  const cuda::MapRoute route = cuda::ChooseMapRoute(dst, e);
  const cudaStream_t stream = Stream<gpu>::GetStream(dst.stream_);
  if (route.index32) {
    cuda::RunMap<Saver, DType, Plan, uint32_t, E>(route, dst.dptr_, s, dst.stride_, plan, stream);
  } else {
    cuda::RunMap<Saver, DType, Plan, int64_t, E>(route, dst.dptr_, s, dst.stride_, plan, stream);
  }
}

}  // namespace tensorexpr
