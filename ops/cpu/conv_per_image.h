// ops/cpu/conv_per_image.h — the CPU convolution for batches of at least as many images as threads:
// the batch is dealt out to workers (one per thread), and a worker runs im2col, the gemms and col2im for
// one of its images at a time, on its own column buffer. The buffer is written and read back by the same
// core while it is still in that core's cache, where the chunked path (ops/convolution.h) writes the
// columns of many images to memory, then reads them back in a second threaded pass.
//
// The weight gradient sums over the images. Each worker sums its own images into a private partial
// (one gemm per image with beta = 1); the partials are then added in worker order. The result depends
// on the thread count (as any threaded BLAS's does) but not on the timing of the threads.
//
// ConvolutionForward / ConvolutionBackward choose this path through PlanConvPerImage, which never takes
// more workspace than the chunked plan (so ConvolutionWorkspaceBytes stays an upper bound).
#pragma once
#include <algorithm>
#include <type_traits>
#include <tensorexpr/cpu/blas.h>
#include <tensorexpr/cpu/threads.h>
#include "../conv_geometry.h"
#include "conv_gemm.h"
#include "conv_kernels.h"

namespace tensorexpr {
namespace ops {

// The dtypes the per-image path runs (its gemms are single-threaded BLAS calls).
template <typename DType>
constexpr bool kConvPerImageDType = std::is_same<DType, float>::value || std::is_same<DType, double>::value;

struct ConvPerImagePlan {
  bool use = false;           // false: run the chunked path
  index_t workers = 0;        // each owns a run of images, a column buffer and a weight-gradient partial
  index_t col_elems = 0;      // one image's column matrix
  index_t partial_elems = 0;  // one weight-gradient partial (0 when the weight gradient is not wanted)

  index_t WorkspaceElems() const { return workers * (col_elems + partial_elems); }
  // Images [first, last) of worker w: an even deal, the first N % workers workers one image more.
  index_t First(index_t w, index_t N) const { return w * (N / workers) + std::min(w, N % workers); }
};

// The per-image plan for float / double data of geometry g when `threads` threads run it, given the
// chunked plan's column buffer size (its cap on workspace). Used when every worker gets an image, the
// deal wastes at most a fifth of the threads' time (64 images on 16 threads: none; 20: too much), and
// the buffers fit in what the chunked plan takes.
template <typename DType>
inline ConvPerImagePlan PlanConvPerImage(const ConvGeometry& g, index_t threads, index_t chunked_col_elems,
                                         bool direct, bool weight_grad) {
  ConvPerImagePlan plan;
  if (!kConvPerImageDType<DType> || direct) return plan;
  const index_t T = std::max<index_t>(threads, 1);
  if (g.N < T) return plan;
  const index_t rounds = (g.N + T - 1) / T;
  if (5 * (rounds * T - g.N) > rounds * T) return plan;
  plan.workers = T;
  plan.col_elems = g.ColRows() * g.OutSize();
  plan.partial_elems = weight_grad ? g.K * g.Cg() * g.KernelSize() : 0;
  plan.use = plan.WorkspaceElems() <= chunked_col_elems;
  return plan;
}

// out (N, K, P) = conv(data) per image, beta (0 or 1) carrying the req; the bias is the caller's.
template <typename DType>
void ConvForwardPerImage(const ConvPerImagePlan& plan, const ConvGeometry& g, const DType* data,
                         index_t data_stride, const DType* weight, float beta, DType* out, DType* workspace) {
  const index_t P = g.OutSize(), Kg = g.Kg(), CKg = g.Cg() * g.KernelSize();
  cpu_blas::UseOneBlasThread();
  ParallelFor(plan.workers, plan.col_elems * Kg, [&](index_t begin, index_t end) {
    for (index_t w = begin; w < end; ++w) {
      DType* col = workspace + w * plan.col_elems;
      for (index_t n = plan.First(w, g.N), last = plan.First(w + 1, g.N); n < last; ++n) {
        detail::Im2ColRows(g, data, data_stride, n, 0, P, col, 0, g.ColRows());
        // y_n[g] (Kg, P) = W[g] (Kg, Cg*kk) . col[g] (Cg*kk, P)
        for (index_t gi = 0; gi < g.G; ++gi)
          SerialGemm(false, false, Kg, P, CKg, 1.0f, weight + gi * Kg * CKg, CKg, col + gi * CKg * P, P, beta,
                     out + (n * g.K + gi * Kg) * P, P);
      }
    }
  });
}

// The data and / or weight gradients per image (a null pointer skips one). The weight gradient is
// stored as req_weight says, the data gradient written or (accumulate_data) added.
template <typename DType>
void ConvBackwardPerImage(const ConvPerImagePlan& plan, const ConvGeometry& g, const DType* out_grad,
                          const DType* data, index_t data_stride, const DType* weight, DType* data_grad,
                          index_t grad_stride, bool accumulate_data, DType* weight_grad, OpReqType req_weight,
                          DType* workspace) {
  const index_t P = g.OutSize(), Kg = g.Kg(), CKg = g.Cg() * g.KernelSize();
  const index_t in_rows = g.C * g.in[0] * g.in[1];  // one image's rows of its last dimension
  DType* partials = workspace + plan.workers * plan.col_elems;
  cpu_blas::UseOneBlasThread();
  ParallelFor(plan.workers, plan.col_elems * Kg * 2, [&](index_t begin, index_t end) {
    for (index_t w = begin; w < end; ++w) {
      DType* col = workspace + w * plan.col_elems;
      DType* partial = partials + w * plan.partial_elems;
      const index_t first = plan.First(w, g.N);
      for (index_t n = first, last = plan.First(w + 1, g.N); n < last; ++n) {
        const DType* dy = out_grad + n * g.K * P;
        if (weight_grad != nullptr) {
          // partial[g] (Kg, Cg*kk) (+)= dY_n[g] (Kg, P) . col[g]^T (P, Cg*kk)
          detail::Im2ColRows(g, data, data_stride, n, 0, P, col, 0, g.ColRows());
          for (index_t gi = 0; gi < g.G; ++gi)
            SerialGemm(false, true, Kg, CKg, P, 1.0f, dy + gi * Kg * P, P, col + gi * CKg * P, P,
                       n == first ? 0.0f : 1.0f, partial + gi * Kg * CKg, CKg);
        }
        if (data_grad != nullptr) {
          // col[g] (Cg*kk, P) = W[g]^T (Cg*kk, Kg) . dY_n[g] (Kg, P); then gather into dX_n
          for (index_t gi = 0; gi < g.G; ++gi)
            SerialGemm(true, false, CKg, P, Kg, 1.0f, weight + gi * Kg * CKg, CKg, dy + gi * Kg * P, P, 0.0f,
                       col + gi * CKg * P, P);
          detail::Col2ImRows(g, col, n, 0, P, data_grad, grad_stride, accumulate_data, 0, in_rows);
        }
      }
    }
  });
  if (weight_grad == nullptr) return;
  // dW (req) = the partials summed in worker order.
  ParallelFor(plan.partial_elems, plan.workers, [&](index_t begin, index_t end) {
    for (index_t e = begin; e < end; ++e) {
      DType sum = partials[e];
      for (index_t w = 1; w < plan.workers; ++w) sum += partials[w * plan.partial_elems + e];
      weight_grad[e] = req_weight == kAddTo ? weight_grad[e] + sum : sum;
    }
  });
}

}  // namespace ops
}  // namespace tensorexpr
