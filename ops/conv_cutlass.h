// ops/conv_cutlass.h — "cutlass_implicit_gemm": the convolution as an implicit GEMM on CUTLASS's
// kernels (ops/cuda/cutlass/). The GEMM's operands are gathered from the activations as its tiles are
// loaded, so there is no column buffer; the products run on tensor cores (half, bf16, or float as TF32
// when the stream allows it) or, for strict float, on the CUDA cores. The kernels take channels-last
// 2-D problems with C and K multiples of their vector width; everything else is refused with the
// reason, and another algorithm takes it.
//
// The weight gradient reduces over every image and output position, a long reduction with a small
// result: its kernels write float partials of `split` slices of that reduction into the workspace, and
// the slices are summed in order (sum_rows, deterministic) into the gradient with the req's store.
#pragma once
#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/ops/conv_algorithm.h>
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
    return Pick(pr, pass, &why) != nullptr ? ConvSupport::Yes() : ConvSupport::No(why);
  }
  // Tensor cores beat im2col + cuBLAS; the strict-fp32 SIMT kernels are left to the tuner.
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    const Kernel* k = Pick(pr, pass, nullptr);
    return k != nullptr && k->math == cutlass_conv::Math::kTensorOp;
  }
  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& stores) const override {
    size_t bytes = 0;
    for (ConvPass pass : kPasses) {
      if (!stores.Wants(pass)) continue;
      if (const Kernel* k = Pick(pr, pass, nullptr)) bytes = std::max(bytes, Workspace(*k, Shape(pr, *k)));
    }
    return bytes;
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& stores, void* workspace,
           Stream<gpu>* stream) const override {
    for (ConvPass pass : kPasses) {
      if (!stores.Wants(pass)) continue;
      std::string why;
      const Kernel* k = Pick(pr, pass, &why);
      TE_CHECK(k != nullptr, "cutlass_implicit_gemm cannot run the ", ConvPassName(pass), " pass: ", why);
      const cutlass_conv::Conv2dShape s = Shape(pr, *k);
      const cudaStream_t cs = Stream<gpu>::GetStream(stream);
      cutlass_conv::ConvOperands o;
      switch (pass) {
        case ConvPass::kForward:
          o.a = t.data, o.b = t.weight, o.c = t.out, o.beta = stores.out.beta();
          k->run(s, o, workspace, cs);
          break;
        case ConvPass::kBackwardData:
          o.a = t.out_grad, o.b = t.weight, o.c = t.data_grad, o.beta = stores.data_grad.beta();
          k->run(s, o, workspace, cs);
          break;
        case ConvPass::kBackwardWeight: {
          o.a = t.out_grad, o.b = t.data, o.c = workspace;
          k->run(s, o, workspace, cs);
          const index_t size = pr.geom.K * pr.geom.KernelSize() * pr.geom.C;
          const Tensor<gpu, 2, float> slices(static_cast<float*>(workspace), Shape2(s.split_k, size), stream);
          Tensor<gpu, 1, DType> grad(t.weight_grad, Shape1(size), stream);
          if (stores.weight_grad.add) {
            grad += expr::tcast<DType>(expr::sum_rows(slices));
          } else {
            grad = expr::tcast<DType>(expr::sum_rows(slices));
          }
          break;
        }
      }
    }
  }

 private:
  static constexpr ConvPass kPasses[3] = {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeight};
  static constexpr cutlass_conv::Element kElement =
      std::is_same<DType, float>::value    ? cutlass_conv::Element::kF32
      : std::is_same<DType, half_t>::value ? cutlass_conv::Element::kF16
                                           : cutlass_conv::Element::kBF16;
  static constexpr size_t kMaxSliceBytes = size_t(256) << 20;  // the weight gradient's float partials, at most

  static cutlass_conv::Pass KernelPass(ConvPass pass) {
    return pass == ConvPass::kForward        ? cutlass_conv::Pass::kFprop
           : pass == ConvPass::kBackwardData ? cutlass_conv::Pass::kDgrad
                                             : cutlass_conv::Pass::kWgrad;
  }

  // The 2-D problem in CUTLASS's terms (the geometry is 3-D with a unit depth; Pick checked that).
  static cutlass_conv::Conv2dShape Shape2D(const ConvGeometry& g) {
    cutlass_conv::Conv2dShape s;
    s.N = int(g.N), s.H = int(g.in[1]), s.W = int(g.in[2]), s.C = int(g.C), s.K = int(g.K);
    s.R = int(g.kernel[1]), s.S = int(g.kernel[2]), s.P = int(g.out[1]), s.Q = int(g.out[2]);
    s.pad_h = int(g.pad[1]), s.pad_w = int(g.pad[2]), s.stride_h = int(g.stride[1]), s.stride_w = int(g.stride[2]);
    s.dilation_h = int(g.dilate[1]), s.dilation_w = int(g.dilate[2]);
    return s;
  }

  // With kernel k's split of the reduction: float-slice kernels cut it so that the output tiles times the
  // slices fill the GPU about twice (each slice keeping 4 tile steps of the reduction at least) and the
  // slices stay within the workspace the problem allows.
  static cutlass_conv::Conv2dShape Shape(const ConvProblem& pr, const Kernel& k) {
    cutlass_conv::Conv2dShape s = Shape2D(pr.geom);
    if (!k.float_output) return s;
    long long mnk[3];
    k.gemm_size(s, mnk);
    const long long tiles = ((mnk[0] + k.tile_m - 1) / k.tile_m) * ((mnk[1] + k.tile_n - 1) / k.tile_n);
    const long long sms = cuda::CurrentDeviceInfo().sm_count;
    const size_t slice_bytes = sizeof(float) * size_t(mnk[0]) * size_t(mnk[1]);
    const long long by_bytes = (long long)(std::min(pr.workspace_limit, kMaxSliceBytes) / std::max<size_t>(slice_bytes, 1));
    long long split = std::min({(2 * sms + tiles - 1) / tiles, mnk[2] / (4LL * k.tile_k), by_bytes, 128LL});
    s.split_k = int(std::max(1LL, split));
    return s;
  }

  static size_t Workspace(const Kernel& k, const cutlass_conv::Conv2dShape& s) {
    size_t bytes = k.workspace_bytes(s);
    if (k.float_output) {
      long long mnk[3];
      k.gemm_size(s, mnk);
      bytes = std::max(bytes, sizeof(float) * size_t(s.split_k) * size_t(mnk[0]) * size_t(mnk[1]));
    }
    return bytes;
  }

  // The first compiled kernel that can run `pass` of `pr`, or null with the reason in *why.
  static const Kernel* Pick(const ConvProblem& pr, ConvPass pass, std::string* why) {
    auto refuse = [why](std::string reason) -> const Kernel* {
      if (why != nullptr) *why = std::move(reason);
      return nullptr;
    };
    const ConvGeometry& g = pr.geom;
    if (!g.channels_last) return refuse("the kernels take channels-last (NHWC) tensors");
    if (g.in[0] != 1 || g.kernel[0] != 1 || g.out[0] != 1) return refuse("3-D convolutions have no kernels here yet");
    if (g.G != 1) return refuse("grouped convolutions have no kernels here yet");
    if (!pr.data_contiguous) return refuse("the input or its gradient has padded rows");
    for (index_t v : {g.N, g.C, g.K, g.in[1], g.in[2], g.out[1], g.out[2]})
      if (v > INT_MAX) return refuse("a size does not fit CUTLASS's 32-bit problem size");
    if (cuda::CurrentDeviceInfo().major < 8) return refuse("the kernels need compute capability 8.0 or newer");
    const cutlass_conv::Math math =
        std::is_same<DType, float>::value && pr.math == ConvMath::kStrict ? cutlass_conv::Math::kSimt
                                                                         : cutlass_conv::Math::kTensorOp;
    std::string last_reason = std::string("no ") + ConvPassName(pass) +
                              " kernel for this element type and math mode is compiled into this build";
    for (const Kernel& k : cutlass_conv::CompiledConvKernels()) {
      if (k.pass != KernelPass(pass) || k.element != kElement || k.math != math) continue;
      if (g.C % k.alignment != 0 || g.K % k.alignment != 0) {
        last_reason = "C = " + std::to_string(g.C) + " and K = " + std::to_string(g.K) + " must be multiples of " +
                      std::to_string(k.alignment) + " for " + k.name;
        continue;
      }
      const cutlass_conv::Conv2dShape s = Shape(pr, k);
      if (k.float_output && Workspace(k, s) > pr.workspace_limit) {
        last_reason = std::string(k.name) + " needs " + std::to_string(Workspace(k, s)) +
                      " bytes of workspace for its partial sums, over the limit";
        continue;
      }
      std::string no = k.why_not(s);
      if (no.empty()) return &k;
      last_reason = std::string(k.name) + ": " + no;
    }
    return refuse(last_reason);
  }
};

}  // namespace ops
}  // namespace tensorexpr
