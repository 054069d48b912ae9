// ops/cpu/conv_direct.h — direct convolution on the CPU for stride-1 convolutions with few channels
// (the small-channel volumes of 3-D imaging: one input channel, a handful of 7x7x7 filters), where
// im2col + GEMM is the wrong shape: the GEMM is only as tall as the filter count and the column matrix is
// kernel-area times the input.
//
// Every pass is one correlation (ops/conv_direct_pass.h): the forward, and the data gradient as the
// output gradient correlated with the transposed, flipped filters.
//
// Work is one output row (image, group, z, y) at a time. The input rows that row reads, one per
// (ci, tz, ty), are copied into a panel with their padding as zeros, so the inner loop has no bounds to
// check; the panel serves every filter of the group. A tile of KB filters times XV vectors along x stays
// in registers over the whole sum (register blocking), each loaded input vector feeding all KB filters.
// The loops (conv_direct_kernels.inc) are compiled twice: for AVX2 + FMA, taken when the processor has
// them, and for the baseline (cpu/isa.h).
//
// The weight gradient sums over images and positions: the rows are cut into at most kDirectChunks fixed
// chunks, each sums into its own partial, and the partials are added in chunk order, so the result does
// not depend on the thread count or the timing.
//
// As an algorithm it is "cpu_direct" (ConvCpuDirect below): float and double, channels-first dense data,
// stride 1, any dilation, padding and groups, 1-D to 3-D. The heuristic takes it for few input channels
// per group (Recommended says when).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/cpu/isa.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include "../conv_direct_pass.h"
#include "../conv_im2col_gemm.h"

namespace tensorexpr {
namespace ops {

template <typename DType>
constexpr bool kConvDirectDType = std::is_same<DType, float>::value || std::is_same<DType, double>::value;

// The heuristic's limits (ConvCpuDirect::Recommended).
constexpr index_t kDirectMaxChannels = 4, kDirectMinBackwardWidth = 64, kDirectMaxBackwardFilters = 16;
// Fixed chunks of output rows (the weight gradient's partials; every pass's unit of work for the threads).
constexpr index_t kDirectChunks = 64;

namespace detail {

// 32 bytes of DType as a GCC vector (one AVX register; two SSE2 registers in the baseline build).
template <typename DType>
struct DirectVector;
template <>
struct DirectVector<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct DirectVector<double> {
  typedef double type __attribute__((vector_size(32)));
};

// The width of a panel row: out[2] rounded up to whole tiles, plus the reach of the taps.
inline index_t DirectPanelWidth(const DirectPass& p, index_t tile_width) {
  return (p.out[2] + tile_width - 1) / tile_width * tile_width + (p.taps[2] - 1) * p.dilate[2];
}

// The input rows read for output row (ng, z, y) = (image n's group g, z, y): for each (ci, tz) the rows_y
// rows at input y = y + origin + j * step_y (j < rows_y), each `width` wide from input x = origin, with
// zeros where they leave the input. The plain form reads the taps' rows (taps_y, dilate_y); the stacked
// form every row a block of output rows reads (StackSpan, 1).
template <typename DType>
inline void FillDirectPanel(const DirectPass& p, const DType* input, index_t ng, index_t z, index_t y,
                            index_t rows_y, index_t step_y, index_t width, DType* panel) {
  const DType* image = input + ng * p.Ci * p.InSize();  // (n, g) is image n's group g: channels g * Ci...
  const index_t x_first = p.origin[2];                   // the input x of panel column 0
  const index_t lo = std::max<index_t>(0, -x_first), hi = std::min<index_t>(width, p.in[2] - x_first);
  for (index_t ci = 0; ci < p.Ci; ++ci)
    for (index_t tz = 0; tz < p.taps[0]; ++tz)
      for (index_t j = 0; j < rows_y; ++j, panel += width) {
        const index_t iz = z + p.origin[0] + tz * p.dilate[0], iy = y + p.origin[1] + j * step_y;
        if (iz < 0 || iz >= p.in[0] || iy < 0 || iy >= p.in[1] || lo >= hi) {
          std::fill(panel, panel + width, DType(0));
          continue;
        }
        const DType* src = image + ((ci * p.in[0] + iz) * p.in[1] + iy) * p.in[2] + x_first;
        std::fill(panel, panel + lo, DType(0));
        std::copy(src + lo, src + hi, panel + lo);
        std::fill(panel + hi, panel + width, DType(0));
      }
}

// The stacked form, for passes with fewer than 4 output channels (DirectStacks): too few filters to share
// a loaded vector, so kStackRows neighbouring output rows share it instead, each with its own taps. A
// block of them reads StackSpan input rows per (ci, tz); the weight of input row j for output row r of
// the block is tap (j - r) / dilate_y, zero where that is no tap (packed that way: no branches).
constexpr int kStackRows = 4, kStackVectors = 3;
// The stacked form's longest span of input rows (its row masks are an array of this size).
constexpr index_t kMaxStackSpan = 64;
inline index_t DirectStackSpan(const DirectPass& p);
inline bool DirectStacks(const DirectPass& p) {
  return p.Co < 4 && p.out[1] >= kStackRows && DirectStackSpan(p) <= kMaxStackSpan;
}
inline index_t DirectStackSpan(const DirectPass& p) { return kStackRows + (p.taps[1] - 1) * p.dilate[1]; }
inline index_t DirectStackBlocks(const DirectPass& p) { return (p.out[1] + kStackRows - 1) / kStackRows; }

// The weight gradient's register block: filters times taps along x (3 x 4 accumulators, the 3 dy vectors
// and a panel vector: 16 registers).
constexpr int kWeightGradFilters = 3, kWeightGradTaps = 4;
// The weight gradient's panel rows: out[2] rounded up to whole vectors, plus the reach of the taps rounded
// up to whole blocks of kWeightGradTaps.
inline index_t DirectWeightGradPanelWidth(const DirectPass& p, index_t lanes) {
  const index_t tap_blocks = (p.taps[2] + kWeightGradTaps - 1) / kWeightGradTaps;
  return (p.out[2] + lanes - 1) / lanes * lanes + (tap_blocks * kWeightGradTaps - 1) * p.dilate[2];
}
// One chunk's weight-gradient scratch: its panel, then its block of dy rows (each out[2] rounded up).
template <typename DType>
struct DirectWeightGradScratch {
  index_t panel = 0, total = 0;
  explicit DirectWeightGradScratch(const DirectPass& p) {
    const index_t lanes = 32 / index_t(sizeof(DType));
    panel = p.PanelRows() * DirectWeightGradPanelWidth(p, lanes);
    total = panel + kWeightGradFilters * ((p.out[2] + lanes - 1) / lanes * lanes);
  }
};

// The register blocks' loops have constant bounds and must unroll, or their arrays land in memory.
#define TE_DIRECT_UNROLL _Pragma("GCC unroll 16")

// The kernels, compiled once per instruction set: Rows (the correlation) and WeightGradRows.
namespace direct_baseline {
#include "conv_direct_kernels.inc"
}  // namespace direct_baseline
#if TE_HAVE_AVX2_DISPATCH
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace direct_avx2 {
#include "conv_direct_kernels.inc"
}  // namespace direct_avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#undef TE_DIRECT_UNROLL

// The tile shapes, by filter count: enough filters to reuse each loaded vector, enough vectors for the
// rest of the 12 accumulators (a 16-register file keeps the inputs and a broadcast beside them).
template <typename Fn>
void WithDirectTile(index_t filters, Fn&& fn) {
  if (filters >= 6) return fn(std::integral_constant<int, 6>{}, std::integral_constant<int, 2>{});
  if (filters >= 4) return fn(std::integral_constant<int, 4>{}, std::integral_constant<int, 3>{});
  if (filters >= 2) return fn(std::integral_constant<int, 2>{}, std::integral_constant<int, 6>{});
  return fn(std::integral_constant<int, 1>{}, std::integral_constant<int, 12>{});
}

template <typename DType>
index_t DirectTileWidth(index_t filters) {
  index_t w = 0;
  WithDirectTile(filters, [&](auto kb, auto xv) { w = direct_baseline::Tile<DType, kb.value, xv.value>::kWidth; });
  return w;
}
template <typename DType>
index_t DirectTileFilters(index_t filters) {
  index_t k = 0;
  WithDirectTile(filters, [&](auto kb, auto) { k = kb.value; });
  return k;
}

// The work items of pass p: output rows, or blocks of kStackRows of them when it stacks.
inline index_t DirectItems(const DirectPass& p) {
  return DirectStacks(p) ? p.N * p.G * p.out[0] * DirectStackBlocks(p) : p.Rows();
}
// Elements of the packed filters and of one chunk's panel.
template <typename DType>
index_t DirectPackedElems(const DirectPass& p) {
  if (DirectStacks(p)) return p.G * p.Co * p.Ci * p.taps[0] * DirectStackSpan(p) * p.taps[2] * kStackRows;
  const index_t KB = DirectTileFilters<DType>(p.Co), blocks = (p.Co + KB - 1) / KB;
  return p.G * blocks * p.PanelRows() * p.taps[2] * KB;
}
template <typename DType>
index_t DirectPanelElems(const DirectPass& p) {
  if (DirectStacks(p)) {
    const index_t width = DirectPanelWidth(p, direct_baseline::Tile<DType, kStackRows, kStackVectors>::kWidth);
    return p.Ci * p.taps[0] * DirectStackSpan(p) * width;
  }
  return p.PanelRows() * DirectPanelWidth(p, DirectTileWidth<DType>(p.Co));
}
inline index_t DirectChunks(index_t items) { return std::min(items, kDirectChunks); }
// Chunk c's items [first, next chunk's first): an even deal.
inline index_t DirectChunkFirst(index_t c, index_t chunks, index_t items) {
  return c * (items / chunks) + std::min(c, items % chunks);
}

// Packs filter(g, co, ci, tz, ty, tx) into the tile order: plain, blocks of KB filters (zeros past Co in
// the last); stacked, per filter the weight of each (span row j, output row r of the block) pair.
template <typename DType, typename Filter>
void PackDirectFilters(const DirectPass& p, Filter filter, DType* packed) {
  if (DirectStacks(p)) {
    const index_t span = DirectStackSpan(p), dy = p.dilate[1];
    for (index_t g = 0; g < p.G; ++g)
      for (index_t co = 0; co < p.Co; ++co)
        for (index_t ci = 0; ci < p.Ci; ++ci)
          for (index_t tz = 0; tz < p.taps[0]; ++tz)
            for (index_t j = 0; j < span; ++j)
              for (index_t tx = 0; tx < p.taps[2]; ++tx)
                for (index_t r = 0; r < kStackRows; ++r, ++packed) {
                  const index_t d = j - r;  // output row r reads span row j through tap d / dilate_y
                  const bool tap = d >= 0 && d % dy == 0 && d / dy < p.taps[1];
                  *packed = tap ? filter(g, co, ci, tz, d / dy, tx) : DType(0);
                }
    return;
  }
  const index_t KB = DirectTileFilters<DType>(p.Co), blocks = (p.Co + KB - 1) / KB;
  for (index_t g = 0; g < p.G; ++g)
    for (index_t b = 0; b < blocks; ++b)
      for (index_t ci = 0; ci < p.Ci; ++ci)
        for (index_t tz = 0; tz < p.taps[0]; ++tz)
          for (index_t ty = 0; ty < p.taps[1]; ++ty)
            for (index_t tx = 0; tx < p.taps[2]; ++tx)
              for (index_t k = 0; k < KB; ++k, ++packed) {
                const index_t co = b * KB + k;
                *packed = co < p.Co ? filter(g, co, ci, tz, ty, tx) : DType(0);
              }
}

// Runs pass p: output (req: add or store) from input, filters packed; workspace holds one panel per chunk.
template <typename DType>
void RunDirectPass(const DirectPass& p, const DType* input, const DType* packed, DType* output, bool add,
                   DType* panels) {
  const index_t items = DirectItems(p), chunks = DirectChunks(items), panel_elems = DirectPanelElems<DType>(p);
  if (items == 0) return;  // an empty output
  const index_t cost = p.Co * p.PanelRows() * p.taps[2] * p.out[2] * 2 * (DirectStacks(p) ? kStackRows : 1);
  const bool avx2 = cpu_isa::ActiveIsa() >= cpu_isa::Isa::kAvx2;
  auto run = [&](auto rows_fn) {
    ParallelFor(chunks, cost * (items / chunks + 1), [&](index_t begin, index_t end) {
      for (index_t c = begin; c < end; ++c)
        rows_fn(p, input, packed, output, add, DirectChunkFirst(c, chunks, items),
                DirectChunkFirst(c + 1, chunks, items), panels + c * panel_elems);
    });
  };
#if TE_HAVE_AVX2_DISPATCH
  if (DirectStacks(p)) return run(avx2 ? &direct_avx2::StackedRows<DType> : &direct_baseline::StackedRows<DType>);
  WithDirectTile(p.Co, [&](auto kb, auto xv) {
    run(avx2 ? &direct_avx2::Rows<DType, kb.value, xv.value> : &direct_baseline::Rows<DType, kb.value, xv.value>);
  });
#else
  (void)avx2;
  if (DirectStacks(p)) return run(&direct_baseline::StackedRows<DType>);
  WithDirectTile(p.Co, [&](auto kb, auto xv) { run(&direct_baseline::Rows<DType, kb.value, xv.value>); });
#endif
}

// Whether every size DirectWorkspace and the kernels compute stays far inside index_t (a hostile dilation
// or padding could wrap them): the same sizes bounded in double.
inline bool DirectSizesFit(const ConvGeometry& g) {
  double widest = 0, taps = 1;
  for (int i = 0; i < 3; ++i) {
    const double reach = double(g.kernel[i] + 3) * double(g.dilate[i]);  // taps rounded up to whole tap blocks
    widest = std::max(widest, double(std::max(g.in[i], g.out[i])) + 96 + reach);
    taps *= double(g.kernel[i] + 3);
  }
  const double rows = double(std::max(g.C, g.K)) * taps * 16;  // panel rows, stacked spans included
  return widest * rows * double(kDirectChunks) + double(g.K) * double(g.C) * taps * 16 * double(kDirectChunks) <
         std::ldexp(1.0, 52);
}

// What one Run needs: packed filters, then a panel per chunk, then (weight gradient) a partial per chunk.
struct DirectLayout {
  index_t packed = 0, panels = 0, partials = 0;
  index_t Total() const { return packed + panels + partials; }
};
inline const ConvStores kDirectAllPasses = [] {
  ConvStores st;
  st.out = st.data_grad = st.weight_grad = ReqStore{true, false};
  return st;
}();
template <typename DType>
DirectLayout DirectWorkspace(const ConvGeometry& g, const ConvStores& st) {
  DirectLayout l;
  const DirectPass fwd = MakeDirectPass(g, ConvPass::kForward),
                          bwd = MakeDirectPass(g, ConvPass::kBackwardData);
  if (st.out.active) {
    l.packed = std::max(l.packed, DirectPackedElems<DType>(fwd));
    l.panels = std::max(l.panels, DirectChunks(DirectItems(fwd)) * DirectPanelElems<DType>(fwd));
  }
  if (st.data_grad.active) {
    l.packed = std::max(l.packed, DirectPackedElems<DType>(bwd));
    l.panels = std::max(l.panels, DirectChunks(DirectItems(bwd)) * DirectPanelElems<DType>(bwd));
  }
  if (st.weight_grad.active) {
    const index_t chunks = DirectChunks(fwd.Rows());
    l.panels = std::max(l.panels, chunks * DirectWeightGradScratch<DType>(fwd).total);
    l.partials = chunks * g.K * g.Cg() * g.KernelSize();
  }
  return l;
}

}  // namespace detail

template <typename DType>
class ConvCpuDirect : public ConvAlgorithm<cpu, DType> {
 public:
  const char* Name() const override { return "cpu_direct"; }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    const ConvGeometry& g = pr.geom;
    if (!kConvDirectDType<DType>) return ConvSupport::No("it runs float or double only");
    if (g.channels_last) return ConvSupport::No("it runs channels-first (NCHW) data only");
    if (!pr.data_contiguous) return ConvSupport::No("it reads dense rows only (the input has padded rows)");
    for (int i = 0; i < 3; ++i)
      if (g.stride[i] != 1) return ConvSupport::No("it runs stride 1 only");
    if (!detail::DirectSizesFit(g)) return ConvSupport::No("its panels of input rows would not fit in memory");
    return ConvSupport::Yes();
  }
  // Few input channels (im2col's forward GEMM is that shallow) and no more workspace than im2col_gemm's
  // under the same cap (ConvolutionWorkspaceBytes stays an upper bound). The backward passes also want
  // rows of at least kDirectMinBackwardWidth (their tiles are wide, and the weight gradient reduces
  // across lanes once per row), and the data gradient at most kDirectMaxBackwardFilters filters (its
  // GEMM has that depth).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    if constexpr (kConvDirectDType<DType>) {
      const ConvGeometry& g = pr.geom;
      // Every pass counted: passes that choose the same algorithm run in one call, on one workspace.
      const index_t chunked = PlanIm2Col(g, sizeof(DType), pr.workspace_limit).col_elems;
      if (g.Cg() > kDirectMaxChannels || !detail::DirectSizesFit(g) ||
          detail::DirectWorkspace<DType>(g, detail::kDirectAllPasses).Total() > chunked)
        return false;
      if (pass == ConvPass::kForward) return true;
      return std::min(g.in[2], g.out[2]) >= kDirectMinBackwardWidth &&
             (pass == ConvPass::kBackwardWeight || g.Kg() <= kDirectMaxBackwardFilters);
    }
    return false;
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    if constexpr (kConvDirectDType<DType>) {
      if (!detail::DirectSizesFit(pr.geom)) return std::numeric_limits<size_t>::max();
      return static_cast<size_t>(detail::DirectWorkspace<DType>(pr.geom, st).Total()) * sizeof(DType);
    }
    return 0;
  }
  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<cpu>*) const override {
    if constexpr (kConvDirectDType<DType>) {
      const ConvGeometry& g = pr.geom;
      const detail::DirectLayout l = detail::DirectWorkspace<DType>(g, st);
      DType* const packed = static_cast<DType*>(workspace);
      DType* const panels = packed + l.packed;
      DType* const partials = panels + l.panels;
      const index_t T = g.KernelSize(), Cg = g.Cg(), Kg = g.Kg();
      auto weight = [&](index_t k, index_t c, index_t tz, index_t ty, index_t tx) {
        return t.weight[((k * Cg + c) * g.kernel[0] + tz) * g.kernel[1] * g.kernel[2] + ty * g.kernel[2] + tx];
      };
      if (st.out.active) {
        const detail::DirectPass p = detail::MakeDirectPass(g, ConvPass::kForward);
        detail::PackDirectFilters(p, [&](index_t gr, index_t co, index_t ci, index_t tz, index_t ty, index_t tx) {
          return weight(gr * Kg + co, ci, tz, ty, tx);
        }, packed);
        detail::RunDirectPass(p, t.data, packed, t.out, st.out.add, panels);
      }
      if (st.data_grad.active) {
        const detail::DirectPass p = detail::MakeDirectPass(g, ConvPass::kBackwardData);
        detail::PackDirectFilters(p, [&](index_t gr, index_t co, index_t ci, index_t tz, index_t ty, index_t tx) {
          return weight(gr * Kg + ci, co, g.kernel[0] - 1 - tz, g.kernel[1] - 1 - ty, g.kernel[2] - 1 - tx);
        }, packed);
        detail::RunDirectPass(p, t.out_grad, packed, t.data_grad, st.data_grad.add, panels);
      }
      if (st.weight_grad.active) WeightGrad(g, t, st.weight_grad, panels, partials, T);
    }
  }

 private:
  static void WeightGrad(const ConvGeometry& g, const ConvTensors<DType>& t, ReqStore store, DType* panels,
                         DType* partials, index_t T) {
    const detail::DirectPass p = detail::MakeDirectPass(g, ConvPass::kForward);
    const index_t rows = p.Rows(), chunks = detail::DirectChunks(rows), size = g.K * g.Cg() * T;
    const detail::DirectWeightGradScratch<DType> scratch(p);
    if (rows == 0) {  // no output rows: nothing to sum, the gradient is zero
      if (!store.add) std::fill(t.weight_grad, t.weight_grad + size, DType(0));
      return;
    }
    auto rows_fn = &detail::direct_baseline::WeightGradRows<DType>;
#if TE_HAVE_AVX2_DISPATCH
    if (cpu_isa::ActiveIsa() >= cpu_isa::Isa::kAvx2) rows_fn = &detail::direct_avx2::WeightGradRows<DType>;
#endif
    const index_t cost = p.Co * p.PanelRows() * p.taps[2] * p.out[2] * 2;
    ParallelFor(chunks, cost * (rows / chunks + 1), [&](index_t begin, index_t end) {
      for (index_t c = begin; c < end; ++c) {
        DType* partial = partials + c * size;
        std::fill(partial, partial + size, DType(0));
        DType* const space = panels + c * scratch.total;
        rows_fn(p, t.data, t.out_grad, detail::DirectChunkFirst(c, chunks, rows),
                detail::DirectChunkFirst(c + 1, chunks, rows), space, space + scratch.panel, partial);
      }
    });
    // dW (req) = the partials summed in chunk order.
    ParallelFor(size, chunks, [&](index_t begin, index_t end) {
      for (index_t e = begin; e < end; ++e) {
        DType sum = partials[e];
        for (index_t c = 1; c < chunks; ++c) sum += partials[c * size + e];
        t.weight_grad[e] = store.add ? t.weight_grad[e] + sum : sum;
      }
    });
  }
};

}  // namespace ops
}  // namespace tensorexpr
