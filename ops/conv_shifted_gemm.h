// ops/conv_shifted_gemm.h — "shifted_gemm": the weight gradient of a stride-1 convolution as one gemm per
// kernel tap, each over a shifted view of a zero-padded copy of the input.
//
// Lay the input out channels last on the padded grid E (E = out + (kernel - 1) * dilation per spatial
// dimension: every window of the convolution lies inside it), and the output gradient on the same grid
// (its P values at the grid's first positions, zeros elsewhere). Number the grid's positions row-major
// over (n, e0, e1, e2). Output position i then reads input position i + offset(tap) for every tap, with
// offset = ((t0 d0) E1 + t1 d1) E2 + t2 d2 the same for all i. So for each tap
//   dW[:, tap, :] (+)= dY_E^T (K x L) . X_E[offset .. offset + L) (L x C),   L = N E0 E1 E2
// one gemm with the whole batch as its inner size: the padding positions hold zero gradients and add
// nothing, and X_E carries `offset` zero rows past its end for the last taps to read. Against im2col
// (a column buffer the kernel's area times the input) the copies cost about one pass over the input and
// one over the output gradient; the products grow by E / P (1.65 on a 7x7 image with a 3x3 kernel,
// 1.07 on 56x56). The taps of a row of the kernel are one strided-batched call (their views step by d2
// channels-last rows).
//
// Only the weight gradient; groups and dilation yes, stride 1 only, either layout (channels-first input is
// transposed while it is copied; its filters' gradient goes through the workspace as (K, taps, C / G)).
#pragma once
#include <limits>
#include <tensorexpr/checked.h>
#include <tensorexpr/gemm.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {

template <typename Device, typename DType>
class ConvShiftedGemm : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return "shifted_gemm"; }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    if (pass != ConvPass::kBackwardWeight) return ConvSupport::No("only the weight gradient runs here");
    const ConvGeometry& g = pr.geom;
    for (int i = 0; i < 3; ++i) {
      if (g.stride[i] != 1) return ConvSupport::No("the stride is not 1");
      if (g.pad_end[i] < 0) return ConvSupport::No("the padding after crops the input");
    }
    return ConvSupport::Yes();
  }
  // Left to the tuner and to forcing: on ResNet-50's 3x3 layers (H200, fp16, N = 32) it beat
  // cutlass_implicit_gemm's weight gradient only on the 7x7 one with 512 channels (0.065 ms against 0.091),
  // and took 1.2 to 4.4 times as long on the others: a gemm with a small output and an inner size of a
  // whole batch (64 x 64 x 107584 per tap) leaves cuBLAS most of the GPU idle, and in strict fp32 far more.
  bool Recommended(const ConvProblem&, ConvPass) const override { return false; }
  // Saturated, like the grid's sizes: a geometry too large for any workspace asks for the most bytes.
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    if (!st.weight_grad.active) return 0;
    const ConvGeometry& g = pr.geom;
    const Grid e = PaddedGrid(g);
    const index_t staged_weights = g.channels_last ? 0 : g.K * g.KernelSize() * g.Cg();  // the weight's size
    const index_t elems = SaturatingAdd(SaturatingAdd(SaturatingMul(SaturatingAdd(e.rows, e.tail), g.C),
                                                      SaturatingMul(e.rows, g.K)),
                                        staged_weights);
    const size_t limit = std::numeric_limits<size_t>::max() / sizeof(DType);
    return static_cast<size_t>(elems) > limit ? std::numeric_limits<size_t>::max() : sizeof(DType) * size_t(elems);
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<Device>* s) const override {
    TE_CHECK(!st.out.active && !st.data_grad.active, "shifted_gemm runs only the weight gradient");
    if (!st.weight_grad.active) return;
    const ConvGeometry& g = pr.geom;
    const Grid e = PaddedGrid(g);
    DType* const x_grid = static_cast<DType*>(workspace);
    DType* const dy_grid = x_grid + (e.rows + e.tail) * g.C;
    DType* const staged = dy_grid + e.rows * g.K;
    CopyOntoGrid(g, e, t, x_grid, dy_grid, s);

    const index_t T = g.KernelSize(), Kg = g.Kg(), Cg = g.Cg();
    const index_t* k = g.kernel;
    const index_t* d = g.dilate;
    // Channels last: the filters' gradient is (K, taps, C / G) already; else the workspace's copy.
    DType* const dw = g.channels_last ? t.weight_grad : staged;
    const float beta = g.channels_last ? st.weight_grad.beta() : 0.0f;
    for (index_t t0 = 0; t0 < k[0]; ++t0)
      for (index_t t1 = 0; t1 < k[1]; ++t1) {
        const index_t offset = (t0 * d[0] * e.e[1] + t1 * d[1]) * e.e[2];  // rows; the t2 taps step by d2
        const index_t tap = (t0 * k[1] + t1) * k[2];
        GroupedGemm(s, Kg, Cg, e.rows, 1.0f, Transposed(GemmOperand<const DType>{dy_grid, g.K, 0, Kg}),
                    GemmOperand<const DType>{x_grid + offset * g.C, g.C, d[2] * g.C, Cg}, beta,
                    GemmOperand<DType>{dw + tap * Cg, T * Cg, Cg, Kg * T * Cg}, k[2], g.G);
      }
    if (!g.channels_last) {
      Tensor<Device, 3, DType> to(t.weight_grad, Shape3(g.K, Cg, T), s);
      const auto from = expr::swapaxis<2, 1>(Tensor<Device, 3, DType>(staged, Shape3(g.K, T, Cg), s));
      if (st.weight_grad.add) to += from; else to = from;
    }
  }

 private:
  // The padded grid: its extents, its positions (rows) and the zero rows past its end the last taps read.
  struct Grid {
    index_t e[3];
    index_t rows, tail;
  };
  // The extents fit (each is at most the padded input's); their products saturate (SaturatingMul) for a
  // geometry too large for any workspace, which WorkspaceBytes then refuses.
  static Grid PaddedGrid(const ConvGeometry& g) {
    Grid r;
    index_t span[3];
    for (int i = 0; i < 3; ++i) span[i] = (g.kernel[i] - 1) * g.dilate[i], r.e[i] = g.out[i] + span[i];
    r.rows = SaturatingMul(SaturatingMul(SaturatingMul(g.N, r.e[0]), r.e[1]), r.e[2]);
    r.tail = SaturatingAdd(SaturatingMul(SaturatingAdd(SaturatingMul(span[0], r.e[1]), span[1]), r.e[2]), span[2]);
    return r;
  }

  // x onto the grid at its padding offsets, channels last, then the zero tail; dy at the grid's start.
  static void CopyOntoGrid(const ConvGeometry& g, const Grid& e, const ConvTensors<DType>& t, DType* x_grid,
                           DType* dy_grid, Stream<Device>* s) {
    Shape<5> before, after, dy_after;
    before[0] = after[0] = dy_after[0] = 0;
    before[4] = after[4] = dy_after[4] = 0;
    for (int i = 0; i < 3; ++i) {
      before[i + 1] = g.pad[i];
      after[i + 1] = e.e[i] - g.in[i] - g.pad[i];  // the input ends inside the grid (CanImplement)
      dy_after[i + 1] = e.e[i] - g.out[i];
    }
    const Shape<5> grid_x = Shape5(g.N, e.e[0], e.e[1], e.e[2], g.C);
    const Shape<5> grid_dy = Shape5(g.N, e.e[0], e.e[1], e.e[2], g.K);
    DType* const x = const_cast<DType*>(t.data);  // only read
    DType* const dy = const_cast<DType*>(t.out_grad);
    Tensor<Device, 5, DType> xg(x_grid, grid_x, s), dyg(dy_grid, grid_dy, s);
    if (g.channels_last) {
      xg = expr::pad(Tensor<Device, 5, DType>(x, Shape5(g.N, g.in[0], g.in[1], g.in[2], g.C), t.data_stride, s), before,
                     after);
      dyg = expr::pad(Tensor<Device, 5, DType>(dy, Shape5(g.N, g.out[0], g.out[1], g.out[2], g.K), s),
                      Shape5(0, 0, 0, 0, 0), dy_after);
    } else {
      const Shape<5> to_last = Shape5(0, 2, 3, 4, 1);
      xg = expr::pad(expr::transpose(Tensor<Device, 5, DType>(x, Shape5(g.N, g.C, g.in[0], g.in[1], g.in[2]),
                                                              t.data_stride, s), to_last),
                     before, after);
      dyg = expr::pad(expr::transpose(Tensor<Device, 5, DType>(dy, Shape5(g.N, g.K, g.out[0], g.out[1], g.out[2]), s),
                                      to_last),
                      Shape5(0, 0, 0, 0, 0), dy_after);
    }
    if (e.tail > 0) Tensor<Device, 1, DType>(x_grid + e.rows * g.C, Shape1(e.tail * g.C), s) = DType(0.0f);
  }
};

}  // namespace ops
}  // namespace tensorexpr
