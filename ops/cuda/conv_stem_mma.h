// ops/cuda/conv_stem_mma.h — "gpu_stem_mma": the forward of a 16-bit convolution on few input channels (a
// network's stem: 3 channels, 7 x 7, stride 2) on tensor cores, reading the input rows straight from
// shared memory as the product's rows, without a column buffer. im2col_gemm writes and rereads one of
// kernel-area times the input (118 MB for ResNet-50's stem at N = 32), and CUTLASS's implicit GEMM pads
// the three channels to a vector of 8 and, channels first, transposes the input and output around it.
//
// The layout that makes the input rows a matrix: each run of stride_x adjacent input columns becomes one
// "folded" column of 8 lanes, stride_x sub-columns of 8 / stride_x channel slots (3 channels in slots of
// 4 at stride 2), zeros in the unused slots and in the padding. Output pixel ox's taps along x then read
// the folded columns ox, ox + 1, ..., ox + Qf - 1 (Qf = (S - 1) / stride_x + 1): 8 Qf entries that lie
// contiguous in shared memory, 16 bytes after pixel ox - 1's. So for kernel row r the pixels' patches are
// a row-major matrix of leading dimension 8 over the staged input row, overlapping rows, which the tensor
// cores read as it lies (ldmatrix takes each matrix row's address from its own lane). The filters are laid
// out in the same lanes, zeros for the missing taps and channels, and the product sums over kernel rows and
// 16-entry steps of each.
//
// A zero tap still multiplies the staged value under it: an infinite or NaN input reaches, besides the
// outputs whose window holds it, those whose folded columns do (a 7-wide kernel at stride 2 reads 8
// columns: the output whose window ends one column before it), as NaN.
//
// A block holds kFilterTile filters (and their bias) in shared memory for its whole run and walks a run of
// consecutive work items: a tile of up to kPixelTile output pixels of one output row, the rows of one tile
// in turn, so that the next row's item finds R - stride_y of its R input rows staged (a ring of R rows;
// undilated along y) and stages the rest (the padding as zeros). It multiplies on tensor cores (mma m16n8k16,
// float accumulation; a warp per 32 pixels times every filter of the block) and stores from the
// accumulators, pairs of adjacent outputs at once, with the epilogue act(conv + bias + residual) and the req
// applied.
//
// Half and bf16 (the mma instructions need compute capability 8.0: the kernel's compiled code must be sm_80
// or newer, which CanImplement asks of the CUDA runtime). The kernels (conv_stem_mma_kernels.cuh) are
// compiled per dtype in units of their own (conv_stem_mma_*.cu).
#pragma once
#include <climits>
#include <string>
#include <type_traits>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {
namespace stem_mma {

constexpr int kLanes = 8;         // entries of a folded column: one 16-byte vector of 16-bit values
constexpr int kPixelTile = 128;   // output pixels of one row per work item
constexpr int kFilterTile = 64;   // filters per block
constexpr int kWarpPixels = 32;   // a warp's pixels, times every filter of the block
constexpr int kWarps = kPixelTile / kWarpPixels;
constexpr int kBlocksPerSm = 4;   // the blocks an SM holds at once, which bounds the registers per thread
constexpr int kMaxReduction = 1024;  // kernel rows times padded entries per row, at most

template <typename DType>
constexpr bool kDType = std::is_same<DType, half_t>::value || std::is_same<DType, bf16_t>::value;

// One forward: y (N, K, OH, OW) from x (N, C, H, W) and the weight (K, C, R, S); channels last, x (N, H, W,
// C), the weight (K, R, S, C) and y (N, OH, OW, K); dense.
struct Problem {
  int N = 0, C = 0, K = 0, H = 0, W = 0, OH = 0, OW = 0, R = 1, S = 1;
  int stride_y = 1, stride_x = 1, pad_y = 0, pad_x = 0, dilate_y = 1;
  bool channels_last = false;

  // Channel slots per sub-column of a folded column (kLanes / stride_x), a power of two: lane l is sub-column
  // l >> SlotBits(), channel l & (Slots() - 1) (shifts: the kernels split every lane so, and a division costs
  // ~20 instructions). MakeProblem takes strides along x of 1, 2, 4 and 8 only.
  TE_XINLINE int Slots() const { return 1 << SlotBits(); }
  TE_XINLINE int SlotBits() const { return stride_x == 1 ? 3 : stride_x == 2 ? 2 : stride_x == 4 ? 1 : 0; }
  // Folded columns one pixel's taps along x read, and a kernel row's entries padded to whole mma steps (16).
  TE_XINLINE int FoldedTaps() const { return (S - 1) / stride_x + 1; }
  TE_XINLINE int RowEntries() const { return (FoldedTaps() * kLanes + 15) / 16 * 16; }
  TE_XINLINE int Reduction() const { return R * RowEntries(); }
  // A staged input row: the tile's pixels' folded columns plus those the last step past them reads.
  TE_XINLINE int StagedColumns() const { return kPixelTile + RowEntries() / kLanes; }
  // A filter's row in shared memory, skewed by 8 entries (an odd number of 16-byte units apart) so that the
  // 8 rows of one ldmatrix fall on different banks.
  TE_XINLINE int FilterRow() const { return Reduction() + 8; }
  TE_XINLINE int TilesPerRow() const { return (OW + kPixelTile - 1) / kPixelTile; }
  TE_XINLINE index_t Items() const { return index_t(N) * OH * TilesPerRow(); }
  TE_XINLINE int FilterTiles() const { return (K + kFilterTile - 1) / kFilterTile; }
  // Shared memory: the ring of staged input rows [R][StagedColumns()][kLanes], the block's filters
  // [kFilterTile][FilterRow()], their bias as float [kFilterTile].
  TE_XINLINE size_t FiltersAt() const { return size_t(R) * StagedColumns() * kLanes * 2; }
  TE_XINLINE size_t BiasAt() const { return FiltersAt() + size_t(kFilterTile) * FilterRow() * 2; }
  TE_XINLINE size_t SharedBytes() const { return BiasAt() + kFilterTile * sizeof(float); }
};

// The forward of geometry g as a Problem, or false with the reason in *why.
inline bool MakeProblem(const ConvGeometry& g, Problem* p, std::string* why) {
  auto no = [why](const char* text) {
    if (why) *why = text;
    return false;
  };
  if (!g.IsPlanar()) return no("it runs 1-D and 2-D convolutions only");
  if (g.G != 1) return no("it runs one group only");
  if (g.dilate[2] != 1) return no("it runs kernels undilated along x only");
  const index_t stride_x = g.stride[2];
  if (stride_x != 1 && stride_x != 2 && stride_x != 4 && stride_x != 8)
    return no("it runs strides along x of 1, 2, 4 or 8 only");
  if (g.C * stride_x > kLanes) return no("it runs input channels times the stride along x of at most 8 only");
  const index_t limit = INT_MAX / 4;
  for (index_t v : {g.N, g.K, g.in[1], g.in[2], g.out[1], g.out[2], g.kernel[1], g.kernel[2], g.stride[1],
                    g.pad[1], g.pad[2], g.pad_end[1], g.pad_end[2], g.dilate[1]})
    if (v > limit) return no("its sizes are limited to 2^29 per dimension");
  Problem q;
  q.N = int(g.N), q.C = int(g.C), q.K = int(g.K), q.H = int(g.in[1]), q.W = int(g.in[2]);
  q.OH = int(g.out[1]), q.OW = int(g.out[2]), q.R = int(g.kernel[1]), q.S = int(g.kernel[2]);
  q.stride_y = int(g.stride[1]), q.stride_x = int(stride_x), q.pad_y = int(g.pad[1]), q.pad_x = int(g.pad[2]);
  q.dilate_y = int(g.dilate[1]);
  q.channels_last = g.channels_last;
  if (index_t(q.R) * q.RowEntries() > kMaxReduction)
    return no("it runs kernel rows times folded taps of at most 1024 entries only");
  // An image's offsets are int; its padded columns (folded, plus the last tile's reach past the row) too.
  if (g.in[1] * g.in[2] * g.C > INT_MAX / 2 || g.out[2] + q.StagedColumns() > INT_MAX / (2 * kLanes))
    return no("it runs images of under 2^30 elements only");
  if (q.FilterTiles() > cuda::kMaxGridYZ) return no("it runs at most 65535 x 64 filters");
  *p = q;
  return true;
}

// The epilogue as the kernel applies it: out (add ? += : =) act(conv + bias[k] + residual).
template <typename DType>
struct Store {
  const DType* bias = nullptr;
  const DType* residual = nullptr;  // like the output
  bool relu = false, add = false;
  bool paired = false;  // set by Forward: output pairs are 4-byte aligned (adjacent filters or pixels)

  // The conv, its bias and relu only, in pairs: the kernels' short store.
  bool Plain() const { return paired && residual == nullptr && !add; }
};

// y = the forward of p from x and the weight, stored per `store`, queued on `stream`.
template <typename DType>
void Forward(const Problem& p, const DType* x, const DType* weight, DType* y, const Store<DType>& store,
             cudaStream_t stream);
// The compute capability (major * 10 + minor) the kernel code the current device runs was compiled for
// (its PTX's: JIT-compiled PTX of an older one has no tensor-core body), 0 when it has none it can run.
template <typename DType>
int KernelArch();
// The shared memory a block of the current device may opt in to, in bytes (0 when it cannot be read).
inline size_t SharedLimit() {
  try {
    return cuda::CurrentDeviceInfo().shared_per_block;
  } catch (const Error&) {
    return 0;
  }
}

#define TE_STEM_MMA_DECLARE(DType)                                                                            \
  extern template void Forward<DType>(const Problem&, const DType*, const DType*, DType*, const Store<DType>&, \
                                      cudaStream_t);                                                          \
  extern template int KernelArch<DType>();
TE_STEM_MMA_DECLARE(half_t)
TE_STEM_MMA_DECLARE(bf16_t)
#undef TE_STEM_MMA_DECLARE

}  // namespace stem_mma

// The forward only (the gradients go to other algorithms): 1-D or 2-D, one group, input channels times the
// stride along x at most 8 (strides 1, 2, 4 or 8 along x), undilated along x, any stride, padding and
// dilation along y, dense data in either layout; half and bf16 on GPUs of compute capability 8.0 or newer.
// It fuses every epilogue form with every req, and takes no workspace.
template <typename DType>
class ConvGpuStemMma : public ConvAlgorithm<gpu, DType> {
 public:
  const char* Name() const override { return "gpu_stem_mma"; }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    if constexpr (!stem_mma::kDType<DType>) {
      (void)pr, (void)pass;
      return ConvSupport::No("it runs half and bf16 only");
    } else {
      if (pass != ConvPass::kForward) return ConvSupport::No("it computes the forward only");
      if (!pr.data_contiguous) return ConvSupport::No("it reads dense rows only (the input has padded rows)");
      stem_mma::Problem p;
      std::string why;
      if (!stem_mma::MakeProblem(pr.geom, &p, &why)) return ConvSupport::No(why);
      if (stem_mma::KernelArch<DType>() < 80)
        return ConvSupport::No(
            "its tensor-core kernel needs compute capability 8.0 or newer (in the build and the GPU)");
      if (p.SharedBytes() > stem_mma::SharedLimit())
        return ConvSupport::No("its filters and rows take more shared memory than a block of this GPU may have");
      return ConvSupport::Yes();
    }
  }
  // A stem: at most 4 input channels, strided along x (what CUTLASS runs folded and im2col_gemm pads).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    return pass == ConvPass::kForward && pr.geom.C <= 4 && pr.geom.stride[2] >= 2;
  }
  size_t WorkspaceBytes(const ConvProblem&, const ConvStores&) const override { return 0; }
  bool FusesEpilogue(const ConvProblem& pr, const ConvEpilogue<DType>&, ReqStore) const override {
    return CanImplement(pr, ConvPass::kForward).ok;
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void*,
           Stream<gpu>* stream) const override {
    TE_CHECK(!st.data_grad.active && !st.weight_grad.active, Name(), " computes the forward only");
    if (!st.out.active) return;
    if constexpr (stem_mma::kDType<DType>) {
      stem_mma::Problem p;
      std::string why;
      TE_CHECK(stem_mma::MakeProblem(pr.geom, &p, &why), Name(), ": ", why);
      stem_mma::Store<DType> store;
      store.add = st.out.add;
      if (t.epilogue.active) {
        store.bias = t.epilogue.bias;
        store.residual = t.epilogue.residual;
        store.relu = t.epilogue.activation == ConvActivation::kRelu;
      }
      stem_mma::Forward(p, t.data, t.weight, t.out, store, Stream<gpu>::GetStream(stream));
    } else {
      (void)pr, (void)t, (void)stream;
      Fail(Name(), " runs half_t and bf16_t only");
    }
  }
};

}  // namespace ops
}  // namespace tensorexpr
