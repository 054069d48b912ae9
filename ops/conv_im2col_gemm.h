// ops/conv_im2col_gemm.h — "im2col_gemm", the algorithm that can always implement a convolution (the
// fallback the selection ends on), on both devices and in every dtype:
//   forward   col = im2col(x_n)                 (C*kk, P)  per image, P = output positions
//             y_n[g] = W[g] . col[g]            one gemm per group, beta from the store
//   backward  dW[g] (+)= dY_n[g] . col_n[g]^T   the first chunk takes the store, the rest accumulate
//             col = W[g]^T . dY_n[g];  dX = col2im(col)   (a gather per input element)
//
// The column buffer is image-major, (images, C*kk, positions): the gemm of image n then writes straight
// into y_n of the NCHW output with beta carrying the store, and a strided-batched gemm covers several
// images (or the groups) in one call, with no transpose pass. Its size is capped by the problem's
// workspace limit: under the cap the batch is folded, several images per im2col and gemm call; when one
// image's column matrix exceeds the cap, the output positions of an image are split into chunks, down to
// one column at a time (which it takes even above the cap: a convolution never fails for want of
// workspace). Results are the same under every cap (tests/conv_test.cc checks it).
//
// A channels-first weight gradient whose filters are larger than an image's output (Cg*kk > P) joins the
// chunk's images instead: the columns are laid out (C*kk, images * positions) and dY's chunk is
// transposed beside them to (K, images * positions), so that the sum over images is one product with the
// images' positions as its reduction. Summed per image on the GPU, each image's product writes and rereads
// a partial dW (cuda/blas.cuh's summed BatchedGemm), more traffic than the transposed dY's when the
// filters are the larger: at 7 x 7 with 512 channels, 9 MB per image for 49 products per element. (The
// CPU's summed call has no partials; there the join took the same time, forced on ResNet-50's 3x3 layers
// at 28, 14 and 7 pixels square: bench/conv_cpu_bench --threads 2 --n 8, the development machine.)
//
// Channels last in one group, a column row is padded with zeros to whole 16-byte vectors where that adds
// at most an eighth (ColumnRowStride), and the forward's filters are copied into rows as long, after the
// columns: the forward's gemm then reduces over aligned rows. (On ResNet-50's stem in fp16, N = 32, H200,
// cuBLAS took 130 us over rows of 147 entries and 60 over rows of 152.) There, in one group, a chunk's
// forward product is one gemm whose rows are the output's (the chunk's images whole, or positions of
// one image), and on the GPU its store applies the epilogue: bias, residual and relu in cuBLASLt's
// kernel (gemm_epilogue.h), as pointwise_gemm's does.
#pragma once
#include <algorithm>
#include <climits>
#include <tensorexpr/gemm.h>
#include <tensorexpr/expr/swapaxis.h>
#include <tensorexpr/patch.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include "gemm_epilogue.h"

namespace tensorexpr {
namespace ops {

// How a run is cut into chunks of the column buffer.
struct Im2ColPlan {
  index_t images = 0;     // images per chunk
  index_t positions = 0;  // output positions per chunk (all of them unless one image exceeds the cap)
  index_t col_elems = 0;  // elements of the column buffer
  index_t row_stride = 0;  // channels last: entries per column row (ColumnRowStride)
  // After the columns, at an offset that keeps it aligned, one of: the joined weight gradient's transposed
  // chunk of dY (channels first, the top of this file), or the filters in padded rows (channels last,
  // row_stride past C kk): their elements, 0 when there is neither.
  index_t out_grad_elems = 0;
  index_t filter_elems = 0;

  bool JoinsImages() const { return out_grad_elems > 0; }
  bool PadsRows() const { return filter_elems > 0; }
  index_t TailOffset() const { return (col_elems + 63) / 64 * 64; }
  index_t WorkspaceElems() const {
    const index_t tail = out_grad_elems + filter_elems;
    return tail > 0 ? TailOffset() + tail : col_elems;
  }
};

// Entries per channels-last column row: C kk, or in one group C kk padded to whole 16-byte vectors where
// that adds at most an eighth (the top of this file).
inline index_t ColumnRowStride(const ConvGeometry& g, size_t dtype_bytes) {
  const index_t rows = g.ColRows();
  if (!g.channels_last || g.G != 1 || dtype_bytes == 0 || 16 % dtype_bytes != 0) return rows;
  const index_t vector = static_cast<index_t>(16 / dtype_bytes);
  const index_t padded = (rows + vector - 1) / vector * vector;
  return (padded - rows) * 8 <= rows ? padded : rows;
}

// The chunks of a run under limit_bytes; `weight_grad`: the run computes the weight gradient.
inline Im2ColPlan PlanIm2Col(const ConvGeometry& g, size_t dtype_bytes, size_t limit_bytes, bool weight_grad = false) {
  Im2ColPlan plan;
  const index_t P = g.OutSize(), rows = g.ColRows();
  plan.row_stride = ColumnRowStride(g, dtype_bytes);
  if (plan.row_stride != rows) plan.filter_elems = g.K * plan.row_stride;
  const index_t limit = static_cast<index_t>(std::min<size_t>(limit_bytes / dtype_bytes, size_t(1) << 62));
  const index_t cap = limit - std::min(limit, plan.PadsRows() ? 64 + plan.filter_elems : 0);
  const index_t per_image = plan.row_stride * P;
  if (weight_grad && !g.channels_last && g.N > 1 && P > 0 && g.Cg() * g.KernelSize() > P) {
    // Both buffers of an image, and the alignment gap once; the joined matrices' rows (images * P) and
    // dY's (K * images) within the 32-bit sizes of BLAS calls.
    const index_t joined = std::min({g.N, (cap - std::min<index_t>(cap, 64)) / SaturatingMul(rows + g.K, P),
                                     index_t(INT_MAX) / std::max(g.K, P)});
    if (joined > 1) {
      plan.images = joined, plan.positions = P, plan.col_elems = joined * per_image;
      plan.out_grad_elems = joined * g.K * P;
      return plan;
    }
  }
  if (per_image == 0 || g.N == 0) {
    plan.images = std::max<index_t>(g.N, 1);
    plan.positions = P;
  } else if (per_image <= cap) {
    plan.images = std::min(g.N, cap / per_image);
    plan.positions = P;
  } else {
    plan.images = 1;
    plan.positions = std::max<index_t>(1, std::min(P, cap / plan.row_stride));  // at least one column, over the cap if need be
  }
  // An empty batch runs nothing (the operator returns first) and takes no workspace.
  plan.col_elems = g.N == 0 ? 0 : plan.images * plan.row_stride * plan.positions;
  if (g.N == 0) plan.filter_elems = 0;
  return plan;
}

template <typename Device, typename DType>
class ConvIm2ColGemm : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return "im2col_gemm"; }
  ConvSupport CanImplement(const ConvProblem&, ConvPass) const override { return ConvSupport::Yes(); }
  // Channels last in one group on the GPU, where cuBLASLt has a kernel for every chunk's product (the top
  // of this file): written, or added without a residual or relu (C is the output then). The bias must
  // start on a 16-byte boundary.
  bool FusesEpilogue(const ConvProblem& pr, const ConvEpilogue<DType>& ep, ReqStore store) const override {
    if constexpr (kGpuGemmEpilogue<Device, DType>) {
      const ConvGeometry& g = pr.geom;
      if (!g.channels_last || g.G != 1 || !detail::VectorAligned(ep.bias)) return false;
      if (store.add && (ep.residual != nullptr || ep.activation != ConvActivation::kIdentity)) return false;
      const Im2ColPlan plan = PlanOf(pr, ConvStores::Only(ConvPass::kForward, store));
      const DType output{};  // (the query reads no pointer: any output stands for the one a run adds into)
      const index_t P = g.OutSize();
      // The chunks' rows: a whole chunk's, and the last one's where it is shorter.
      const index_t whole = plan.images * plan.positions;
      const index_t last = plan.positions == P ? g.N % plan.images * P : P % plan.positions;
      for (index_t rows : {whole, last})
        if (rows > 0 && !GpuGemmTakesEpilogue(ForwardCall(g, plan, nullptr, nullptr, nullptr, rows),
                                               ConvStoreEpilogue(ep, store, &output), pr.math == ConvMath::kTF32,
                                               FusedAlignment(pr, plan, ep), GemmWorkspaceLimit(pr, plan)))
          return false;
      return true;
    } else {
      return false;
    }
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    return static_cast<size_t>(PlanOf(pr, st).WorkspaceElems()) * sizeof(DType);
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<Device>* s) const override {
    const ConvGeometry& g = pr.geom;
    const index_t P = g.OutSize(), Kg = g.Kg(), CKg = g.Cg() * g.KernelSize(), rows = g.ColRows();
    const Im2ColPlan plan = PlanOf(pr, st);
    DType* col = static_cast<DType*>(workspace);
    if (g.channels_last) {
      RunChannelsLast(pr, plan, t, st, col, s);
      return;
    }
    DType* joined_dy = plan.JoinsImages() ? col + plan.TailOffset() : nullptr;
    for (index_t n0 = 0; n0 < g.N; n0 += plan.images) {
      const index_t nb = std::min(plan.images, g.N - n0);
      for (index_t p0 = 0; p0 < P; p0 += plan.positions) {
        const PatchChunk ch{n0, nb, p0, std::min(plan.positions, P - p0)};
        const index_t pc = ch.pc;
        // dY_n[g][:, p0:p0+pc] has row stride P (no dY in a forward run: never offset a null pointer)
        const DType* dy = t.out_grad != nullptr ? t.out_grad + n0 * g.K * P + p0 : nullptr;
        // Matrix (image n, group g) of each operand: W[g] (Kg, Cg*kk), col_n[g] (Cg*kk, pc; the images side by
        // side when joined), y_n[g] / dY_n[g] (Kg, pc of row stride P).
        const PatchColumns layout =
            plan.JoinsImages() ? PatchColumns{nb * pc, pc} : PatchColumns::ImageMajor(g, ch);
        const GemmOperand<const DType> weight{t.weight, CKg, 0, Kg * CKg};
        const GemmOperand<const DType> columns{col, layout.row_stride, layout.image_stride, CKg * layout.row_stride};
        const GemmOperand<const DType> out_grad{dy, P, g.K * P, Kg * P};
        if (st.out.active || st.weight_grad.active) Im2Col(s, g, ch, layout, t.data, t.data_stride, col);
        if (st.out.active) {
          // y_n[g] = W[g] . col_n[g]
          GroupedGemm(s, Kg, pc, CKg, 1.0f, weight, columns, st.out.beta(),
                      GemmOperand<DType>{t.out + n0 * g.K * P + p0, P, g.K * P, Kg * P}, nb, g.G);
        }
        if (st.weight_grad.active) {
          // dW[g] (+)= sum over the chunk's images of dY_n[g] . col_n[g]^T; joined, dY's chunk (K, nb, pc) so
          // that the images' products are one (gemm.h joins operands whose images adjoin)
          GemmOperand<const DType> summed = out_grad;
          if (joined_dy != nullptr) {
            Tensor<Device, 3, DType>(joined_dy, Shape3(g.K, nb, pc), s) = expr::swapaxis<0, 1>(
                Tensor<Device, 3, DType>(const_cast<DType*>(dy), Shape3(nb, g.K, pc), P, s));
            summed = GemmOperand<const DType>{joined_dy, nb * pc, pc, Kg * nb * pc};
          }
          const bool first = n0 == 0 && p0 == 0;
          GroupedGemm(s, Kg, CKg, pc, 1.0f, summed, Transposed(columns), first ? st.weight_grad.beta() : 1.0f,
                      GemmOperand<DType>{t.weight_grad, CKg, 0, Kg * CKg}, nb, g.G);
        }
        if (st.data_grad.active) {
          // col_n[g] = W[g]^T . dY_n[g] (image-major whatever the im2col's layout); then gather into dX
          GroupedGemm(s, CKg, pc, Kg, 1.0f, Transposed(weight), out_grad, 0.0f,
                      GemmOperand<DType>{col, pc, rows * pc, CKg * pc}, nb, g.G);
          Col2Im(s, g, ch, col, t.data_grad, t.data_grad_stride, p0 > 0 || st.data_grad.add);
        }
      }
    }
  }

 private:
  static Im2ColPlan PlanOf(const ConvProblem& pr, const ConvStores& st) {
    return PlanIm2Col(pr.geom, sizeof(DType), pr.workspace_limit, st.weight_grad.active);
  }

  // Channels last in one group: the forward's product over `rows` output rows, y (rows, K) = col (rows,
  // row_stride) . filters (K, row_stride)^T, the filters being W itself where the rows are not padded.
  static expr::GemmCall<DType> ForwardCall(const ConvGeometry& g, const Im2ColPlan& plan, const DType* col,
                                           const DType* filters, DType* out, index_t rows) {
    return ChannelsLastProduct(col, rows, plan.row_stride, plan.row_stride, filters, g.K, out);
  }
  // The alignment cuBLASLt's kernel is chosen for, the same at FusesEpilogue and at Run (so the same cached
  // kernel runs wherever the allocator put the tensors): 16 bytes where the problem's tensors and the
  // residual start on 16-byte boundaries and every chunk's rows do too, else the element's size.
  static int FusedAlignment(const ConvProblem& pr, const Im2ColPlan& plan, const ConvEpilogue<DType>& ep) {
    const bool rows = (plan.row_stride * sizeof(DType)) % 16 == 0 && (pr.geom.K * sizeof(DType)) % 16 == 0;
    return pr.vector_aligned && rows && detail::VectorAligned(ep.residual) ? 16 : int(sizeof(DType));
  }
  // What the columns leave of the workspace limit, for cuBLASLt's own workspace.
  static size_t GemmWorkspaceLimit(const ConvProblem& pr, const Im2ColPlan& plan) {
    const size_t columns = sizeof(DType) * static_cast<size_t>(plan.WorkspaceElems());
    return pr.workspace_limit > columns ? pr.workspace_limit - columns : 0;
  }

  // Channels last, the images' products of the weight gradient adjoin: one product with the chunk's
  // positions as its reduction, but on the GPU a batch of per-image products summed through partials where
  // the filters are small (kSmallFilterValues). Float only (16-bit partials would round each image's
  // product) and one group (more groups than images are a call per image, no partials).
  static GemmSum WeightGradSum(const ConvGeometry& g) {
    const bool separate = std::is_same<Device, gpu>::value && std::is_same<DType, float>::value && g.G == 1 &&
                          g.FilterValuesPerGroup() < kSmallFilterValues;
    return separate ? GemmSum::kSeparate : GemmSum::kJoin;
  }

  // Channels last: the column matrix of a chunk is (nb, pc, C*kk) in rows of plan.row_stride
  // (tensorexpr/patch.h), group g's part a (pc, Cg*kk) matrix; y_n and dY_n are (P, K), group g's columns
  // Kg wide.
  //   forward      y_n[g][p0:p0+pc] = col_n[g] . W[g]^T  (padded rows: over the rows' zero tails too)
  //   weight grad  dW[g] (+)= sum over the chunk of dY_n[g][p0:p0+pc]^T . col_n[g]
  //   data grad    col_n[g] = dY_n[g][p0:p0+pc] . W[g];  dX = col2im(col)  (dense rows)
  static void RunChannelsLast(const ConvProblem& pr, const Im2ColPlan& plan, const ConvTensors<DType>& t,
                              const ConvStores& st, DType* col, Stream<Device>* s) {
    const ConvGeometry& g = pr.geom;
    const index_t P = g.OutSize(), K = g.K, Kg = g.Kg(), CKg = g.Cg() * g.KernelSize(), rows = g.ColRows();
    const index_t ld = plan.row_stride;
    // The forward's filters (Kg, reduction): W itself, or W copied into rows of ld with zero tails.
    GemmOperand<const DType> filters{t.weight, CKg, 0, Kg * CKg};
    if (st.out.active && plan.PadsRows()) {
      DType* padded = col + plan.TailOffset();
      Tensor<Device, 2, DType>(padded, Shape2(K, ld), s) = DType(0.0f);
      Copy(Tensor<Device, 2, DType>(padded, Shape2(K, CKg), ld, s),
           Tensor<Device, 2, DType>(const_cast<DType*>(t.weight), Shape2(K, CKg), s), s);
      filters = GemmOperand<const DType>{padded, ld, 0, Kg * ld};
    }
    const index_t reduction = plan.PadsRows() ? ld : CKg;
    for (index_t n0 = 0; n0 < g.N; n0 += plan.images) {
      const index_t nb = std::min(plan.images, g.N - n0);
      for (index_t p0 = 0; p0 < P; p0 += plan.positions) {
        const PatchChunk ch{n0, nb, p0, std::min(plan.positions, P - p0)};
        const index_t pc = ch.pc;
        const DType* dy = t.out_grad != nullptr ? t.out_grad + (n0 * P + p0) * K : nullptr;
        // Matrix (image n, group g): W[g] (Kg, Cg*kk), col_n[g] (pc, Cg*kk of row stride C*kk), y_n[g] /
        // dY_n[g] (pc, Kg of row stride K).
        const GemmOperand<const DType> weight{t.weight, CKg, 0, Kg * CKg};
        const GemmOperand<const DType> columns{col, ld, pc * ld, CKg};
        const GemmOperand<const DType> out_grad{dy, K, P * K, Kg};
        if (st.out.active || st.weight_grad.active)
          Im2Col(s, g, ch, PatchColumns::PixelRows(ch, ld), t.data, t.data_stride, col);
        if (st.out.active && t.epilogue.active) {
          // (FusesEpilogue: one group on the GPU) the chunk's rows of y, from row n0 P + p0
          if constexpr (kGpuGemmEpilogue<Device, DType>) {
            TE_CHECK(g.G == 1, "im2col_gemm: an epilogue fuses into one group's product only, not ", g.G);
            const index_t offset = (n0 * P + p0) * K;
            GpuGemmWithEpilogue(s, ForwardCall(g, plan, col, filters.ptr, t.out + offset, nb * pc),
                                ConvStoreEpilogue(t.epilogue, st.out, t.out, offset), pr.math == ConvMath::kTF32,
                                FusedAlignment(pr, plan, t.epilogue), GemmWorkspaceLimit(pr, plan));
          } else {
            Fail("im2col_gemm: an epilogue fuses on the GPU in float, half and bf16 only");
          }
        } else if (st.out.active) {
          GroupedGemm(s, pc, Kg, reduction, 1.0f, columns, Transposed(filters), st.out.beta(),
                      GemmOperand<DType>{t.out + (n0 * P + p0) * K, K, P * K, Kg}, nb, g.G);
        }
        if (st.weight_grad.active) {
          const bool first = n0 == 0 && p0 == 0;
          GroupedGemm(s, Kg, CKg, pc, 1.0f, Transposed(out_grad), columns, first ? st.weight_grad.beta() : 1.0f,
                      GemmOperand<DType>{t.weight_grad, CKg, 0, Kg * CKg}, nb, g.G, WeightGradSum(g));
        }
        if (st.data_grad.active) {
          GroupedGemm(s, pc, CKg, Kg, 1.0f, out_grad, weight, 0.0f, GemmOperand<DType>{col, rows, pc * rows, CKg},
                      nb, g.G);
          Col2Im(s, g, ch, col, t.data_grad, t.data_grad_stride, p0 > 0 || st.data_grad.add);
        }
      }
    }
  }
};

}  // namespace ops
}  // namespace tensorexpr
