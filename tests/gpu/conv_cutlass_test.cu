// The CUTLASS implicit-GEMM convolution (ops/conv_cutlass.h), forced by name, against a float64 loop over
// channels-last tensors: forward, data and weight gradients, half and bf16 on tensor cores, float as TF32
// and as strict fp32, kWriteTo and kAddTo, stride, dilation and asymmetric padding; and the problems its
// kernels cannot take (odd channel counts, channels first, groups, a dilated strided data gradient)
// refused with the reason while the library's own choice still gets them right.
#include <cmath>
#include <string>
#include <vector>
#include <tensorexpr/ops/convolution.h>
#include "../test_util.h"

using namespace tensorexpr;
using te_test::FillRandom;
using te_test::ToHost;

namespace {

constexpr const char* kCutlass = "cutlass_implicit_gemm";

template <typename DType>
bool HaveCutlass() {
  return ops::ConvRegistry<gpu, DType>::Get().Find(kCutlass) != nullptr;
}

#define TE_REQUIRE_CUTLASS(DType)                                                                       \
  do {                                                                                                  \
    if (!te_test::HaveGPU()) {                                                                          \
      WARN("skipped: no CUDA GPU present (cudaGetDeviceCount found none)");                              \
      return;                                                                                           \
    }                                                                                                   \
    if (!HaveCutlass<DType>()) {                                                                        \
      WARN("skipped: this build has no CUTLASS kernels (configure with -Dcutlass=enabled and CUTLASS's headers)"); \
      return;                                                                                           \
    }                                                                                                   \
  } while (0)

struct Conv2d {
  index_t N, H, W, C, K, R, S;
  index_t stride = 1, dilate = 1, pad = 0, pad_end = 0;
  index_t P() const { return (H + pad + pad_end - dilate * (R - 1) - 1) / stride + 1; }
  index_t Q() const { return (W + pad + pad_end - dilate * (S - 1) - 1) / stride + 1; }
  ops::ConvolutionParam Param(const std::string& algorithm) const {
    ops::ConvolutionParam p;
    p.kernel = {R, S};
    p.stride = {stride, stride};
    p.dilate = {dilate, dilate};
    p.pad = {pad, pad};
    p.pad_end = {pad_end, pad_end};
    p.num_filter = K;
    p.no_bias = true;
    p.layout = ops::Layout::kNHWC;
    p.algorithm = algorithm;
    return p;
  }
};

// The forward output y (N, P, Q, K) of x (N, H, W, C) and w (K, R, S, C), and the gradients dx and dw
// for an output gradient dy, all in float64.
struct Reference {
  std::vector<double> y, dx, dw;
  Reference(const Conv2d& c, const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy)
      : y(dy.size(), 0.0), dx(x.size(), 0.0), dw(w.size(), 0.0) {
    const index_t P = c.P(), Q = c.Q();
    for (index_t n = 0; n < c.N; ++n)
      for (index_t p = 0; p < P; ++p)
        for (index_t q = 0; q < Q; ++q)
          for (index_t r = 0; r < c.R; ++r)
            for (index_t s = 0; s < c.S; ++s) {
              const index_t h = p * c.stride - c.pad + r * c.dilate, ww = q * c.stride - c.pad + s * c.dilate;
              if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;
              for (index_t k = 0; k < c.K; ++k) {
                const size_t yi = size_t(((n * P + p) * Q + q) * c.K + k);
                for (index_t ch = 0; ch < c.C; ++ch) {
                  const size_t xi = size_t(((n * c.H + h) * c.W + ww) * c.C + ch);
                  const size_t wi = size_t(((k * c.R + r) * c.S + s) * c.C + ch);
                  y[yi] += w[wi] * x[xi];
                  dx[xi] += w[wi] * dy[yi];
                  dw[wi] += dy[yi] * x[xi];
                }
              }
            }
  }
};

template <int dim, typename DType>
std::vector<double> Values(const TensorContainer<cpu, dim, DType>& t) {
  std::vector<double> v;
  for (index_t i = 0; i < t.shape_.Size(); ++i) v.push_back(double(static_cast<float>(t.dptr_[i])));
  return v;
}

// Checks a device result against `times` x the float64 reference within tol times the reference's scale
// (its largest magnitude).
template <typename DType>
void CheckAgainst(const char* what, const Tensor<gpu, 4, DType>& got, const std::vector<double>& ref, double times,
                  double tol) {
  const auto h = ToHost(got);
  double scale = 0, worst = 0;
  for (double v : ref) scale = std::max(scale, std::fabs(v));
  index_t bad = 0;
  for (index_t i = 0; i < h.shape_.Size(); ++i) {
    const double err = std::fabs(double(static_cast<float>(h.dptr_[i])) - times * ref[size_t(i)]);
    worst = std::max(worst, err);
    bad += !(err <= tol * times * scale);
  }
  INFO(what << ": worst error " << worst << " against the reference's scale " << scale);
  CHECK(bad == 0);
}

// Runs forward, data gradient and weight gradient of `c` with `algorithm` on `stream`, each with req
// kWriteTo and then kAddTo onto that result, and checks them against float64 within tol (relative to the
// output's scale).
template <typename DType>
void CheckConv(const Conv2d& c, const std::string& algorithm, Stream<gpu>* stream, double tol) {
  const Shape<4> xs = Shape4(c.N, c.H, c.W, c.C), ws = Shape4(c.K, c.R, c.S, c.C), ys = Shape4(c.N, c.P(), c.Q(), c.K);
  TensorContainer<cpu, 4, DType> xh(xs), wh(ws), dyh(ys);
  FillRandom(xh.view());
  FillRandom(wh.view());
  FillRandom(dyh.view());
  const Reference ref(c, Values(xh), Values(wh), Values(dyh));

  TensorContainer<gpu, 4, DType> x(xs), w(ws), dy(ys), y(ys), dx(xs), dw(ws);
  TensorContainer<gpu, 1, DType> bias(Shape1(c.K)), dbias(Shape1(c.K));
  for (auto* t : {&x, &w, &dy, &y, &dx, &dw}) t->set_stream(stream);
  bias.set_stream(stream);
  dbias.set_stream(stream);
  Copy(x.view(), xh.view(), stream);
  Copy(w.view(), wh.view(), stream);
  Copy(dy.view(), dyh.view(), stream);
  const ops::ConvolutionParam param = c.Param(algorithm);
  INFO("N " << c.N << " H " << c.H << " W " << c.W << " C " << c.C << " K " << c.K << " kernel " << c.R << "x" << c.S
            << " stride " << c.stride << " dilate " << c.dilate << " pad " << c.pad << "/" << c.pad_end << " dtype "
            << DataType<DType>::name() << (UsesTF32(stream) ? " (TF32)" : "") << " algorithm '" << algorithm << "'");
  for (OpReqType req : {kWriteTo, kAddTo}) {
    INFO("req " << OpReqName(req));
    const double times = req == kAddTo ? 2.0 : 1.0;
    ops::ConvolutionForward(param, x.view(), w.view(), bias.view(), req, y.view());
    ops::ConvolutionBackward(param, dy.view(), x.view(), w.view(), req, dx.view(), req, dw.view(), kNullOp,
                             dbias.view());
    CheckAgainst("forward", y.view(), ref.y, times, tol);
    CheckAgainst("data grad", dx.view(), ref.dx, times, tol);
    CheckAgainst("weight grad", dw.view(), ref.dw, times, tol);
  }
}

// Shapes the kernels take: channel counts multiples of 8, odd spatial sizes, every stride / dilation /
// padding form, a 1x1 with stride 2, and a problem of several thread-block tiles in each direction.
std::vector<Conv2d> AlignedShapes() {
  return {
      {2, 9, 9, 16, 24, 3, 3, 1, 1, 1, 1},
      {3, 11, 7, 32, 16, 3, 3, 2, 1, 1, 1},
      {2, 10, 12, 8, 40, 3, 3, 1, 2, 2, 2},   // dilated
      {1, 13, 13, 24, 8, 5, 5, 2, 1, 2, 1},   // padding after differs from before
      {2, 8, 9, 16, 32, 1, 1, 2, 1, 0, 0},    // 1x1 with stride 2
      {4, 17, 15, 64, 136, 3, 3, 1, 1, 1, 1}, // several 128 x 128 tiles
  };
}

}  // namespace

TEST_CASE("CUTLASS implicit GEMM in half and bf16 matches float64, forward and backward", "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  for (const Conv2d& c : AlignedShapes()) {
    CheckConv<half_t>(c, kCutlass, s, 1e-2);
    CheckConv<bf16_t>(c, kCutlass, s, 2e-2);
  }
  DeleteStream(s);
}

TEST_CASE("CUTLASS implicit GEMM in float, forward and backward: TF32 on tensor cores, strict fp32 on the CUDA cores",
          "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(float);
  Stream<gpu>* s = NewStream<gpu>(false);
  const Conv2d odd{2, 7, 9, 5, 3, 3, 3, 1, 1, 1, 1};  // SIMT kernels take any channel count
  bool strict_compiled = true;
  {
    ops::ConvolutionParam p = odd.Param(kCutlass);
    const ops::ConvGeometry g = ops::MakeConvGeometry(p, {odd.N, odd.H, odd.W, odd.C});
    const auto pr = ops::MakeConvProblem<gpu, float>(g, s, true, p.workspace);
    const auto* a = ops::ConvRegistry<gpu, float>::Get().Find(kCutlass);
    const ops::ConvSupport sup = a->CanImplement(pr, ops::ConvPass::kForward);
    strict_compiled = sup.ok || sup.why.find("no kernel") == std::string::npos;
    if (!strict_compiled) WARN("strict fp32 kernels are not in this build (cutlass_kernels=subset): " << sup.why);
  }
  if (strict_compiled) {
    for (const Conv2d& c : AlignedShapes()) CheckConv<float>(c, kCutlass, s, 1e-5);
    CheckConv<float>(odd, kCutlass, s, 1e-5);
    s->set_tf32(true);
    for (const Conv2d& c : AlignedShapes()) CheckConv<float>(c, kCutlass, s, 2e-3);
  }
  DeleteStream(s);
}

TEST_CASE("CUTLASS implicit GEMM refuses what its kernels cannot take, and says why", "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  const auto* a = ops::ConvRegistry<gpu, half_t>::Get().Find(kCutlass);
  auto why = [&](const Conv2d& c, ops::Layout layout, index_t groups, ops::ConvPass pass) {
    ops::ConvolutionParam p = c.Param(kCutlass);
    p.layout = layout;
    p.num_group = groups;
    const std::vector<index_t> shape = layout == ops::Layout::kNHWC ? std::vector<index_t>{c.N, c.H, c.W, c.C}
                                                                    : std::vector<index_t>{c.N, c.C, c.H, c.W};
    const auto pr = ops::MakeConvProblem<gpu, half_t>(ops::MakeConvGeometry(p, shape), s, true, p.workspace);
    const ops::ConvSupport sup = a->CanImplement(pr, pass);
    CHECK_FALSE(sup.ok);
    return sup.why;
  };
  const Conv2d rgb{2, 9, 9, 3, 16, 3, 3, 1, 1, 1, 1}, odd_k{2, 9, 9, 16, 5, 3, 3, 1, 1, 1, 1};
  const Conv2d fine{2, 9, 9, 16, 16, 3, 3, 1, 1, 1, 1};
  CHECK_THAT(why(rgb, ops::Layout::kNHWC, 1, ops::ConvPass::kForward), Catch::Contains("multiples of 8"));
  CHECK_THAT(why(odd_k, ops::Layout::kNHWC, 1, ops::ConvPass::kForward), Catch::Contains("K = 5"));
  CHECK_THAT(why(fine, ops::Layout::kNCHW, 1, ops::ConvPass::kForward), Catch::Contains("channels-last"));
  CHECK_THAT(why(fine, ops::Layout::kNHWC, 2, ops::ConvPass::kForward), Catch::Contains("grouped"));
  const Conv2d dilated_strided{2, 9, 9, 16, 16, 3, 3, 2, 2, 2, 2};  // CUTLASS's strided data gradient: no dilation
  CHECK_THAT(why(dilated_strided, ops::Layout::kNHWC, 1, ops::ConvPass::kBackwardData),
             Catch::Contains("CUTLASS cannot implement it"));

  // Forcing it on a refused problem is an Error naming the reason; the library's own choice runs it.
  TensorContainer<gpu, 4, half_t> x(Shape4(2, 9, 9, 3)), w(Shape4(16, 3, 3, 3)), y(Shape4(2, 9, 9, 16));
  TensorContainer<gpu, 1, half_t> b(Shape1(16));
  for (auto* t : {&x, &w, &y}) t->set_stream(s);
  b.set_stream(s);
  x = 0.5f;
  w = 0.25f;
  CHECK_THROWS_WITH(ops::ConvolutionForward(rgb.Param(kCutlass), x.view(), w.view(), b.view(), kWriteTo, y.view()),
                    Catch::Contains("multiples of 8"));
  CheckConv<half_t>(rgb, "", s, 1e-2);
  DeleteStream(s);
}
