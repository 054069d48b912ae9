// ops/cpu/conv_per_image.h — the CPU convolution for batches of at least as many images as threads:
// the batch is dealt out to workers (one per thread), and a worker runs im2col, the gemms and col2im for
// one of its images at a time, on its own column buffer. The buffer is written and read back by the same
// core while it is still in that core's cache, where the chunked path (ops/convolution.h) writes the
// columns of many images to memory, then reads them back in a second threaded pass. im2col and col2im go
// through a padded copy of the image (ops/cpu/padded_image.h), also the worker's own.
//
// The weight gradient sums over the images. Each worker sums its own images into a private partial
// (one gemm per image with beta = 1); the partials are then added in worker order. The result depends
// on the thread count (as any threaded BLAS's does) but not on the timing of the threads.
//
// As an algorithm it is "cpu_per_image" (ConvCpuPerImage below): the heuristic takes it when the deal is
// even enough and it needs no more workspace than im2col_gemm under the same cap (so
// ConvolutionWorkspaceBytes stays an upper bound).
#pragma once
#include <algorithm>
#include <limits>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include "../conv_im2col_gemm.h"
#include "padded_image.h"

namespace tensorexpr {
namespace ops {

// The dtypes the per-image path runs (its gemms are single-threaded BLAS calls).
template <typename DType>
constexpr bool kConvPerImageDType = std::is_same<DType, float>::value || std::is_same<DType, double>::value;

struct ConvPerImagePlan {
  bool use = false;           // false: run the chunked path
  index_t workers = 0;        // each owns a run of images, a column buffer, a box and a weight-gradient partial
  index_t col_elems = 0;      // one image's column matrix
  index_t box_elems = 0;      // one image's padded copy (PaddedBox)
  index_t partial_elems = 0;  // one weight-gradient partial (0 when the weight gradient is not wanted)

  // Saturated: a geometry too large for any workspace plans the largest index_t, which no limit admits.
  index_t WorkspaceElems() const {
    return SaturatingMul(workers, SaturatingAdd(SaturatingAdd(col_elems, box_elems), partial_elems));
  }
  // Worker w's pieces of the workspace: the column buffers, then the boxes, then the partials.
  template <typename DType>
  DType* Col(DType* workspace, index_t w) const { return workspace + w * col_elems; }
  template <typename DType>
  DType* Box(DType* workspace, index_t w) const { return workspace + workers * col_elems + w * box_elems; }
  template <typename DType>
  DType* Partial(DType* workspace, index_t w) const {
    return workspace + workers * (col_elems + box_elems) + w * partial_elems;
  }
  // Images [first, last) of worker w: an even deal, the first N % workers workers one image more.
  index_t First(index_t w, index_t N) const { return w * (N / workers) + std::min(w, N % workers); }
};

// The per-image plan of geometry g when `threads` threads run it. `use` says whether it is worth it:
// every worker gets an image, the deal wastes at most a fifth of the threads' time (64 images on 16
// threads: none; 20: too much), and the buffers fit in what im2col_gemm's chunked plan takes
// (chunked_col_elems).
inline ConvPerImagePlan PlanConvPerImage(const ConvGeometry& g, index_t threads, index_t chunked_col_elems,
                                         bool weight_grad) {
  ConvPerImagePlan plan;
  const index_t T = std::max<index_t>(threads, 1);
  plan.workers = std::max<index_t>(1, std::min(T, g.N));
  plan.col_elems = SaturatingMul(g.ColRows(), g.OutSize());
  plan.box_elems = SaturatingMul(g.C, PaddedBox(g).ChannelElems());
  plan.partial_elems = weight_grad ? g.K * g.Cg() * g.KernelSize() : 0;
  const index_t rounds = (g.N + T - 1) / T;
  plan.use = g.N >= T && 5 * (rounds * T - g.N) <= rounds * T && plan.WorkspaceElems() <= chunked_col_elems;
  return plan;
}

// out (N, K, P) = conv(data) per image, beta (0 or 1) carrying the req; the bias is the caller's.
// A worker's loops run on its own thread (the one-thread limit makes its gemms serial).
template <typename DType>
void ConvForwardPerImage(const ConvPerImagePlan& plan, const ConvGeometry& g, const DType* data,
                         index_t data_stride, const DType* weight, float beta, DType* out, DType* workspace) {
  const index_t P = g.OutSize(), Kg = g.Kg(), CKg = g.Cg() * g.KernelSize();
  const PaddedBox box(g);
  Stream<cpu>* const serial = nullptr;  // no stream budget: the worker's one-thread limit holds
  ParallelFor(plan.workers, plan.col_elems * Kg, [&](index_t begin, index_t end) {
    const ScopedThreadLimit one_thread(1);
    for (index_t w = begin; w < end; ++w) {
      DType *col = plan.Col(workspace, w), *padded = plan.Box(workspace, w);
      for (index_t n = plan.First(w, g.N), last = plan.First(w + 1, g.N); n < last; ++n) {
        PadImage(g, box, n, data, data_stride, padded);
        PaddedIm2Col(g, box, padded, col);
        // y_n[g] (Kg, P) = W[g] (Kg, Cg*kk) . col[g] (Cg*kk, P)
        GroupedGemm(serial, Kg, P, CKg, 1.0f, GemmOperand<const DType>{weight, CKg, 0, Kg * CKg},
                    GemmOperand<const DType>{col, P, 0, CKg * P}, beta,
                    GemmOperand<DType>{out + n * g.K * P, P, 0, Kg * P}, 1, g.G);
      }
    }
  });
}

// The data and / or weight gradients per image (a null pointer skips one), each stored as its store says.
template <typename DType>
void ConvBackwardPerImage(const ConvPerImagePlan& plan, const ConvGeometry& g, const DType* out_grad,
                          const DType* data, index_t data_stride, const DType* weight, DType* data_grad,
                          index_t grad_stride, bool accumulate_data, DType* weight_grad, ReqStore weight_store,
                          DType* workspace) {
  const index_t P = g.OutSize(), Kg = g.Kg(), CKg = g.Cg() * g.KernelSize();
  const PaddedBox box(g);
  DType* partials = plan.Partial(workspace, 0);
  Stream<cpu>* const serial = nullptr;  // no stream budget: the worker's one-thread limit holds
  ParallelFor(plan.workers, plan.col_elems * Kg * 2, [&](index_t begin, index_t end) {
    const ScopedThreadLimit one_thread(1);
    for (index_t w = begin; w < end; ++w) {
      DType *col = plan.Col(workspace, w), *padded = plan.Box(workspace, w), *partial = plan.Partial(workspace, w);
      const index_t first = plan.First(w, g.N);
      for (index_t n = first, last = plan.First(w + 1, g.N); n < last; ++n) {
        const GemmOperand<const DType> dy{out_grad + n * g.K * P, P, 0, Kg * P};
        if (weight_grad != nullptr) {
          // partial[g] (Kg, Cg*kk, taps first) (+)= dY_n[g] (Kg, P) . colT[g] (P, Cg*kk)
          PadImageChannelsLast(g, box, n, data, data_stride, padded);
          PaddedIm2ColT(g, box, padded, col);
          GroupedGemm(serial, Kg, CKg, P, 1.0f, dy, GemmOperand<const DType>{col, g.ColRows(), 0, CKg},
                      n == first ? 0.0f : 1.0f, GemmOperand<DType>{partial, CKg, 0, Kg * CKg}, 1, g.G);
        }
        if (data_grad != nullptr) {
          // col[g] (Cg*kk, P) = W[g]^T (Cg*kk, Kg) . dY_n[g] (Kg, P); then added into the box, stored into dX_n
          GroupedGemm(serial, CKg, P, Kg, 1.0f, Transposed(GemmOperand<const DType>{weight, CKg, 0, Kg * CKg}), dy,
                      0.0f, GemmOperand<DType>{col, P, 0, CKg * P}, 1, g.G);
          PaddedCol2Im(g, box, col, padded);
          UnpadImage(g, box, padded, n, data_grad, grad_stride, accumulate_data);
        }
      }
    }
  });
  if (weight_grad == nullptr) return;
  // dW (req) = the partials summed in worker order, back from their taps-first order: per (filter,
  // channel) row of dW, its taps are Cg apart in a partial (one index computed per row, not per element).
  const index_t kk = g.KernelSize(), Cg = g.Cg();
  ParallelFor(g.K * Cg, kk * plan.workers, [&](index_t begin, index_t end) {
    for (index_t r = begin; r < end; ++r) {
      const DType* part = partials + TapMajorIndex(g, r * kk);
      DType* dst = weight_grad + r * kk;
      for (index_t tap = 0; tap < kk; ++tap) {
        DType sum = part[tap * Cg];
        for (index_t w = 1; w < plan.workers; ++w) sum += part[w * plan.partial_elems + tap * Cg];
        dst[tap] = weight_store.add ? dst[tap] + sum : sum;
      }
    }
  });
}

template <typename DType>
class ConvCpuPerImage : public ConvAlgorithm<cpu, DType> {
 public:
  const char* Name() const override { return "cpu_per_image"; }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    if (!kConvPerImageDType<DType>) return ConvSupport::No("its gemms are BLAS calls: float or double only");
    if (pr.geom.channels_last) return ConvSupport::No("it runs channels-first (NCHW) data only");
    return ConvSupport::Yes();
  }
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    const index_t chunked = PlanIm2Col(pr.geom, sizeof(DType), pr.workspace_limit).col_elems;
    return PlanConvPerImage(pr.geom, pr.threads, chunked, pass == ConvPass::kBackwardWeight).use;
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    const ConvPerImagePlan plan = PlanConvPerImage(pr.geom, pr.threads, 0, st.weight_grad.active);
    const size_t elems = static_cast<size_t>(plan.WorkspaceElems());
    return elems > std::numeric_limits<size_t>::max() / sizeof(DType) ? std::numeric_limits<size_t>::max()
                                                                       : elems * sizeof(DType);
  }
  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<cpu>*) const override {
    if constexpr (kConvPerImageDType<DType>) {
      const ConvPerImagePlan plan = PlanConvPerImage(pr.geom, pr.threads, 0, st.weight_grad.active);
      DType* space = static_cast<DType*>(workspace);
      if (st.out.active) ConvForwardPerImage(plan, pr.geom, t.data, t.data_stride, t.weight, st.out.beta(), t.out, space);
      if (st.data_grad.active || st.weight_grad.active)
        ConvBackwardPerImage(plan, pr.geom, t.out_grad, t.data, t.data_stride, t.weight,
                             st.data_grad.active ? t.data_grad : nullptr, t.data_grad_stride, st.data_grad.add,
                             st.weight_grad.active ? t.weight_grad : nullptr, st.weight_grad, space);
    }
  }
};

}  // namespace ops
}  // namespace tensorexpr
