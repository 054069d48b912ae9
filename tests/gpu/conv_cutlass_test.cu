// The CUTLASS implicit-GEMM convolution (ops/conv_cutlass.h), forced by name, against a float64 loop:
// forward, data and weight gradients, half and bf16 on tensor cores, float as TF32 and as strict fp32,
// kWriteTo and kAddTo, stride, dilation and asymmetric padding; channels-last problems the kernels take
// as they are, and staged ones (channels first, channel counts their vectors do not divide); and the
// problems it cannot take (groups, 3-D, a dilated strided data gradient) refused with the reason while
// the library's own choice still gets them right.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <tensorexpr/cuda/sum_slices.cuh>
#include <tensorexpr/ops/conv_epilogue.h>
#include <tensorexpr/ops/convolution.h>
#include "../../ops/conv_im2col_gemm.h"  // ColumnRowStride, the rows im2col_gemm fuses over
#include "../../ops/cuda/cutlass/conv_kernels.h"
#include "../../ops/conv_pointwise_gemm.h"
#include "../../ops/cuda/cutlass/row_bias_gemm.h"
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
    TE_REQUIRE_GPU();                                                                                   \
    if (!HaveCutlass<DType>()) {                                                                        \
      WARN("skipped: this build has no CUTLASS kernels (configure with -Dcutlass=enabled and CUTLASS's headers)"); \
      return;                                                                                           \
    }                                                                                                   \
  } while (0)

struct Conv2d {
  index_t N, H, W, C, K, R, S;
  index_t stride = 1, dilate = 1, pad = 0, pad_end = 0;
  ops::Layout layout = ops::Layout::kNHWC;
  double workspace_mb = 1024.0;
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
    p.layout = layout;
    p.algorithm = algorithm;
    p.workspace = workspace_mb;
    return p;
  }
};

// Whether this build holds CUTLASS's float forward kernels for c in the stream's math mode (TF32 or strict
// fp32): -Dcutlass_kernels=subset leaves them out, and the algorithm then says so.
// How the stream rounds float products, for test messages.
const char* MathLabel(Stream<gpu>* s) { return UsesTF32x3(s) ? " (3xTF32)" : UsesTF32(s) ? " (TF32)" : ""; }

bool FloatKernelsCompiled(const Conv2d& c, Stream<gpu>* s) {
  const ops::ConvolutionParam p = c.Param(kCutlass);
  const ops::ConvGeometry g = ops::MakeConvGeometry(p, {c.N, c.H, c.W, c.C});
  const auto pr = ops::MakeConvProblem<gpu, float>(g, s, true, p.workspace);
  const ops::ConvSupport sup = ops::ConvRegistry<gpu, float>::Get().Find(kCutlass)->CanImplement(pr, ops::ConvPass::kForward);
  const bool compiled = sup.ok || sup.why.find("compiled into this build") == std::string::npos;
  if (!compiled)
    WARN((s->tf32x3() ? "3xTF32" : s->tf32() ? "TF32" : "strict fp32")
         << " kernels are not in this build (cutlass_kernels=subset): " << sup.why);
  return compiled;
}

// Random operands of c on the host, channels last: x (N, H, W, C), w (K, R, S, C), dy (N, P, Q, K), drawn
// in that order.
template <typename DType>
struct HostOperands {
  TensorContainer<cpu, 4, DType> x, w, dy;
  explicit HostOperands(const Conv2d& c)
      : x(Shape4(c.N, c.H, c.W, c.C)), w(Shape4(c.K, c.R, c.S, c.C)), dy(Shape4(c.N, c.P(), c.Q(), c.K)) {
    for (Tensor<cpu, 4, DType> t : {x.view(), w.view(), dy.view()}) FillRandom(t);
  }
};

// How many elements of two device tensors of one shape differ (the staged and in-place runs must agree
// bit for bit).
template <typename DType>
index_t DifferingElements(const Tensor<gpu, 4, DType>& a, const Tensor<gpu, 4, DType>& b) {
  const auto ha = ToHost(a), hb = ToHost(b);
  index_t differ = 0;
  for (index_t i = 0; i < ha.shape_.Size(); ++i)
    differ += static_cast<float>(ha.dptr_[i]) != static_cast<float>(hb.dptr_[i]);
  return differ;
}

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

// (n, a, b, c) -> (n, c, a, b) of a dense 4-D host tensor when to_first, else the inverse.
template <typename DType>
TensorContainer<cpu, 4, DType> Permuted(const TensorContainer<cpu, 4, DType>& t, bool to_first) {
  const Shape<4> s = t.shape_;
  const Shape<4> out = to_first ? Shape4(s[0], s[3], s[1], s[2]) : Shape4(s[0], s[2], s[3], s[1]);
  TensorContainer<cpu, 4, DType> r(out);
  for (index_t i = 0; i < s[0]; ++i)
    for (index_t a = 0; a < s[1]; ++a)
      for (index_t b = 0; b < s[2]; ++b)
        for (index_t c = 0; c < s[3]; ++c) {
          const DType v = t.dptr_[((i * s[1] + a) * s[2] + b) * s[3] + c];
          if (to_first) r.dptr_[((i * s[3] + c) * s[1] + a) * s[2] + b] = v;
          else r.dptr_[((i * s[2] + b) * s[3] + c) * s[1] + a] = v;
        }
  return r;
}

// A device copy of a channels-last host tensor, permuted to channels first when `first` (a fresh copy
// of the host tensor otherwise).
template <typename DType>
TensorContainer<gpu, 4, DType> Upload(const TensorContainer<cpu, 4, DType>& h, bool first, Stream<gpu>* stream) {
  const TensorContainer<cpu, 4, DType> laid = first ? Permuted(h, true) : Permuted(Permuted(h, true), false);
  TensorContainer<gpu, 4, DType> d(laid.shape_);
  d.set_stream(stream);
  Copy(d.view(), laid.view(), stream);
  return d;
}

// Checks a device result (in `layout`) against `times` x the float64 reference (channels last) within
// tol times the reference's scale (its largest magnitude).
template <typename DType>
void CheckAgainst(const char* what, const Tensor<gpu, 4, DType>& got, ops::Layout layout, const std::vector<double>& ref,
                  double times, double tol) {
  const auto h = layout == ops::Layout::kNHWC ? ToHost(got) : Permuted(ToHost(got), false);
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
// output's scale). The tensors are made channels last and permuted for a channels-first case.
template <typename DType>
void CheckConv(const Conv2d& c, const std::string& algorithm, Stream<gpu>* stream, double tol) {
  const bool first = c.layout == ops::Layout::kNCHW;
  HostOperands<DType> host(c);
  TensorContainer<cpu, 4, DType> &xh = host.x, &wh = host.w, &dyh = host.dy;
  const Reference ref(c, Values(xh), Values(wh), Values(dyh));

  auto upload = [&](const TensorContainer<cpu, 4, DType>& h) { return Upload(h, first, stream); };
  TensorContainer<gpu, 4, DType> x = upload(xh), w = upload(wh), dy = upload(dyh);
  TensorContainer<gpu, 4, DType> y(dy.shape_), dx(x.shape_), dw(w.shape_);
  TensorContainer<gpu, 1, DType> bias(Shape1(c.K)), dbias(Shape1(c.K));
  for (auto* t : {&y, &dx, &dw}) t->set_stream(stream);
  bias.set_stream(stream);
  dbias.set_stream(stream);
  const ops::ConvolutionParam param = c.Param(algorithm);
  INFO("N " << c.N << " H " << c.H << " W " << c.W << " C " << c.C << " K " << c.K << " kernel " << c.R << "x" << c.S
            << " stride " << c.stride << " dilate " << c.dilate << " pad " << c.pad << "/" << c.pad_end << " "
            << ops::LayoutName(c.layout) << " dtype " << DataType<DType>::name() << MathLabel(stream)
            << " algorithm '" << algorithm << "'");
  for (OpReqType req : {kWriteTo, kAddTo}) {
    INFO("req " << OpReqName(req));
    const double times = req == kAddTo ? 2.0 : 1.0;
    ops::ConvolutionForward(param, x.view(), w.view(), bias.view(), req, y.view());
    ops::ConvolutionBackward(param, dy.view(), x.view(), w.view(), req, dx.view(), req, dw.view(), kNullOp,
                             dbias.view());
    CheckAgainst("forward", y.view(), c.layout, ref.y, times, tol);
    CheckAgainst("data grad", dx.view(), c.layout, ref.dx, times, tol);
    CheckAgainst("weight grad", dw.view(), c.layout, ref.dw, times, tol);
  }
}

// Shapes the kernels take as they are: channel counts multiples of 8, odd spatial sizes, every stride /
// dilation / padding form, a 1x1 with stride 2, and a problem of several thread-block tiles each way.
std::vector<Conv2d> AlignedShapes() {
  return {
      {2, 9, 9, 16, 24, 3, 3, 1, 1, 1, 1},
      {3, 11, 7, 32, 16, 3, 3, 2, 1, 1, 1},
      {2, 10, 12, 8, 40, 3, 3, 1, 2, 2, 2},   // dilated
      {1, 13, 13, 24, 8, 5, 5, 2, 1, 2, 1},   // padding after differs from before
      {2, 8, 9, 16, 32, 1, 1, 2, 1, 0, 0},    // 1x1 with stride 2
      {4, 17, 15, 64, 136, 3, 3, 1, 1, 1, 1}, // several 128 x 128 tiles
      {2, 9, 9, 16, 24, 3, 3, 1, 1, 1, 0},    // unit strides, no padding after (Hopper's data gradient)
      {2, 6, 7, 16, 8, 3, 3, 1, 1, 3, 3},     // padding wider than the kernel reaches: border outputs are 0
  };
}

// Shapes that are staged: channels first, and channel counts the kernels' vectors do not divide (the
// padded channels must not leak into the results, nor the gradients into the caller's padding).
std::vector<Conv2d> StagedShapes() {
  std::vector<Conv2d> v = {
      {2, 12, 11, 3, 16, 7, 7, 2, 1, 3, 3},  // an RGB stem (columns folded in pairs: 6 of 8 channels)
      {2, 9, 9, 13, 5, 3, 3, 1, 1, 1, 1},    // odd C and K
      {2, 9, 9, 13, 16, 3, 3, 1, 1, 1, 1},   // odd C: the input staged, the output in place
      {2, 9, 9, 16, 13, 3, 3, 1, 1, 1, 1},   // odd K: the input in place, the filters and output staged
      {3, 7, 8, 20, 12, 3, 3, 2, 1, 1, 0},   // C and K multiples of 4, not of 8
      // Folded columns (conv_cutlass.h): 4 channels in pairs, the last column read by no tap; 1 channel
      // in fours (stride 4) with padding after unlike before; 2 channels, K staged too.
      {2, 7, 13, 4, 8, 2, 2, 2, 1, 0, 0},
      {2, 9, 18, 1, 8, 5, 5, 4, 1, 2, 1},
      {3, 8, 10, 2, 12, 3, 3, 2, 1, 1, 0},
  };
  for (Conv2d c : AlignedShapes()) {
    c.layout = ops::Layout::kNCHW;
    v.push_back(c);
  }
  for (Conv2d c : {Conv2d{2, 9, 10, 5, 7, 3, 3, 1, 1, 1, 1}, Conv2d{2, 12, 11, 3, 16, 7, 7, 2, 1, 3, 3},
                   Conv2d{2, 9, 18, 1, 8, 5, 5, 4, 1, 2, 1}}) {
    c.layout = ops::Layout::kNCHW;  // odd channels, and folded stems, channels first
    v.push_back(c);
  }
  return v;
}


// Whether this build has a row-bias gemm (cuda/cutlass/row_bias_gemm.h) for this GPU: then pointwise_gemm
// fuses a 16-bit or TF32 channels-first forward run image by image.
bool RowBiasGemmsHere() {
#if defined(TE_HAVE_CUTLASS)
  int device = 0;
  cudaDeviceProp prop;
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return false;
  for (const ops::cutlass_gemm::RowBiasKernel& k : ops::cutlass_gemm::CompiledRowBiasKernels())
    if (k.sm == prop.major * 10 + prop.minor) return true;
#endif
  return false;
}

// The fused forward epilogue act(conv + bias + residual) (ops::ConvEpilogue) through `algorithm`'s store
// (the CUTLASS kernels', or pointwise_gemm's cuBLASLt or row-bias gemm), with every req and each part on or
// off: the result is checked against float64 when the entry point says it fused, and the output is
// checked untouched when it says it did not. Half problems the CUTLASS kernels take as they are must fuse
// the whole form when it writes; pointwise_gemm must fuse every channels-last problem on 8-aligned channels
// in every dtype, written, and added without residual or relu, a staged channels-first batch without a
// residual, and, where RowBiasGemmsHere, a 16-bit or TF32 channels-first problem run image by image on
// 8-aligned channels and pixels as the channels-last ones. The plain forward with a bias and the expression API must
// give the same values whichever way they run.
template <typename DType>
void CheckFusedEpilogue(const Conv2d& c, Stream<gpu>* stream, double tol, const char* algorithm = kCutlass) {
  const bool first = c.layout == ops::Layout::kNCHW;
  TensorContainer<cpu, 4, DType> xh(Shape4(c.N, c.H, c.W, c.C)), wh(Shape4(c.K, c.R, c.S, c.C)),
      rh(Shape4(c.N, c.P(), c.Q(), c.K)), oh(rh.shape_);
  TensorContainer<cpu, 1, DType> bh(Shape1(c.K));
  for (Tensor<cpu, 4, DType> t : {xh.view(), wh.view(), rh.view(), oh.view()}) FillRandom(t);
  FillRandom(bh.view());
  const Reference ref(c, Values(xh), Values(wh), std::vector<double>(size_t(rh.shape_.Size()), 0.0));
  const std::vector<double> res = Values(rh), out0 = Values(oh);
  auto upload = [&](const TensorContainer<cpu, 4, DType>& h) { return Upload(h, first, stream); };
  TensorContainer<gpu, 4, DType> x = upload(xh), w = upload(wh), r = upload(rh), out = upload(oh);
  TensorContainer<gpu, 1, DType> bias(Shape1(c.K));
  bias.set_stream(stream);
  Copy(bias.view(), bh.view(), stream);
  const ops::ConvolutionParam param = c.Param(algorithm);
  const bool cutlass = std::string(algorithm) == kCutlass, im2col = std::string(algorithm) == "im2col_gemm";
  const bool stem_mma = std::string(algorithm) == "gpu_stem_mma";  // fuses every form, every req, either layout
  INFO(algorithm << ": N " << c.N << " H " << c.H << " W " << c.W << " C " << c.C << " K " << c.K << " kernel " << c.R
                 << "x" << c.S << " stride " << c.stride << " " << ops::LayoutName(c.layout) << " dtype "
                 << DataType<DType>::name() << MathLabel(stream));
  auto expected = [&](bool relu, bool with_bias, bool with_residual, bool add) {
    std::vector<double> e(ref.y.size());
    for (size_t i = 0; i < e.size(); ++i) {
      double v = ref.y[i] + (with_bias ? double(static_cast<float>(bh.dptr_[i % size_t(c.K)])) : 0.0) +
                 (with_residual ? res[i] : 0.0);
      if (relu) v = v > 0 ? v : 0.0;
      e[i] = add ? out0[i] + v : v;
    }
    return e;
  };
  // (C = 8 runs on the fixed-channels kernel, whose fused forms take the bias as their source: no
  // residual. So does the RGB stem, folded to 6 of 8 channels: in half it must fuse bias and relu.)
  // (pointwise_gemm's channels-first forward of a batch of narrow images runs staged, and applies bias and
  // relu as it moves its channels-last result back: every req, no residual.)
  const bool staged_first = !cutlass && !im2col && !stem_mma && first && c.N > 1 && c.P() * c.Q() < 256;
  // (Image by image, a 16-bit or TF32 channels-first forward on 8-aligned channels and pixels runs the
  // row-bias gemm where this build has one for this GPU: the whole form. Strict float and 3xTF32 do not.)
  const bool row_bias_math = !std::is_same<DType, float>::value || UsesTF32(stream);
  const bool row_bias = !cutlass && !im2col && !stem_mma && first && !staged_first && row_bias_math &&
                        c.C % 8 == 0 && c.K % 8 == 0 && (c.P() * c.Q()) % 8 == 0 && RowBiasGemmsHere();
  // (im2col_gemm fuses channels last where its column rows (ops::ColumnRowStride: C R S entries, padded
  // where that adds at most an eighth) and the output's are whole 16-byte vectors.)
  const index_t vector = 16 / sizeof(DType);
  const bool im2col_rows = !first && c.K % vector == 0 &&
                           ops::ColumnRowStride(ops::MakeConvGeometry(param, {c.N, c.H, c.W, c.C}), sizeof(DType)) %
                                   vector == 0;
  const bool whole_form = stem_mma ? true
                          : cutlass ? std::is_same<DType, half_t>::value && !first && c.C % 8 == 0 && c.C != 8 &&
                                        c.K % 8 == 0
                          : im2col ? im2col_rows
                          : first  ? staged_first || row_bias
                                   : c.C % 8 == 0 && c.K % 8 == 0;
  const bool stem = cutlass && std::is_same<DType, half_t>::value && !first && c.C == 3 && c.R == 7 && c.K % 8 == 0;
  for (const bool relu : {false, true})
    for (const bool with_bias : {true, false})
      for (const bool with_residual : {false, true})
        for (const OpReqType req : {kWriteTo, kAddTo}) {
          INFO((relu ? "relu" : "identity") << (with_bias ? " with bias" : "") << (with_residual ? " with residual" : "")
                                            << " req " << OpReqName(req));
          Copy(out.view(), upload(oh).view(), stream);
          ops::ConvEpilogue<DType> e;
          e.active = true;
          e.activation = relu ? ops::ConvActivation::kRelu : ops::ConvActivation::kIdentity;
          e.bias = with_bias ? bias.dptr_ : nullptr;
          e.residual = with_residual ? r.dptr_ : nullptr;
          const bool fused = ops::ConvolutionForwardFused(param, x.view(), w.view(), e, req, out.view());
          const bool form_fuses = stem_mma || (staged_first ? !with_residual
                                                         : req == kWriteTo || (!cutlass && !relu && !with_residual));
          if (whole_form && form_fuses) CHECK(fused);
          if (im2col && first) CHECK_FALSE(fused);
          if (stem && with_bias && !with_residual && req == kWriteTo) CHECK(fused);
          CheckAgainst(fused ? "fused" : "untouched", out.view(), c.layout,
                       fused ? expected(relu, with_bias, with_residual, req == kAddTo) : out0, 1.0, tol);
        }
  {  // The residual is the output itself: read and written in place.
    Copy(out.view(), upload(oh).view(), stream);
    ops::ConvEpilogue<DType> e;
    e.active = true;
    e.activation = ops::ConvActivation::kRelu;
    e.bias = bias.dptr_;
    e.residual = out.dptr_;
    const bool fused = ops::ConvolutionForwardFused(param, x.view(), w.view(), e, kWriteTo, out.view());
    if (whole_form && !cutlass && !staged_first) CHECK(fused);
    std::vector<double> in_place = expected(false, true, false, false);
    for (size_t i = 0; i < in_place.size(); ++i) in_place[i] = std::max(0.0, in_place[i] + out0[i]);
    CheckAgainst(fused ? "fused, residual = output" : "untouched", out.view(), c.layout, fused ? in_place : out0, 1.0, tol);
  }
  // The plain forward with a bias, and the expression API, whichever way they run.
  ops::ConvolutionParam with_bias = param;
  with_bias.no_bias = false;
  ops::ConvolutionForward(with_bias, x.view(), w.view(), bias.view(), kWriteTo, out.view());
  CheckAgainst("forward with bias", out.view(), c.layout, expected(false, true, false, false), 1.0, tol);
  ops::ConvolutionForward(with_bias, x.view(), w.view(), bias.view(), kAddTo, out.view());
  CheckAgainst("forward with bias, added", out.view(), c.layout, expected(false, true, false, false), 2.0, tol);
  const auto y = ops::conv_output(out.view());
  if (first) {
    ops::ConvolutionForward(param, x.view(), w.view(), kWriteTo, out.view(),
                            expr::F<op::relu>(y + expr::broadcast<1>(bias.view(), out.shape_) + r.view()));
  } else {
    ops::ConvolutionForward(param, x.view(), w.view(), kWriteTo, out.view(),
                            expr::F<op::relu>(r.view() + y + expr::broadcast<3>(bias.view(), out.shape_)));
  }
  CheckAgainst("epilogue expression", out.view(), c.layout, expected(true, true, true, false), 1.0, tol);
}

}  // namespace

TEST_CASE("CUTLASS implicit GEMM in half and bf16 matches float64, forward and backward, direct and staged",
          "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  for (const Conv2d& c : AlignedShapes()) {
    CheckConv<half_t>(c, kCutlass, s, 1e-2);
    CheckConv<bf16_t>(c, kCutlass, s, 2e-2);
  }
  for (const Conv2d& c : StagedShapes()) {
    CheckConv<half_t>(c, kCutlass, s, 1e-2);
    CheckConv<bf16_t>(c, kCutlass, s, 2e-2);
  }
  // 512 filters of 3 x 3 x 512: a weight gradient whose tiles fill an H100 or H200, for which
  // conv_cutlass.h's WgradPreference prefers Hopper's unsplit kernel there (the choice itself is not checked).
  CheckConv<half_t>({2, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1}, kCutlass, s, 1e-2);
  DeleteStream(s);
}

TEST_CASE("CUTLASS implicit GEMM in float, forward and backward: TF32 on tensor cores, strict fp32 on the CUDA cores, "
          "3xTF32 on tensor cores within strict fp32's tolerance", "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(float);
  Stream<gpu>* s = NewStream<gpu>(false);
  const Conv2d odd{2, 7, 9, 5, 3, 3, 3, 1, 1, 1, 1};  // SIMT kernels take any channel count
  if (FloatKernelsCompiled(odd, s)) {
    for (const Conv2d& c : AlignedShapes()) CheckConv<float>(c, kCutlass, s, 1e-5);
    CheckConv<float>(odd, kCutlass, s, 1e-5);
    s->set_tf32(true);
    for (const Conv2d& c : AlignedShapes()) CheckConv<float>(c, kCutlass, s, 2e-3);
    for (const Conv2d& c : StagedShapes()) CheckConv<float>(c, kCutlass, s, 2e-3);
    // Three TF32 products per product (set_tf32x3, which set_tf32 does not override): strict fp32's
    // tolerance, which TF32 alone misses by two orders of magnitude.
    s->set_tf32x3(true);
    for (const Conv2d& c : AlignedShapes()) CheckConv<float>(c, kCutlass, s, 1e-5);
    for (const Conv2d& c : StagedShapes()) CheckConv<float>(c, kCutlass, s, 1e-5);
  }
  DeleteStream(s);
}

// Every compiled kernel that this GPU runs (Ampere's, and on Hopper also the TMA / wgmma ones): half,
// bf16, float as TF32, as 3xTF32 and strict fp32, called directly rather than through the algorithm's choice, on each
// aligned shape it accepts, against float64. Forward and data gradient: D = acc, then D = acc + 1 * D (the
// epilogue's source). Weight gradient: float slices of the reduction (1 and 3 of them where the kernel
// splits), summed. The forward's fused-epilogue kernels (bias, bias + relu) each with the forms the operator
// runs them in: the bias as a vector with D or a separate residual as the source (beta 0 and 1), a residual
// without a bias, or the bias as a source row (the stem's fixed-channels kernels).
TEST_CASE("every compiled CUTLASS kernel matches float64 where it runs", "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
#if defined(TE_HAVE_CUTLASS)  // the kernel list is linked only into builds with CUTLASS (else skipped above)
  namespace cc = ops::cutlass_conv;
  int device = 0;
  cudaDeviceProp prop;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaGetDeviceProperties(&prop, device) == cudaSuccess);
  const int sm = prop.major * 10 + prop.minor;
  std::vector<Conv2d> shapes = AlignedShapes();
  shapes.push_back({2, 12, 12, 8, 16, 7, 7, 2, 1, 3, 3});  // 8 channels: the 16-bit fixed-channels kernels' stem
  shapes.push_back({2, 12, 12, 4, 16, 7, 7, 2, 1, 3, 3});  // 4: the float one's
  auto kernel_shape = [](const Conv2d& c) {  // c as the kernels' problem size
    cc::Conv2dShape s;
    s.N = int(c.N), s.H = int(c.H), s.W = int(c.W), s.C = int(c.C), s.K = int(c.K), s.R = int(c.R), s.S = int(c.S);
    s.P = int(c.P()), s.Q = int(c.Q()), s.pad_h = s.pad_w = int(c.pad), s.stride_h = s.stride_w = int(c.stride);
    s.dilation_h = s.dilation_w = int(c.dilate);
    return s;
  };
  auto check = [&](const cc::ConvKernel& k, const Conv2d& c, auto dtype_tag) -> bool {
    using DType = decltype(dtype_tag);
    cc::Conv2dShape s = kernel_shape(c);
    if (!k.why_not(s).empty()) return false;
    HostOperands<DType> host(c);
    TensorContainer<cpu, 4, DType> &xh = host.x, &wh = host.w, &dyh = host.dy;
    const Reference ref(c, Values(xh), Values(wh), Values(dyh));
    // TF32 rounds the inputs to half's 10 bits of mantissa; strict fp32 sums float products.
    const bool fp32_accurate = k.math == cc::Math::kSimt || k.math == cc::Math::kTensorOpTF32x3;
    const double tol = std::is_same<DType, bf16_t>::value ? 2e-2 : fp32_accurate ? 1e-4 : 1e-2;
    if (k.pass == cc::Pass::kWgrad) {
      TensorContainer<gpu, 4, DType> dy = Upload(dyh, false, nullptr), x = Upload(xh, false, nullptr);
      TensorContainer<gpu, 4, float> dw(wh.shape_);
      int splits = 0;
      for (int split : {1, 3}) {
        s.split_k = split;
        if (!k.why_not(s).empty()) continue;
        // The slices are the kernel's output and (as conv_cutlass.h hands it) its workspace.
        const index_t size = wh.shape_.Size();
        TensorContainer<gpu, 1, float> slices(
            Shape1(std::max<index_t>(split * size, index_t(k.workspace_bytes(s) / sizeof(float)) + 1)));
        // NaN first: a slice the kernel left unwritten would show (nothing clears them before it runs).
        slices = std::numeric_limits<float>::quiet_NaN();
        cc::ConvOperands o;
        o.a = dy.dptr_, o.b = x.dptr_, o.c = slices.dptr_;
        INFO("kernel " << k.name << ", split " << split << ", N " << c.N << " H " << c.H << " W " << c.W << " C " << c.C
                       << " K " << c.K << " kernel " << c.R << "x" << c.S << " stride " << c.stride << " dilate "
                       << c.dilate << " pad " << c.pad);
        k.run(s, o, slices.dptr_, nullptr);
        cuda::SumSlices(slices.dptr_, split, size, size, index_t(0), 0.0f, dw.dptr_, nullptr);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        CheckAgainst("weight grad", dw.view(), ops::Layout::kNHWC, ref.dw, 1.0, tol);
        ++splits;
      }
      return splits > 0;
    }
    const bool fprop = k.pass == cc::Pass::kFprop;
    TensorContainer<gpu, 4, DType> a = Upload(fprop ? xh : dyh, false, nullptr), w = Upload(wh, false, nullptr);
    TensorContainer<gpu, 4, DType> out(fprop ? dyh.shape_ : xh.shape_);
    TensorContainer<gpu, 1, char> ws(Shape1(index_t(std::max<size_t>(k.workspace_bytes(s), 1))));
    cc::ConvOperands o;
    o.a = a.dptr_, o.b = w.dptr_, o.c = out.dptr_;
    INFO("kernel " << k.name << ", N " << c.N << " H " << c.H << " W " << c.W << " C " << c.C << " K " << c.K << " kernel "
                   << c.R << "x" << c.S << " stride " << c.stride << " dilate " << c.dilate << " pad " << c.pad);
    for (const float beta : {0.0f, 1.0f}) {
      o.beta = beta;
      k.run(s, o, ws.dptr_, nullptr);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      CheckAgainst(fprop ? "forward" : "data grad", out.view(), ops::Layout::kNHWC, fprop ? ref.y : ref.dx,
                   beta == 0.0f ? 1.0 : 2.0, tol);
    }
    return true;
  };
  // The fused-epilogue forward kernels: act(acc + bias + beta * D), act relu for kBiasRelu, the bias a
  // vector; a bias_in_source kernel reads it as its source instead, one row for every output row
  // (act(acc + bias), beta 1).
  auto check_fused = [&](const cc::ConvKernel& k, const Conv2d& c, auto dtype_tag) -> bool {
    using DType = decltype(dtype_tag);
    cc::Conv2dShape s = kernel_shape(c);
    if (!k.why_not(s).empty()) return false;
    HostOperands<DType> host(c);
    const Reference ref(c, Values(host.x), Values(host.w), Values(host.dy));
    const std::vector<double> d0 = Values(host.dy);  // D's values before the run (beta 1 adds them)
    TensorContainer<cpu, 1, DType> bh(Shape1(c.K));
    FillRandom(bh.view());
    const bool fp32_accurate = k.math == cc::Math::kSimt || k.math == cc::Math::kTensorOpTF32x3;
    const double tol = std::is_same<DType, bf16_t>::value ? 2e-2 : fp32_accurate ? 1e-4 : 1e-2;
    TensorContainer<gpu, 4, DType> x = Upload(host.x, false, nullptr), w = Upload(host.w, false, nullptr);
    TensorContainer<gpu, 4, DType> out(host.dy.shape_);
    TensorContainer<gpu, 1, DType> bias(Shape1(c.K));
    Copy(bias.view(), bh.view(), nullptr);
    TensorContainer<gpu, 1, char> ws(Shape1(index_t(std::max<size_t>(k.workspace_bytes(s), 1))));
    // A residual apart from D, as the operator hands it (ConvOperands::source).
    TensorContainer<cpu, 4, DType> rh(host.dy.shape_);
    FillRandom(rh.view());
    const std::vector<double> r0 = Values(rh);
    TensorContainer<gpu, 4, DType> residual = Upload(rh, false, nullptr);
    const bool relu = k.epilogue == cc::Epilogue::kBiasRelu;
    // The forms the operator runs: (beta, bias vector?, source: D itself / the residual / the bias row).
    enum Source { kD, kResidual, kBiasRow };
    struct Form { float beta; bool bias; Source source; };
    const std::vector<Form> forms = k.bias_in_source ? std::vector<Form>{{1.0f, false, kBiasRow}}
                                                     : std::vector<Form>{{0.0f, true, kD}, {1.0f, true, kD},
                                                                         {1.0f, true, kResidual}, {1.0f, false, kResidual}};
    for (const Form& f : forms) {
      Copy(out.view(), host.dy.view(), nullptr);
      cc::ConvOperands o;
      o.a = x.dptr_, o.b = w.dptr_, o.c = out.dptr_, o.beta = f.beta;
      o.bias = f.bias ? bias.dptr_ : nullptr;
      if (f.source == kResidual) o.source = residual.dptr_;
      if (f.source == kBiasRow) o.source = bias.dptr_, o.source_is_row = true;
      INFO("kernel " << k.name << ", beta " << f.beta << (f.bias ? ", bias vector" : "") << ", source "
                     << (f.source == kD ? "D" : f.source == kResidual ? "residual" : "bias row") << ", N " << c.N
                     << " H " << c.H << " W " << c.W << " C " << c.C << " K " << c.K << " kernel " << c.R << "x" << c.S
                     << " stride " << c.stride);
      k.run(s, o, ws.dptr_, nullptr);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      std::vector<double> want(ref.y.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const double b = double(static_cast<float>(bh.dptr_[i % size_t(c.K)]));
        const double src = f.source == kD ? d0[i] : f.source == kResidual ? r0[i] : b;
        const double v = ref.y[i] + (f.bias ? b : 0.0) + f.beta * src;
        want[i] = relu && v < 0 ? 0.0 : v;
      }
      CheckAgainst("fused forward", out.view(), ops::Layout::kNHWC, want, 1.0, tol);
    }
    return true;
  };
  int kernels = 0, fused_kernels = 0;
  for (const cc::ConvKernel& k : cc::CompiledConvKernels()) {
    if (k.sm != 0 && k.sm != sm) continue;
    const bool linear = k.epilogue == cc::Epilogue::kLinear;
    if (!linear && k.pass != cc::Pass::kFprop) {
      FAIL_CHECK("a fused epilogue on a kernel that is not a forward, which this test does not check: " << k.name);
      continue;
    }
    int ran = 0;
    for (const Conv2d& c : shapes) {
      ran += k.element == cc::Element::kF16    ? (linear ? check(k, c, half_t()) : check_fused(k, c, half_t()))
             : k.element == cc::Element::kBF16 ? (linear ? check(k, c, bf16_t()) : check_fused(k, c, bf16_t()))
                                               : (linear ? check(k, c, float()) : check_fused(k, c, float()));
    }
    INFO("kernel " << k.name);
    CHECK(ran > 0);  // each kernel takes at least one of the shapes
    ++(linear ? kernels : fused_kernels);
  }
  CHECK(kernels > 0);
  CHECK(fused_kernels > 0);
#endif
}

// row_bias_gemm.h's kernels called directly: D_l = act(A . B_l + bias[m] + beta * source_l) for the forms
// pointwise_gemm runs (the bias with D or a residual as the source, beta 0 and 1; a residual without a bias)
// against float64, on shapes of one and several tiles, and refusals of sizes TMA cannot take.
TEST_CASE("every compiled row-bias gemm matches float64 where it runs", "[gpu][conv][cutlass][epilogue]") {
  TE_REQUIRE_CUTLASS(half_t);
#if defined(TE_HAVE_CUTLASS)
  namespace cg = ops::cutlass_gemm;
  namespace cc = ops::cutlass_conv;
  if (!RowBiasGemmsHere()) {
    WARN("skipped: no row-bias gemm in this build for this GPU (Hopper's all-kernel units only)");
    return;
  }
  int device = 0;
  cudaDeviceProp prop;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaGetDeviceProperties(&prop, device) == cudaSuccess);
  const int sm = prop.major * 10 + prop.minor;
  auto run_kernel = [&](const cg::RowBiasKernel& k, const cg::RowBiasShape& shape, auto tag) {
    using DType = decltype(tag);
    const index_t M = shape.M, N = shape.N, K = shape.K, L = shape.L;
    TensorContainer<cpu, 2, DType> ah(Shape2(M, K)), bh(Shape2(L * K, N)), dh(Shape2(L * M, N)), rh(dh.shape_);
    TensorContainer<cpu, 1, DType> biash(Shape1(M));
    for (Tensor<cpu, 2, DType> t : {ah.view(), bh.view(), dh.view(), rh.view()}) FillRandom(t);
    FillRandom(biash.view());
    const std::vector<double> a = Values(ah), b = Values(bh), d0 = Values(dh), r0 = Values(rh), bias = Values(biash);
    std::vector<double> product(size_t(L * M * N), 0.0);
    for (index_t l = 0; l < L; ++l)
      for (index_t m = 0; m < M; ++m)
        for (index_t kk = 0; kk < K; ++kk) {
          const double av = a[size_t(m * K + kk)];
          for (index_t n = 0; n < N; ++n) product[size_t((l * M + m) * N + n)] += av * b[size_t((l * K + kk) * N + n)];
        }
    TensorContainer<gpu, 2, DType> ad(ah.shape_), bd(bh.shape_), dd(dh.shape_), rd(rh.shape_);
    TensorContainer<gpu, 1, DType> biasd(biash.shape_);
    Copy(ad.view(), ah.view(), nullptr), Copy(bd.view(), bh.view(), nullptr), Copy(rd.view(), rh.view(), nullptr);
    Copy(biasd.view(), biash.view(), nullptr);
    TensorContainer<gpu, 1, char> ws(Shape1(index_t(std::max<size_t>(k.workspace_bytes(shape), 1))));
    const bool relu = k.epilogue == cc::Epilogue::kBiasRelu;
    const double tol = std::is_same<DType, bf16_t>::value ? 2e-2 : 1e-2;  // (float: TF32's 10-bit mantissa, as half's)
    struct Form {
      float beta;
      bool bias, residual;
    };
    for (const Form f : {Form{0.0f, true, false}, Form{1.0f, true, false}, Form{1.0f, true, true}, Form{1.0f, false, true}}) {
      INFO("kernel " << k.name << " M " << M << " N " << N << " K " << K << " L " << L << ", beta " << f.beta
                     << (f.bias ? ", bias" : "") << (f.residual ? ", residual source" : ", D as the source"));
      Copy(dd.view(), dh.view(), nullptr);
      cg::RowBiasOperands o;
      o.a = ad.dptr_, o.b = bd.dptr_, o.d = dd.dptr_, o.beta = f.beta;
      o.bias = f.bias ? biasd.dptr_ : nullptr;
      o.source = f.residual ? rd.dptr_ : nullptr;
      k.run(shape, o, ws.dptr_, nullptr);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      TensorContainer<cpu, 2, DType> got(dh.shape_);
      Copy(got.view(), dd.view(), nullptr);
      const std::vector<double> g = Values(got);
      double scale = 0, worst = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        const size_t m = (i / size_t(N)) % size_t(M);
        double v = product[i] + (f.bias ? bias[m] : 0.0) + f.beta * (f.residual ? r0[i] : d0[i]);
        if (relu && v < 0) v = 0;
        scale = std::max(scale, std::fabs(v));
        worst = std::max(worst, std::fabs(g[i] - v));
      }
      CHECK(worst <= tol * std::max(scale, 1.0));
    }
  };
  // (The filters need no alignment: 13 of them, in one image, on tiles of 64 or 128.)
  const std::vector<cg::RowBiasShape> shapes = {{8, 272, 8, 2},    {24, 272, 16, 3},   {64, 272, 64, 2}, {200, 784, 64, 2},
                                                {256, 136, 520, 2}, {13, 272, 24, 1}};
  int kernels = 0;
  for (const cg::RowBiasKernel& k : cg::CompiledRowBiasKernels()) {
    if (k.sm != sm) continue;
    ++kernels;
    for (const cg::RowBiasShape& shape : shapes) {
      INFO("kernel " << k.name);
      REQUIRE(k.why_not(shape).empty());
      if (k.element == cc::Element::kF16) run_kernel(k, shape, half_t());
      else if (k.element == cc::Element::kBF16) run_kernel(k, shape, bf16_t());
      else run_kernel(k, shape, float());
    }
    // Rows of pixels or channels that are not whole 16-byte vectors: refused, with the reason.
    CHECK_THAT(k.why_not({8, 270, 8, 2}), Catch::Contains("multiples of"));
    CHECK_THAT(k.why_not({8, 272, k.alignment + k.alignment / 2, 2}), Catch::Contains("multiples of"));
  }
  CHECK(kernels > 0);
  // The operator's choice, between the 64- and 128-filter tiles every such build has in half and float:
  // the tile whose filters cover the filters most closely, else the taller; float's under TF32 math only.
  for (const cc::Element element : {cc::Element::kF16, cc::Element::kF32}) {
    std::vector<int> tiles;
    for (const cg::RowBiasKernel& c : cg::CompiledRowBiasKernels())
      if (c.sm == sm && c.element == element && c.epilogue == cc::Epilogue::kBias) tiles.push_back(c.tile_m);
    std::sort(tiles.begin(), tiles.end());
    REQUIRE(tiles == std::vector<int>{64, 128});
  }
  for (const std::pair<index_t, int> filters_tile : {std::pair<index_t, int>{8, 64}, {64, 64}, {72, 128}, {200, 128}}) {
    ops::ConvGeometry g;
    g.N = 2, g.C = 64, g.K = filters_tile.first, g.G = 1;
    g.in[1] = g.out[1] = 16, g.in[2] = g.out[2] = 17;
    INFO("filters " << filters_tile.first);
    const cg::RowBiasKernel* k = ops::pointwise::RowBias<gpu, half_t>::KernelFor(g, ops::ConvMath::kStrict,
                                                                                  ops::ConvEpilogue<half_t>::Bias(nullptr));
    REQUIRE(k != nullptr);
    CHECK(k->tile_m == filters_tile.second);
    const auto float_bias = ops::ConvEpilogue<float>::Bias(nullptr);
    k = ops::pointwise::RowBias<gpu, float>::KernelFor(g, ops::ConvMath::kTF32, float_bias);
    REQUIRE(k != nullptr);
    CHECK(k->element == cc::Element::kF32);
    CHECK(k->tile_m == filters_tile.second);
    for (const ops::ConvMath math : {ops::ConvMath::kStrict, ops::ConvMath::kTF32x3})
      CHECK(ops::pointwise::RowBias<gpu, float>::KernelFor(g, math, float_bias) == nullptr);
  }
#endif
}

TEST_CASE("CUTLASS implicit GEMM refuses what its kernels cannot take, and says why", "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  const auto* a = ops::ConvRegistry<gpu, half_t>::Get().Find(kCutlass);
  auto support = [&](const ops::ConvolutionParam& p, const std::vector<index_t>& shape, ops::ConvPass pass) {
    const auto pr = ops::MakeConvProblem<gpu, half_t>(ops::MakeConvGeometry(p, shape), s, true, p.workspace);
    return a->CanImplement(pr, pass);
  };
  const Conv2d fine{2, 9, 9, 16, 16, 3, 3, 1, 1, 1, 1};
  ops::ConvolutionParam grouped = fine.Param(kCutlass);
  grouped.num_group = 2;
  ops::ConvSupport sup = support(grouped, {2, 9, 9, 16}, ops::ConvPass::kForward);
  CHECK_FALSE(sup.ok);
  CHECK_THAT(sup.why, Catch::Contains("grouped"));
  ops::ConvolutionParam volume = fine.Param(kCutlass);
  volume.kernel = {3, 3, 3};
  volume.stride = volume.dilate = {1, 1, 1};
  volume.pad = volume.pad_end = {1, 1, 1};
  sup = support(volume, {2, 5, 9, 9, 16}, ops::ConvPass::kForward);
  CHECK_FALSE(sup.ok);
  CHECK_THAT(sup.why, Catch::Contains("3-D"));
  const Conv2d dilated_strided{2, 9, 9, 16, 16, 3, 3, 2, 2, 2, 2};  // CUTLASS's strided data gradient: no dilation
  sup = support(dilated_strided.Param(kCutlass), {2, 9, 9, 16}, ops::ConvPass::kBackwardData);
  CHECK_FALSE(sup.ok);
  CHECK_THAT(sup.why, Catch::Contains("CUTLASS cannot implement it"));
  // ... while the other passes of that problem, and staged problems, it takes.
  CHECK(support(dilated_strided.Param(kCutlass), {2, 9, 9, 16}, ops::ConvPass::kForward).ok);
  ops::ConvolutionParam first = fine.Param(kCutlass);
  first.layout = ops::Layout::kNCHW;
  CHECK(support(first, {2, 3, 9, 9}, ops::ConvPass::kBackwardWeight).ok);

  // Forcing it on a refused problem is an Error naming the reason; the library's own choice runs it.
  TensorContainer<gpu, 4, half_t> x(Shape4(2, 9, 9, 16)), w(Shape4(16, 3, 3, 16)), y(Shape4(2, 5, 5, 16));
  TensorContainer<gpu, 1, half_t> b(Shape1(16));
  for (auto* t : {&x, &w, &y}) t->set_stream(s);
  b.set_stream(s);
  x = half_t(0.5f);
  w = half_t(0.25f);
  y = half_t(1.0f);
  ops::ConvolutionForward(dilated_strided.Param(kCutlass), x.view(), w.view(), b.view(), kWriteTo, y.view());
  CHECK_THROWS_WITH(ops::ConvolutionBackward(dilated_strided.Param(kCutlass), y.view(), x.view(), w.view(), kWriteTo,
                                             x.view(), kNullOp, w.view(), kNullOp, b.view()),
                    Catch::Contains("CUTLASS cannot implement it"));
  Conv2d by_choice = dilated_strided;
  CheckConv<half_t>(by_choice, "", s, 1e-2);
  DeleteStream(s);
}

TEST_CASE("CUTLASS fused epilogue: bias, residual and relu in the kernels' store, every req, direct and staged",
          "[gpu][conv][cutlass][epilogue]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  std::vector<Conv2d> shapes = AlignedShapes();
  for (const Conv2d& c : StagedShapes()) shapes.push_back(c);
  for (const Conv2d& c : shapes) {
    CheckFusedEpilogue<half_t>(c, s, 1e-2);
    CheckFusedEpilogue<bf16_t>(c, s, 2e-2);
  }
  if (HaveCutlass<float>()) {
    s->set_tf32(true);
    if (FloatKernelsCompiled(shapes[0], s)) {
      for (const Conv2d& c : shapes) CheckFusedEpilogue<float>(c, s, 2e-3);
    }
    s->set_tf32(false);
    if (FloatKernelsCompiled(shapes[0], s)) CheckFusedEpilogue<float>(shapes[0], s, 1e-5);
  }
  DeleteStream(s);
}

// pointwise_gemm's fused epilogue (cuBLASLt) on 1x1 layers, forced by name: 8-aligned channels, odd ones,
// a strided kernel (on its gathered pixels), channels first (staged: bias and relu fused), in half,
// bf16, TF32 and strict fp32. A bias that does not start on a 16-byte boundary is not fused.
TEST_CASE("pointwise_gemm fused epilogue: bias, residual and relu in the cuBLASLt gemm's store, every req",
          "[gpu][conv][epilogue]") {
  TE_REQUIRE_GPU();
  constexpr const char* kPointwise = "pointwise_gemm";
  Stream<gpu>* s = NewStream<gpu>(false);
  // The last: long enough a reduction (2048) that cuBLASLt may split it.
  // Channels first: a batch of narrow images (staged), the same strided (gathered, then staged), and
  // images of 272 pixels, dense and strided (run per image: fused in 16-bit and TF32 where a row-bias gemm
  // is compiled for this GPU, else not fused and the output untouched), and 270 (not 8-aligned: never fused).
  // The staged ones take bias and relu into the staged product's cuBLASLt store where it has a kernel,
  // else as they move back through the tiled transpose (where both sides are 16 or more: the strided
  // one's 20 pixels by 16 filters; the 143 by 40 one, tiles with tails both ways); the last, odd channels
  // and filters (unaligned rows for cuBLASLt).
  std::vector<Conv2d> shapes = {{2, 5, 7, 16, 24, 1, 1}, {3, 4, 4, 3, 5, 1, 1},     {2, 9, 8, 8, 16, 1, 1},
                                {2, 5, 5, 8, 8, 1, 1},   {2, 7, 7, 2048, 512, 1, 1}, {2, 9, 8, 8, 16, 1, 1},
                                {2, 17, 16, 8, 8, 1, 1}, {3, 34, 32, 16, 24, 1, 1},  {2, 18, 15, 8, 8, 1, 1},
                                {3, 13, 11, 16, 40, 1, 1}, {2, 5, 5, 3, 5, 1, 1}};
  shapes[2].stride = 2;
  shapes[5].stride = 2;
  shapes[7].stride = 2;
  for (size_t i : {3, 5, 6, 7, 8, 9, 10}) shapes[i].layout = ops::Layout::kNCHW;
  for (const Conv2d& c : shapes) {
    CheckFusedEpilogue<half_t>(c, s, 1e-2, kPointwise);
    CheckFusedEpilogue<bf16_t>(c, s, 2e-2, kPointwise);
    s->set_tf32(true);
    CheckFusedEpilogue<float>(c, s, 2e-3, kPointwise);
    s->set_tf32(false);
    CheckFusedEpilogue<float>(c, s, 1e-5, kPointwise);
  }
  // A bias one element past a 16-byte boundary: the gemm's store cannot take it, nothing is run.
  const Conv2d c = shapes[0];
  TensorContainer<gpu, 4, half_t> x(Shape4(c.N, c.H, c.W, c.C)), w(Shape4(c.K, 1, 1, c.C)), out(Shape4(c.N, c.P(), c.Q(), c.K));
  TensorContainer<gpu, 1, half_t> bias(Shape1(c.K + 1));
  for (auto* t : {&x, &w, &out}) t->set_stream(s);
  bias.set_stream(s);
  ops::ConvEpilogue<half_t> e;
  e.active = true;
  e.bias = bias.dptr_ + 1;
  CHECK_FALSE(ops::ConvolutionForwardFused(c.Param(kPointwise), x.view(), w.view(), e, kWriteTo, out.view()));
  e.bias = bias.dptr_;
  CHECK(ops::ConvolutionForwardFused(c.Param(kPointwise), x.view(), w.view(), e, kWriteTo, out.view()));
  // Channels first: fused where a batch of narrow images runs staged (any bias pointer: the transpose back
  // reads it element by element), without a residual; not where one image runs as it is on
  // pixels that are not whole 16-byte rows (35 here; the row-bias gemm takes multiples of 8). Grouped
  // channels-last layers are refused.
  Conv2d first = c;
  first.layout = ops::Layout::kNCHW;
  TensorContainer<gpu, 4, half_t> xf(Shape4(c.N, c.C, c.H, c.W)), wf(Shape4(c.K, c.C, 1, 1)), outf(Shape4(c.N, c.K, c.P(), c.Q()));
  for (auto* t : {&xf, &wf, &outf}) t->set_stream(s);
  CHECK(ops::ConvolutionForwardFused(first.Param(kPointwise), xf.view(), wf.view(), e, kWriteTo, outf.view()));
  {  // The staged product's cuBLASLt store takes an aligned bias; the transpose back, the unaligned copy of
     // it (tiles of 24 filters by 35 pixels): each against float64.
    TensorContainer<cpu, 4, half_t> xh(xf.shape_), wh(wf.shape_);
    TensorContainer<cpu, 1, half_t> bh(Shape1(c.K + 1));
    for (Tensor<cpu, 4, half_t> t : {xh.view(), wh.view()}) FillRandom(t);
    FillRandom(bh.view());
    Copy(xf.view(), xh.view(), s), Copy(wf.view(), wh.view(), s), Copy(bias.view(), bh.view(), s);
    TensorContainer<gpu, 1, half_t> aligned(Shape1(c.K));
    aligned.set_stream(s);
    Copy(aligned.view(), bias.view().Slice(1, c.K + 1), s);
    TensorContainer<gpu, 4, half_t> out_unaligned(outf.shape_);
    out_unaligned.set_stream(s);
    e.activation = ops::ConvActivation::kRelu;
    e.bias = aligned.dptr_;
    CHECK(ops::ConvolutionForwardFused(first.Param(kPointwise), xf.view(), wf.view(), e, kWriteTo, outf.view()));
    e.bias = bias.dptr_ + 1;
    CHECK(ops::ConvolutionForwardFused(first.Param(kPointwise), xf.view(), wf.view(), e, kWriteTo, out_unaligned.view()));
    // y (N, K, P) = relu(W (K, C) . x_n (C, P) + bias), the bias bh[1 + k].
    const index_t P = c.P() * c.Q();
    std::vector<double> want(size_t(c.N * c.K * P));
    for (index_t n = 0; n < c.N; ++n)
      for (index_t k = 0; k < c.K; ++k)
        for (index_t p = 0; p < P; ++p) {
          double v = double(static_cast<float>(bh.dptr_[1 + k]));
          for (index_t ch = 0; ch < c.C; ++ch)
            v += double(static_cast<float>(wh.dptr_[k * c.C + ch])) * double(static_cast<float>(xh.dptr_[(n * c.C + ch) * P + p]));
          want[size_t((n * c.K + k) * P + p)] = v > 0 ? v : 0.0;
        }
    for (const Tensor<gpu, 4, half_t>& got : {outf.view(), out_unaligned.view()}) {
      const std::vector<double> g = Values(ToHost(got));
      double scale = 0, worst = 0;
      for (size_t i = 0; i < g.size(); ++i) scale = std::max(scale, std::fabs(want[i])), worst = std::max(worst, std::fabs(g[i] - want[i]));
      CHECK(worst <= 1e-2 * std::max(scale, 1.0));
    }
    e.activation = ops::ConvActivation::kIdentity;
  }
  e.bias = bias.dptr_;
  e.residual = outf.dptr_;  // a residual, channels first: the operator's pass
  CHECK_FALSE(ops::ConvolutionForwardFused(first.Param(kPointwise), xf.view(), wf.view(), e, kWriteTo, outf.view()));
  e.residual = nullptr;
  const Tensor<gpu, 4, half_t> x_one(xf.dptr_, Shape4(1, c.C, c.H, c.W), s), out_one(outf.dptr_, Shape4(1, c.K, c.P(), c.Q()), s);
  CHECK_FALSE(ops::ConvolutionForwardFused(first.Param(kPointwise), x_one, wf.view(), e, kWriteTo, out_one));
  ops::ConvolutionParam grouped = c.Param(kPointwise);
  grouped.num_group = 2;
  TensorContainer<gpu, 4, half_t> wg(Shape4(c.K, 1, 1, c.C / 2));
  wg.set_stream(s);
  CHECK_FALSE(ops::ConvolutionForwardFused(grouped, x.view(), wg.view(), e, kWriteTo, out.view()));
  // An output one element past a 16-byte boundary: the plain forward with a bias, fused or not, is right.
  HostOperands<half_t> host(c);
  TensorContainer<cpu, 1, half_t> bh(Shape1(c.K));
  FillRandom(bh.view());
  const Tensor<gpu, 1, half_t> bias_k(bias.dptr_, Shape1(c.K), s);  // (a Slice keeps the row stride K + 1)
  Copy(bias_k, bh.view(), s);
  TensorContainer<gpu, 4, half_t> xd = Upload(host.x, false, s), wd = Upload(host.w, false, s);
  TensorContainer<gpu, 1, half_t> spare(Shape1(out.shape_.Size() + 1));
  spare.set_stream(s);
  const Tensor<gpu, 4, half_t> shifted(spare.dptr_ + 1, out.shape_, s);
  ops::ConvolutionParam with_bias = c.Param(kPointwise);
  with_bias.no_bias = false;
  ops::ConvolutionForward(with_bias, xd.view(), wd.view(), bias_k, kWriteTo, shifted);
  const Reference ref(c, Values(host.x), Values(host.w), Values(host.dy));
  std::vector<double> want = ref.y;
  for (size_t i = 0; i < want.size(); ++i) want[i] += double(static_cast<float>(bh.dptr_[i % size_t(c.K)]));
  CheckAgainst("output off a 16-byte boundary", shifted, c.layout, want, 1.0, 1e-2);
  s->Wait();
  DeleteStream(s);
}

TEST_CASE("CUTLASS implicit GEMM on tensors that do not start on a 16-byte boundary: staged, the same values",
          "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  const Conv2d c{2, 9, 9, 16, 24, 3, 3, 1, 1, 1, 1};
  const ops::ConvolutionParam param = c.Param(kCutlass);
  HostOperands<half_t> host(c);
  TensorContainer<cpu, 4, half_t> &xh = host.x, &wh = host.w, &dyh = host.dy;
  // Every tensor twice: in a fresh allocation, and one element into a buffer one element longer.
  struct Pair {
    TensorContainer<gpu, 4, half_t> aligned;
    TensorContainer<gpu, 1, half_t> buffer;
    Tensor<gpu, 4, half_t> shifted;
  };
  auto pair = [&](const Shape<4>& shape, const TensorContainer<cpu, 4, half_t>* from) {
    Pair p;
    p.aligned.set_stream(s);
    p.aligned.Resize(shape);
    p.buffer.set_stream(s);
    p.buffer.Resize(Shape1(shape.Size() + 1));
    p.shifted = Tensor<gpu, 4, half_t>(p.buffer.dptr_ + 1, shape, s);
    if (from != nullptr) {
      Copy(p.aligned.view(), from->view(), s);
      Copy(p.shifted, from->view(), s);
    }
    return p;
  };
  Pair x = pair(xh.shape_, &xh), w = pair(wh.shape_, &wh), dy = pair(dyh.shape_, &dyh);
  Pair y = pair(dyh.shape_, nullptr), dx = pair(xh.shape_, nullptr), dw = pair(wh.shape_, nullptr);
  TensorContainer<gpu, 1, half_t> b(Shape1(c.K));
  for (bool shifted : {false, true}) {
    auto v = [shifted](Pair& p) { return shifted ? p.shifted : p.aligned.view(); };
    ops::ConvolutionForward(param, v(x), v(w), b.view(), kWriteTo, v(y));
    ops::ConvolutionBackward(param, v(dy), v(x), v(w), kWriteTo, v(dx), kWriteTo, v(dw), kNullOp, b.view());
  }
  for (Pair* p : {&y, &dx, &dw}) CHECK(DifferingElements(p->aligned.view(), p->shifted) == 0);
  DeleteStream(s);
}

// Channels last with padded rows (each pixel's C channels, then a gap): the input and its gradient are
// staged, the filters and the output used in place; the values are those of dense tensors.
TEST_CASE("CUTLASS implicit GEMM on an input with padded rows: the input staged, the same values",
          "[gpu][conv][cutlass]") {
  TE_REQUIRE_CUTLASS(half_t);
  Stream<gpu>* s = NewStream<gpu>(false);
  const Conv2d c{2, 9, 9, 16, 24, 3, 3, 2, 1, 1, 1};
  const ops::ConvolutionParam param = c.Param(kCutlass);
  HostOperands<half_t> host(c);
  TensorContainer<cpu, 4, half_t> &xh = host.x, &wh = host.w, &dyh = host.dy;
  TensorContainer<gpu, 4, half_t> x = Upload(xh, false, s), w = Upload(wh, false, s), dy = Upload(dyh, false, s);
  const index_t pitch = c.C + 8;  // rows of 24 halves: still 16-byte aligned, not dense
  TensorContainer<gpu, 1, half_t> x_rows(Shape1(xh.shape_.Size() / c.C * pitch)), dx_rows(x_rows.shape_);
  x_rows.set_stream(s);
  dx_rows.set_stream(s);
  const Tensor<gpu, 4, half_t> x_padded(x_rows.dptr_, xh.shape_, pitch, s), dx_padded(dx_rows.dptr_, xh.shape_, pitch, s);
  Copy(x_padded, xh.view(), s);
  TensorContainer<gpu, 4, half_t> y(dyh.shape_), y_padded(dyh.shape_), dx(xh.shape_), dw(wh.shape_), dw_padded(wh.shape_);
  TensorContainer<gpu, 1, half_t> b(Shape1(c.K));
  for (auto* t : {&y, &y_padded, &dx, &dw, &dw_padded}) t->set_stream(s);
  b.set_stream(s);
  ops::ConvolutionForward(param, x.view(), w.view(), b.view(), kWriteTo, y.view());
  ops::ConvolutionBackward(param, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp,
                           b.view());
  ops::ConvolutionForward(param, x_padded, w.view(), b.view(), kWriteTo, y_padded.view());
  ops::ConvolutionBackward(param, dy.view(), x_padded, w.view(), kWriteTo, dx_padded, kWriteTo, dw_padded.view(),
                           kNullOp, b.view());
  CHECK(DifferingElements(y.view(), y_padded.view()) == 0);
  CHECK(DifferingElements(dx.view(), dx_padded) == 0);
  CHECK(DifferingElements(dw.view(), dw_padded.view()) == 0);
  DeleteStream(s);
}

// gpu_stem_mma's fused epilogue, its own store, forced by name: an RGB stem with more filters than a
// block's 64, one input channel under 13 filters, and 4 channels at stride 2 with padding after; both
// layouts, half and bf16 (it runs no float).
TEST_CASE("gpu_stem_mma fused epilogue: bias, residual and relu in its store, every req", "[gpu][conv][epilogue]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* s = NewStream<gpu>(false);
  std::vector<Conv2d> shapes = {{3, 12, 11, 3, 70, 7, 7, 2, 1, 3, 3}, {2, 9, 9, 1, 13, 5, 5, 1, 1, 2, 2},
                                {2, 10, 9, 4, 8, 3, 3, 2, 1, 1, 2}};
  for (size_t i = 0, n = shapes.size(); i < n; ++i) {
    shapes.push_back(shapes[i]);
    shapes.back().layout = ops::Layout::kNCHW;
  }
  const auto* algorithm = ops::ConvRegistry<gpu, half_t>::Get().Find("gpu_stem_mma");
  REQUIRE(algorithm != nullptr);
  ops::ConvolutionParam stem = shapes[0].Param("gpu_stem_mma");
  const ops::ConvProblem problem = ops::MakeConvProblem<gpu, half_t>(
      ops::MakeConvGeometry(stem, {shapes[0].N, shapes[0].H, shapes[0].W, shapes[0].C}), s, true, stem.workspace);
  const ops::ConvSupport here = algorithm->CanImplement(problem, ops::ConvPass::kForward);
  if (!here.ok && here.why.find("compute capability") != std::string::npos) {
    WARN("skipped: " << here.why);
  } else {
    for (const Conv2d& c : shapes) {
      CheckFusedEpilogue<half_t>(c, s, 1e-2, "gpu_stem_mma");
      CheckFusedEpilogue<bf16_t>(c, s, 2e-2, "gpu_stem_mma");
    }
  }
  DeleteStream(s);
}

// im2col_gemm's fused epilogue (cuBLASLt), channels last in one group, forced by name: an RGB stem (its
// rows padded from 147 entries to 152 halves or 148 floats), a 3x3 layer on 16 channels, odd channels
// (13: rows of 117 padded to 120 halves or floats), odd filters (13: output rows off 16 bytes), and the
// stem under workspaces that chunk its three images two and one, then one image's positions (in 16-bit;
// float's rows, twice the bytes, chunk positions under both), each chunk's product offsetting the residual
// and the output; in half, bf16, TF32 and strict fp32. Channels first, it
// does not fuse (the output is checked untouched).
TEST_CASE("im2col_gemm fused epilogue: bias, residual and relu in the cuBLASLt gemm's store, every req",
          "[gpu][conv][epilogue]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* s = NewStream<gpu>(false);
  std::vector<Conv2d> shapes = {{3, 12, 11, 3, 16, 7, 7, 2, 1, 3, 3}, {2, 9, 9, 16, 24, 3, 3, 1, 1, 1, 1},
                                {2, 9, 9, 13, 16, 3, 3, 1, 1, 1, 1},  {2, 9, 9, 16, 13, 3, 3, 1, 1, 1, 1}};
  // Three images in chunks of two then one (the last chunk shorter), and chunks of one image's positions.
  for (double workspace_mb : {30e-3, 8e-3}) {
    shapes.push_back(shapes[0]);
    shapes.back().workspace_mb = workspace_mb;
  }
  shapes.push_back(shapes[0]);
  shapes.back().layout = ops::Layout::kNCHW;
  for (const Conv2d& c : shapes) {
    INFO("workspace " << c.workspace_mb << " MB");
    CheckFusedEpilogue<half_t>(c, s, 1e-2, "im2col_gemm");
    CheckFusedEpilogue<bf16_t>(c, s, 2e-2, "im2col_gemm");
    s->set_tf32(true);
    CheckFusedEpilogue<float>(c, s, 2e-3, "im2col_gemm");
    s->set_tf32(false);
    CheckFusedEpilogue<float>(c, s, 1e-5, "im2col_gemm");
  }
  DeleteStream(s);
}
