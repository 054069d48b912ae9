// ops/conv_pointwise_gemm.h — "pointwise_gemm": a 1x1(x1) kernel with stride 1 and no padding reads the
// input as the column matrix itself, so each pass is one grouped gemm with no im2col and no workspace.
//   forward      y_n[g] (Kg, P) = W[g] (Kg, Cg) . x_n[g] (Cg, P)
//   data grad    dX_n[g] (Cg, P) = W[g]^T (Cg, Kg) . dY_n[g] (Kg, P)
//   weight grad  dW[g] (Kg, Cg) (+)= sum over n of dY_n[g] (Kg, P) . x_n[g]^T (P, Cg)
// Channels-last data is the same products with the operands transposed (RunChannelsLast).
#pragma once
#include <tensorexpr/ops/conv_algorithm.h>
#include "conv_backend.h"

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
    if (st.out.active)
      GroupedGemm(s, false, false, Kg, P, Cg, 1.0f, t.weight, Cg, 0, Kg * Cg, t.data, P, g.C * P, Cg * P,
                  st.out.beta(), t.out, P, g.K * P, Kg * P, g.N, g.G);
    if (st.weight_grad.active)
      GroupedGemm(s, false, true, Kg, Cg, P, 1.0f, t.out_grad, P, g.K * P, Kg * P, t.data, P, g.C * P, Cg * P,
                  st.weight_grad.beta(), t.weight_grad, Cg, 0, Kg * Cg, g.N, g.G);
    if (st.data_grad.active)
      GroupedGemm(s, true, false, Cg, P, Kg, 1.0f, t.weight, Cg, 0, Kg * Cg, t.out_grad, P, g.K * P, Kg * P,
                  st.data_grad.beta(), t.data_grad, P, g.C * P, Cg * P, g.N, g.G);
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
    if (st.out.active)
      GroupedGemm(s, false, true, P, Kg, Cg, 1.0f, t.data, C, P * C, Cg, t.weight, Cg, 0, Kg * Cg, st.out.beta(),
                  t.out, K, P * K, Kg, g.N, g.G);
    if (st.weight_grad.active)
      GroupedGemm(s, true, false, Kg, Cg, P, 1.0f, t.out_grad, K, P * K, Kg, t.data, C, P * C, Cg,
                  st.weight_grad.beta(), t.weight_grad, Cg, 0, Kg * Cg, g.N, g.G);
    if (st.data_grad.active)
      GroupedGemm(s, false, false, P, Cg, Kg, 1.0f, t.out_grad, K, P * K, Kg, t.weight, Cg, 0, Kg * Cg,
                  st.data_grad.beta(), t.data_grad, C, P * C, Cg, g.N, g.G);
  }
};

}  // namespace ops
}  // namespace tensorexpr
