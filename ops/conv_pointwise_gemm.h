// ops/conv_pointwise_gemm.h — "pointwise_gemm": a 1x1(x1) kernel with stride 1 and no padding reads the
// input as the column matrix itself, so each pass is one grouped gemm with no im2col and no workspace.
//   forward      y_n[g] (Kg, P) = W[g] (Kg, Cg) . x_n[g] (Cg, P)
//   data grad    dX_n[g] (Cg, P) = W[g]^T (Cg, Kg) . dY_n[g] (Kg, P)
//   weight grad  dW[g] (Kg, Cg) (+)= sum over n of dY_n[g] (Kg, P) . x_n[g]^T (P, Cg)
// Channels-last data is the same products with the operands transposed (RunChannelsLast).
//
// A strided 1x1 kernel (no padding) reads only every stride-th pixel: its weight gradient is the same
// product on those pixels, gathered into the workspace by one strided copy (a quarter of the input at
// stride 2). That is one gemm for cuBLAS or OpenBLAS where an implicit GEMM walks the whole input's
// geometry. Its forward and data gradient stay with the other algorithms (the data gradient would have
// to scatter into an input mostly zero).
#pragma once
#include <type_traits>
#include <tensorexpr/gemm.h>
#include <tensorexpr/ops/conv_algorithm.h>

namespace tensorexpr {
namespace ops {

template <typename Device, typename DType>
class ConvPointwiseGemm : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return "pointwise_gemm"; }
  ConvSupport CanImplement(const ConvProblem& pr, ConvPass pass) const override {
    if (IsStridedPointwise(pr.geom)) {
      if (pass == ConvPass::kBackwardWeight) return ConvSupport::Yes();
      return ConvSupport::No("a strided 1x1 kernel: only its weight gradient runs here (on the gathered pixels)");
    }
    if (!pr.geom.IsPointwise()) return ConvSupport::No("the kernel is not 1x1 with stride 1 and no padding");
    if (!pr.data_contiguous) return ConvSupport::No("the input or its gradient has padded rows");
    return ConvSupport::Yes();
  }
  // A strided kernel's weight gradient on the GPU where ResNet-50's 1x1 stride-2 layers measured it
  // ahead of cutlass_implicit_gemm (H200, fp16, N = 32): channels last, filters of 512 x 1024 values or
  // more (smaller ones spend longer gathering than the implicit GEMM takes in all, 1.2 to 1.8 times as
  // long); channels first, where the implicit GEMM pays for two transposes, below 2048 x 1024 (there the
  // per-image products' partial sums cost more). On the CPU it is left to the tuner.
  bool Recommended(const ConvProblem& pr, ConvPass) const override {
    if (!IsStridedPointwise(pr.geom)) return true;
    if (!std::is_same<Device, gpu>::value) return false;
    const double filter = double(pr.geom.Kg()) * double(pr.geom.Cg());
    return pr.geom.channels_last ? filter >= double(1 << 19) : filter < double(1 << 21);
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    if (!IsStridedPointwise(pr.geom) || !st.weight_grad.active) return 0;
    return sizeof(DType) * static_cast<size_t>(pr.geom.N * pr.geom.C * pr.geom.OutSize());
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<Device>* s) const override {
    if (IsStridedPointwise(pr.geom)) {
      TE_CHECK(!st.out.active && !st.data_grad.active,
               "pointwise_gemm runs only the weight gradient of a strided 1x1 convolution");
      if (!st.weight_grad.active) return;
      ConvTensors<DType> gathered = t;
      gathered.data = GatherPixels(pr.geom, t.data, t.data_stride, static_cast<DType*>(workspace), s);
      gathered.data_stride = pr.geom.channels_last ? pr.geom.C : pr.geom.out[2];
      ConvProblem dense = pr;
      dense.geom = Gathered(pr.geom);
      dense.data_contiguous = true;
      Run(dense, gathered, st, nullptr, s);
      return;
    }
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
  // A 1x1(x1) kernel without padding whose stride is more than 1 somewhere.
  static bool IsStridedPointwise(const ConvGeometry& g) {
    bool strided = false;
    for (int i = 0; i < 3; ++i) {
      if (g.kernel[i] != 1 || g.pad[i] != 0 || g.pad_end[i] != 0) return false;
      strided = strided || g.stride[i] != 1;
    }
    return strided;
  }
  // The problem on the gathered pixels: the input is the output's size, the stride 1.
  static ConvGeometry Gathered(ConvGeometry g) {
    for (int i = 0; i < 3; ++i) g.in[i] = g.out[i], g.stride[i] = 1;
    return g;
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
