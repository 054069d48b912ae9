// cpu/reduce.h — a reduction as the whole right-hand side on the CPU (`dst = sumall_except_dim<1>(a)`,
// `dst += reduce_with_axis<red::maximum>(a, 2)`, ...): one threaded pass that reads the source in
// contiguous runs.
//
// The two forms of expr/reduce.h's ReduceLayout:
//   keep middle (sumall_except_dim, sumall, reduce over the last axis): each output reduces whole rows;
//     a task sums a contiguous stretch of them into 8 independent lanes (which the compiler vectorises;
//     maximum and minimum of float and double take cpu/simd_max_min.h's vectors), up to 8 adjacent
//     outputs side by side so that the reads stay contiguous across them.
//   reduce middle (reduce_with_axis, sum_rows): outputs lie along rows; a task keeps up to 256 adjacent
//     outputs in a local accumulator array and adds one source row into it at a time.
// When the outputs alone give too few tasks (sumall, a 3-channel sumall_except_dim<1>, sum_rows of a tall
// narrow matrix) the reduced range is cut into chunks: per-chunk partials, then combined in chunk order.
// The cut depends on the shape only, never on the thread count, so results are bitwise reproducible.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>
#include "../expr/reduce.h"
#include "../tensor.h"
#include "device.h"
#include "isa.h"
#include "simd_max_min.h"
#include "threads.h"

namespace tensorexpr {
namespace reduce_cpu {

constexpr index_t kGroup = 8;                      // adjacent outputs one task reduces side by side (keep-middle form)
constexpr index_t kTile = 2048;                    // adjacent outputs one task keeps (reduce-middle form)
constexpr index_t kTargetTasks = 256;              // chunking stops once there are this many tasks
constexpr index_t kMinChunkElems = index_t(1) << 14;  // elements a chunk reads at least

// How many chunks to cut each output's reduction into, given the tasks the outputs alone make.
inline index_t NumChunks(index_t base_tasks, index_t reduce_len, index_t elems_per_task_step, index_t total) {
  if (total < kSerialCutoff || base_tasks >= kTargetTasks || reduce_len <= 1) return 1;
  const index_t by_tasks = (kTargetTasks + base_tasks - 1) / base_tasks;
  const index_t by_size = std::max<index_t>(1, reduce_len * elems_per_task_step / kMinChunkElems);
  return std::max<index_t>(1, std::min({by_tasks, by_size, reduce_len}));
}

template <typename Reducer, typename A>
inline A CombineLanes(const A (&lanes)[kLanes]) {
  // A fixed pairwise tree.
  A a = lanes[0], b = lanes[2], c = lanes[4], d = lanes[6];
  Reducer::Reduce(a, lanes[1]);
  Reducer::Reduce(b, lanes[3]);
  Reducer::Reduce(c, lanes[5]);
  Reducer::Reduce(d, lanes[7]);
  Reducer::Reduce(a, b);
  Reducer::Reduce(c, d);
  Reducer::Reduce(a, c);
  return a;
}

// lanes[i] combined with value(t + i) for t = 0, kLanes, ... below n (a multiple of kLanes).
// `wide`: maximum and minimum may use AVX2 (cpu/simd_max_min.h).
template <typename Reducer, typename A, typename Value>
inline void LaneSteps(A (&lanes)[kLanes], index_t n, const Value& value, bool wide) {
  constexpr bool kVectorMaxMin = kSimdMaxMin<A> && (std::is_same<Reducer, red::maximum>::value ||
                                                    std::is_same<Reducer, red::minimum>::value);
  if constexpr (kVectorMaxMin) {
    VectorMaxMinSteps<Reducer>(lanes, n, value, wide);
  } else {
    (void)wide;
    for (index_t t = 0; t < n; t += kLanes)
      for (int i = 0; i < kLanes; ++i) Reducer::Reduce(lanes[i], value(t + i));
  }
}

// Whether Reader reads its rows straight from a tensor of A (of up to 8 dimensions), one element after
// another: the vector loops (cpu/simd_max_min.h) then load from memory without a round trip through
// values, which compilers do not always turn back into vector loads. Address: where it reads (y, x).
template <typename Reader, typename A, int... dims>
constexpr bool ReadsTensorOfDims(std::integer_sequence<int, dims...>) {
  return (... || (std::is_same<Reader, expr::RowReader<typename Tensor<cpu, dims + 1, A>::Plan>>::value ||
                  std::is_same<Reader, expr::FlatReader<typename Tensor<cpu, dims + 1, A>::Plan>>::value));
}
template <typename Reader, typename A>
constexpr bool kReadsTensorOf = ReadsTensorOfDims<Reader, A>(std::make_integer_sequence<int, 8>());
template <typename Plan>
inline const auto* Address(const expr::RowReader<Plan>& r, index_t y, index_t x) {
  return &r.p.REval(y, x);
}
template <typename Plan>
inline const auto* Address(const expr::FlatReader<Plan>& r, index_t y, index_t x) {
  return r.p.dptr_ + (y * r.width + x);
}

// Keep-middle form: output k's values at its reduced positions [q0, q1) (position q = (i0 * n2 + i2) *
// nx + x) combined into its lanes, a row's run at a time (each run's first value in lane 0).
template <typename Reducer, typename A, typename DType, typename Reader>
inline void AccumulateRuns(const Reader& src, const expr::ReduceLayout& l, index_t k, index_t q0, index_t q1,
                           A (&lanes)[kLanes], bool wide) {
  if (q0 >= q1) return;
  const index_t j = q0 / l.nx;
  index_t x = q0 - j * l.nx;
  index_t i0 = j / l.n2, i2 = j - i0 * l.n2;
  index_t left = q1 - q0;
  while (left > 0) {
    const index_t y = (i0 * l.n1 + k) * l.n2 + i2;
    const index_t run = std::min(l.nx - x, left);
    const index_t whole = run / kLanes * kLanes;
    if constexpr (kReadsTensorOf<Reader, A>) {
      LaneSteps<Reducer>(lanes, whole, ContiguousValues<A>{Address(src, y, x)}, wide);
    } else {
      LaneSteps<Reducer>(lanes, whole, [&](index_t t) { return static_cast<A>(src.Load(y, x + t)); }, wide);
    }
    for (index_t t = whole, i = 0; t < run; ++t, ++i) Reducer::Reduce(lanes[i], static_cast<A>(src.Load(y, x + t)));
    left -= run;
    x = 0;
    if (++i2 == l.n2) {
      i2 = 0;
      ++i0;
    }
  }
}

// Keep-middle form: outputs [k0, k1) (at most kGroup of them), each over its positions [q0, q1), into
// result[k - k0]. The outputs take turns i0 by i0: their rows of one i0 lie side by side in a contiguous
// source, so the reads run on through all the group's rows instead of leaving for another i0 after one
// output's (sumall_except_dim<1> of NCHW: runs of one H*W plane each before). Each output's values enter
// its lanes in the same order however the outputs are grouped, so the grouping never changes a result.
template <typename Reducer, typename A, typename DType, typename Reader>
inline void ReduceGroup(const Reader& src, const expr::ReduceLayout& l, index_t k0, index_t k1, index_t q0, index_t q1,
                        bool wide, A* result) {
  A lanes[static_cast<size_t>(kGroup)][kLanes];
  for (index_t k = 0; k < k1 - k0; ++k)
    for (int i = 0; i < kLanes; ++i) lanes[k][i] = Reducer::template Init<A, DType>();
  const index_t per_i0 = l.n2 * l.nx;
  for (index_t s0 = q0; s0 < q1;) {
    const index_t s1 = std::min(q1, (s0 / per_i0 + 1) * per_i0);
    for (index_t k = k0; k < k1; ++k) AccumulateRuns<Reducer, A, DType>(src, l, k, s0, s1, lanes[k - k0], wide);
    s0 = s1;
  }
  for (index_t k = 0; k < k1 - k0; ++k) result[k] = CombineLanes<Reducer>(lanes[k]);
}

template <typename Saver, typename Reducer, typename DType, typename Reader>
inline void RunKeepMiddle(const Reader& src, const expr::ReduceLayout& l, expr::ReduceOut<DType, index_t> out) {
  using A = accum_t<DType>;
  const index_t outputs = l.n1, len = l.reduce_size();
  const index_t chunks = NumChunks(outputs, len, 1, outputs * len);
  const index_t chunk_len = (len + chunks - 1) / chunks;
  const bool wide = cpu_isa::ActiveIsa() >= cpu_isa::Isa::kAvx2;
  if (chunks == 1) {
    ParallelFor(outputs, len, [&](index_t begin, index_t end) {
      A result[static_cast<size_t>(kGroup)];
      for (index_t k0 = begin; k0 < end; k0 += kGroup) {
        const index_t k1 = std::min(end, k0 + kGroup);
        ReduceGroup<Reducer, A, DType>(src, l, k0, k1, 0, len, wide, result);
        for (index_t k = k0; k < k1; ++k) Saver::Save(out.At(k), static_cast<DType>(result[k - k0]));
      }
    });
    return;
  }
  std::vector<A> storage(static_cast<size_t>(outputs * chunks));
  A* const partial = storage.data();  // [output][chunk]
  // Task t = c * outputs + k: adjacent tasks are adjacent outputs of one chunk, which group.
  ParallelFor(outputs * chunks, chunk_len, [&](index_t begin, index_t end) {
    A result[static_cast<size_t>(kGroup)];
    for (index_t t = begin; t < end;) {
      const index_t c = t / outputs, k0 = t - c * outputs;
      const index_t k1 = std::min({outputs, k0 + kGroup, k0 + (end - t)});
      ReduceGroup<Reducer, A, DType>(src, l, k0, k1, c * chunk_len, std::min(len, (c + 1) * chunk_len), wide, result);
      for (index_t k = k0; k < k1; ++k) partial[k * chunks + c] = result[k - k0];
      t += k1 - k0;
    }
  });
  for (index_t k = 0; k < outputs; ++k) {
    A acc = partial[k * chunks];
    for (index_t c = 1; c < chunks; ++c) Reducer::Reduce(acc, partial[k * chunks + c]);
    Saver::Save(out.At(k), static_cast<DType>(acc));
  }
}

// Reduce-middle form: outputs [o_begin, o_end) (o = i2 * nx + x, at most kTile of them) of group i0,
// over rows i1 in [r0, r1), into acc.
template <typename Reducer, typename A, typename DType, typename Reader>
inline void ReduceTile(const Reader& src, const expr::ReduceLayout& l, index_t i0, index_t o_begin, index_t o_end,
                       index_t r0, index_t r1, A* acc) {
  for (index_t o = o_begin; o < o_end; ++o) acc[o - o_begin] = Reducer::template Init<A, DType>();
  const index_t i2_first = o_begin / l.nx, x_first = o_begin - i2_first * l.nx;
  for (index_t i1 = r0; i1 < r1; ++i1) {
    index_t o = o_begin, i2 = i2_first, x = x_first;
    while (o < o_end) {
      const index_t y = (i0 * l.n1 + i1) * l.n2 + i2;
      const index_t run = std::min(l.nx - x, o_end - o);
      A* a = acc + (o - o_begin);
      for (index_t t = 0; t < run; ++t) Reducer::Reduce(a[t], static_cast<A>(src.Load(y, x + t)));
      o += run;
      x = 0;
      ++i2;
    }
  }
}

template <typename Saver, typename Reducer, typename DType, typename Reader>
inline void RunReduceMiddle(const Reader& src, const expr::ReduceLayout& l, expr::ReduceOut<DType, index_t> out) {
  using A = accum_t<DType>;
  const index_t per_group = l.n2 * l.nx;  // outputs of one i0
  const index_t tiles = (per_group + kTile - 1) / kTile;
  const index_t base_tasks = l.n0 * tiles, len = l.n1, outputs = l.num_outputs();
  const index_t chunks = NumChunks(base_tasks, len, std::min(kTile, per_group), outputs * len);
  const index_t chunk_len = (len + chunks - 1) / chunks;
  std::vector<A> storage(chunks > 1 ? static_cast<size_t>(chunks * outputs) : 0);
  A* const partial = storage.data();  // [chunk][output]
  ParallelFor(base_tasks * chunks, chunk_len * std::min(kTile, per_group), [&](index_t begin, index_t end) {
    A acc[kTile];
    for (index_t t = begin; t < end; ++t) {
      const index_t c = t % chunks, tile = t / chunks;
      const index_t i0 = tile / tiles, o_begin = (tile - i0 * tiles) * kTile;
      const index_t o_end = std::min(per_group, o_begin + kTile);
      ReduceTile<Reducer, A, DType>(src, l, i0, o_begin, o_end, c * chunk_len, std::min(len, (c + 1) * chunk_len), acc);
      const index_t f0 = i0 * per_group + o_begin;
      if (chunks == 1) {
        for (index_t o = 0; o < o_end - o_begin; ++o) Saver::Save(out.At(f0 + o), static_cast<DType>(acc[o]));
      } else {
        std::copy(acc, acc + (o_end - o_begin), partial + c * outputs + f0);
      }
    }
  });
  if (chunks == 1) return;
  ParallelFor(outputs, chunks, [&](index_t begin, index_t end) {
    for (index_t f = begin; f < end; ++f) {
      A acc = partial[f];
      for (index_t c = 1; c < chunks; ++c) Reducer::Reduce(acc, partial[c * outputs + f]);
      Saver::Save(out.At(f), static_cast<DType>(acc));
    }
  });
}

}  // namespace reduce_cpu

namespace expr {

// dst <Saver> reduction, on the CPU. Chosen over the generic EvalInto (assign.h) because it takes the
// node type exactly.
template <typename Saver, int dim, typename DType, typename Reducer, typename SrcExp, int kDimOut, int kMode>
inline void EvalInto(Tensor<cpu, dim, DType> dst, const ReduceExp<Reducer, SrcExp, DType, kDimOut, kMode>& e) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  static_assert(dim == kDimOut, "the reduction has a different number of dimensions than the tensor it is assigned to");
  static_assert(std::is_same<typename SrcExp::device_type, cpu>::value,
                "the reduction's source lives on a different device than the tensor it is assigned to; "
                "Copy() it first");
  // (the checks above stop compilation; the guard keeps the compiler from piling up follow-on errors)
  if constexpr (dim == kDimOut && std::is_same<typename SrcExp::device_type, cpu>::value) {
    const Shape<dim> s = e.shape();
    TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_, " vs ",
             e.name(), " of shape ", s);
    if (s.Size() == 0) return;
    const ReduceLayout l = e.layout();
    const ReduceOut<DType, index_t> out{dst.dptr_, dst.shape_[dim - 1], dst.stride_};
    WithReduceReader(e.src_, l, [&](const auto& reader) {
      if (l.keep_middle) {
        reduce_cpu::RunKeepMiddle<Saver, Reducer, DType>(reader, l, out);
      } else {
        reduce_cpu::RunReduceMiddle<Saver, Reducer, DType>(reader, l, out);
      }
    });
  }
}

}  // namespace expr
}  // namespace tensorexpr
