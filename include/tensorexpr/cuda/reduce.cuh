// cuda/reduce.cuh — a reduction as the whole right-hand side on the GPU (`dst = sumall(a)`,
// `dst += sumall_except_dim<1>(a)`, ...). Deterministic: no atomics; every value is combined in an order
// fixed by the shape alone, so the same inputs give the same bits on every run.
//
// The two forms of expr/reduce.h's ReduceLayout:
//   keep middle (sumall_except_dim, sumall, reduce over the last axis): each output reduces whole rows.
//     Short reductions: one warp per output, lanes striding through the rows (coalesced), then a
//     __shfl_down_sync tree. Longer ones: one block per (output, chunk); warp trees, then the warps'
//     values through shared memory and a last warp tree.
//   reduce middle (reduce_with_axis, sum_rows): outputs lie along rows. A warp covers 32 adjacent outputs
//     (coalesced loads), the block's warps take interleaved slices of the reduced rows, and the slices
//     are combined through shared memory in slice order.
// Long reductions with few outputs (sumall above all) are cut into chunks: each block writes one partial
// per (output, chunk) to a temporary buffer (cudaMallocAsync on the destination's stream) and counts its
// arrival in the stream's arrival counters (Stream<gpu>::arrival_counters); the block that arrives last
// for an output combines that output's partials in chunk order and applies the saver. One launch, and
// still deterministic: whichever block finishes, the partials are combined in the same order. The cut
// depends on the shape only.
//
// Kernels index with 32-bit integers when every index fits (and cuda::Force64BitIndexFlag is off, the
// same testing aid as the map kernels'), else 64-bit, decided at launch.
// Shared memory is written, then __syncthreads, then read, then __syncthreads before the next write
// (the ordering compute-sanitizer --tool racecheck checks); every __syncthreads and warp shuffle is reached
// by all threads of the block / warp (work-item loops are uniform across the block).
#pragma once
#if !defined(__CUDACC__)
#error "tensorexpr/cuda/reduce.cuh holds CUDA kernels: compile it with nvcc (a .cu file)."
#endif
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>
#include "../expr/reduce.h"
#include "../tensor.h"
#include "check.cuh"
#include "map.cuh"
#include "memory.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace cuda {
namespace reduce_impl {

constexpr int kThreads = 256;                 // threads per block of every reduction kernel
constexpr int kWarps = kThreads / 32;
constexpr index_t kWarpMaxLen = 1024;         // keep-middle reductions this short get one warp per output
constexpr index_t kBlockMinElems = 4096;      // a chunk gives each thread at least 16 elements
constexpr index_t kTargetBlocks = 2048;       // chunking stops once there are this many blocks of work
constexpr index_t kMaxChunks = 1024;          // partials per output: pass 2 stays one short warp loop
constexpr index_t kMaxGrid = index_t(1) << 20;  // grid-stride loops cover more work items than this
constexpr int kUnroll = 8;                    // loads in flight per thread before they are combined (4: sumall 2-3% slower)
static_assert(kTargetBlocks <= Stream<gpu>::kArrivalCounters,
              "chunked reductions have fewer than kTargetBlocks outputs (tiles), one arrival counter each");

template <typename I>
__device__ __forceinline__ I MinIndex(I a, I b) {
  return a < b ? a : b;
}

// Combines v across the warp: lane 0 ends with the result. Lane i takes lane i + offset's value, for
// offset 16, 8, 4, 2, 1: a fixed tree. Every lane of the warp must call it.
template <typename Reducer, typename A>
__device__ __forceinline__ A WarpReduce(A v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const A other = __shfl_down_sync(0xffffffffu, v, offset);
    Reducer::Reduce(v, other);
  }
  return v;
}

// Combines v across the block (kThreads threads): thread 0 ends with the result. Every thread must call it.
template <typename Reducer, typename A>
__device__ __forceinline__ A BlockReduce(A v, A* warp_vals /* shared, kWarps */) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpReduce<Reducer>(v);
  if (lane == 0) warp_vals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_vals[lane] : Reducer::template Init<A>();
    v = WarpReduce<Reducer>(v);
  }
  __syncthreads();  // warp_vals is written again by the caller's next work item
  return v;
}

// The layout in the kernel's index type.
template <typename I>
struct Layout {
  I n0, n1, n2, nx;
};

// A position (i0, i2, x) among one keep-middle output's reduced elements, advanced by a fixed stride that
// was split into the same digits once: no division per element.
template <typename I>
struct Cursor {
  I i0, i2, x;
  __device__ __forceinline__ static Cursor At(I q, const Layout<I>& l) {
    Cursor c;
    const I j = q / l.nx;
    c.x = q - j * l.nx;
    c.i0 = j / l.n2;
    c.i2 = j - c.i0 * l.n2;
    return c;
  }
  __device__ __forceinline__ void Advance(const Cursor& step, const Layout<I>& l) {
    x += step.x;
    I carry = 0;
    if (x >= l.nx) {
      x -= l.nx;
      carry = 1;
    }
    i2 += step.i2 + carry;
    carry = 0;
    if (i2 >= l.n2) {
      i2 -= l.n2;
      carry = 1;
    }
    i0 += step.i0 + carry;
  }
  __device__ __forceinline__ I Row(I k, const Layout<I>& l) const { return (i0 * l.n1 + k) * l.n2 + i2; }
};

// Reads N consecutive elements of a row as one 16-byte load: the keep-middle kernels run over a layout
// whose nx counts vectors (LaunchKeepMiddleVectors), for a tensor source whose runs are whole aligned
// vectors. One load instruction then moves 16 bytes, which a scalar loop needs four times the loads in
// flight to match.
template <typename DType, int N>
struct VectorReader {
  const DType* p;
  index_t row_stride;  // elements between rows of the layout
  __device__ __forceinline__ expr::VecN<DType, N> Load(index_t y, index_t xv) const {
    return *reinterpret_cast<const expr::VecN<DType, N>*>(p + y * row_stride + xv * N);
  }
};

// acc combined with one loaded value: an element, or each lane of a vector in order.
template <typename Reducer, typename A, typename T>
__device__ __forceinline__ void Combine(A& acc, const T& v) {
  Reducer::Reduce(acc, static_cast<A>(v));
}
template <typename Reducer, typename A, typename T, int N>
__device__ __forceinline__ void Combine(A& acc, const expr::VecN<T, N>& v) {
#pragma unroll
  for (int k = 0; k < N; ++k) Reducer::Reduce(acc, static_cast<A>(v.v[k]));
}

// Reduces positions q = first, first + stride, ... below end of keep-middle output k into acc.
template <typename Reducer, typename A, typename I, typename DType, typename Reader>
__device__ __forceinline__ void StrideRuns(const Reader& src, const Layout<I>& l, I k, I first, I end, I stride,
                                           A& acc) {
  if (first >= end) return;
  using Loaded = decltype(src.Load(index_t(0), index_t(0)));
  const Cursor<I> step = Cursor<I>::At(stride, l);
  Cursor<I> c = Cursor<I>::At(first, l);
  I q = first;
  for (; q + (kUnroll - 1) * stride < end; q += kUnroll * stride) {
    Loaded v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      v[u] = src.Load(static_cast<index_t>(c.Row(k, l)), static_cast<index_t>(c.x));
      c.Advance(step, l);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) Combine<Reducer>(acc, v[u]);
  }
  for (; q < end; q += stride) {
    Combine<Reducer>(acc, src.Load(static_cast<index_t>(c.Row(k, l)), static_cast<index_t>(c.x)));
    c.Advance(step, l);
  }
}

// Keep middle, short: one warp per output.
template <typename Saver, typename Reducer, typename A, typename I, typename DType, typename Reader>
__global__ void __launch_bounds__(kThreads)
    KeepMiddleWarpKernel(Reader src, Layout<I> l, I len, expr::ReduceOut<DType, I> out) {
  const I lane = threadIdx.x & 31;
  const I first_warp = (static_cast<I>(blockIdx.x) * kThreads + threadIdx.x) >> 5;
  const I warps = static_cast<I>(gridDim.x) * kWarps;
  for (I k = first_warp; k < l.n1; k += warps) {  // the same k for the whole warp: the shuffles stay uniform
    A acc = Reducer::template Init<A, DType>();
    StrideRuns<Reducer, A, I, DType>(src, l, k, lane, len, I(32), acc);
    acc = WarpReduce<Reducer>(acc);
    if (lane == 0) Saver::Save(out.At(k), static_cast<DType>(acc));
  }
}

// Called by thread 0 after it wrote its block's partial(s) for the group counted by `*counter` (chunks
// arrivals in all): true for the block that arrives last, which then sets the counter back to zero.
// The fences order every block's partials before its arrival, and the last block's reads after it.
__device__ __forceinline__ bool ArrivesLast(unsigned* counter, unsigned chunks) {
  __threadfence();
  const bool last = atomicAdd(counter, 1u) == chunks - 1;
  if (last) {
    *counter = 0;
    __threadfence();
  }
  return last;
}

// Keep middle, long: one block per (output k, chunk c). Chunk c is interleaved with the others: the
// strips of kThreads positions c, c + chunks, c + 2 chunks, ... of output k's reduced elements. At any
// moment the blocks then read neighbouring strips (one contiguous window moving through memory), which
// measured faster than each block reading its own contiguous range: sumall at 1 GB 0.968 -> 0.982 of
// copy, at 103 MB 0.783 -> 0.828 (H100; with kUnroll 8, 1.00 and 0.84). Without partials the block saves output k; with partials it
// writes partial[k * chunks + c], and the last of output k's blocks to arrive combines them (thread t
// takes chunks t, t + kThreads, ... in order; then the block's fixed tree) and saves.
template <typename Saver, typename Reducer, typename A, typename I, typename DType, typename Reader>
__global__ void __launch_bounds__(kThreads) KeepMiddleBlockKernel(Reader src, Layout<I> l, I len, I chunks,
                                                                  expr::ReduceOut<DType, I> out, A* partial,
                                                                  unsigned* arrivals) {
  __shared__ A warp_vals[kWarps];
  __shared__ bool last;
  const I items = l.n1 * chunks;
  for (I item = blockIdx.x; item < items; item += gridDim.x) {  // uniform across the block
    const I k = item / chunks, c = item - k * chunks;
    A acc = Reducer::template Init<A, DType>();
    StrideRuns<Reducer, A, I, DType>(src, l, k, c * I(kThreads) + static_cast<I>(threadIdx.x), len,
                                     chunks * I(kThreads), acc);
    acc = BlockReduce<Reducer>(acc, warp_vals);
    if (partial == nullptr) {
      if (threadIdx.x == 0) Saver::Save(out.At(k), static_cast<DType>(acc));
      continue;
    }
    if (threadIdx.x == 0) {
      partial[item] = acc;
      last = ArrivesLast(&arrivals[k], static_cast<unsigned>(chunks));
    }
    __syncthreads();
    if (last) {  // the same value for the whole block: read after the barrier, written again only after
                 // the next item's BlockReduce barriers
      A total = Reducer::template Init<A, DType>();
#pragma unroll 4
      for (I j = threadIdx.x; j < chunks; j += kThreads) Reducer::Reduce(total, __ldcg(partial + k * chunks + j));
      total = BlockReduce<Reducer>(total, warp_vals);
      if (threadIdx.x == 0) Saver::Save(out.At(k), static_cast<DType>(total));
    }
  }
}

// Reduce middle: a block covers tile_width = 32 * kWarps / slices adjacent outputs of one group i0 and one
// chunk of the reduced rows. Warp w handles output column block w / slices and row slice w % slices
// (rows i1 = begin + slice, begin + slice + slices, ...). Without partials the block saves its outputs;
// with partials it writes partial[c * outputs + f], and the last of the tile's blocks to arrive combines
// each output's partials in chunk order and saves.
template <typename Saver, typename Reducer, typename A, typename I, typename DType, typename Reader>
__global__ void __launch_bounds__(kThreads) ReduceMiddleKernel(Reader src, Layout<I> l, I slices, I tiles,
                                                               I chunks, I chunk_len,
                                                               expr::ReduceOut<DType, I> out, A* partial,
                                                               unsigned* arrivals) {
  __shared__ A slice_vals[kWarps][32];
  __shared__ bool last;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const I slice = static_cast<I>(warp) % slices, column_block = static_cast<I>(warp) / slices;
  const I tile_width = 32 * (kWarps / slices);
  const I per_group = l.n2 * l.nx, outputs = l.n0 * per_group;
  const I items = l.n0 * tiles * chunks;
  for (I item = blockIdx.x; item < items; item += gridDim.x) {  // uniform across the block
    const I c = item % chunks, tile = item / chunks;
    const I i0 = tile / tiles;
    const I o = (tile - i0 * tiles) * tile_width + column_block * 32 + lane;  // output within group i0
    const bool active = o < per_group;
    A acc = Reducer::template Init<A, DType>();
    if (active) {
      const I i2 = o / l.nx, x = o - i2 * l.nx;
      const I end = MinIndex(l.n1, c * chunk_len + chunk_len);
      const I row0 = i0 * l.n1;  // source row of (i0, i1, i2) is (row0 + i1) * n2 + i2
      I i1 = c * chunk_len + slice;
      for (; i1 + (kUnroll - 1) * slices < end; i1 += kUnroll * slices) {
        DType v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          v[u] = src.Load(static_cast<index_t>((row0 + i1 + u * slices) * l.n2 + i2), static_cast<index_t>(x));
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) Reducer::Reduce(acc, static_cast<A>(v[u]));
      }
      for (; i1 < end; i1 += slices) {
        Reducer::Reduce(acc, static_cast<A>(src.Load(static_cast<index_t>((row0 + i1) * l.n2 + i2),
                                                      static_cast<index_t>(x))));
      }
    }
    // Lanes of warp w hold row slice w % slices of 32 outputs; the slice-0 warp combines the slices in
    // order and hands the result to `emit`. Every thread of the block must call it.
    const I f = i0 * per_group + o;
    auto combine_slices = [&](A v, auto&& emit) {
      slice_vals[warp][lane] = v;
      __syncthreads();
      if (slice == 0 && active) {
        A r = slice_vals[warp][lane];
        for (I s = 1; s < slices; ++s) Reducer::Reduce(r, slice_vals[warp + s][lane]);
        emit(r);
      }
      __syncthreads();  // slice_vals is written again next
    };
    combine_slices(acc, [&](A v) {
      if (partial != nullptr) {
        partial[c * outputs + f] = v;
      } else {
        Saver::Save(out.At(f), static_cast<DType>(v));
      }
    });
    if (partial == nullptr) continue;
    if (threadIdx.x == 0) last = ArrivesLast(&arrivals[tile], static_cast<unsigned>(chunks));
    __syncthreads();
    if (last) {  // the same value for the whole block (see KeepMiddleBlockKernel): the chunks' partials of
                 // each output split over the row slices as the rows were, then combined the same way
      A total = Reducer::template Init<A, DType>();
      if (active) {
#pragma unroll 4
        for (I j = slice; j < chunks; j += slices) Reducer::Reduce(total, __ldcg(partial + j * outputs + f));
      }
      combine_slices(total, [&](A v) { Saver::Save(out.At(f), static_cast<DType>(v)); });
    }
  }
}

// ---- host side ----------------------------------------------------------------------------------------------

inline unsigned GridFor(index_t work_items, index_t per_block = 1) {
  const index_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::max<index_t>(1, std::min(blocks, kMaxGrid)));
}

// Launches one reduction kernel (kThreads threads per block) and checks the launch.
template <typename... Params, typename... Args>
inline void LaunchKernel(void (*kernel)(Params...), unsigned grid, cudaStream_t stream, const char* name,
                         Args... args) {
  kernel<<<grid, kThreads, 0, stream>>>(args...);
  TE_CUDA_CHECK_LAUNCH(name);
}

template <typename Saver, typename Reducer, typename DType, typename I, typename Reader>
inline void LaunchKeepMiddle(const Reader& src, const expr::ReduceLayout& layout, expr::ReduceOut<DType, I> out,
                             Stream<gpu>* s) {
  const cudaStream_t stream = s->stream();
  using A = accum_t<DType>;
  const Layout<I> l{static_cast<I>(layout.n0), static_cast<I>(layout.n1), static_cast<I>(layout.n2),
                    static_cast<I>(layout.nx)};
  const index_t outputs = layout.n1, len = layout.reduce_size();
  if (len <= kWarpMaxLen) {
    LaunchKernel(&KeepMiddleWarpKernel<Saver, Reducer, A, I, DType, Reader>, GridFor(outputs, kWarps), stream,
                 "tensorexpr reduce kernel (one warp per output)", src, l, static_cast<I>(len), out);
    return;
  }
  index_t chunks = 1;
  if (outputs < kTargetBlocks) {
    chunks = std::min({len / kBlockMinElems, (kTargetBlocks + outputs - 1) / outputs, kMaxChunks});
    chunks = std::max<index_t>(chunks, 1);
  }
  if (chunks == 1) {
    LaunchKernel(&KeepMiddleBlockKernel<Saver, Reducer, A, I, DType, Reader>, GridFor(outputs), stream,
                 "tensorexpr reduce kernel (one block per output)", src, l, static_cast<I>(len), I(1), out,
                 static_cast<A*>(nullptr), static_cast<unsigned*>(nullptr));
    return;
  }
  TempBuffer partial(sizeof(A) * static_cast<size_t>(outputs * chunks), stream);
  LaunchKernel(&KeepMiddleBlockKernel<Saver, Reducer, A, I, DType, Reader>, GridFor(outputs * chunks), stream,
               "tensorexpr reduce kernel (one block per output chunk, the last one combines)", src, l,
               static_cast<I>(len), static_cast<I>(chunks), out, static_cast<A*>(partial.get()),
               s->arrival_counters());
  partial.Release();
}

template <typename Saver, typename Reducer, typename DType, typename I, typename Reader>
inline void LaunchReduceMiddle(const Reader& src, const expr::ReduceLayout& layout, expr::ReduceOut<DType, I> out,
                               Stream<gpu>* s) {
  const cudaStream_t stream = s->stream();
  using A = accum_t<DType>;
  const Layout<I> l{static_cast<I>(layout.n0), static_cast<I>(layout.n1), static_cast<I>(layout.n2),
                    static_cast<I>(layout.nx)};
  const index_t len = layout.n1, outputs = layout.num_outputs(), per_group = layout.n2 * layout.nx;
  // Row slices per output column: all 8 warps on one column block when there are rows enough, fewer
  // (and more column blocks) for short reductions.
  index_t slices = 1;
  while (slices < kWarps && slices < len) slices *= 2;
  const index_t tile_width = 32 * (kWarps / slices);
  const index_t tiles = (per_group + tile_width - 1) / tile_width;
  const index_t base_items = layout.n0 * tiles;
  index_t chunks = 1;
  if (base_items < kTargetBlocks) {
    const index_t rows_per_chunk_min = slices * 32;  // 32 rows per warp at least
    chunks = std::min({len / rows_per_chunk_min, (kTargetBlocks + base_items - 1) / base_items, kMaxChunks});
    chunks = std::max<index_t>(chunks, 1);
  }
  const index_t chunk_len = std::max<index_t>(1, (len + chunks - 1) / chunks);
  chunks = std::max<index_t>(1, (len + chunk_len - 1) / chunk_len);
  if (chunks == 1) {
    LaunchKernel(&ReduceMiddleKernel<Saver, Reducer, A, I, DType, Reader>, GridFor(base_items), stream,
                 "tensorexpr reduce kernel (outputs along rows)", src, l, static_cast<I>(slices),
                 static_cast<I>(tiles), I(1), static_cast<I>(chunk_len), out, static_cast<A*>(nullptr),
                 static_cast<unsigned*>(nullptr));
    return;
  }
  TempBuffer partial(sizeof(A) * static_cast<size_t>(outputs * chunks), stream);
  LaunchKernel(&ReduceMiddleKernel<Saver, Reducer, A, I, DType, Reader>, GridFor(base_items * chunks), stream,
               "tensorexpr reduce kernel (outputs along rows, per row chunk, the last one combines)", src, l,
               static_cast<I>(slices), static_cast<I>(tiles), static_cast<I>(chunks), static_cast<I>(chunk_len), out,
               static_cast<A*>(partial.get()), s->arrival_counters());
  partial.Release();
}

template <typename Saver, typename Reducer, typename DType, typename I, typename Reader>
inline void Launch(const Reader& src, const expr::ReduceLayout& l, expr::ReduceOut<DType, I> out, Stream<gpu>* s) {
  if (l.keep_middle) {
    LaunchKeepMiddle<Saver, Reducer, DType, I>(src, l, out, s);
  } else {
    LaunchReduceMiddle<Saver, Reducer, DType, I>(src, l, out, s);
  }
}

}  // namespace reduce_impl
}  // namespace cuda

namespace expr {

// dst <Saver> reduction, on the GPU, on dst's stream. Chosen over the generic EvalInto (assign.h) because
// it takes the node type exactly.
template <typename Saver, int dim, typename DType, typename Reducer, typename SrcExp, int kDimOut, int kMode>
inline void EvalInto(Tensor<gpu, dim, DType> dst, const ReduceExp<Reducer, SrcExp, DType, kDimOut, kMode>& e) {
  static_assert(dim == kDimOut, "the reduction has a different number of dimensions than the tensor it is assigned to");
  static_assert(std::is_same<typename SrcExp::device_type, gpu>::value,
                "the reduction's source lives on a different device than the tensor it is assigned to; "
                "Copy() it first");
  static_assert(std::is_trivially_copyable<typename SrcExp::Plan>::value,
                "an expression's Plan is passed by value to a CUDA kernel, so it must be trivially copyable: hold "
                "child plans and plain numbers, never std:: containers or references");
  // (the checks above stop compilation; the guard keeps the compiler from piling up follow-on errors)
  if constexpr (dim == kDimOut && std::is_same<typename SrcExp::device_type, gpu>::value) {
    const Shape<dim> s = e.shape();
    TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_, " vs ",
             e.name(), " of shape ", s);
    if (s.Size() == 0) return;
    const ReduceLayout l = e.layout();
    Stream<gpu>* const stream = StreamOrDefault(dst.stream_);
    // Every index a kernel forms stays below the source's element count (rows * nx), the output's padded
    // span, or a chunk end, plus a few strides: 32-bit when those fit with room to spare.
    const index_t dst_span = dst.shape_.ProdShape(0, dim - 1) * dst.stride_;
    const index_t largest =
        std::max({l.n0 * l.n1 * l.n2 * l.nx, dst_span, l.num_outputs() * cuda::reduce_impl::kMaxChunks});
    const bool index32 = largest <= INT32_MAX / 2 && !cuda::Force64BitIndexFlag().load();
    // The output in the index width chosen above, handed to `launch`.
    auto with_out = [&](auto&& launch) {
      if (index32) {
        launch(ReduceOut<DType, int32_t>{dst.dptr_, static_cast<int32_t>(dst.shape_[dim - 1]),
                                         static_cast<int32_t>(dst.stride_)});
      } else {
        launch(ReduceOut<DType, int64_t>{dst.dptr_, dst.shape_[dim - 1], dst.stride_});
      }
    };
    // A tensor whose reduced runs are whole 16-byte vectors is read a vector at a time.
    constexpr int N = cuda::VectorLanes<DType>();
    if constexpr (is_tensor<SrcExp>::value && N > 1) {
      const SrcExp& t = e.src_;
      const index_t row_stride = l.flat ? l.nx : t.stride_;
      if (l.keep_middle && l.nx % N == 0 && row_stride % N == 0 && t.aligned_for(N)) {
        ReduceLayout lv = l;
        lv.nx = l.nx / N;
        const cuda::reduce_impl::VectorReader<DType, N> vreader{t.dptr_, row_stride};
        with_out([&](auto out) { cuda::reduce_impl::LaunchKeepMiddle<Saver, Reducer, DType>(vreader, lv, out, stream); });
        return;
      }
    }
    const auto reader = e.reader(l);
    with_out([&](auto out) { cuda::reduce_impl::Launch<Saver, Reducer, DType>(reader, l, out, stream); });
  }
}

}  // namespace expr
}  // namespace tensorexpr
