// ops/conv_pointwise_gemm.h — "pointwise_gemm": a 1x1(x1) kernel with stride 1 and no padding reads the
// input as the column matrix itself, so each pass is one grouped gemm with no im2col and no workspace.
//   forward      y_n[g] (Kg, P) = W[g] (Kg, Cg) . x_n[g] (Cg, P)
//   data grad    dX_n[g] (Cg, P) = W[g]^T (Cg, Kg) . dY_n[g] (Kg, P)
//   weight grad  dW[g] (Kg, Cg) (+)= sum over n of dY_n[g] (Kg, P) . x_n[g]^T (P, Cg)
// Channels-last data is the same products with the operands transposed (RunChannelsLast).
#pragma once
#include <tensorexpr/gemm.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {

template <typename Device, typename DType>
class ConvPointwiseGemm : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return "pointwise_gemm"; }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    if (!pr.geom.IsPointwise()) return ConvSupport::No("the kernel is not 1x1 with stride 1 and no padding");
    if (!pr.data_contiguous) return ConvSupport::No("the input or its gradient has padded rows");
    return ConvSupport::Yes();
  }
  size_t WorkspaceBytes(const ConvProblem&, const ConvStores&) const override { return 0; }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void*,
           Stream<Device>* s) const override {
    const ConvGeometry& g = pr.geom;
    const index_t P = g.OutSize(), Kg = g.Kg(), Cg = g.Cg();
    if (g.channels_last) {
      RunChannelsLast(g, t, st, s);
      return;
    }
    // Matrix (image n, group g): W[g] (Kg, Cg), x_n[g] (Cg, P), y_n[g] (Kg, P).
    const GemmOperand<const DType> weight{t.weight, Cg, 0, Kg * Cg}, data{t.data, P, g.C * P, Cg * P};
    const GemmOperand<const DType> out_grad{t.out_grad, P, g.K * P, Kg * P};
    if (st.out.active)
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
