// ops/cuda/conv_strided_dgrad.h — "gpu_strided_dgrad": the data gradient of a strided 2-D convolution with
// few input channels (a network's stem: 3 channels, 7 x 7, stride 2) computed directly on the GPU. There
// im2col_gemm writes a column buffer of kernel-area times the input (236 MB for ResNet-50's stem at N = 32)
// only to add it back up, and implicit GEMM pads the three channels to a tensor core's width.
//
// Stride s splits the data gradient into s_y * s_x phases. The inputs y = s_y * j + p_y (and likewise
// along x) receive the output gradient only through the taps ky = (p_y + pad_y) mod s_y + s_y * a, a <
// ceil(taps_y / s_y) of them, from the outputs oy = j + q_y - a: each phase is a stride-1 correlation of
// the output gradient with a sub-filter of at most ceil(taps / s) taps per dimension, and no thread of a
// phase tests or multiplies a tap the phase does not have. A block takes one phase of one image; a thread
// keeps a register tile of kRows x kCols inputs of that phase times every input channel, and for each
// filter loads the output gradient's window under its tile once (every loaded value feeds up to taps_y *
// taps_x * C products); the phase's sub-filters of a chunk of filters sit in shared memory, read by every
// thread of the block at once. The most taps per phase (1 to 4) and the channels (1 to 4) are
// compile-time, so the products unroll into a straight run of FMAs.
//
// The kernel reads the output gradient channels first, each filter's plane in rows. A channels-last one is
// transposed so through the workspace first: read in place, neighbouring threads' loads lay a whole pixel
// of filters apart, and ResNet-50's stem took 2.0 ms against 0.51 channels first (fp32, H200, N = 32).
// The input gradient and the weight are read and written in either layout.
//
// The kernels (conv_strided_dgrad_kernels.cuh) are compiled for float, half_t and bf16_t in units of
// their own (conv_strided_dgrad_*.cu); all arithmetic is in float, each result rounded once.
#pragma once
#include <climits>
#include <string>
#include <type_traits>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/expr/transpose.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {
namespace strided_dgrad {

constexpr int kMaxChannels = 4;     // input channels (the data gradient's outputs) per thread
constexpr int kMaxPhaseTaps = 4;    // taps per phase and dimension: ceil(taps / stride)
constexpr int kRows = 2, kCols = 4;  // a thread's tile of one phase's inputs
constexpr int kThreadsX = 32, kThreadsY = 4;
constexpr int kFilterChunk = 32;    // filters whose sub-filters a block holds in shared memory at once

template <typename DType>
constexpr bool kDType = std::is_same<DType, float>::value || std::is_same<DType, half_t>::value ||
                        std::is_same<DType, bf16_t>::value;

// One data gradient: dx (N, C, H, W) from dy (N, K, OH, OW) and the weight (K, C, R, S); channels last,
// dx (N, H, W, C) and the weight (K, R, S, C), dy still (N, K, OH, OW) (staged by the algorithm); dense.
struct Problem {
  int N = 0, C = 0, K = 0, H = 0, W = 0, OH = 0, OW = 0, R = 1, S = 1;
  int stride_y = 1, stride_x = 1, pad_y = 0, pad_x = 0;
  bool channels_last = false;

  TE_XINLINE int Phases() const { return stride_y * stride_x; }
  // The most taps any phase has along y / x, and the larger of the two (the kernel's compile-time bound).
  TE_XINLINE int PhaseTapsY() const { return (R + stride_y - 1) / stride_y; }
  TE_XINLINE int PhaseTapsX() const { return (S + stride_x - 1) / stride_x; }
  TE_XINLINE int PhaseTaps() const { return PhaseTapsY() > PhaseTapsX() ? PhaseTapsY() : PhaseTapsX(); }
  // Inputs per phase along y / x (the most of any phase).
  TE_XINLINE int PhaseRows() const { return (H + stride_y - 1) / stride_y; }
  TE_XINLINE int PhaseCols() const { return (W + stride_x - 1) / stride_x; }

  // Element offsets of the weight (k, c, ky, kx) and dx (n, c, y, x) in the layout.
  TE_XINLINE index_t WeightAt(int k, int c, int ky, int kx) const {
    return channels_last ? ((index_t(k) * R + ky) * S + kx) * C + c : ((index_t(k) * C + c) * R + ky) * S + kx;
  }
  TE_XINLINE index_t DataGradAt(int n, int c, int y, int x) const {
    return channels_last ? ((index_t(n) * H + y) * W + x) * C + c : ((index_t(n) * C + c) * H + y) * W + x;
  }
};

// The data gradient of geometry g as a Problem, or false with the reason in *why.
inline bool MakeProblem(const ConvGeometry& g, Problem* p, std::string* why) {
  auto no = [why](const char* text) {
    if (why) *why = text;
    return false;
  };
  if (!g.IsPlanar()) return no("it runs 1-D and 2-D convolutions only");
  if (g.G != 1) return no("it runs one group only");
  if (g.C > kMaxChannels) return no("it runs 4 input channels or fewer only");
  if (g.dilate[1] != 1 || g.dilate[2] != 1) return no("it runs undilated kernels only");
  if (g.stride[1] < 2 && g.stride[2] < 2) return no("it runs strided convolutions only (stride 2 or more)");
  const index_t limit = INT_MAX / 4;
  for (index_t v : {g.N, g.K, g.in[1], g.in[2], g.out[1], g.out[2], g.kernel[1], g.kernel[2], g.stride[1],
                    g.stride[2], g.pad[1], g.pad[2]})
    if (v > limit) return no("its sizes are limited to 2^29 per dimension");
  Problem q;
  q.N = int(g.N), q.C = int(g.C), q.K = int(g.K), q.H = int(g.in[1]), q.W = int(g.in[2]);
  q.OH = int(g.out[1]), q.OW = int(g.out[2]), q.R = int(g.kernel[1]), q.S = int(g.kernel[2]);
  q.stride_y = int(g.stride[1]), q.stride_x = int(g.stride[2]), q.pad_y = int(g.pad[1]), q.pad_x = int(g.pad[2]);
  q.channels_last = g.channels_last;
  if (index_t(q.K) * q.OH * q.OW > INT_MAX || index_t(q.C) * q.H * q.W > INT_MAX)
    return no("it runs images of under 2^31 elements only");
  if (q.PhaseTaps() > kMaxPhaseTaps) return no("it runs kernels of at most 4 taps per stride along each axis only");
  if ((index_t(q.PhaseRows()) + kThreadsY * kRows - 1) / (kThreadsY * kRows) > cuda::kMaxGridYZ)
    return no("its grid is too large (too many input rows)");
  // The blocks' loop over (image, phase) counts in int, up to one grid's z past the last.
  if (index_t(q.N) * q.stride_y * q.stride_x > INT_MAX - cuda::kMaxGridYZ)
    return no("its grid is too large (too many images times phases)");
  *p = q;
  return true;
}

// dx (add ? += : =) the data gradient of p from dy and the weight, queued on `stream`.
template <typename DType>
void DataGrad(const Problem& p, const DType* out_grad, const DType* weight, DType* data_grad, bool add,
              cudaStream_t stream);

#define TE_STRIDED_DGRAD_DECLARE(DType) \
  extern template void DataGrad<DType>(const Problem&, const DType*, const DType*, DType*, bool, cudaStream_t);
TE_STRIDED_DGRAD_DECLARE(float)
TE_STRIDED_DGRAD_DECLARE(half_t)
TE_STRIDED_DGRAD_DECLARE(bf16_t)
#undef TE_STRIDED_DGRAD_DECLARE

}  // namespace strided_dgrad

// The data gradient only (the forward and the weight gradient go to other algorithms): 1-D or 2-D, one
// group, at most 4 input channels, stride 2 or more along some axis, undilated, at most 4 taps per stride
// (a 7x7 kernel at stride 2, 11x11 at stride 4), dense data in either layout; float, half and bf16.
template <typename DType>
class ConvGpuStridedDataGrad : public ConvAlgorithm<gpu, DType> {
 public:
  const char* Name() const override { return "gpu_strided_dgrad"; }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    if (!strided_dgrad::kDType<DType>) return ConvSupport::No("it runs float, half and bf16 only");
    if (pass != ConvPass::kBackwardData) return ConvSupport::No("it computes the data gradient only");
    if (!pr.data_contiguous) return ConvSupport::No("it writes dense rows only (the input has padded rows)");
    strided_dgrad::Problem p;
    std::string why;
    return strided_dgrad::MakeProblem(pr.geom, &p, &why) ? ConvSupport::Yes() : ConvSupport::No(why);
  }
  // Float, channels first (strict or TF32) or strict in channels last. ResNet-50's stem (TE_CONV_TUNE=1
  // TE_LOG=conv bench/conv_bench --split, H200, N = 32): channels first 0.51 ms against im2col_gemm's 0.80
  // (strict) and 0.70 (TF32) and cuDNN's 0.53; channels last, the output gradient staged, 0.61 against
  // im2col_gemm's 0.77 strict but 0.56 in TF32. In half and bf16 CUTLASS's tensor cores were faster
  // (0.50 against 0.71 channels first, 0.41 against 0.77 channels last).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    return std::is_same<DType, float>::value && (!pr.geom.channels_last || pr.math == ConvMath::kStrict) &&
           CanImplement(pr, pass).ok;
  }
  // A channels-last output gradient, staged channels first.
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    const ConvGeometry& g = pr.geom;
    return st.data_grad.active && g.channels_last ? size_t(g.N * g.K * g.OutSize()) * sizeof(DType) : 0;
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<gpu>* stream) const override {
    TE_CHECK(!st.out.active && !st.weight_grad.active, Name(), " computes the data gradient only");
    if (!st.data_grad.active) return;
    if constexpr (strided_dgrad::kDType<DType>) {
      strided_dgrad::Problem p;
      std::string why;
      TE_CHECK(strided_dgrad::MakeProblem(pr.geom, &p, &why), Name(), ": ", why);
      const DType* out_grad = t.out_grad;
      const index_t N = p.N, K = p.K, P = index_t(p.OH) * p.OW;
      if (p.channels_last && N * K * P > 0) {  // (N, P, K) -> (N, K, P)
        DType* const staged = static_cast<DType*>(workspace);
        Tensor<gpu, 3, DType>(staged, Shape3(N, K, P), stream) = expr::transpose(
            Tensor<gpu, 3, DType>(const_cast<DType*>(t.out_grad), Shape3(N, P, K), stream), Shape3(0, 2, 1));
        out_grad = staged;
      }
      strided_dgrad::DataGrad(p, out_grad, t.weight, t.data_grad, st.data_grad.add, Stream<gpu>::GetStream(stream));
    } else {
      (void)pr, (void)t, (void)workspace, (void)stream;
      Fail(Name(), " runs float, half_t and bf16_t only");
    }
  }
};

}  // namespace ops
}  // namespace tensorexpr
