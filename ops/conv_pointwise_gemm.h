// ops/conv_pointwise_gemm.h — "pointwise_gemm": a 1x1(x1) kernel with stride 1 and no padding reads the
// input as the column matrix itself, so each pass is one grouped gemm with no im2col and no workspace.
//   forward      y_n[g] (Kg, P) = W[g] (Kg, Cg) . x_n[g] (Cg, P)
//   data grad    dX_n[g] (Cg, P) = W[g]^T (Cg, Kg) . dY_n[g] (Kg, P)
//   weight grad  dW[g] (Kg, Cg) (+)= sum over n of dY_n[g] (Kg, P) . x_n[g]^T (P, Cg)
// Channels-last data is the same products with the operands transposed (RunChannelsLast).
//
// Channels first on the GPU, images of fewer than pointwise::kNarrowImage pixels make per-image products
// too narrow for cuBLAS's tiles: ResNet-50's 1x1 layers at 7 x 7 (49 columns) ran at 1.2 to 2.6 times
// cuDNN's time that way in half, bf16 and TF32 (H200, N = 32), against 0.6 to 1.1 channels last, and at
// 14 x 14 (196 columns) each pass took about twice as long as the same layer channels last (fp16: 0.036
// to 0.047 ms against 0.018 to 0.020). There the batch is moved channels last through the workspace
// (tiled transposes), runs as one product of N x P rows, and the result is moved back with the req
// (RunStaged). At 28 x 28 the per-image products are within a third of channels last's time, less than
// the transposes would add.
//
// A strided 1x1 kernel (no padding) reads only every stride-th pixel: its passes are the same products
// on those pixels, gathered into the workspace by one strided copy (a quarter of the input at stride 2),
// then run as above (staged too where the gathered images are narrow); the data gradient computed there
// is spread back onto the input's grid, zeros at the pixels the kernel skips (ScatterPixels, col2im). That is one
// gemm for cuBLAS or OpenBLAS where an implicit GEMM walks the whole input's geometry, and for
// channels-first data transposes of a quarter of the input where the implicit GEMM stages all of it.
//
// On the GPU a channels-last forward with one group takes the convolution's epilogue (bias, residual,
// relu) into the gemm's store (ops/gemm_epilogue.h, cuBLASLt), where the operator would otherwise run
// it as a pass over the output: one product of N x P rows, K columns, the bias along K. A staged
// channels-first forward takes bias and relu into its channels-last product's store the same way (where
// cuBLASLt has no kernel, it applies them to the result as it moves it back); one
// run image by image takes the whole form into CUTLASS's row-bias gemm (Hopper, half and bf16, and float
// under TF32 math: cuda/cutlass/row_bias_gemm.h), whose bias runs along the rows of each image's (K, P)
// output.
#pragma once
#include <climits>
#include <cstdint>
#include <type_traits>
#include <tensorexpr/gemm.h>
#include <tensorexpr/patch.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include <tensorexpr/ops/conv_epilogue_map.h>
#include "gemm_epilogue.h"
#if defined(__CUDACC__) && defined(TE_HAVE_CUTLASS)
#include "cuda/cutlass/row_bias_gemm.h"
#endif

namespace tensorexpr {
namespace ops {
namespace pointwise {

constexpr index_t kNarrowImage = 256;

// A 1x1(x1) kernel without padding whose stride is more than 1 somewhere.
inline bool IsStrided(const ConvGeometry& g) { return g.IsOneByOne() && !g.IsPointwise(); }
// The geometry on a strided kernel's gathered pixels: the input is the output's size, the stride 1.
inline ConvGeometry Gathered(ConvGeometry g) {
  for (int i = 0; i < 3; ++i) g.in[i] = g.out[i], g.stride[i] = 1;
  return g;
}
// n elements rounded up to 64, so that what follows them in the workspace starts as aligned as it does
// (cuBLAS takes its fastest kernels on 16-byte-aligned operands).
inline index_t Aligned(index_t n) { return SaturatingAdd(n, 63) / 64 * 64; }
// The gathered pixels of a strided kernel, (N, C, P) or (N, P, C), as laid out in the workspace.
inline index_t GatheredElems(const ConvGeometry& g) {
  return Aligned(SaturatingMul(SaturatingMul(g.N, g.C), g.OutSize()));
}
// Where y starts among the staged copies (after x).
inline index_t StagedInputElems(const ConvGeometry& g) {
  return Aligned(SaturatingMul(SaturatingMul(g.N, g.OutSize()), g.C));
}

// The elements a channels-first problem is staged through on the GPU, x (N, P, C) then y (N, P, K); 0
// where it runs per image: wide images, one image, or a workspace limit that does not admit the copies.
inline index_t StagedElems(const ConvGeometry& g, size_t limit_bytes, size_t dtype_bytes) {
  if (g.channels_last || g.N < 2 || g.OutSize() >= kNarrowImage) return 0;
  const index_t elems = SaturatingAdd(StagedInputElems(g), SaturatingMul(SaturatingMul(g.N, g.OutSize()), g.K));
  return static_cast<size_t>(elems) <= limit_bytes / dtype_bytes ? elems : 0;
}

// All the workspace a GPU run takes (a strided kernel's gathered pixels, then the staged copies), in
// elements: what ConvolutionWorkspaceBytes bounds whatever the device. 0 where the gathered pixels exceed
// the limit: selection then refuses the algorithm, which never gathers in pieces.
inline index_t GpuWorkspaceElems(const ConvGeometry& g, size_t limit_bytes, size_t dtype_bytes) {
  if (!IsStrided(g)) return StagedElems(g, limit_bytes, dtype_bytes);
  const index_t gathered = GatheredElems(g);
  if (static_cast<size_t>(gathered) > limit_bytes / dtype_bytes) return 0;
  const size_t used = static_cast<size_t>(gathered) * dtype_bytes;
  return SaturatingAdd(gathered, StagedElems(Gathered(g), limit_bytes > used ? limit_bytes - used : 0, dtype_bytes));
}

// The row-bias gemm (cuda/cutlass/row_bias_gemm.h) that takes a channels-first forward's whole epilogue
// image by image, for DType on Device under `math`: none, but on the GPU in nvcc builds with CUTLASS for
// half and bf16, and for float under TF32 math (its kernels round to TF32; strict float and 3xTF32 keep
// their accuracy elsewhere). Specialised below; the class using it reads the same everywhere.
template <typename Device, typename DType>
struct RowBias {
  static bool Takes(const ConvGeometry&, ConvMath, const ConvEpilogue<DType>&) { return false; }
  static void Run(const ConvGeometry&, ConvMath, const ConvTensors<DType>&, ReqStore, Stream<Device>*) {
    TE_CHECK(false, "pointwise_gemm: no row-bias gemm for a channels-first epilogue in this build and dtype");
  }
};

#if defined(__CUDACC__) && defined(TE_HAVE_CUTLASS)
template <typename DType>
struct RowBiasCutlass {
  static constexpr cutlass_conv::Element kElement = std::is_same<DType, half_t>::value   ? cutlass_conv::Element::kF16
                                                    : std::is_same<DType, bf16_t>::value ? cutlass_conv::Element::kBF16
                                                                                         : cutlass_conv::Element::kF32;
  // A channels-first forward of one group as the gemm's product: M filters, N pixels, a reduction over the
  // channels, the images as the batch.
  static cutlass_gemm::RowBiasShape ShapeOf(const ConvGeometry& g) {
    cutlass_gemm::RowBiasShape s;
    s.M = int(g.K), s.N = int(g.OutSize()), s.K = int(g.C), s.L = int(g.N);
    return s;
  }
  // The compiled kernel for g's forward with ep's activation under `math` on this device: of those that
  // can run g, the one whose tiles' filters cover the filters most closely (64 filters: the 64-filter
  // tile, not half of a 128-filter one), else the one of the most filters; null where none can, or a size
  // does not fit its 32-bit problem size.
  static const cutlass_gemm::RowBiasKernel* KernelFor(const ConvGeometry& g, ConvMath math, const ConvEpilogue<DType>& ep) {
    if (g.G != 1) return nullptr;
    if (std::is_same<DType, float>::value && math != ConvMath::kTF32) return nullptr;
    for (index_t v : {g.K, g.OutSize(), g.C, g.N})
      if (v > INT_MAX) return nullptr;
    const auto epilogue = ep.activation == ConvActivation::kRelu ? cutlass_conv::Epilogue::kBiasRelu
                                                                  : cutlass_conv::Epilogue::kBias;
    const int sm = cuda::CurrentDeviceInfo().major * 10 + cuda::CurrentDeviceInfo().minor;
    const cutlass_gemm::RowBiasKernel* best = nullptr;
    auto better = [&g](const cutlass_gemm::RowBiasKernel& k, const cutlass_gemm::RowBiasKernel& than) {
      const bool covers = k.tile_m >= g.K, than_covers = than.tile_m >= g.K;
      if (covers != than_covers) return covers;
      return covers ? k.tile_m < than.tile_m : k.tile_m > than.tile_m;
    };
    for (const cutlass_gemm::RowBiasKernel& k : cutlass_gemm::CompiledRowBiasKernels())
      if (k.element == kElement && k.epilogue == epilogue && k.sm == sm && (best == nullptr || better(k, *best)) &&
          k.why_not(ShapeOf(g)).empty())
        best = &k;
    return best;
  }
  static bool Takes(const ConvGeometry& g, ConvMath math, const ConvEpilogue<DType>& ep) {
    return KernelFor(g, math, ep) != nullptr;
  }
  // out (req) = act(W . x_n + bias + residual) image by image in the gemm's store: the residual as its
  // source, or the output itself when adding (FusesEpilogue: then no residual and no relu).
  static void Run(const ConvGeometry& g, ConvMath math, const ConvTensors<DType>& t, ReqStore out, Stream<gpu>* s) {
    const cutlass_gemm::RowBiasKernel* k = KernelFor(g, math, t.epilogue);
    TE_CHECK(k != nullptr, "pointwise_gemm: no row-bias gemm runs this channels-first forward with its epilogue");
    const cutlass_gemm::RowBiasShape shape = ShapeOf(g);
    cutlass_gemm::RowBiasOperands o;
    o.a = t.weight, o.b = t.data, o.d = t.out, o.bias = t.epilogue.bias;
    o.source = out.add ? nullptr : t.epilogue.residual;
    o.beta = out.add || t.epilogue.residual != nullptr ? 1.0f : 0.0f;
    const cudaStream_t stream = Stream<gpu>::GetStream(s);
    cuda::TempBuffer workspace(k->workspace_bytes(shape), stream);
    k->run(shape, o, workspace.get(), stream);
    workspace.Release();
  }
};
template <>
struct RowBias<gpu, half_t> : RowBiasCutlass<half_t> {};
template <>
struct RowBias<gpu, bf16_t> : RowBiasCutlass<bf16_t> {};
template <>
struct RowBias<gpu, float> : RowBiasCutlass<float> {};
#endif

}  // namespace pointwise

template <typename Device, typename DType>
class ConvPointwiseGemm : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return "pointwise_gemm"; }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    if (pointwise::IsStrided(pr.geom)) return ConvSupport::Yes();  // on the gathered pixels
    if (!pr.geom.IsPointwise()) return ConvSupport::No("the kernel is not 1x1 with stride 1 and no padding");
    if (!pr.data_contiguous) return ConvSupport::No("the input or its gradient has padded rows");
    return ConvSupport::Yes();
  }
  // A strided kernel on the GPU: the forward and the data gradient of channels-first data, where the
  // implicit GEMM stages the whole input (ResNet-50's 1x1 stride-2 layers' data gradients took 1.0 to 1.9
  // times cuDNN's time that way, 0.78 to 0.96 times here: NCHW fp16, H200, N = 32); the weight gradient
  // where those layers measured it ahead of cutlass_implicit_gemm: channels last in 16 bits, large filters
  // over a short reduction (WeightGradIsShortAndWide: 7 x 7 outputs, 0.027 and 0.033 ms against 0.028 and 0.050;
  // 14 x 14 outputs of 512 x 1024 values lost, 0.050 against 0.038, fp16); in TF32, filters of 512 x 1024
  // values or more (0.079 and 0.061 ms against 0.086 and 0.097 at 1024 and 2048 filters, 0.043 against
  // 0.041 at 512; smaller ones spend longer gathering than the implicit GEMM takes in all); channels first
  // below 2048 x 1024, where per-image products' partial sums cost more, or where the
  // gathered images are staged into one product. Every pass of float's channels-last layers under 3xTF32
  // and the forward and weight gradient under strict fp32, which have no tensor-core kernel to prefer:
  // ResNet-50's six took 0.70-0.94 of im2col_gemm's forward time and 0.93-0.97 of its backward (fp32 NHWC,
  // H200, N = 32). Strict fp32's data gradient of one group there goes to cutlass_implicit_gemm's SIMT
  // kernels (its Recommended: 0.09-0.25 ms against 0.15-0.49 here) or, in a build without them, to
  // im2col_gemm (0.14-0.49 ms, as fast as this one). On the CPU it is left to the tuner.
  // Channels last in 16 bits and TF32, the data gradient of kManyFilters filters per group or more: one
  // product onto the gathered pixels, each entry then stored into its pixel once (cuda/patch.cuh). The
  // scatter's cost is the input gradient's size, the product's the filters' too, so it pays over long
  // reductions: ResNet-50's 1x1 stride-2 layer at 14 x 14 with 2048 filters took 0.038 ms in fp16 and
  // 0.063 in TF32 (bench/conv_bench --split --algorithm pointwise_gemm, H200, N = 32) where the tuner timed
  // cutlass_implicit_gemm at 0.060 and 0.110; with 1024 filters they tied (0.048 and 0.075 against 0.049
  // and 0.078), and with 128 to 512 it lost (0.033-0.067 against 0.033-0.054 in fp16, 0.053-0.107
  // against 0.045-0.079 in TF32).
  static constexpr index_t kManyFilters = 2048;
  // TF32's forward of channels-last data, kLongForwardFilters filters or more over kLongForwardChannels
  // channels or more: ResNet-50's 1x1 stride-2 layers at 28 x 28 into 1024 filters and at 14 x 14 into
  // 2048 took 0.056 and 0.048 ms here against 0.061 and 0.050 on cutlass_implicit_gemm; into 512 filters
  // or fewer, or from 256 channels, cutlass_implicit_gemm was ahead (0.029-0.060 ms against 0.033-0.084;
  // bench/conv_bench --dtype tf32 --layout nhwc with and without --algorithm pointwise_gemm, H200, N = 32).
  static constexpr index_t kLongForwardFilters = 1024, kLongForwardChannels = 512;
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    if (!pointwise::IsStrided(pr.geom)) return true;
    if (!std::is_same<Device, gpu>::value) return false;
    if (pr.geom.channels_last && std::is_same<DType, float>::value && pr.math != ConvMath::kTF32)
      return pass != ConvPass::kBackwardData || pr.math != ConvMath::kStrict || pr.geom.G != 1;
    if (pass == ConvPass::kBackwardData && pr.geom.channels_last)
      return (sizeof(DType) == 2 || pr.math == ConvMath::kTF32) && pr.geom.Kg() >= kManyFilters;
    if (pass == ConvPass::kForward && pr.geom.channels_last && pr.math == ConvMath::kTF32)
      return pr.geom.Kg() >= kLongForwardFilters && pr.geom.Cg() >= kLongForwardChannels;
    if (pass != ConvPass::kBackwardWeight) return !pr.geom.channels_last;
    const double filter = double(pr.geom.Kg()) * double(pr.geom.Cg());
    if (pr.geom.channels_last) return sizeof(DType) == 2 ? WeightGradIsShortAndWide(pr.geom) : filter >= double(1 << 19);
    return filter < double(1 << 21) || StagedElems(GatheredProblem(pr)) != 0;
  }
  // The whole form on the GPU for channels-last data in one group (a strided kernel's on its gathered
  // pixels), in float, half and bf16, where cuBLASLt has a kernel for the product: written, or added
  // without a residual or relu (C is the output then). The bias must start on a 16-byte boundary.
  // Channels first, bias and relu (no residual) wherever the forward is staged (the GPU's narrow images),
  // and the whole form where it runs image by image and a row-bias gemm takes it (pointwise::RowBias).
  bool FusesEpilogue(const ConvProblem& pr, const ConvEpilogue<DType>& ep, ReqStore store) const override {
    const ConvGeometry& g = pr.geom;
    if (!g.channels_last) {
      if (!CanImplement(pr, ConvPass::kForward).ok) return false;
      const ConvProblem run = pointwise::IsStrided(g) ? GatheredProblem(pr) : pr;
      // A staged channels-first run applies bias and relu in its channels-last product's store, or as
      // the transpose moves its result back. A residual, laid out channels first, is left to the
      // operator's pass.
      if (StagedElems(run) != 0) return ep.residual == nullptr;
      if (store.add && (ep.residual != nullptr || ep.activation != ConvActivation::kIdentity)) return false;
      return run.vector_aligned && detail::VectorAligned(ep.bias, ep.residual) &&
             pointwise::RowBias<Device, DType>::Takes(run.geom, run.math, ep);
    }
    if constexpr (kGpuGemmEpilogue<Device, DType>) {
      if (g.G != 1 || !CanImplement(pr, ConvPass::kForward).ok) return false;
      if (store.add && (ep.residual != nullptr || ep.activation != ConvActivation::kIdentity)) return false;
      if (!detail::VectorAligned(ep.bias)) return false;
      // The problem the product runs on: a strided kernel's on its gathered pixels (Run's recursion).
      const ConvProblem run = pointwise::IsStrided(g) ? GatheredProblem(pr) : pr;
      const DType output{};  // (the query reads no pointer: any output stands for the one a run adds into)
      return GpuGemmTakesEpilogue(FusedForwardCall(run.geom, {}), ConvStoreEpilogue(ep, store, &output),
                                  run.math == ConvMath::kTF32, FusedAlignment(run, ep), run.workspace_limit);
    } else {
      return false;
    }
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    if (!pointwise::IsStrided(pr.geom)) return sizeof(DType) * static_cast<size_t>(StagedElems(pr));
    if (!st.out.active && !st.weight_grad.active && !st.data_grad.active) return 0;
    const index_t gathered = pointwise::GatheredElems(pr.geom);
    return sizeof(DType) * static_cast<size_t>(SaturatingAdd(gathered, StagedElems(GatheredProblem(pr))));
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<Device>* s) const override {
    if (pointwise::IsStrided(pr.geom)) {
      // The workspace: the gathered pixels (then the data gradient on them), then the dense run's.
      const ConvGeometry& g = pr.geom;
      DType* const space = static_cast<DType*>(workspace);
      DType* const rest = space + pointwise::GatheredElems(g);
      ConvTensors<DType> gathered = t;
      gathered.data_stride = gathered.data_grad_stride = g.channels_last ? g.C : g.out[2];
      if (st.out.active || st.weight_grad.active) {
        gathered.data = GatherPixels(g, t.data, t.data_stride, space, s);
        ConvStores reads_input = st;
        reads_input.data_grad = ReqStore{};
        Run(GatheredProblem(pr), gathered, reads_input, rest, s);
      }
      if (st.data_grad.active) {
        gathered.data_grad = space;
        Run(GatheredProblem(pr), gathered, ConvStores::Only(ConvPass::kBackwardData, ReqStore{true, false}), rest, s);
        ScatterPixels(g, space, t.data_grad, t.data_grad_stride, st.data_grad.add, s);
      }
      return;
    }
    const ConvGeometry& g = pr.geom;
    const index_t P = g.OutSize(), Kg = g.Kg(), Cg = g.Cg();
    if (g.channels_last) {
      ConvStores rest = st;
      if constexpr (kGpuGemmEpilogue<Device, DType>) {
        if (t.epilogue.active && st.out.active) {
          TE_CHECK(g.G == 1, "pointwise_gemm: an epilogue fuses into one group's product only, not ", g.G);
          GpuGemmWithEpilogue(s, FusedForwardCall(g, t), ConvStoreEpilogue(t.epilogue, st.out, t.out),
                              pr.math == ConvMath::kTF32, FusedAlignment(pr, t.epilogue), pr.workspace_limit);
          rest.out = ReqStore{};
        }
      }
      RunChannelsLast(g, t, rest, s);
      return;
    }
    if (StagedElems(pr) != 0) {
      RunStaged(pr, t, st, static_cast<DType*>(workspace), s);
      return;
    }
    // Matrix (image n, group g): W[g] (Kg, Cg), x_n[g] (Cg, P), y_n[g] (Kg, P).
    const GemmOperand<const DType> weight{t.weight, Cg, 0, Kg * Cg}, data{t.data, P, g.C * P, Cg * P};
    const GemmOperand<const DType> out_grad{t.out_grad, P, g.K * P, Kg * P};
    if (t.epilogue.active && st.out.active)  // (FusesEpilogue said a row-bias gemm takes it)
      pointwise::RowBias<Device, DType>::Run(g, pr.math, t, st.out, s);
    else if (st.out.active)
      GroupedGemm(s, Kg, P, Cg, 1.0f, weight, data, st.out.beta(), GemmOperand<DType>{t.out, P, g.K * P, Kg * P},
                  g.N, g.G);
    if (st.weight_grad.active)
      GroupedGemm(s, Kg, Cg, P, 1.0f, out_grad, Transposed(data), st.weight_grad.beta(),
                  GemmOperand<DType>{t.weight_grad, Cg, 0, Kg * Cg}, g.N, g.G);
    if (st.data_grad.active)
      GroupedGemm(s, Cg, P, Kg, 1.0f, Transposed(weight), out_grad, st.data_grad.beta(),
                  GemmOperand<DType>{t.data_grad, P, g.C * P, Cg * P}, g.N, g.G);
  }

 private:
  // The channels-last forward of one group as one product: y (N P, K) = x (N P, C) . W (K, C)^T, the
  // bias along y's rows, i.e. along the rows of the column-major result (K x N P) that the call computes.
  static expr::GemmCall<DType> FusedForwardCall(const ConvGeometry& g, const ConvTensors<DType>& t) {
    return ChannelsLastProduct(t.data, g.N * g.OutSize(), g.C, g.C, t.weight, g.K, t.out);
  }
  // The alignment cuBLASLt's kernel is chosen for, the same at FusesEpilogue and at Run (so the same
  // cached kernel runs, wherever the allocator put the tensors): 16 bytes where the problem's tensors and
  // the residual are 16-byte aligned, else the element's size.
  static int FusedAlignment(const ConvProblem& pr, const ConvEpilogue<DType>& ep) {
    return pr.vector_aligned && detail::VectorAligned(ep.residual) ? 16 : int(sizeof(DType));
  }

  // pointwise::StagedElems on the GPU; the CPU runs per image (OpenBLAS's per-image products measured
  // near its peak on narrow images too).
  static index_t StagedElems(const ConvProblem& pr) {
    if (!std::is_same<Device, gpu>::value) return 0;
    return pointwise::StagedElems(pr.geom, pr.workspace_limit, sizeof(DType));
  }

  // The channels-first problem run channels last on staged copies (StagedElems): x (N, P, C) and y
  // (N, P, K) in `space`, the output gradient staged into y and the data gradient computed into x once
  // the weight gradient has read it. The filters are (K, Cg) in both layouts. Staged results are written
  // whole, then stored into the caller's tensors with their req.
  static void RunStaged(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, DType* space,
                        Stream<Device>* s) {
    const ConvGeometry& g = pr.geom;
    const index_t N = g.N, P = g.OutSize(), C = g.C, K = g.K;
    DType* const x = space;
    DType* const y = space + pointwise::StagedInputElems(g);
    ConvGeometry last = g;
    last.channels_last = true;
    ConvTensors<DType> staged = t;
    staged.data = x, staged.data_grad = x, staged.out = y, staged.out_grad = y;
    staged.data_stride = staged.data_grad_stride = C;
    const ReqStore write{true, false};
    // (N, ch, P) -> (N, P, ch) ...
    auto to_last = [&](const DType* from, index_t ch, DType* to) {
      Tensor<Device, 3, DType>(to, Shape3(N, P, ch), s) =
          expr::transpose(Tensor<Device, 3, DType>(const_cast<DType*>(from), Shape3(N, ch, P), s), Shape3(0, 2, 1));
    };
    // ... and back with the req: a transpose at the top of the assignment, which takes the tiled kernel
    // where its tiles pay (expr/transpose.h) whatever map it reads, so an epilogue rides along as the
    // tiles are read.
    auto to_first = [&](const DType* from, index_t ch, DType* to, bool add, const ConvEpilogue<DType>* ep) {
      Tensor<Device, 3, DType> dst(to, Shape3(N, ch, P), s);
      const Tensor<Device, 3, DType> src(const_cast<DType*>(from), Shape3(N, P, ch), s);
      auto store = [&](const auto& e) {
        const auto moved = expr::transpose(e, Shape3(0, 2, 1));
        if (add) dst += moved; else dst = moved;
      };
      if (ep != nullptr) store(epilogue_map(src, *ep, true)); else store(src);
    };
    if (st.out.active) {
      to_last(t.data, C, x);
      // (FusesEpilogue: no residual) bias and relu in the staged product's store where cuBLASLt has a
      // kernel for it, as a channels-last forward fuses them; else applied as the result is moved back.
      const bool in_gemm = t.epilogue.active && StagedGemmFuses(pr, staged, t.epilogue, s);
      if (!in_gemm) RunChannelsLast(last, staged, ConvStores::Only(ConvPass::kForward, write), s);
      to_first(y, K, t.out, st.out.add, t.epilogue.active && !in_gemm ? &t.epilogue : nullptr);
    }
    if (!st.weight_grad.active && !st.data_grad.active) return;
    to_last(t.out_grad, K, y);
    if (st.weight_grad.active) {
      if (!st.out.active) to_last(t.data, C, x);  // (after the forward x holds it already)
      RunChannelsLast(last, staged, ConvStores::Only(ConvPass::kBackwardWeight, st.weight_grad), s);
    }
    if (st.data_grad.active) {
      RunChannelsLast(last, staged, ConvStores::Only(ConvPass::kBackwardData, write), s);
      to_first(x, C, t.data_grad, st.data_grad.add, nullptr);
    }
  }

  // The staged forward's product y (N P, K) = x (N P, C) . W^T with bias and relu in cuBLASLt's store,
  // written, as the channels-last forward runs it; false (nothing run) in groups, for a bias off a 16-byte
  // boundary, or where cuBLASLt has no kernel for it. Its alignment is the staged copies' and the filters'.
  static bool StagedGemmFuses(const ConvProblem& pr, const ConvTensors<DType>& staged, const ConvEpilogue<DType>& ep,
                              Stream<Device>* s) {
    if constexpr (kGpuGemmEpilogue<Device, DType>) {
      // (One product, FusedForwardCall's; cuBLASLt's bias on a 16-byte boundary, as FusesEpilogue asks
      // of a channels-last one.)
      // (A residual, laid out channels first, is never the staged product's: FusesEpilogue.)
      if (pr.geom.G != 1 || ep.residual != nullptr || !detail::VectorAligned(ep.bias)) return false;
      ConvGeometry last = pr.geom;
      last.channels_last = true;
      const GemmEpilogue<DType> store = ConvStoreEpilogue(ep, ReqStore{true, false}, staged.out);
      const int alignment = detail::VectorAligned(staged.data, staged.weight, staged.out) ? 16 : int(sizeof(DType));
      const bool tf32 = pr.math == ConvMath::kTF32;
      const size_t staged_bytes = sizeof(DType) * static_cast<size_t>(StagedElems(pr));
      const size_t limit = pr.workspace_limit > staged_bytes ? pr.workspace_limit - staged_bytes : 0;
      const expr::GemmCall<DType> product = FusedForwardCall(last, staged);
      if (!GpuGemmTakesEpilogue(product, store, tf32, alignment, limit)) return false;
      GpuGemmWithEpilogue(s, product, store, tf32, alignment, limit);
      return true;
    } else {
      return false;
    }
  }

  // The problem on the gathered pixels: the input is the output's size, the stride 1, dense, and the
  // workspace what the gathered pixels leave of the limit.
  static ConvProblem GatheredProblem(const ConvProblem& pr) {
    ConvProblem dense = pr;
    dense.geom = pointwise::Gathered(pr.geom);
    dense.data_contiguous = true;
    const size_t gathered = sizeof(DType) * static_cast<size_t>(pointwise::GatheredElems(pr.geom));
    dense.workspace_limit = pr.workspace_limit > gathered ? pr.workspace_limit - gathered : 0;
    return dense;
  }
  // GatherPixels' adjoint for a gradient: the dense gradient on the gathered pixels (`from`, laid out as
  // GatherPixels writes them) stored into the input's gradient (rows `row_stride` apart), = or +=, zeros
  // at the pixels the kernel skips. That layout is a 1x1 kernel's column matrix of all images at once,
  // so im2col_gemm's col2im (patch.h) runs it, one pass over the input's gradient.
  static void ScatterPixels(const ConvGeometry& g, const DType* from, DType* to, index_t row_stride, bool add,
                            Stream<Device>* s) {
    Col2Im(s, g, PatchChunk::Whole(g), from, to, row_stride, add);
  }

  // Every stride-th pixel of the input (rows `row_stride` apart) into `to`, dense; returns `to`.
  static const DType* GatherPixels(const ConvGeometry& g, const DType* data, index_t row_stride, DType* to,
                                   Stream<Device>* s) {
    using expr::slice;
    if (g.N * g.C * g.OutSize() == 0) return to;
    auto end = [&g](int i) { return (g.out[i] - 1) * g.stride[i] + 1; };
    DType* const in = const_cast<DType*>(data);  // only read
    if (g.channels_last) {
      const Tensor<Device, 5, DType> x(in, Shape5(g.N, g.in[0], g.in[1], g.in[2], g.C), row_stride, s);
      Tensor<Device, 5, DType>(to, Shape5(g.N, g.out[0], g.out[1], g.out[2], g.C), s) =
          slice<1>(slice<2>(slice<3>(x, 0, end(2), g.stride[2]), 0, end(1), g.stride[1]), 0, end(0), g.stride[0]);
    } else {
      const Tensor<Device, 5, DType> x(in, Shape5(g.N, g.C, g.in[0], g.in[1], g.in[2]), row_stride, s);
      Tensor<Device, 5, DType>(to, Shape5(g.N, g.C, g.out[0], g.out[1], g.out[2]), s) =
          slice<2>(slice<3>(slice<4>(x, 0, end(2), g.stride[2]), 0, end(1), g.stride[1]), 0, end(0), g.stride[0]);
    }
    return to;
  }

  // Channels last, per image n and group g: x_n[g] is (P, Cg) with row stride C, y_n[g] (P, Kg) with row
  // stride K, W[g] (Kg, Cg).
  //   forward      y_n[g] = x_n[g] . W[g]^T
  //   data grad    dX_n[g] = dY_n[g] . W[g]
  //   weight grad  dW[g] (+)= sum over n of dY_n[g]^T . x_n[g]
  static void RunChannelsLast(const ConvGeometry& g, const ConvTensors<DType>& t, const ConvStores& st,
                              Stream<Device>* s) {
    const index_t P = g.OutSize(), Kg = g.Kg(), Cg = g.Cg(), C = g.C, K = g.K;
    const GemmOperand<const DType> weight{t.weight, Cg, 0, Kg * Cg}, data{t.data, C, P * C, Cg};
    const GemmOperand<const DType> out_grad{t.out_grad, K, P * K, Kg};
    if (st.out.active)
      GroupedGemm(s, P, Kg, Cg, 1.0f, data, Transposed(weight), st.out.beta(), GemmOperand<DType>{t.out, K, P * K, Kg},
                  g.N, g.G);
    if (st.weight_grad.active)
      GroupedGemm(s, Kg, Cg, P, 1.0f, Transposed(out_grad), data, st.weight_grad.beta(),
                  GemmOperand<DType>{t.weight_grad, Cg, 0, Kg * Cg}, g.N, g.G);
    if (st.data_grad.active)
      GroupedGemm(s, P, Cg, Kg, 1.0f, out_grad, weight, st.data_grad.beta(),
                  GemmOperand<DType>{t.data_grad, C, P * C, Cg}, g.N, g.G);
  }
};

}  // namespace ops
}  // namespace tensorexpr
