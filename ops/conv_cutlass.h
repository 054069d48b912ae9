// ops/conv_cutlass.h — "cutlass_implicit_gemm": the convolution as an implicit GEMM on CUTLASS's
// kernels (ops/cuda/cutlass/). The GEMM's operands are gathered from the activations as its tiles are
// loaded, so there is no column buffer; the products run on tensor cores (half, bf16, or float as TF32
// when the stream allows it) or, for strict float, on the CUDA cores.
//
// The kernels read and write channels-last tensors whose C and K are multiples of their vector width,
// starting on 16-byte boundaries. Other tensors are staged: an input is copied into the workspace in
// that form (transposed from channels first, channels zero-padded up to the width), or a kernel writes a
// staged output, which is stored back into the caller's tensor with the req's store; a tensor already
// in that form is used in place (a stem's output). Staging costs about two passes over each tensor it
// copies, at memory bandwidth; the padded channels cost MMA work, which Recommended weighs with the
// tiles' own padding.
//
// A strided convolution on few channels (an RGB stem: 3 channels in vectors of 8) is staged folded: each
// run of `fold` adjacent columns (fold divides the stride) becomes one column of fold x C channels, so the
// vector's padding carries real channels. The 7 x 7 stride-2 stem becomes a 7 x 4 stride-(2, 1)
// convolution on 6 of 8 channels: 28 taps of 8 channels where it was 49 (the padding of W and the
// kernel's missing eighth column are zeros in the staged tensors). The caller's padding along W is
// written into the staged activations, so the folded problem pads W by nothing.
//
// The forward fuses the epilogue act(convolution + bias + residual) (ConvEpilogue) into its kernels'
// store where one of them computes it: the bias needs K unpadded, the residual an unstaged output, and
// an output the req adds to only takes a bias (adding act(...) is not what those kernels compute).
//
// The weight gradient reduces over every image and output position, a long reduction with a small
// result: its kernels write float partials of `split` slices of that reduction into the workspace, and
// the slices are summed in a fixed order (cuda::SumSlices, deterministic).
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_algorithm.h>
#include "conv_im2col_gemm.h"
#include "conv_recent.h"
#include "cuda/cutlass/conv_kernels.h"

namespace tensorexpr {
namespace ops {

template <typename DType>
class ConvCutlassImplicitGemm : public ConvAlgorithm<gpu, DType> {
  static_assert(std::is_same<DType, float>::value || std::is_same<DType, half_t>::value ||
                    std::is_same<DType, bf16_t>::value,
                "CUTLASS convolution kernels exist for float, half_t and bf16_t");
  using Kernel = cutlass_conv::ConvKernel;

 public:
  const char* Name() const override { return "cutlass_implicit_gemm"; }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    std::string why;
    return Prepare(pr, pass, &why).kernel != nullptr ? ConvSupport::Yes() : ConvSupport::No(why);
  }
  // Tensor cores beat im2col + cuBLAS while padding at most quadruples the products (PaddedProducts: the
  // channels staged up to the kernel's vectors, the output up to whole tiles, the forward's and data
  // gradient's reductions up to tile_k). On ResNet-50's stem (3 channels; fp16, N = 32, H200,
  // bench/conv_bench) the weight gradient beats im2col_gemm by far. Its 16-bit channels-last forward is
  // im2col_gemm's (StemForwardOnIm2Col): column rows padded to whole vectors, written by the rows kernel,
  // then cuBLAS, with the epilogue in cuBLASLt's store, took 0.159 ms in fp16 (fused 0.154) against the
  // folded fixed-channels kernel's 0.183; in TF32 it lost (0.240 against 0.213: twice the column bytes).
  // Channels first, where this kernel's run adds the transforms to and from channels last, a folded stem's
  // 16-bit forward is im2col_gemm's too (timed on ResNet-50's 7 x 7 stride-2 stem: TE_CONV_TUNE=1
  // TE_LOG=conv bench/conv_bench --dtype fp16|bf16 --layout nchw --layers stem_layer.txt, H200, N = 32):
  // 0.206 ms in fp16 and 0.218 in bf16 against 0.278 and 0.282. (gpu_stem_mma, registered first, is the
  // heuristic's pick for both where it runs, 0.142-0.148 ms; this rule keeps the stems it cannot run off
  // CUTLASS: before compute capability 8.0, or with channels times the stride along x over 8.)
  // Its folded data gradient padded 6.3 times in tiles 64 wide and still beat im2col_gemm (0.48 against
  // 0.66 ms; unfolded, 21 times, it lost: 0.76); the slim tile pads it 3.1 times.
  // Strict fp32's SIMT kernels: only the strided unpadded 1x1 kernels' data gradient, channels last. The
  // tuner's times per pass (TE_CONV_TUNE=1 TE_LOG=conv bench/conv_bench --dtype fp32 --layout nhwc, H200,
  // N = 32): the strided 1x1 layers' data gradients took 0.09-0.25 ms against pointwise_gemm's 0.15-0.49
  // (which spreads its product onto the input's grid), their weight gradients 0.11-0.23 against
  // pointwise_gemm's 0.07-0.19; the unstrided 1x1 layers' passes lost to pointwise_gemm's everywhere. The
  // weight gradients lost to im2col_gemm's split products wherever measured: the stem's 0.775 against
  // 0.477, the 3x3 layers' at 56 and 28 0.491 and 0.310 against 0.368 and 0.258 (winograd_2x2, registered
  // first, takes those: 0.202 and 0.158), at 14 and 7 0.31 and 0.33 against 0.21 and 0.22. The other
  // SIMT passes are left to the tuner.
  // A tensor-core weight gradient of large filters over a short reduction (WeightGradIsShortAndWide) is
  // left to im2col_gemm (a strided 1x1 kernel's to pointwise_gemm's own rules, registered first):
  // ResNet-50's 3x3 layer at 7 x 7 took 0.060 ms here against im2col_gemm's 0.045 in fp16, 0.122 against
  // 0.090 in TF32 channels last, and channels first (staged) 0.090 against 0.046 in fp16, 0.172 against
  // 0.073 in TF32. At 14 x 14 (6272 positions) this one won but for TF32 channels first: 0.039 against
  // 0.050 and 0.091 against 0.110 channels last, 0.059 against 0.069 in fp16 channels first, and 0.114
  // against 0.099 in TF32 there (TE_CONV_TUNE=1 TE_LOG=conv bench/conv_bench --layout nhwc|nchw, H200,
  // N = 32).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    const Plan p = Prepare(pr, pass, nullptr);
    if (p.kernel == nullptr) return false;
    const ConvGeometry& g = pr.geom;
    if (p.kernel->math == cutlass_conv::Math::kSimt) {
      return g.channels_last && pass == ConvPass::kBackwardData && g.IsOneByOne() && !g.IsPointwise();
    }
    if (pass == ConvPass::kBackwardWeight && !g.IsOneByOne() && WeightGradIsShortAndWide(g))
      return false;
    if (pass == ConvPass::kForward && p.kernel->fixed_channels && StemForwardOnIm2Col(pr, p.fold)) return false;
    long long mnk[3];
    p.kernel->gemm_size(KernelShape(pr, *p.kernel, pr.geom.C, pr.geom.K, 1), mnk);
    // 3xTF32 runs three times TF32's products: it is taken with less padding (a guess, not yet timed).
    const double padding = p.kernel->math == cutlass_conv::Math::kTensorOpTF32x3 ? 1.5 : 4.0;
    return PaddedProducts(*p.kernel, p.shape) <= padding * double(mnk[0]) * double(mnk[1]) * double(mnk[2]);
  }
  bool FusesEpilogue(const ConvProblem& pr, const ConvEpilogue<DType>& ep, ReqStore store) const override {
    const Plan p = Prepare(pr, ConvPass::kForward, nullptr, KernelEpilogue(ep));
    if (p.kernel == nullptr) return false;
    // A stem's fixed-channels kernel does several times less work than any other fused one can
    // (conv_kernel.cuh): only its own fused forms (the bias as their source) are worth it.
    const Plan plain = Prepare(pr, ConvPass::kForward, nullptr);
    if (plain.kernel != nullptr && plain.kernel->fixed_channels != p.kernel->fixed_channels) return false;
    // Run stages the inputs once, for the plain kernel's shape: an epilogue kernel must run on it.
    if (plain.kernel == nullptr || plain.fold != p.fold || plain.shape.C != p.shape.C || plain.shape.K != p.shape.K)
      return false;
    // TF32 fuses only into the plain kernel's own tile: where the plain choice is another tile (Ampere's
    // TF32 has one fused tile) or, in a build without Hopper's fused kernels, Hopper's, it and a pass over
    // the output were faster (conv_bench --epilogue --dtype tf32 --layout nhwc, H200: the 3x3 layer at 7 x 7
    // took 0.106 ms fused on Ampere's tile against 0.059 on Hopper's; at 56 x 56 with 64 filters 0.089 fused
    // against 0.067 plain, where the pass over its output costs about 0.015). Hopper's fused kernels have
    // the plain ones' tiles, so the search finds the same tile for both. Half and bf16, with half TF32's
    // bytes to pass over, fuse on whatever the search finds: on Ampere's tile beside Hopper's plain kernel
    // the pass cost 0.004-0.008 ms more on the 3x3 and strided 1x1 layers at 14 x 14.
    const bool same_kernel = plain.kernel->sm == p.kernel->sm && plain.kernel->tile_m == p.kernel->tile_m &&
                             plain.kernel->tile_n == p.kernel->tile_n;
    if (p.kernel->element == cutlass_conv::Element::kF32 && !same_kernel) return false;
    if (p.shape.K != pr.geom.K && ep.bias != nullptr) return false;
    if (!detail::VectorAligned(ep.bias, ep.residual)) return false;
    const bool out_staged = Staged(pr, p, Role::kOutput);
    // The stem's kernels read the bias as their source: no residual, and no output to add onto in place.
    if (p.kernel->bias_in_source && (ep.bias == nullptr || ep.residual != nullptr || (store.add && !out_staged)))
      return false;
    if (ep.residual != nullptr && (out_staged || store.add)) return false;
    return !store.add || out_staged || ep.activation == ConvActivation::kIdentity;
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& stores) const override {
    const Staging st = Layout(pr, stores);
    return st.valid ? st.total : 0;
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& stores, void* workspace,
           Stream<gpu>* stream) const override {
    const Staging st = Layout(pr, stores);
    TE_CHECK(st.valid, "cutlass_implicit_gemm cannot run this convolution: ", st.why);
    char* const ws = static_cast<char*>(workspace);
    const cudaStream_t cs = Stream<gpu>::GetStream(stream);
    const ConvGeometry& g = pr.geom;
    auto at = [ws](size_t offset) { return reinterpret_cast<DType*>(ws + offset); };
    // The inputs that need it, staged once for every pass that reads them.
    const DType* x = t.data;
    const DType* w = t.weight;
    const DType* dy = t.out_grad;
    const cutlass_conv::Conv2dShape& staged = st.any.shape;
    if (st.x_bytes) {
      StageActivations(t.data, t.data_stride, g, g.in, g.C, staged.C, ActivationFold(st.any, g), at(st.x), stream);
      x = at(st.x);
    }
    if (st.w_bytes) StageWeights(t.weight, g, staged.K, staged.C, WeightFold(st.any), at(st.w), stream), w = at(st.w);
    if (st.dy_bytes) {
      StageActivations(t.out_grad, OutRowStride(g), g, g.out, g.K, staged.K, ColumnFold(), at(st.dy), stream);
      dy = at(st.dy);
    }
    void* const kernel_ws = ws + st.kernel;
    for (ConvPass pass : kPasses) {
      if (!stores.Wants(pass)) continue;
      // The forward's epilogue kernel, when there is one, runs on the staging laid out for the plain one.
      const Plan p = Prepare(pr, pass, nullptr,
                             pass == ConvPass::kForward ? KernelEpilogue(t.epilogue) : cutlass_conv::Epilogue::kLinear);
      TE_CHECK(p.kernel != nullptr && p.fold == st.any.fold && p.shape.C == st.any.shape.C &&
                   p.shape.K == st.any.shape.K && p.kernel_workspace <= st.total - st.kernel,
               "cutlass_implicit_gemm: no ", ConvPassName(pass), " kernel for the layout it planned");
      const cutlass_conv::Conv2dShape& s = p.shape;
      cutlass_conv::ConvOperands o;
      switch (pass) {
        case ConvPass::kForward:
          o.a = x, o.b = w, o.bias = t.epilogue.bias;
          // (The stem's kernels take the bias as a source row: FusesEpilogue left them no residual, and no
          // output to add onto unless it is staged.)
          if (p.kernel->bias_in_source) o.bias = nullptr, o.source = t.epilogue.bias, o.source_is_row = true, o.beta = 1.0f;
          if (Staged(pr, p, Role::kOutput)) {
            o.c = at(st.out);
            p.kernel->run(s, o, kernel_ws, cs);
            UnstageActivations(at(st.out), g, g.out, g.K, s.K, ColumnFold(), t.out, OutRowStride(g), stores.out.add,
                               stream);
          } else {
            o.c = t.out;
            if (!p.kernel->bias_in_source) {
              o.beta = stores.out.beta();
              if (t.epilogue.residual != nullptr) o.source = t.epilogue.residual, o.beta = 1.0f;
            }
            p.kernel->run(s, o, kernel_ws, cs);
          }
          break;
        case ConvPass::kBackwardData:
          o.a = dy, o.b = w;
          if (Staged(pr, p, Role::kData)) {
            o.c = at(st.out);
            p.kernel->run(s, o, kernel_ws, cs);
            UnstageActivations(at(st.out), g, g.in, g.C, s.C, ActivationFold(p, g), t.data_grad, t.data_grad_stride,
                               stores.data_grad.add, stream);
          } else {
            o.c = t.data_grad, o.beta = stores.data_grad.beta();
            p.kernel->run(s, o, kernel_ws, cs);
          }
          break;
        case ConvPass::kBackwardWeight: {
          o.a = dy, o.b = x, o.c = kernel_ws;
          p.kernel->run(s, o, kernel_ws, cs);
          const index_t size = index_t(s.K) * s.R * s.S * s.C;
          const bool out_staged = Staged(pr, p, Role::kWeight);
          DType* const sum = out_staged ? at(st.out) : t.weight_grad;
          const bool add = !out_staged && stores.weight_grad.add;
          cuda::SumSlices(static_cast<const float*>(kernel_ws), index_t(s.split_k), size, size, index_t(0),
                          add ? 1.0f : 0.0f, sum, cs);
          if (out_staged) UnstageWeights(sum, g, s.C, WeightFold(p), t.weight_grad, stores.weight_grad.add, stream);
          break;
        }
      }
    }
  }

 private:
  // A 16-bit stem in one group whose forward goes to im2col_gemm (Recommended) where gpu_stem_mma does not
  // take it: channels first, one this kernel runs folded; channels last, one whose column rows im2col_gemm
  // pads to whole vectors (an RGB stem's 147 entries to 152), of a dense input that its workspace takes
  // whole images of, and that the rows kernel takes (cuda/patch.cuh).
  static bool StemForwardOnIm2Col(const ConvProblem& pr, int fold) {
    const ConvGeometry& g = pr.geom;
    if (sizeof(DType) != 2 || g.G != 1) return false;
    if (!g.channels_last) return fold > 1;
    if (!pr.data_contiguous) return false;
    const Im2ColPlan plan = PlanIm2Col(g, sizeof(DType), pr.workspace_limit);
    return plan.row_stride != g.ColRows() && plan.positions == g.OutSize() &&
           patch_cuda::Im2ColRowsFit<DType>(g, plan.row_stride);
  }
  static constexpr ConvPass kPasses[3] = {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeight};
  static constexpr cutlass_conv::Element kElement =
      std::is_same<DType, float>::value    ? cutlass_conv::Element::kF32
      : std::is_same<DType, half_t>::value ? cutlass_conv::Element::kF16
                                           : cutlass_conv::Element::kBF16;
  static constexpr size_t kMaxSliceBytes = size_t(256) << 20;  // the weight gradient's float partials, at most

  // A kernel for one pass, the shape it runs (C and K padded up to its vectors, columns folded when
  // fold > 1) and the workspace it takes.
  struct Plan {
    const Kernel* kernel = nullptr;
    cutlass_conv::Conv2dShape shape;
    int fold = 1;  // ColumnFoldFor(geometry, kernel's alignment)
    size_t kernel_workspace = 0;  // KernelWorkspace(*kernel, shape)
  };

  // Where a Run's buffers lie in the workspace (byte offsets, each 256-byte aligned; sizes 0 for tensors
  // used in place): the staged inputs, one staged output (the passes run one after another), and the
  // kernels' own workspace.
  struct Staging {
    bool valid = false;
    std::string why;
    Plan any;  // a wanted pass's plan: the staged C and K are the same for every pass
    size_t x = 0, x_bytes = 0, w = 0, w_bytes = 0, dy = 0, dy_bytes = 0, out = 0, kernel = 0, total = 0;
  };

  static long long RoundUp(long long v, long long to) { return (v + to - 1) / to * to; }
  // The output (and its gradient) is dense: rows of K channels, or of the output's width.
  static index_t OutRowStride(const ConvGeometry& g) { return g.channels_last ? g.K : g.out[2]; }

  static Staging Layout(const ConvProblem& pr, const ConvStores& stores) {
    Staging st;
    size_t kernel_bytes = 0, out_bytes = 0;
    bool reads_x = false, reads_w = false, reads_dy = false, any = false;
    for (ConvPass pass : kPasses) {
      if (!stores.Wants(pass)) continue;
      const Plan p = Prepare(pr, pass, &st.why);
      if (p.kernel == nullptr) return st;
      st.any = p, any = true;
      kernel_bytes = std::max(kernel_bytes, p.kernel_workspace);
      const cutlass_conv::Conv2dShape& s = p.shape;
      const size_t in = size_t(s.N) * s.H * s.W * s.C, out = size_t(s.N) * s.P * s.Q * s.K,
                   weights = size_t(s.K) * s.R * s.S * s.C;
      const Role writes = pass == ConvPass::kForward        ? Role::kOutput
                          : pass == ConvPass::kBackwardData ? Role::kData
                                                            : Role::kWeight;
      const size_t written = writes == Role::kOutput ? out : writes == Role::kData ? in : weights;
      if (Staged(pr, p, writes)) out_bytes = std::max(out_bytes, sizeof(DType) * written);
      reads_x = reads_x || pass != ConvPass::kBackwardData;
      reads_w = reads_w || pass != ConvPass::kBackwardWeight;
      reads_dy = reads_dy || pass != ConvPass::kForward;
    }
    st.valid = true;
    if (!any) return st;
    size_t offset = 0;
    auto take = [&offset](size_t bytes, size_t* at) {
      *at = offset;
      offset += InWorkspaceGranules(bytes);
    };
    const cutlass_conv::Conv2dShape& s = st.any.shape;
    if (reads_x && Staged(pr, st.any, Role::kData)) st.x_bytes = sizeof(DType) * size_t(s.N) * s.H * s.W * s.C;
    if (reads_w && Staged(pr, st.any, Role::kWeight)) st.w_bytes = sizeof(DType) * size_t(s.K) * s.R * s.S * s.C;
    if (reads_dy && Staged(pr, st.any, Role::kOutput)) st.dy_bytes = sizeof(DType) * size_t(s.N) * s.P * s.Q * s.K;
    take(st.x_bytes, &st.x);
    take(st.w_bytes, &st.w);
    take(st.dy_bytes, &st.dy);
    take(out_bytes, &st.out);
    take(kernel_bytes, &st.kernel);
    st.total = offset;
    return st;
  }

  // A convolution's tensors by role: the input activations, the filters and the output, each with its
  // gradient (the same layout and channel count).
  enum class Role { kData, kWeight, kOutput };
  // Whether plan p stages the tensors of role r: the kernels take channels-last tensors on 16-byte
  // boundaries, the activations dense, with C and K as the plan has them (padded up to the vectors,
  // folded). A tensor already so is read and written in place, though others are staged.
  static bool Staged(const ConvProblem& pr, const Plan& p, Role r) {
    const ConvGeometry& g = pr.geom;
    if (!g.channels_last || !pr.vector_aligned) return true;
    const bool c_as_is = p.fold == 1 && p.shape.C == g.C, k_as_is = p.shape.K == g.K;
    switch (r) {
      case Role::kData: return !c_as_is || !pr.data_contiguous;
      case Role::kWeight: return !c_as_is || !k_as_is;
      case Role::kOutput: return !k_as_is;
    }
    return true;
  }

  // How many columns staging folds into one for kernels of this vector width (the header): the largest
  // fold that divides the stride and pads the channels no further than the vector already does, 1 where
  // none does (or the kernel has one column, is dilated along W, or pads W by its width or more).
  static int ColumnFoldFor(const ConvGeometry& g, int alignment) {
    const index_t S = g.kernel[2];
    if (S < 2 || g.dilate[2] != 1 || g.pad[2] >= S) return 1;
    for (index_t f = g.stride[2]; f >= 2; --f)
      if (g.stride[2] % f == 0 && RoundUp(f * g.C, alignment) == RoundUp(g.C, alignment)) return int(f);
    return 1;
  }

  // The products kernel k forms on shape s, padding included: its output tiles times its reduction. The
  // forward's and data gradient's reductions round up to whole tile_k steps, which start afresh at each
  // filter tap where a step holds one tap's channels (all but the fixed-channels kernels); the weight
  // gradient's long reduction is cut into slices and its rounding is left out.
  static double PaddedProducts(const Kernel& k, const cutlass_conv::Conv2dShape& s) {
    long long mnk[3];
    k.gemm_size(s, mnk);
    const long long taps = (long long)s.R * s.S;
    const long long reduction = k.pass == cutlass_conv::Pass::kWgrad ? mnk[2]
                                : k.fixed_channels                  ? RoundUp(mnk[2], k.tile_k)
                                : k.pass == cutlass_conv::Pass::kFprop ? taps * RoundUp(s.C, k.tile_k)
                                                                       : taps * RoundUp(s.K, k.tile_k);
    return double(k.output_tiles(s)) * k.tile_m * k.tile_n * double(reduction);
  }

  static cutlass_conv::Epilogue KernelEpilogue(const ConvEpilogue<DType>& ep) {
    if (!ep.active) return cutlass_conv::Epilogue::kLinear;
    return ep.activation == ConvActivation::kRelu ? cutlass_conv::Epilogue::kBiasRelu : cutlass_conv::Epilogue::kBias;
  }

  static cutlass_conv::Pass KernelPass(ConvPass pass) {
    return pass == ConvPass::kForward        ? cutlass_conv::Pass::kFprop
           : pass == ConvPass::kBackwardData ? cutlass_conv::Pass::kDgrad
                                             : cutlass_conv::Pass::kWgrad;
  }

  // The 2-D problem in CUTLASS's terms with C and K as the kernels see them, its columns folded by
  // `fold` (the header; the geometry is 3-D with a unit depth: Prepare checked that). Ampere's
  // weight-gradient kernels (float slices) also get their split, within the workspace the problem allows:
  // slices of 768 rows of the reduction at least, output tiles times slices within 4 blocks per SM.
  // bench/cutlass_kernels --pass wgrad --splits (H200) puts the fastest split of ResNet-50's layers at
  // 1-4.4 blocks per SM with slices of 784-1568 rows in fp16 and bf16; the rule comes within 3% of the
  // fastest sum there, where one wave of blocks was 10% slower on the 3x3 layer at 56 x 56 (15 slices
  // against 64). TF32's kernels take the same rule: within 3.2% of their fastest sum, where two waves of
  // slices of 128 rows were 4.8% over it (the 3x3 layer at 56 x 56: 0.140 ms against 0.172). Strict
  // fp32's SIMT weight-gradient kernels (the tuner's or a forced choice), timed at the power of two at or
  // below each rule's split: 8% over their fastest sum, where two waves of slices of 32 rows were 13% over.
  // Hopper's do not split. Nor do the data gradient's kernels: TF32's (Ampere's only), made to split by
  // this rule in an experiment's build (H200, N = 32), took 0.069 ms at their best split on the 3x3 layer
  // at 7 x 7 against 0.074 unsplit on the 128 x 64 tile, and lost at every split at 14 x 14; CUTLASS's
  // strided-support data-gradient kernels also accept a split at unit strides yet leave parts of their
  // slices unwritten.
  static cutlass_conv::Conv2dShape KernelShape(const ConvProblem& pr, const Kernel& k, index_t C, index_t K, int fold) {
    const ConvGeometry& g = pr.geom;
    cutlass_conv::Conv2dShape s;
    s.N = int(g.N), s.H = int(g.in[1]), s.W = int(g.in[2]), s.C = int(C), s.K = int(K);
    s.R = int(g.kernel[1]), s.S = int(g.kernel[2]), s.P = int(g.out[1]), s.Q = int(g.out[2]);
    s.pad_h = int(g.pad[1]), s.pad_w = int(g.pad[2]), s.stride_h = int(g.stride[1]), s.stride_w = int(g.stride[2]);
    s.dilation_h = int(g.dilate[1]), s.dilation_w = int(g.dilate[2]);
    if (fold > 1) {
      s.S = (s.S + fold - 1) / fold, s.stride_w /= fold, s.pad_w = 0;
      s.W = (s.Q - 1) * s.stride_w + s.S;  // the folded columns the taps reach, the caller's padding among them
    }
    if (!k.float_output || k.sm == 90) return s;
    long long mnk[3];
    k.gemm_size(s, mnk);
    const long long tiles = k.output_tiles(s);
    const long long sms = cuda::CurrentDeviceInfo().sm_count;
    const long long by_blocks = 4 * sms / tiles;
    const long long by_length = mnk[2] / 768;
    const size_t slice_bytes = sizeof(float) * size_t(mnk[0]) * size_t(mnk[1]);
    const long long by_bytes =
        (long long)(std::min(pr.workspace_limit, kMaxSliceBytes) / std::max<size_t>(slice_bytes, 1));
    const long long split = std::min({by_blocks, by_length, by_bytes, 128LL});
    s.split_k = int(std::max(1LL, split));
    return s;
  }

  static size_t KernelWorkspace(const Kernel& k, const cutlass_conv::Conv2dShape& s) {
    size_t bytes = k.workspace_bytes(s);
    if (k.float_output) {
      long long mnk[3];
      k.gemm_size(s, mnk);
      bytes = std::max(bytes, sizeof(float) * size_t(s.split_k) * size_t(mnk[0]) * size_t(mnk[1]));
    }
    return bytes;
  }

  // Hopper's TMA / wgmma kernels (sm = 90) against Ampere's on an H200, ResNet-50's forward layers in
  // half and bf16 (bench/cutlass_kernels): faster by 9-21% where the output is at most one wave of
  // 128 x 128 tiles and the reduction is 1024 or longer (the 3x3 and 1x1 layers at 7x7 and 14x14),
  // slower elsewhere, up to 2.7x on 56x56 1x1 layers. Neither kind has a fixed-channels form on Hopper.
  // The data gradient (the forward's GEMM with C and K swapped) takes the same rule. TF32's forward
  // kernels (bench/cutlass_kernels --dtype tf32, H200) win on every ResNet-50 layer with a reduction of
  // 1024 or more whatever its tiles (by 13-34%; the 3x3 layer at 28 x 28 and the strided one at 14 x 14
  // with 2048 filters have 196 and 208 tiles); below that they win on the stride-2 layers at 28 x 28
  // only and lose elsewhere, up to 2x.
  // Output tiles of 128 rows by tile_n columns covering a GEMM of size mnk: the rules below compare them
  // with the SM count.
  static long long OutputTiles(const long long mnk[3], long long tile_n) {
    return ((mnk[0] + 127) / 128) * ((mnk[1] + tile_n - 1) / tile_n);
  }
  static bool HopperKernelsPay(const Kernel& k, const long long mnk[3]) {
    const long long tiles = OutputTiles(mnk, 128);
    const bool tf32_forward = k.element == cutlass_conv::Element::kF32 && k.pass == cutlass_conv::Pass::kFprop;
    return (tf32_forward || tiles <= cuda::CurrentDeviceInfo().sm_count) && mnk[2] >= 1024;
  }
  // How much kernel k is preferred for a forward or data gradient of size mnk, among kernels doing equal
  // work: Hopper's where HopperKernelsPay, else Ampere's; among either's, the 128 x 64 tile where the
  // 128 x 128 tiles would occupy at most half the SMs (Hopper's too: on the 3x3 layer at 7 x 7 with 512
  // filters and N = 32 the wide tile leaves 80 of 132 SMs idle). bench/cutlass_kernels --dtype tf32 --pass dgrad
  // (H200): on the layers at 7 x 7 with 512 channels (52 tiles on 132 SMs) the 3x3 and 1x1 data gradients
  // took 0.076 and 0.045 ms on it against 0.109 and 0.059; from 98 tiles up the 128 x 128 tile was as fast
  // or faster on every unit-stride layer (not on the strided one at 14 x 14 with 2048 filters, 392 tiles).
  static int FpropPreference(const Kernel& k, const long long mnk[3]) {
    const bool hopper_pays = HopperKernelsPay(k, mnk);
    const bool narrow = 2 * OutputTiles(mnk, 128) <= cuda::CurrentDeviceInfo().sm_count;
    const int tile = (k.tile_n < 128) == narrow ? 1 : 0;
    if (k.sm == 90) return hopper_pays ? 2 + tile : 0;
    return (hopper_pays ? 0 : 2) + tile;
  }
  // How much kernel k is preferred for a weight gradient of size mnk, among kernels doing equal work.
  // Hopper's kernels, which do not split the reduction, beat Ampere's split ones (bench/cutlass_kernels
  // --pass wgrad, H200, fp16) once their 128 x 64 tiles of the output occupy 45% of the SMs or more (by
  // 20-45% on ResNet-50's layers at 14x14 and 7x7), the 128 x 128 tile once its own tiles occupy 7/8 of
  // them in one wave (past it, at 144 tiles on 132 SMs, the 128 x 64 tile was 5% faster); below that
  // Ampere's kernels win. Hopper's other tile comes before Ampere's where Hopper pays.
  static int WgradPreference(const Kernel& k, const long long mnk[3]) {
    const long long sms = cuda::CurrentDeviceInfo().sm_count;
    const bool hopper = 20 * OutputTiles(mnk, 64) >= 9 * sms;
    if (k.sm != 90) return hopper ? 0 : 2;
    if (!hopper) return 0;
    const long long tiles128 = OutputTiles(mnk, 128);
    const bool wide = 8 * tiles128 >= 7 * sms && tiles128 <= sms;
    return (k.tile_n == 128) == wide ? 2 : 1;
  }

  // Search's answer for the problem: every Run, WorkspaceBytes and FusesEpilogue asks, and a search puts
  // each compiled kernel through CUTLASS's can_implement (microseconds apiece, several times per call
  // before the per-thread memory: conv_recent.h). Kernel null with the reason in *why when none can.
  static Plan Prepare(const ConvProblem& pr, ConvPass pass, std::string* why,
                      cutlass_conv::Epilogue epilogue = cutlass_conv::Epilogue::kLinear) {
    struct Answer {
      Plan plan;
      std::string why;
    };
    thread_local RecentConvProblems<cutlass_conv::Epilogue, Answer> recent;
    const Answer* known = recent.Find(pr, pass, epilogue);
    if (known == nullptr) {
      Answer fresh;
      fresh.plan = Search(pr, pass, &fresh.why, epilogue);
      known = &recent.Remember(pr, pass, epilogue, std::move(fresh));
    }
    if (known->plan.kernel == nullptr && why != nullptr) *why = known->why;
    return known->plan;
  }

  // The compiled kernel that can run `pass` of `pr` (directly or staged) with the least padded work
  // (PaddedProducts: a 128-wide tile on 64 channels does twice the work); on a tie the preferred one
  // (FpropPreference, WgradPreference), else the earlier, larger tile.
  // Kernel null with the reason in *why when none can.
  static Plan Search(const ConvProblem& pr, ConvPass pass, std::string* why, cutlass_conv::Epilogue epilogue) {
    auto refuse = [why](std::string reason) {
      if (why != nullptr) *why = std::move(reason);
      return Plan();
    };
    const ConvGeometry& g = pr.geom;
    if (!g.IsPlanar()) return refuse("3-D convolutions have no kernels here yet");
    if (g.G != 1) return refuse("grouped convolutions have no kernels here yet");
    // The kernels' coordinates too: as far as the last output's window reaches.
    for (index_t v : {g.N, g.C + 8, g.K + 8, g.in[1], g.in[2], g.out[1], g.out[2], g.Reach(1), g.Reach(2)})
      if (v > INT_MAX) return refuse("a size does not fit CUTLASS's 32-bit problem size");
    if (cuda::CurrentDeviceInfo().major < 8) return refuse("the kernels need compute capability 8.0 or newer");
    const cutlass_conv::Math math = !std::is_same<DType, float>::value ? cutlass_conv::Math::kTensorOp
                                    : pr.math == ConvMath::kStrict     ? cutlass_conv::Math::kSimt
                                    : pr.math == ConvMath::kTF32x3     ? cutlass_conv::Math::kTensorOpTF32x3
                                                                       : cutlass_conv::Math::kTensorOp;
    std::string reasons;  // each refusing kernel's, in the list's order
    auto refused = [&reasons](const Kernel& k, const std::string& reason) {
      reasons += (reasons.empty() ? "" : "; ") + std::string(k.name) + ": " + reason;
    };
    Plan best;
    double best_work = 0;
    int best_preference = 0;
    const int device_sm = cuda::CurrentDeviceInfo().major * 10 + cuda::CurrentDeviceInfo().minor;
    for (const Kernel& k : cutlass_conv::CompiledConvKernels()) {
      if (k.pass != KernelPass(pass) || k.element != kElement || k.math != math || k.epilogue != epilogue) continue;
      if (k.sm != 0 && k.sm != device_sm) continue;  // Hopper's kernels exist for 9.0 alone
      Plan p;
      p.kernel = &k;
      p.fold = ColumnFoldFor(g, k.alignment);
      const index_t C = RoundUp(p.fold * g.C, k.alignment), K = RoundUp(g.K, k.alignment);
      p.shape = KernelShape(pr, k, C, K, p.fold);
      if (k.float_output && KernelWorkspace(k, p.shape) > pr.workspace_limit) {
        refused(k, "needs " + std::to_string(KernelWorkspace(k, p.shape)) +
                       " bytes of workspace for its partial sums, over the limit");
        continue;
      }
      std::string no = k.why_not(p.shape);
      if (!no.empty()) {
        refused(k, no);
        continue;
      }
      long long mnk[3];
      k.gemm_size(p.shape, mnk);
      // A slim tile (a quarter of the wide tile's warps) is for outputs it covers whole, a folded stem's 8
      // channels: on wider ones its lesser padding would win the count unmeasured.
      if (k.tile_n < 64 && mnk[1] > k.tile_n) {
        refused(k, "a slim tile, for outputs of at most " + std::to_string(k.tile_n) + " channels");
        continue;
      }
      const double work = PaddedProducts(k, p.shape);
      const int preference =
          pass == ConvPass::kBackwardWeight ? WgradPreference(k, mnk) : FpropPreference(k, mnk);
      if (best.kernel == nullptr || work < best_work || (work == best_work && preference > best_preference))
        best = p, best_work = work, best_preference = preference;
    }
    if (best.kernel == nullptr) {
      if (reasons.empty())
        reasons = std::string("no ") + ConvPassName(pass) +
                  " kernel for this element type and math mode is compiled into this build";
      return refuse(reasons);
    }
    best.kernel_workspace = KernelWorkspace(*best.kernel, best.shape);
    return best;
  }

  // ---- staging: the caller's tensors to and from the kernels' form ------------------------------------------
  // Strided copies go through F<op::identity> (one map kernel): assigning one Tensor to another rebinds
  // the view, as in mshadow, and Copy's cudaMemcpy2D crawls over rows of a few bytes.

  // How a staged tensor's columns are folded (the header): `by` caller's columns to one, `cols` folded
  // columns per row, the first `before` of the caller's columns zeros (its padding). by = 1: not folded.
  struct ColumnFold {
    index_t by = 1, cols = 0, before = 0;
  };
  static ColumnFold ActivationFold(const Plan& p, const ConvGeometry& g) { return {p.fold, p.shape.W, g.pad[2]}; }
  static ColumnFold WeightFold(const Plan& p) { return {p.fold, p.shape.S, 0}; }
  // The caller's columns a folded row holds (those past it no tap reaches).
  static index_t FoldedColumnsUsed(index_t W, const ColumnFold& f) { return std::min(W, f.by * f.cols - f.before); }

  // Calls use(e) with a caller's 4-D tensor of `shape` (outer, rows, columns, channels), stored channels
  // last or (outer, channels, rows, columns) with rows `row_stride` apart, seen as the 3-D expression
  // (outer x rows, columns, channels).
  template <typename Use>
  static void AsPixelRows(const DType* src, bool channels_last, Shape<4> shape, index_t row_stride, Stream<gpu>* s,
                          Use&& use) {
    DType* const p = const_cast<DType*>(src);
    const Shape<3> rows = Shape3(shape[0] * shape[1], shape[2], shape[3]);
    if (channels_last) {
      use(Tensor<gpu, 3, DType>(p, rows, row_stride, s));
    } else {
      const Tensor<gpu, 4, DType> first(p, Shape4(shape[0], shape[3], shape[1], shape[2]), row_stride, s);
      use(expr::reshape(expr::transpose(first, Shape4(0, 2, 3, 1)), rows));
    }
  }
  // Stores e, an (outer x rows, columns, channels) expression, into a caller's tensor laid out as
  // AsPixelRows reads it, = or +=.
  template <typename E>
  static void StorePixelRows(const E& e, DType* dst, bool channels_last, Shape<4> shape, index_t row_stride, bool add,
                             Stream<gpu>* s) {
    if (channels_last) {
      Tensor<gpu, 3, DType> to(dst, Shape3(shape[0] * shape[1], shape[2], shape[3]), row_stride, s);
      if (add) to += e; else to = e;
    } else {
      Tensor<gpu, 4, DType> to(dst, Shape4(shape[0], shape[3], shape[1], shape[2]), row_stride, s);
      const auto from = expr::transpose(expr::reshape(e, shape), Shape4(0, 3, 1, 2));
      if (add) to += from; else to = from;
    }
  }

  // (outer x rows, W, C) pixels folded into (outer x rows x fold.cols, Cp) dense rows in one pass: the
  // folded row's columns before and after the caller's, and channels fold.by x C .. Cp, zero.
  template <typename Pixels>
  static void StageFolded(const Pixels& px, const ColumnFold& fold, index_t Cp, DType* dst, Stream<gpu>* s) {
    const Shape<3> in = px.shape();
    const index_t wide = fold.by * fold.cols, used = FoldedColumnsUsed(in[1], fold), rows = in[0] * fold.cols;
    const auto columns =
        expr::pad(expr::slice<1>(px, 0, used), Shape3(0, fold.before, 0), Shape3(0, wide - fold.before - used, 0));
    Tensor<gpu, 2, DType>(dst, Shape2(rows, Cp), s) =
        expr::pad(expr::reshape(columns, Shape2(rows, fold.by * in[2])), Shape2(0, 0), Shape2(0, Cp - fold.by * in[2]));
  }
  // StageFolded's inverse for a result: the (outer x rows x fold.cols, Cp) staged rows as the caller's
  // (outer x rows, W, C) pixels, zero in the columns no tap reached.
  static auto Unfolded(const DType* staged, index_t outer_rows, index_t W, index_t C, index_t Cp,
                       const ColumnFold& fold, Stream<gpu>* s) {
    const Tensor<gpu, 2, DType> t(const_cast<DType*>(staged), Shape2(outer_rows * fold.cols, fold.by * C), Cp, s);
    const index_t used = FoldedColumnsUsed(W, fold);
    const auto columns = expr::slice<1>(expr::reshape(t, Shape3(outer_rows, fold.by * fold.cols, C)), fold.before,
                                        fold.before + used);
    return expr::pad(columns, Shape3(0, 0, 0), Shape3(0, W - used, 0));
  }

  // Activations (N, C, spatial) or (N, spatial, C) with rows `row_stride` apart, into (N, H, W, Cp)
  // dense with channels C..Cp zero; folded (N, H, fold.cols, Cp) when fold.by > 1.
  static void StageActivations(const DType* src, index_t row_stride, const ConvGeometry& g, const index_t* sp,
                               index_t C, index_t Cp, const ColumnFold& fold, DType* dst, Stream<gpu>* s) {
    const index_t N = g.N, H = sp[1], W = sp[2];
    DType* const in = const_cast<DType*>(src);
    if (fold.by > 1) {
      AsPixelRows(src, g.channels_last, Shape4(N, H, W, C), row_stride, s,
                  [&](const auto& px) { StageFolded(px, fold, Cp, dst, s); });
      return;
    }
    if (g.channels_last) {
      // Whole padded rows in one dense pass: writing C of every Cp values, then the zeros apart, cost a
      // stem (3 of 8) two scattered passes.
      const Tensor<gpu, 2, DType> from(in, Shape2(N * H * W, C), row_stride, s);
      Tensor<gpu, 2, DType> to(dst, Shape2(N * H * W, Cp), s);
      if (Cp > C) to = expr::pad(from, Shape2(0, 0), Shape2(0, Cp - C));
      else to = expr::F<op::identity>(from);
      return;
    }
    Tensor<gpu, 4, DType>(dst, Shape4(N, H, W, C), Cp, s) =
        expr::transpose(Tensor<gpu, 4, DType>(in, Shape4(N, C, H, W), row_stride, s), Shape4(0, 2, 3, 1));
    if (Cp > C) Tensor<gpu, 2, DType>(dst + C, Shape2(N * H * W, Cp - C), Cp, s) = DType(0.0f);
  }

  // A staged (N, H, W, Cp) result (folded: (N, H, fold.cols, Cp)) into the caller's activations, = or +=.
  static void UnstageActivations(const DType* src, const ConvGeometry& g, const index_t* sp, index_t C, index_t Cp,
                                 const ColumnFold& fold, DType* dst, index_t row_stride, bool add, Stream<gpu>* s) {
    const index_t N = g.N, H = sp[1], W = sp[2];
    DType* const staged = const_cast<DType*>(src);
    if (fold.by > 1) {
      StorePixelRows(Unfolded(src, N * H, W, C, Cp, fold, s), dst, g.channels_last, Shape4(N, H, W, C), row_stride,
                     add, s);
    } else if (g.channels_last) {
      Tensor<gpu, 2, DType> to(dst, Shape2(N * H * W, C), row_stride, s);
      const Tensor<gpu, 2, DType> from(staged, Shape2(N * H * W, C), Cp, s);
      if (add) to += from; else to = expr::F<op::identity>(from);
    } else {
      Tensor<gpu, 4, DType> to(dst, Shape4(N, C, H, W), row_stride, s);
      const auto from = expr::transpose(Tensor<gpu, 4, DType>(staged, Shape4(N, H, W, C), Cp, s), Shape4(0, 3, 1, 2));
      if (add) to += from; else to = from;
    }
  }

  // Filters (K, C, kernel) or (K, kernel, C) into (Kp, kernel, Cp) with the padding zero (folded:
  // (Kp, R, fold.cols, Cp)).
  static void StageWeights(const DType* src, const ConvGeometry& g, index_t Kp, index_t Cp, const ColumnFold& fold,
                           DType* dst, Stream<gpu>* s) {
    const index_t K = g.K, C = g.C, R = g.kernel[1], S = g.kernel[2];
    DType* const w = const_cast<DType*>(src);
    if (fold.by > 1) {
      AsPixelRows(src, g.channels_last, Shape4(K, R, S, C), g.channels_last ? C : S, s,
                  [&](const auto& taps) { StageFolded(taps, fold, Cp, dst, s); });
    } else {
      if (g.channels_last) {
        Tensor<gpu, 2, DType>(dst, Shape2(K * R * S, C), Cp, s) =
            expr::F<op::identity>(Tensor<gpu, 2, DType>(w, Shape2(K * R * S, C), s));
      } else {
        Tensor<gpu, 3, DType>(dst, Shape3(K, R * S, C), Cp, s) =
            expr::swapaxis<2, 1>(Tensor<gpu, 3, DType>(w, Shape3(K, C, R * S), s));
      }
      if (Cp > C) Tensor<gpu, 2, DType>(dst + C, Shape2(K * R * S, Cp - C), Cp, s) = DType(0.0f);
    }
    const index_t taps = R * (fold.by > 1 ? fold.cols : S);
    if (Kp > K) Tensor<gpu, 2, DType>(dst + K * taps * Cp, Shape2((Kp - K) * taps, Cp), s) = DType(0.0f);
  }

  // A staged (Kp, kernel, Cp) weight gradient (folded: (Kp, R, fold.cols, Cp)) into the caller's
  // filters' layout, = or +=.
  static void UnstageWeights(const DType* src, const ConvGeometry& g, index_t Cp, const ColumnFold& fold, DType* dst,
                             bool add, Stream<gpu>* s) {
    const index_t K = g.K, C = g.C, R = g.kernel[1], S = g.kernel[2];
    DType* const staged = const_cast<DType*>(src);
    if (fold.by > 1) {
      StorePixelRows(Unfolded(src, K * R, S, C, Cp, fold, s), dst, g.channels_last, Shape4(K, R, S, C),
                     g.channels_last ? C : S, add, s);
    } else if (g.channels_last) {
      Tensor<gpu, 2, DType> to(dst, Shape2(K * R * S, C), s);
      const Tensor<gpu, 2, DType> from(staged, Shape2(K * R * S, C), Cp, s);
      if (add) to += from; else to = expr::F<op::identity>(from);
    } else {
      Tensor<gpu, 3, DType> to(dst, Shape3(K, C, R * S), s);
      const auto from = expr::swapaxis<2, 1>(Tensor<gpu, 3, DType>(staged, Shape3(K, R * S, C), Cp, s));
      if (add) to += from; else to = from;
    }
  }
};

}  // namespace ops
}  // namespace tensorexpr
