// ops/cuda/conv_direct.h — "gpu_direct": direct convolution on the GPU for stride-1 convolutions with few
// channels (the small-channel volumes of 3-D imaging: one input channel, a handful of 7x7x7 filters). There
// im2col + GEMM is the wrong shape (the GEMM is as tall as the filter count, the column matrix is
// kernel-volume times the input) and implicit GEMM pads the one channel to a tensor core's width.
//
// The forward and the data gradient are one correlation each (ops/conv_direct_pass.h). A thread keeps a
// register tile of KB filters times a run of RX outputs along x (register blocking): every input value it
// loads feeds up to KB * TX products, every filter value RX of them. The tiles are compile-time
// (kRegisterTiles); "gpu_direct" takes the one HeuristicTile names, and one algorithm per other tile
// ("gpu_direct_8x16": 8 filters, runs of 16) lets the tuner time it against the heuristic's. A block
// computes a tile of 16 output rows, copying the input rows they read (one plane of one channel at a time) and that plane's filter taps
// into shared memory, padding as zeros, so the products have no bounds to check. The taps along x (TX)
// and the tile are compile-time, so the products unroll into a straight run of FMAs.
//
// The weight gradient: a block sums, over a fixed chunk of output tiles, the products of the output
// gradient with the input for every tap of one input channel, threads each holding KB filters times TX
// taps for one (tz, ty); the chunk's sums go to a float partial, and the partials are added in a fixed order
// (deterministic: the chunks depend on the problem only, not on the device).
//
// Dilation along x is handled by phases: the outputs x = phase + dilate * x' read the inputs
// phase + origin + dilate * (x' + tx), a dilation-1 correlation on every dilate-th column.
//
// The kernels (ops/cuda/conv_direct_kernels.cuh) are compiled for float, half_t and bf16_t, in their own
// units (conv_direct_*.cu): all arithmetic is in float, each result rounded once.
#pragma once
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_algorithm.h>
#include "../conv_direct_pass.h"
#include "../conv_im2col_gemm.h"

namespace tensorexpr {
namespace ops {
namespace gpu_direct {

// A thread's register tile in the forward / data-gradient kernel: `filters` filters times a run of `run`
// outputs along x.
struct RegisterTile {
  int filters = 1, run = 16;
};
// The tiles compiled: HeuristicTile's four, then the ones only the tuner takes (Recommended says no).
// 8 x 16 needs 0.55 to 0.75 of 8 x 8's shared-memory loads per product (7 to 1 taps along x), with twice
// the accumulators and fewer blocks resident; 4 x 8 makes twice the blocks of 4 x 16, for small problems.
inline constexpr RegisterTile kRegisterTiles[] = {{1, 16}, {2, 16}, {4, 16}, {8, 8}, {8, 16}, {4, 8}};
constexpr int kHeuristicTiles = 4;
constexpr int FilterBlock(int filters) { return filters >= 8 ? 8 : filters >= 4 ? 4 : filters >= 2 ? 2 : 1; }
// The heuristic's tile: as many filters as the problem has, up to 8, and runs that keep the tile at 64
// accumulators or fewer.
constexpr RegisterTile HeuristicTile(int filters) {
  return RegisterTile{FilterBlock(filters), FilterBlock(filters) >= 8 ? 8 : 16};
}
// The kernels' dispatch (WithRegisterTile) finds HeuristicTile among the first kHeuristicTiles entries, and
// the registry makes a tuner's algorithm of each entry after them.
constexpr bool HeuristicTilesFirst() {
  for (int i = 0; i < kHeuristicTiles; ++i) {
    const RegisterTile h = HeuristicTile(1 << i), t = kRegisterTiles[i];
    if (h.filters != t.filters || h.run != t.run) return false;
  }
  return true;
}
static_assert(HeuristicTilesFirst(), "kRegisterTiles must start with HeuristicTile(1), (2), (4) and (8), in order");

// A DirectPass as the kernels take it: 32-bit sizes (MakeCorrelation checks that every index fits) and
// where filter (g, co, ci, tap t) is: filter_g * g + filter_co * co + filter_ci * ci + (flip ? T - 1 - t : t).
// `tile` is the forward / data-gradient kernel's register tile (the weight gradient's is its own).
struct Correlation {
  int N = 0, G = 1, Ci = 0, Co = 0;
  int in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, taps[3] = {1, 1, 1}, dilate[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  int filter_g = 0, filter_co = 0, filter_ci = 0;
  bool flip = false;  // the data gradient's filters, flipped in every dimension: tap t is T - 1 - t
  RegisterTile tile;

  TE_XINLINE int Taps() const { return taps[0] * taps[1] * taps[2]; }
  TE_XINLINE int InSize() const { return in[0] * in[1] * in[2]; }
  TE_XINLINE int OutSize() const { return out[0] * out[1] * out[2]; }
  // Outputs along x of one phase (x = phase + dilate * x').
  TE_XINLINE int PhaseWidth(int phase) const { return (out[2] - phase + dilate[2] - 1) / dilate[2]; }
};

// The correlation's tile shapes.
TE_XINLINE constexpr int RoundUp4(int v) { return (v + 3) / 4 * 4; }
// Forward / data gradient: 8 x 16 threads, each a register tile (Correlation::tile).
constexpr int kThreadsX = 8, kThreadsY = 16;
// Weight gradient: tiles of kGradRows x kGradCols outputs, runs of kGradRun along x.
constexpr int kGradRows = 8, kGradCols = 64, kGradRun = 8;
constexpr int kGradMaxThreads = 256;
// The weight gradient's chunks: at most this many, and partials of at most kGradMaxPartialBytes.
constexpr int kGradMaxChunks = 1024;
constexpr size_t kGradMaxPartialBytes = size_t(64) << 20;
// Shared memory a block may take without opting in (every kernel here stays within it).
constexpr size_t kMaxSharedBytes = 48 * 1024;

inline bool TapsXSupported(index_t taps) { return taps == 1 || taps == 3 || taps == 5 || taps == 7; }

// The weight gradient's launch: which threads hold which taps, and how the tiles are dealt into chunks.
struct GradLaunch {
  int combos = 0;            // (tz, ty) pairs
  int combos_per_block = 0;  // of them, one block's
  int combo_groups = 0;
  int slices = 0;            // threads per pair, each a slice of the tile's columns
  int filter_blocks = 0;
  int x_tiles = 0, y_tiles = 0;
  int64_t items = 0;         // tiles: phase, image, z, y tile, x tile
  int chunks = 0;
  int64_t blocks = 0;
  size_t shared_bytes = 0;
  size_t weight_elems = 0;   // of the filter tensor (one partial)
};

inline GradLaunch PlanWeightGrad(const Correlation& c) {
  GradLaunch l;
  const int KB = FilterBlock(c.Co), TX = c.taps[2];
  l.combos = c.taps[0] * c.taps[1];
  l.combos_per_block = std::min(l.combos, kGradMaxThreads);
  l.combo_groups = (l.combos + l.combos_per_block - 1) / l.combos_per_block;
  l.slices = 1;
  while (l.slices < kGradCols / kGradRun && l.combos_per_block * l.slices * 2 <= kGradMaxThreads) l.slices *= 2;
  l.filter_blocks = (c.Co + KB - 1) / KB;
  l.x_tiles = (c.PhaseWidth(0) + kGradCols - 1) / kGradCols;
  l.y_tiles = (c.out[1] + kGradRows - 1) / kGradRows;
  l.items = int64_t(c.dilate[2]) * c.N * c.out[0] * l.y_tiles * l.x_tiles;
  l.weight_elems = size_t(c.G) * c.Co * c.Ci * c.Taps();
  const int64_t by_bytes = std::max<int64_t>(1, int64_t(kGradMaxPartialBytes / sizeof(float) / std::max<size_t>(1, l.weight_elems)));
  l.chunks = int(std::min<int64_t>({l.items, kGradMaxChunks, by_bytes}));
  l.blocks = int64_t(l.chunks) * c.G * l.filter_blocks * c.Ci * l.combo_groups;
  const int64_t slab_rows = kGradRows + int64_t(c.taps[1] - 1) * c.dilate[1];
  const int64_t tiles = int64_t(KB) * kGradRows * kGradCols + int64_t(c.taps[0]) * slab_rows * RoundUp4(kGradCols + TX - 1);
  const int64_t reduce = int64_t(l.combos_per_block) * l.slices * KB * TX;
  l.shared_bytes = size_t(std::max(tiles, reduce)) * sizeof(float);
  return l;
}

inline size_t CorrelateSharedBytes(const Correlation& c) {
  const int KB = c.tile.filters, RX = c.tile.run;
  const int64_t rows = kThreadsY + int64_t(c.taps[1] - 1) * c.dilate[1];
  return size_t(rows * RoundUp4(kThreadsX * RX + c.taps[2] - 1) + int64_t(c.taps[1]) * c.taps[2] * KB) * sizeof(float);
}

inline int64_t CorrelateBlocks(const Correlation& c) {
  const int KB = c.tile.filters, BX = kThreadsX * c.tile.run;
  return int64_t((c.PhaseWidth(0) + BX - 1) / BX) * ((c.out[1] + kThreadsY - 1) / kThreadsY) *
         ((c.Co + KB - 1) / KB) * c.dilate[2] * c.out[0] * c.N * c.G;
}

// The correlation of `pass` (forward or data gradient; the weight gradient uses the forward's) of
// geometry g, or false with `why` when a size does not fit the kernels.
inline bool MakeCorrelation(const ConvGeometry& g, ConvPass pass, Correlation* c, std::string* why) {
  const bool data_grad = pass == ConvPass::kBackwardData;
  const detail::DirectPass p = detail::MakeDirectPass(g, data_grad ? ConvPass::kBackwardData : ConvPass::kForward);
  if (p.channels_last) {  // (its kernels read filters tap after tap: Correlation has no tap stride)
    if (why) *why = "it runs channels-first (NCHW) data only";
    return false;
  }
  auto fits = [](double v) { return v >= -double(INT_MAX) / 4 && v <= double(INT_MAX) / 4; };
  const double taps = double(p.taps[0]) * p.taps[1] * p.taps[2];
  bool ok = fits(double(p.N) * p.G * p.Ci * p.in[0] * p.in[1] * p.in[2]) &&
            fits(double(p.N) * p.G * p.Co * p.out[0] * p.out[1] * p.out[2]) && fits(double(p.G) * p.Co * p.Ci * taps);
  for (int i = 0; i < 3 && ok; ++i)
    ok = fits(double(p.taps[i]) * p.dilate[i]) && fits(double(p.origin[i])) && fits(double(p.in[i]) + p.out[i]);
  if (!ok) {
    if (why) *why = "its sizes do not fit its 32-bit indices";
    return false;
  }
  Correlation& r = *c;
  r.N = int(p.N), r.G = int(p.G), r.Ci = int(p.Ci), r.Co = int(p.Co);
  for (int i = 0; i < 3; ++i)
    r.in[i] = int(p.in[i]), r.out[i] = int(p.out[i]), r.taps[i] = int(p.taps[i]), r.dilate[i] = int(p.dilate[i]),
    r.origin[i] = int(p.origin[i]);
  r.filter_g = int(p.filter_g), r.filter_co = int(p.filter_co), r.filter_ci = int(p.filter_ci);
  r.flip = p.flip;
  r.tile = HeuristicTile(r.Co);
  return true;
}

// The kernels (ops/cuda/conv_direct_kernels.cuh), compiled for float, half_t and bf16_t.
// output (add ? += : =) the correlation c of input with filters.
template <typename DType>
void Correlate(const Correlation& c, const DType* input, const DType* filters, DType* output, bool add,
               cudaStream_t stream);
// weight_grad (add ? += : =) the forward correlation's weight gradient; partials holds
// PlanWeightGrad(c).chunks * weight_elems floats.
template <typename DType>
void WeightGrad(const Correlation& c, const DType* input, const DType* out_grad, DType* weight_grad, bool add,
                float* partials, cudaStream_t stream);

#define TE_GPU_DIRECT_DECLARE(DType)                                                                       \
  extern template void Correlate<DType>(const Correlation&, const DType*, const DType*, DType*, bool,    \
                                        cudaStream_t);                                                   \
  extern template void WeightGrad<DType>(const Correlation&, const DType*, const DType*, DType*, bool, float*, \
                                         cudaStream_t);
TE_GPU_DIRECT_DECLARE(float)
TE_GPU_DIRECT_DECLARE(half_t)
TE_GPU_DIRECT_DECLARE(bf16_t)
#undef TE_GPU_DIRECT_DECLARE

template <typename DType>
constexpr bool kDType = std::is_same<DType, float>::value || std::is_same<DType, half_t>::value ||
                        std::is_same<DType, bf16_t>::value;

}  // namespace gpu_direct

// Channels-first dense data, stride 1, taps along x of 1, 3, 5 or 7; any dilation, padding and groups,
// 1-D to 3-D; float, half and bf16 (float arithmetic). Constructed without a tile it is "gpu_direct",
// whose forward and data gradient take HeuristicTile; with one of kRegisterTiles it is the tuner's
// "gpu_direct_<filters>x<run>", which runs those two passes with that tile only.
template <typename DType>
class ConvGpuDirect : public ConvAlgorithm<gpu, DType> {
 public:
  ConvGpuDirect() = default;
  explicit ConvGpuDirect(gpu_direct::RegisterTile tile)
      : fixed_(true), tile_(tile),
        name_("gpu_direct_" + std::to_string(tile.filters) + "x" + std::to_string(tile.run)) {}

  const char* Name() const override { return name_.c_str(); }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    std::string why;
    return Supports(pr, pass, &why) ? ConvSupport::Yes() : ConvSupport::No(why);
  }
  // Few input channels per group (what im2col's forward GEMM is as deep as, and what implicit GEMM would
  // pad to a tensor core's width) and no more workspace than im2col_gemm's under the same cap
  // (ConvolutionWorkspaceBytes stays an upper bound); the data gradient also not too many filters (its
  // depth there: with 32 of them, on the 256^3 volume, the backward is 48 ms against im2col_gemm's 182).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    if (fixed_ || !Supports(pr, pass, nullptr) || pr.geom.Cg() > 4) return false;
    const size_t column_bytes = size_t(PlanIm2Col(pr.geom, sizeof(DType), pr.workspace_limit).col_elems) * sizeof(DType);
    if (WorkspaceBytes(pr, ConvStores::Only(ConvPass::kBackwardWeight, ReqStore{true, false})) > column_bytes)
      return false;
    return pass != ConvPass::kBackwardData || pr.geom.Kg() <= 32;
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& stores) const override {
    // Only the weight gradient takes workspace, and a tuner's variant refuses that pass.
    gpu_direct::Correlation c;
    if (fixed_ || !stores.weight_grad.active || !gpu_direct::MakeCorrelation(pr.geom, ConvPass::kForward, &c, nullptr))
      return 0;
    const gpu_direct::GradLaunch l = gpu_direct::PlanWeightGrad(c);
    return size_t(l.chunks) * l.weight_elems * sizeof(float);
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<gpu>* stream) const override {
    if constexpr (gpu_direct::kDType<DType>) {
      const cudaStream_t cs = Stream<gpu>::GetStream(stream);
      gpu_direct::Correlation c;
      if (st.out.active) {
        TE_CHECK(Make(pr.geom, ConvPass::kForward, &c, nullptr), Name(), ": sizes");
        gpu_direct::Correlate(c, t.data, t.weight, t.out, st.out.add, cs);
      }
      if (st.data_grad.active) {
        TE_CHECK(Make(pr.geom, ConvPass::kBackwardData, &c, nullptr), Name(), ": sizes");
        gpu_direct::Correlate(c, t.out_grad, t.weight, t.data_grad, st.data_grad.add, cs);
      }
      if (st.weight_grad.active) {
        TE_CHECK(gpu_direct::MakeCorrelation(pr.geom, ConvPass::kForward, &c, nullptr), "gpu_direct: sizes");
        gpu_direct::WeightGrad(c, t.data, t.out_grad, t.weight_grad, st.weight_grad.add,
                               static_cast<float*>(workspace), cs);
      }
    } else {
      (void)pr, (void)t, (void)st, (void)workspace, (void)stream;
      Fail(Name(), " runs float, half_t and bf16_t only");
    }
  }

 private:
  bool fixed_ = false;              // a tuner's variant: tile_ for the forward and the data gradient
  gpu_direct::RegisterTile tile_;
  std::string name_ = "gpu_direct";

  // The correlation of `pass`, with this algorithm's tile.
  bool Make(const ConvGeometry& g, ConvPass pass, gpu_direct::Correlation* c, std::string* why) const {
    if (!gpu_direct::MakeCorrelation(g, pass, c, why)) return false;
    if (fixed_) c->tile = tile_;
    return true;
  }

  bool Supports(const ConvProblem& pr, ConvPass pass, std::string* why) const {
    auto no = [why](const char* text) {
      if (why) *why = text;
      return false;
    };
    const ConvGeometry& g = pr.geom;
    if (!gpu_direct::kDType<DType>) return no("it runs float, half and bf16 only");
    if (g.channels_last) return no("it runs channels-first (NCHW) data only");
    if (!pr.data_contiguous) return no("it reads dense rows only (the input has padded rows)");
    for (int i = 0; i < 3; ++i)
      if (g.stride[i] != 1) return no("it runs stride 1 only");
    if (!gpu_direct::TapsXSupported(g.kernel[2])) return no("it runs 1, 3, 5 or 7 taps along x only");
    if (fixed_ && pass == ConvPass::kBackwardWeight)
      return no("its tile shapes the forward and the data gradient only (the weight gradient is gpu_direct's)");
    gpu_direct::Correlation c;
    if (!Make(g, pass, &c, why)) return false;
    if (pass == ConvPass::kBackwardWeight) {
      const gpu_direct::GradLaunch l = gpu_direct::PlanWeightGrad(c);
      if (l.shared_bytes > gpu_direct::kMaxSharedBytes)
        return no("the input rows its weight-gradient tile reads do not fit in shared memory");
      if (l.blocks > INT_MAX) return no("its weight-gradient grid is too large");
    } else {
      if (gpu_direct::CorrelateSharedBytes(c) > gpu_direct::kMaxSharedBytes)
        return no("the input rows its tile reads do not fit in shared memory");
      if (gpu_direct::CorrelateBlocks(c) > INT_MAX) return no("its grid is too large");
    }
    return true;
  }
};

}  // namespace ops
}  // namespace tensorexpr
