// conv_test.cc — ops/convolution.h against a naive float64 direct convolution on fresh random inputs:
// 1-D / 2-D / 3-D, groups (incl. depthwise), strides, padding (explicit, asymmetric, SAME_UPPER,
// SAME_LOWER, VALID), dilation, kernels 1/3/5/7 and non-square, batch 1 and > 1, unbatched input,
// padded-row views, every req, every dtype; finite-difference gradient checks; chunked vs folded workspace; the workspace resource;
// shape / cost inference; and the errors bad parameters raise.
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>
#include "ops_test_util.h"
#include <tensorexpr/ops/convolution.h>
#include "../ops/cpu/conv_per_image.h"  // PlanIm2Col and PlanConvPerImage, checked directly
#include "../ops/conv_pointwise_gemm.h"  // pointwise::GpuWorkspaceElems, checked directly

namespace {
using namespace te_test;
using tensorexpr::ops::ConvolutionParam;
using tensorexpr::ops::ConvPadding;
using Dims = std::vector<index_t>;

// ---- the float64 reference, written from the definition ------------------------------------------------
// All shapes are taken as 3-D spatial with leading extents of 1; pb / pe are the padding per side.
struct RefConv {
  index_t N, C, K, G;
  index_t in[3], out[3], k[3], s[3], d[3], pb[3];
  PadMode mode = PadMode::kConstant;  // the border (RefPadIndex); a constant one reads `value`
  double value = 0;
  index_t Cg() const { return C / G; }
  index_t Kg() const { return K / G; }
  index_t X(index_t n, index_t c, index_t z, index_t y, index_t x) const {
    return (((n * C + c) * in[0] + z) * in[1] + y) * in[2] + x;
  }
  index_t Y(index_t n, index_t f, index_t z, index_t y, index_t x) const {
    return (((n * K + f) * out[0] + z) * out[1] + y) * out[2] + x;
  }
  index_t Wt(index_t f, index_t c, index_t z, index_t y, index_t x) const {
    return (((f * Cg() + c) * k[0] + z) * k[1] + y) * k[2] + x;
  }
  // Calls f(y_index, x_index, w_index) for every (output, input, weight) triple that meets; a tap on a
  // constant border of a value other than 0 has x_index -1.
  template <typename F>
  void ForEachTap(F f) const {
    for (index_t n = 0; n < N; ++n)
      for (index_t o = 0; o < K; ++o)
        for (index_t oz = 0; oz < out[0]; ++oz)
          for (index_t oy = 0; oy < out[1]; ++oy)
            for (index_t ox = 0; ox < out[2]; ++ox)
              for (index_t c = 0; c < Cg(); ++c)
                for (index_t kz = 0; kz < k[0]; ++kz)
                  for (index_t ky = 0; ky < k[1]; ++ky)
                    for (index_t kx = 0; kx < k[2]; ++kx) {
                      const index_t z = RefPadIndex(oz * s[0] - pb[0] + kz * d[0], in[0], mode),
                                    y = RefPadIndex(oy * s[1] - pb[1] + ky * d[1], in[1], mode),
                                    x = RefPadIndex(ox * s[2] - pb[2] + kx * d[2], in[2], mode);
                      const bool border = z < 0 || y < 0 || x < 0;
                      if (border && value == 0) continue;
                      f(Y(n, o, oz, oy, ox), border ? -1 : X(n, (o / Kg()) * Cg() + c, z, y, x), Wt(o, c, kz, ky, kx));
                    }
  }
};

// The reference's view of a case: data shape, kernel, stride, dilation and the padding per side
// (given by hand, so that SAME / VALID are checked against numbers computed outside the library).
RefConv MakeRef(const Dims& dshape, bool batched, const Dims& kernel, Dims stride, Dims dilate, const Dims& pb,
                const Dims& pe, index_t K, index_t G) {
  const size_t nd = kernel.size(), off = 3 - nd, first = batched ? 2 : 1;
  if (stride.empty()) stride = Dims(nd, 1);
  if (dilate.empty()) dilate = Dims(nd, 1);
  RefConv r;
  r.N = batched ? dshape[0] : 1;
  r.C = dshape[first - 1];
  r.K = K;
  r.G = G;
  for (int i = 0; i < 3; ++i) r.in[i] = r.out[i] = r.k[i] = r.s[i] = r.d[i] = 1, r.pb[i] = 0;
  for (size_t i = 0; i < nd; ++i) {
    r.in[off + i] = dshape[first + i];
    r.k[off + i] = kernel[i];
    r.s[off + i] = stride[i];
    r.d[off + i] = dilate[i];
    r.pb[off + i] = pb[i];
    r.out[off + i] = (dshape[first + i] + pb[i] + pe[i] - ((kernel[i] - 1) * dilate[i] + 1)) / stride[i] + 1;
  }
  return r;
}

// CheckAll with the exact accessor: every element within rtol * max(1, |ref|).
template <int dim, typename DType, typename Ref>
void CheckClose(const Tensor<cpu, dim, DType>& got, Ref ref, double rtol, const char* what) {
  index_t bad = 0;
  std::string first;
  ForEachIndex(got.shape_, [&](const Shape<dim>& idx) {
    const double g = AtX(got, idx), r = ref(idx);
    if (!(std::fabs(g - r) <= rtol * std::max(1.0, std::fabs(r)))) {
      if (bad++ == 0) {
        std::ostringstream os;
        os.precision(17);
        os << what << " first mismatch at " << idx << ": got " << g << ", expected " << r;
        first = os.str();
      }
    }
  });
  INFO(first);
  INFO("mismatches: " << bad << " of " << got.shape_.Size() << " (shape " << got.shape_ << ")");
  CHECK(bad == 0);
}

// A device tensor holding `h`, with padded rows when asked (a strided view for the op to read / write).
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> DeviceCopy(const Tensor<cpu, dim, DType>& h, Stream<Device>* s, bool pad) {
  TensorContainer<Device, dim, DType> d(pad);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}

// One case in full: what the op is asked and what the reference expects.
struct Case {
  Dims data;                  // data shape (batched or not)
  bool batched = true;
  ConvolutionParam param;
  Dims ref_pb, ref_pe;        // padding per side for the reference
  bool padded_rows = false;  // give the data and its gradient padded rows
  double tol_scale = 1.0;     // the tolerances' multiple (an algorithm that rounds more than a direct sum)
};

Case MakeCase(Dims data, Dims kernel, Dims stride, Dims pad, Dims dilate, index_t K, index_t G, bool bias,
              bool batched = true) {
  Case c;
  c.data = data;
  c.batched = batched;
  c.param.kernel = kernel;
  c.param.stride = stride;
  c.param.pad = pad;
  c.param.dilate = dilate;
  c.param.num_filter = K;
  c.param.num_group = G;
  c.param.no_bias = !bias;
  c.ref_pb = pad.empty() ? Dims(kernel.size(), 0) : pad;
  c.ref_pe = c.ref_pb;
  return c;
}

template <typename DType>
double ConvTol(index_t terms) {
  // Sums of `terms` products of values in [-1, 1]: the error grows like sqrt(terms) ulps of the sum.
  return Tol<DType>() * std::max(1.0, std::sqrt(double(terms)) / 2);
}

struct Reqs {
  OpReqType fwd = kWriteTo, data = kWriteTo, weight = kWriteTo, bias = kWriteTo;
};

// F(4x4, 3x3)'s transforms (constants 1/6, 1/24 and 8) round about 20 times more than a direct sum
// (README: 6.8e-7 against 3.2e-8 of the sum of |terms|); within ConvTol itself it failed 1 run in 20.
constexpr double kWinograd4x4TolScale = 4.0;

// TF32 keeps 10 bits of each input's mantissa: 2^-11 relative where the input is rounded, 2^-10 where the
// low bits are dropped, so a product may be off by up to about 2e-3 of its size, two hundred times float's
// 1e-5 (CUTLASS's own tests allow 2e-3). A hundred times let a channels-last forward over 8 channels into
// 2048 filters miss by 1.415e-3 against 1.414e-3 (one output of 49,152, H200, seed 517100716).
constexpr double kTF32TolScale = 200.0;

// The expected value of an output given its prefill, the reference result and the req.
inline double Expect(OpReqType req, double before, double ref) {
  return req == kNullOp ? before : (req == kAddTo ? before + ref : ref);
}

template <typename Device, typename DType, int ddim, int wdim>
void RunCase(Stream<Device>* stream, const Case& cs, Reqs reqs) {
  // The case and the reference are written channels first; a channels-last case runs on permuted copies.
  const bool last = cs.param.layout == ops::Layout::kNHWC;
  ConvolutionParam p = cs.param;
  p.layout = ops::Layout::kNCHW;
  RefConv r = MakeRef(cs.data, cs.batched, p.kernel, p.stride, p.dilate, cs.ref_pb, cs.ref_pe, p.num_filter,
                      p.num_group);
  r.mode = p.pad_mode;
  r.value = p.pad_value.value_or(0.0);
  const auto shapes = ops::InferConvShapes(p, cs.data);
  if (last) {
    const auto cl = ops::InferConvShapes(cs.param, ChannelsLastShape(cs.data, cs.batched));
    REQUIRE(cl.out == ChannelsLastShape(shapes.out, cs.batched));
    REQUIRE(cl.weight == ChannelsLastShape(shapes.weight, true));
  }
  // The library's shapes against the reference's.
  Dims want_out;
  if (cs.batched) want_out.push_back(r.N);
  want_out.push_back(r.K);
  for (size_t i = 0; i < p.kernel.size(); ++i) want_out.push_back(r.out[3 - p.kernel.size() + i]);
  REQUIRE(shapes.out == want_out);
  Dims want_w = {r.K, r.Cg()};
  for (index_t k : p.kernel) want_w.push_back(k);
  REQUIRE(shapes.weight == want_w);
  REQUIRE(shapes.bias == (p.no_bias ? Dims{} : Dims{r.K}));

  const Shape<ddim> xs = ToShape<ddim>(cs.data), ys = ToShape<ddim>(shapes.out);
  const Shape<wdim> ws = ToShape<wdim>(shapes.weight);
  TensorContainer<cpu, ddim, DType> xh(xs), yh(ys), dyh(ys), dxh(xs);
  TensorContainer<cpu, wdim, DType> wh(ws), dwh(ws);
  TensorContainer<cpu, 1, DType> bh(Shape1(r.K)), dbh(Shape1(r.K));
  FillRandom(xh.view());
  FillRandom(wh.view());
  FillRandom(bh.view());
  FillRandom(dyh.view());
  const std::vector<double> x = ToVec(xh.view()), w = ToVec(wh.view()), b = ToVec(bh.view()),
                            dy = ToVec(dyh.view());
  const std::vector<double> y0 = Prefill(yh.view(), reqs.fwd), dx0 = Prefill(dxh.view(), reqs.data),
                            dw0 = Prefill(dwh.view(), reqs.weight), db0 = Prefill(dbh.view(), reqs.bias);

  // Reference forward and backward in double.
  std::vector<double> y(y0.size(), 0.0), dx(x.size(), 0.0), dw(w.size(), 0.0), db(b.size(), 0.0);
  r.ForEachTap([&](index_t yi, index_t xi, index_t wi) {
    const double xv = xi < 0 ? r.value : x[xi];
    y[yi] += w[wi] * xv;
    if (xi >= 0) dx[xi] += w[wi] * dy[yi];
    dw[wi] += dy[yi] * xv;
  });
  const index_t P = r.out[0] * r.out[1] * r.out[2];
  for (size_t i = 0; i < y.size(); ++i) {
    const index_t f = (index_t(i) / P) % r.K;
    if (!p.no_bias) y[i] += b[f];
    db[f] += dy[i];
  }

  auto xd = DeviceCopy<Device>(Permuted(xh.view(), last, true, cs.batched).view(), stream, cs.padded_rows);
  auto dxd = DeviceCopy<Device>(Permuted(dxh.view(), last, true, cs.batched).view(), stream, cs.padded_rows);
  auto yd = DeviceCopy<Device>(Permuted(yh.view(), last, true, cs.batched).view(), stream, false);
  auto dyd = DeviceCopy<Device>(Permuted(dyh.view(), last, true, cs.batched).view(), stream, false);
  auto wd = DeviceCopy<Device>(Permuted(wh.view(), last, true, true).view(), stream, false);
  auto dwd = DeviceCopy<Device>(Permuted(dwh.view(), last, true, true).view(), stream, false);
  auto bd = DeviceCopy<Device>(bh.view(), stream, false);
  auto dbd = DeviceCopy<Device>(dbh.view(), stream, false);

  ops::ConvolutionForward(cs.param, xd.view(), wd.view(), bd.view(), reqs.fwd, yd.view());
  ops::ConvolutionBackward(cs.param, dyd.view(), xd.view(), wd.view(), reqs.data, dxd.view(), reqs.weight,
                           dwd.view(), reqs.bias, dbd.view());
  // Back to channels first for the comparison.
  auto back = [&](const auto& d, bool batched) { return Permuted(ToHost(d.view()).view(), last, false, batched); };

  const index_t taps = r.Cg() * r.k[0] * r.k[1] * r.k[2];
  INFO("data " << xs << " weight " << ws << " out " << ys << " group " << r.G << " reqs fwd/data/weight/bias "
               << OpReqName(reqs.fwd) << "/" << OpReqName(reqs.data) << "/" << OpReqName(reqs.weight) << "/"
               << OpReqName(reqs.bias) << " dtype " << DataType<DType>::name() << " layout "
               << ops::LayoutName(cs.param.layout) << " algorithm '" << cs.param.algorithm << "'");
  CheckClose(back(yd, cs.batched).view(), [&](const Shape<ddim>& i) {
    const index_t f = Flat(ys, i);
    return Expect(reqs.fwd, y0[f], y[f]);
  }, cs.tol_scale * ConvTol<DType>(taps), "forward");
  CheckClose(back(dxd, cs.batched).view(), [&](const Shape<ddim>& i) {
    const index_t f = Flat(xs, i);
    return Expect(reqs.data, dx0[f], dx[f]);
  }, cs.tol_scale * ConvTol<DType>(r.Kg() * r.k[0] * r.k[1] * r.k[2] * (r.mode == PadMode::kConstant ? 1 : 9)),
     "data grad");
  CheckClose(back(dwd, true).view(), [&](const Shape<wdim>& i) {
    const index_t f = Flat(ws, i);
    return Expect(reqs.weight, dw0[f], dw[f]);
  }, cs.tol_scale * ConvTol<DType>(r.N * P), "weight grad");
  // With no_bias the bias gradient is never touched, whatever its req.
  const OpReqType bias_req = p.no_bias ? kNullOp : reqs.bias;
  CheckClose(ToHost(dbd.view()).view(), [&](const Shape<1>& i) { return Expect(bias_req, db0[i[0]], db[i[0]]); },
           ConvTol<DType>(r.N * P), "bias grad");
}

// The req patterns each grid case cycles through (the case index picks one), so that every req meets
// every kind of geometry somewhere without running the whole product.
Reqs ReqPattern(size_t i) {
  static const Reqs patterns[] = {
      {kWriteTo, kWriteTo, kWriteTo, kWriteTo},   {kAddTo, kAddTo, kAddTo, kAddTo},
      {kWriteInplace, kWriteTo, kAddTo, kNullOp}, {kNullOp, kAddTo, kNullOp, kWriteTo},
      {kWriteTo, kNullOp, kWriteTo, kAddTo},      {kAddTo, kWriteInplace, kWriteInplace, kWriteInplace},
  };
  return patterns[i % (sizeof(patterns) / sizeof(patterns[0]))];
}

// 2-D cases: groups, depthwise, strides, pads, dilations, kernel sizes, odd sizes, pointwise.
std::vector<Case> Grid2D() {
  std::vector<Case> v;
  v.push_back(MakeCase({2, 3, 7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 1, true));
  v.push_back(MakeCase({1, 4, 10, 11}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, 6, 2, false));
  v.push_back(MakeCase({2, 4, 9, 8}, {3, 3}, {1, 1}, {1, 1}, {2, 2}, 4, 4, true));    // depthwise, dilated
  v.push_back(MakeCase({3, 2, 13, 12}, {5, 5}, {3, 3}, {2, 2}, {1, 1}, 3, 1, true));
  v.push_back(MakeCase({1, 3, 15, 14}, {7, 7}, {2, 2}, {2, 1}, {1, 1}, 2, 1, false));
  v.push_back(MakeCase({3, 5, 4, 6}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 7, 1, true));    // pointwise: direct gemm
  v.push_back(MakeCase({2, 6, 5, 3}, {1, 1}, {}, {}, {}, 4, 2, true));                // pointwise, grouped
  v.push_back(MakeCase({2, 4, 7, 5}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 3, 1, true));    // 1x1 stride 2
  v.push_back(MakeCase({2, 2, 9, 11}, {2, 4}, {1, 2}, {0, 1}, {2, 1}, 3, 1, true));   // non-square
  v.push_back(MakeCase({2, 3, 1, 17}, {1, 3}, {1, 1}, {0, 1}, {1, 1}, 2, 1, true));   // H = 1
  v.push_back(MakeCase({1, 2, 6, 6}, {3, 3}, {3, 3}, {2, 2}, {2, 2}, 2, 1, true));    // stride 3, pad 2, dil 2
  v.push_back(MakeCase({3, 6, 5, 7}, {3, 3}, {1, 2}, {1, 0}, {1, 1}, 6, 3, true));    // 3 groups
  v.push_back(MakeCase({3, 4, 6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, 4, false));   // multiplier 2 per group
  return v;
}

std::vector<Case> Grid1D() {
  std::vector<Case> v;
  v.push_back(MakeCase({2, 3, 17}, {3}, {2}, {1}, {2}, 5, 1, true));
  v.push_back(MakeCase({1, 4, 9}, {5}, {1}, {2}, {1}, 4, 2, false));
  v.push_back(MakeCase({3, 2, 8}, {1}, {1}, {0}, {1}, 3, 1, true));  // pointwise 1-D
  v.push_back(MakeCase({2, 3, 1}, {1}, {3}, {0}, {1}, 2, 1, true));  // width 1
  return v;
}

std::vector<Case> Grid3D() {
  std::vector<Case> v;
  v.push_back(MakeCase({2, 2, 5, 6, 7}, {3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, 3, 1, true));
  v.push_back(MakeCase({1, 4, 5, 5, 5}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 4, 2, false));
  v.push_back(MakeCase({2, 3, 4, 6, 5}, {2, 2, 2}, {1, 1, 1}, {0, 1, 1}, {2, 1, 2}, 3, 3, true));  // depthwise
  v.push_back(MakeCase({1, 3, 3, 4, 5}, {1, 1, 1}, {}, {}, {}, 2, 1, true));                       // pointwise 3-D
  return v;
}

// The problem the algorithms see for case c in its layout, on `stream`.
template <typename Device, typename DType>
ops::ConvProblem ProblemOf(const Case& c, Stream<Device>* stream) {
  const bool last = c.param.layout == ops::Layout::kNHWC;
  const ops::ConvGeometry g = ops::MakeConvGeometry(c.param, last ? ChannelsLastShape(c.data, c.batched) : c.data);
  return ops::MakeConvProblem<Device, DType>(g, stream, !c.padded_rows, c.param.workspace);
}
// Whether the algorithm called `name` is registered for DType and can implement `pass` of case c (forcing
// it is an Error otherwise, which tests/conv_select_test.cc checks).
template <typename Device, typename DType>
bool ImplementsPass(const std::string& name, const Case& c, Stream<Device>* stream, ops::ConvPass pass) {
  const auto* a = ops::ConvRegistry<Device, DType>::Get().Find(name);
  return a != nullptr && a->CanImplement(ProblemOf<Device, DType>(c, stream), pass).ok;
}
// The passes algorithm `name` does not implement for case c (Winograd's weight gradient, all but
// shifted_gemm's, the tuner's gpu_direct tiles' weight gradient) get the req kNullOp in *reqs; false when
// it implements none of them.
template <typename Device, typename DType>
bool OnlyImplementedPasses(const std::string& name, const Case& c, Stream<Device>* stream, Reqs* reqs) {
  const bool fwd = ImplementsPass<Device, DType>(name, c, stream, ops::ConvPass::kForward),
             data = ImplementsPass<Device, DType>(name, c, stream, ops::ConvPass::kBackwardData),
             weight = ImplementsPass<Device, DType>(name, c, stream, ops::ConvPass::kBackwardWeight);
  if (!fwd) reqs->fwd = kNullOp;
  if (!data) reqs->data = kNullOp;
  if (!weight) reqs->weight = kNullOp;
  return fwd || data || weight;
}

// The grid, with `algorithm` forced ("" : the library's choice) on the cases it can implement; returns
// how many ran.
template <typename Device, typename DType>
int RunGrid(Stream<Device>* stream, size_t seed_offset, const std::string& algorithm = "",
            ops::Layout layout = ops::Layout::kNCHW) {
  const auto g2 = Grid2D(), g1 = Grid1D(), g3 = Grid3D();
  int ran = 0;
  auto run = [&](Case c, bool padded, size_t pattern, auto dims) {
    constexpr int d = decltype(dims)::value;
    c.padded_rows = padded;
    c.param.algorithm = algorithm;
    c.param.layout = layout;
    if (algorithm == "winograd_4x4") c.tol_scale = kWinograd4x4TolScale;
    Reqs reqs = ReqPattern(pattern);
    // A forced algorithm runs the passes it implements; a case it implements none of is left out.
    if (!algorithm.empty() && !OnlyImplementedPasses<Device, DType>(algorithm, c, stream, &reqs)) return;
    RunCase<Device, DType, d, d>(stream, c, reqs);
    ++ran;
  };
  for (size_t i = 0; i < g2.size(); ++i) run(g2[i], i % 3 == 1, i + seed_offset, std::integral_constant<int, 4>());
  for (size_t i = 0; i < g1.size(); ++i) run(g1[i], i % 2 == 0, i + seed_offset + 2, std::integral_constant<int, 3>());
  for (size_t i = 0; i < g3.size(); ++i) run(g3[i], i % 2 == 1, i + seed_offset + 4, std::integral_constant<int, 5>());
  return ran;
}

// Whether a is finite exactly where the reference r is, and close to it there (relative 1e-4, and
// `margin`); returns how many elements are not finite.
template <int dim>
int SameFinitePattern(const TensorContainer<cpu, dim, float>& a, const TensorContainer<cpu, dim, float>& r,
                      const char* what, double margin) {
  INFO(what);
  int infinite = 0;
  for (index_t i = 0; i < a.shape_.Size(); ++i) {
    REQUIRE(std::isfinite(a.dptr_[i]) == std::isfinite(r.dptr_[i]));
    if (std::isfinite(r.dptr_[i])) {
      CHECK(a.dptr_[i] == Approx(r.dptr_[i]).epsilon(1e-4).margin(margin));
    } else {
      ++infinite;
    }
  }
  return infinite;
}

}  // namespace

TE_DEVICE_TEST_CASE("convolution float matches the float64 reference over the grid", "[conv]") {
  RunGrid<Device, float>(stream, 0);
}

TE_DEVICE_TEST_CASE("convolution double matches the float64 reference over the grid", "[conv]") {
  RunGrid<Device, double>(stream, 3);
}

// Each registered algorithm, forced by name, on every grid case it can implement (strided inputs, every
// req, groups, dilation, 1-D / 2-D / 3-D), in float and double; half and bf16 on three cases each, every
// pass the algorithm implements.
TE_DEVICE_TEST_CASE("every convolution algorithm matches the float64 reference where it implements",
                    "[conv][algorithm]") {
  for (const std::string& name : ops::ListConvAlgorithms<Device, float>()) {
    INFO("algorithm " << name);
    // Tensor-core kernels only (no double, aligned channels-last problems): tests/gpu/conv_cutlass_test.cu.
    if (name == "cutlass_implicit_gemm") continue;
    CHECK(RunGrid<Device, float>(stream, 1, name) > 0);
    if (ops::ConvRegistry<Device, double>::Get().Find(name) != nullptr)
      CHECK(RunGrid<Device, double>(stream, 4, name) > 0);
    else
      CHECK((name.rfind("gpu_direct", 0) == 0 || name == "gpu_strided_dgrad"));  // float, half and bf16 only
    for (const Case& base : {Grid2D()[0], Grid2D()[5], Grid2D()[11]}) {
      Case c = base;
      c.param.algorithm = name;
      Reqs half_reqs = ReqPattern(1), bf16_reqs = ReqPattern(2);
      if (OnlyImplementedPasses<Device, half_t>(name, c, stream, &half_reqs))
        RunCase<Device, half_t, 4, 4>(stream, c, half_reqs);
      if (OnlyImplementedPasses<Device, bf16_t>(name, c, stream, &bf16_reqs))
        RunCase<Device, bf16_t, 4, 4>(stream, c, bf16_reqs);
    }
  }
}

// Channels last (NWC, NHWC, NDHWC): the same grid, by the library's choice and by each algorithm that
// implements it; unbatched and half / bf16 cases too.
TE_DEVICE_TEST_CASE("convolution channels last matches the float64 reference", "[conv][layout]") {
  CHECK(RunGrid<Device, float>(stream, 2, "", ops::Layout::kNHWC) > 0);
  CHECK(RunGrid<Device, double>(stream, 5, "", ops::Layout::kNHWC) > 0);
  for (const std::string& name : ops::ListConvAlgorithms<Device, float>()) {
    INFO("algorithm " << name);
    RunGrid<Device, float>(stream, 3, name, ops::Layout::kNHWC);
  }
  for (const Case& base : {Grid2D()[0], Grid2D()[6], Grid3D()[2]}) {
    Case c = base;
    c.param.layout = ops::Layout::kNHWC;
    if (c.data.size() == 4) {
      RunCase<Device, half_t, 4, 4>(stream, c, ReqPattern(1));
      RunCase<Device, bf16_t, 4, 4>(stream, c, ReqPattern(2));
    } else {
      RunCase<Device, half_t, 5, 5>(stream, c, ReqPattern(3));
    }
  }
  Case unbatched = MakeCase({4, 7, 6}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, 6, 2, true, false);
  unbatched.param.layout = ops::Layout::kNHWC;
  RunCase<Device, float, 3, 4>(stream, unbatched, ReqPattern(0));
}

// im2col_gemm's channels-last column rows padded with zeros to whole 16-byte vectors (an RGB stem's 147
// entries in rows of 152 halves or 148 floats) and its forward's filters copied into rows as long: every
// dtype, padded input rows, and workspaces that chunk the images and then one image's positions (the GPU
// writes whole images' rows a block per output row, and chunks and padded inputs entry by entry).
TE_DEVICE_TEST_CASE("convolution im2col_gemm pads channels-last column rows to whole vectors", "[conv][layout]") {
  Case c = MakeCase({3, 3, 19, 17}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 5, 1, true);
  ops::ConvGeometry g = ops::MakeConvGeometry(c.param, c.data);
  g.channels_last = true;
  REQUIRE(ops::ColumnRowStride(g, sizeof(half_t)) == 152);
  REQUIRE(ops::ColumnRowStride(g, sizeof(float)) == 148);
  REQUIRE(ops::ColumnRowStride(g, sizeof(double)) == 148);
  c.param.layout = ops::Layout::kNHWC;
  c.param.algorithm = "im2col_gemm";
  RunCase<Device, float, 4, 4>(stream, c, ReqPattern(0));
  RunCase<Device, double, 4, 4>(stream, c, ReqPattern(1));
  RunCase<Device, half_t, 4, 4>(stream, c, ReqPattern(2));
  RunCase<Device, bf16_t, 4, 4>(stream, c, ReqPattern(3));
  c.padded_rows = true;
  RunCase<Device, float, 4, 4>(stream, c, Reqs{kAddTo, kAddTo, kAddTo, kAddTo});
  c.padded_rows = false;
  for (double workspace_mb : {4e-2, 1e-2}) {
    INFO("workspace " << workspace_mb << " MB");
    c.param.workspace = workspace_mb;
    RunCase<Device, float, 4, 4>(stream, c, Reqs{kWriteTo, kWriteTo, kWriteTo, kWriteTo});
    RunCase<Device, half_t, 4, 4>(stream, c, Reqs{kAddTo, kAddTo, kAddTo, kAddTo});
  }
  // The GPU's rows kernel walks a row's taps: kernel rows of one tap, so that the zero tail past C kk
  // spans seven of them (a 57 x 1 kernel on one channel, in rows of 64 halves or 60 floats); a dilated
  // kernel with unequal strides whose padding along W reaches as far as its windows (the first column's
  // window reads no pixel), on 5 channels in rows of 48; and one column whose padding before it is wider
  // than the shared row the windows reach (stride 8: the one window lies in the padding).
  for (Case d : {MakeCase({2, 1, 60, 5}, {57, 1}, {1, 1}, {2, 0}, {1, 1}, 3, 1, true),
                 MakeCase({2, 5, 11, 13}, {3, 3}, {1, 2}, {1, 5}, {2, 2}, 8, 1, true),
                 MakeCase({2, 5, 6, 1}, {3, 1}, {1, 8}, {1, 3}, {1, 1}, 8, 1, true)}) {
    ops::ConvGeometry dg = ops::MakeConvGeometry(d.param, d.data);  // (the case's data dims: N, C, H, W)
    dg.channels_last = true;
    d.param.layout = ops::Layout::kNHWC;
    d.param.algorithm = "im2col_gemm";
    INFO("kernel " << d.param.kernel[0] << "x" << d.param.kernel[1] << ", rows of " << ops::ColumnRowStride(dg, sizeof(half_t)));
    REQUIRE(ops::ColumnRowStride(dg, sizeof(half_t)) % 8 == 0);
    REQUIRE(ops::ColumnRowStride(dg, sizeof(half_t)) > dg.ColRows());
#if defined(__CUDACC__)
    // (the rows kernel takes these whole-batch runs: the cases check it, not the entry-wise kernel)
    CHECK(patch_cuda::Im2ColRowsFit<half_t>(dg, ops::ColumnRowStride(dg, sizeof(half_t))));
    CHECK(patch_cuda::Im2ColRowsFit<float>(dg, ops::ColumnRowStride(dg, sizeof(float))));
#endif
    RunCase<Device, float, 4, 4>(stream, d, ReqPattern(0));
    RunCase<Device, half_t, 4, 4>(stream, d, ReqPattern(1));
    RunCase<Device, bf16_t, 4, 4>(stream, d, Reqs{kWriteTo, kWriteTo, kWriteTo, kWriteTo});
  }
  // 3-D, one input depth padded: three output depths, which a kernel of one output depth per image must not
  // write as one.
  Case deep = MakeCase({2, 5, 1, 7, 6}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 8, 1, true);
  ops::ConvGeometry deep_g = ops::MakeConvGeometry(deep.param, deep.data);
  deep_g.channels_last = true;
  REQUIRE(deep_g.out[0] == 3);
  REQUIRE(ops::ColumnRowStride(deep_g, sizeof(half_t)) == 48);
#if defined(__CUDACC__)
  CHECK_FALSE(patch_cuda::Im2ColRowsFit<half_t>(deep_g, 48));
#endif
  deep.param.layout = ops::Layout::kNHWC;
  deep.param.algorithm = "im2col_gemm";
  RunCase<Device, float, 5, 5>(stream, deep, ReqPattern(0));
  RunCase<Device, half_t, 5, 5>(stream, deep, ReqPattern(1));
}

TE_DEVICE_TEST_CASE("convolution every req on one geometry", "[conv]") {
  const Case c = MakeCase({2, 4, 7, 6}, {3, 3}, {2, 1}, {1, 2}, {1, 1}, 6, 2, true);
  for (OpReqType req : {kNullOp, kWriteTo, kWriteInplace, kAddTo}) {
    RunCase<Device, float, 4, 4>(stream, c, Reqs{req, req, req, req});
    // Each gradient skipped alone while the others run.
    RunCase<Device, float, 4, 4>(stream, c, Reqs{req, kNullOp, req, req});
    RunCase<Device, float, 4, 4>(stream, c, Reqs{req, req, kNullOp, req});
    RunCase<Device, float, 4, 4>(stream, c, Reqs{req, req, req, kNullOp});
  }
}

// A strided 1x1 kernel: pointwise_gemm runs every pass on the gathered pixels (the data gradient spread
// back onto the input's grid); each layout, odd extents the stride does not divide, groups, padded rows
// and every req of every pass, forced and by the library's choice.
TE_DEVICE_TEST_CASE("convolution 1x1 strided: every pass on the gathered pixels", "[conv][algorithm]") {
  const std::vector<Case> cases = {
      MakeCase({2, 4, 7, 5}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 3, 1, true),
      MakeCase({3, 6, 9, 8}, {1, 1}, {3, 2}, {}, {}, 4, 2, false),
      MakeCase({2, 3, 10}, {1}, {4}, {}, {}, 5, 1, true),
      MakeCase({1, 4, 5, 6, 7}, {1, 1, 1}, {2, 1, 3}, {}, {}, 6, 2, true),
  };
  size_t i = 0;
  for (Case c : cases) {
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      c.param.layout = layout;
      c.padded_rows = i % 2 == 0;
      INFO("case " << i << " " << ops::LayoutName(layout));
      CHECK(ImplementsPass<Device, float>("pointwise_gemm", c, stream, ops::ConvPass::kBackwardWeight));
      CHECK(ImplementsPass<Device, float>("pointwise_gemm", c, stream, ops::ConvPass::kForward));
      CHECK(ImplementsPass<Device, float>("pointwise_gemm", c, stream, ops::ConvPass::kBackwardData));
      for (OpReqType req : {kWriteTo, kAddTo, kWriteInplace}) {
        Case forced = c;  // each pass alone and all together, pointwise_gemm forced
        forced.param.algorithm = "pointwise_gemm";
        for (const auto& [run, reqs] : {std::make_pair(c, Reqs{req, kAddTo, req, kWriteTo}),
                                         std::make_pair(forced, Reqs{req, kNullOp, kNullOp, kNullOp}),
                                         std::make_pair(forced, Reqs{kNullOp, req, kNullOp, kNullOp}),
                                         std::make_pair(forced, Reqs{kNullOp, kNullOp, req, kNullOp}),
                                         std::make_pair(forced, Reqs{req, req, req, req})}) {
          if (run.data.size() == 3) RunCase<Device, float, 3, 3>(stream, run, reqs);
          else if (run.data.size() == 4) RunCase<Device, float, 4, 4>(stream, run, reqs);
          else RunCase<Device, double, 5, 5>(stream, run, reqs);
        }
      }
      ++i;
    }
  }
}

// A 1x1 kernel whose outputs reach far into the end padding (stride 2^30, pad_end 2^31 on a one-pixel row):
// the later windows' coordinates do not fit 32 bits, so the column kernels must not form them there. The
// first output reads the pixel, the others padding alone; by the heuristic and by im2col_gemm, with padded
// rows and without. Then im2col_gemm on a 1x1 stride-2 kernel with each image's positions cut into
// chunks (a 104-byte cap: 8 of the 20 positions at a time), each chunk's col2im adding onto the last.
TE_DEVICE_TEST_CASE("convolution 1x1 col2im: outputs far into the end padding, positions in chunks",
                    "[conv][hostile]") {
  Case c = MakeCase({2, 3, 1}, {1}, {index_t(1) << 30}, {0}, {1}, 2, 1, true);
  c.param.pad_end = {index_t(1) << 31};
  c.ref_pe = {index_t(1) << 31};
  REQUIRE(ops::MakeConvGeometry(c.param, c.data).out[2] == 3);
  for (const std::string algorithm : {"", "im2col_gemm"}) {
    for (bool padded : {false, true}) {
      INFO("algorithm '" << algorithm << "', padded rows " << padded);
      c.param.algorithm = algorithm;
      c.padded_rows = padded;
      RunCase<Device, float, 3, 3>(stream, c, ReqPattern(2));
      RunCase<Device, float, 3, 3>(stream, c, Reqs{kAddTo, kAddTo, kAddTo, kAddTo});
    }
  }
  Case chunked = MakeCase({2, 3, 9, 8}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 4, 1, true);
  chunked.param.algorithm = "im2col_gemm";
  chunked.param.workspace = 1e-4;
  REQUIRE(ops::PlanIm2Col(ops::MakeConvGeometry(chunked.param, chunked.data), sizeof(float), 104).positions == 8);
  for (OpReqType req : {kWriteTo, kAddTo}) RunCase<Device, float, 4, 4>(stream, chunked, Reqs{req, req, req, req});
}

// A stride past 32 bits on a 3-tap kernel: one output window, whatever the stride. im2col_gemm's column
// kernels launch with 32-bit indices only where the stride fits them too (a stride of 2^32 read as an int
// is 0, and col2im divides by it); each layout, the stride 2^32 and 2^32 + 1.
TE_DEVICE_TEST_CASE("convolution with a stride past 32 bits: one window, im2col_gemm's column kernels",
                    "[conv][hostile]") {
  for (const index_t stride : {index_t(1) << 32, (index_t(1) << 32) + 1}) {
    Case c = MakeCase({2, 3, 10}, {3}, {stride}, {1}, {1}, 2, 1, true);
    REQUIRE(ops::MakeConvGeometry(c.param, c.data).out[2] == 1);
    c.param.algorithm = "im2col_gemm";
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      INFO("stride " << stride << " " << ops::LayoutName(layout));
      c.param.layout = layout;
      RunCase<Device, float, 3, 3>(stream, c, ReqPattern(2));
      RunCase<Device, float, 3, 3>(stream, c, Reqs{kAddTo, kAddTo, kAddTo, kAddTo});
    }
  }
}

// pointwise_gemm on channels-first data: on the GPU a batch of images narrower than a gemm tile runs
// channels last on staged copies (the workspace holds x and y), a wide image or a workspace too small for
// the copies per image; the CPU always per image. Each way: groups, every req of every pass, float and
// half.
TE_DEVICE_TEST_CASE("convolution pointwise_gemm channels first: staged for narrow images, per image otherwise",
                    "[conv][algorithm]") {
  struct Way {
    Case c;
    bool staged_on_gpu;
  };
  std::vector<Way> ways = {
      {MakeCase({3, 6, 5, 7}, {1, 1}, {1, 1}, {}, {}, 4, 2, true), true},     // 35 pixels
      {MakeCase({2, 5, 4, 6, 3}, {1, 1, 1}, {}, {}, {}, 7, 1, false), true},  // 3-D, 72 pixels
      {MakeCase({2, 4, 12, 11}, {1, 1}, {1, 1}, {}, {}, 6, 2, true), true},   // 132 pixels
      {MakeCase({2, 4, 16, 17}, {1, 1}, {1, 1}, {}, {}, 6, 2, true), false},  // 272 pixels: per image
      {MakeCase({3, 6, 5, 7}, {1, 1}, {1, 1}, {}, {}, 4, 2, true), false},    // below: no room to stage
  };
  ways.back().c.param.workspace = 1e-4;  // 104 bytes, below the 3 * 35 * (6 + 4) floats staging takes
  const bool on_gpu = std::is_same<Device, gpu>::value;
  for (size_t i = 0; i < ways.size(); ++i) {
    Case c = ways[i].c;
    c.param.algorithm = "pointwise_gemm";
    INFO("case " << i);
    const ops::ConvGeometry g = ops::MakeConvGeometry(c.param, c.data);
    const ops::ConvProblem pr = ops::MakeConvProblem<Device, float>(g, stream, true, c.param.workspace);
    const auto* pointwise = ops::ConvRegistry<Device, float>::Get().Find("pointwise_gemm");
    for (ops::ConvPass pass : {ops::ConvPass::kForward, ops::ConvPass::kBackwardData, ops::ConvPass::kBackwardWeight}) {
      const size_t x_elems = (g.N * g.OutSize() * g.C + 63) / 64 * 64;  // y starts 64 elements aligned
      const size_t staged = sizeof(float) * (x_elems + size_t(g.N * g.OutSize() * g.K));
      const size_t bytes = pointwise->WorkspaceBytes(pr, ops::ConvStores::Only(pass, ReqStore{true, false}));
      CHECK(bytes == (on_gpu && ways[i].staged_on_gpu ? staged : 0));
      CHECK(bytes <= ops::ConvolutionWorkspaceBytes(c.param, c.data, sizeof(float)));
    }
    std::vector<Reqs> reqs = {ReqPattern(2), ReqPattern(3), ReqPattern(4), ReqPattern(5)};  // mixed, kNullOp too
    for (OpReqType req : {kWriteTo, kWriteInplace, kAddTo}) reqs.push_back(Reqs{req, req, req, req});
    for (const Reqs& r : reqs) {
      if (c.data.size() == 4) {
        RunCase<Device, float, 4, 4>(stream, c, r);
        RunCase<Device, half_t, 4, 4>(stream, c, r);
      } else {
        RunCase<Device, float, 5, 5>(stream, c, r);
      }
    }
  }
  // A strided kernel: its gathered pixels (3 x 4 x 30, aligned to 64), then on the GPU their staged copies
  // (x 3 x 30 x 4 aligned, y 3 x 30 x 6), for every pass; only the gathered pixels where the limit leaves
  // no room for the copies.
  Case strided = MakeCase({3, 4, 9, 11}, {1, 1}, {2, 2}, {}, {}, 6, 2, true);  // 5 x 6 pixels read
  const auto* pointwise = ops::ConvRegistry<Device, float>::Get().Find("pointwise_gemm");
  const size_t gathered = sizeof(float) * 384, copies = sizeof(float) * (384 + 540);
  for (double cap_mb : {strided.param.workspace, double(gathered + 8) / 1048576.0}) {
    strided.param.workspace = cap_mb;
    INFO("strided, cap " << cap_mb << " MB");
    const ops::ConvGeometry g = ops::MakeConvGeometry(strided.param, strided.data);
    const ops::ConvProblem pr = ops::MakeConvProblem<Device, float>(g, stream, true, cap_mb);
    const bool room = cap_mb * 1048576.0 >= double(gathered + copies);
    const ReqStore write{true, false};
    for (ops::ConvPass pass : {ops::ConvPass::kForward, ops::ConvPass::kBackwardData, ops::ConvPass::kBackwardWeight}) {
      const size_t bytes = pointwise->WorkspaceBytes(pr, ops::ConvStores::Only(pass, write));
      CHECK(bytes == gathered + (on_gpu && room ? copies : 0));
      CHECK(bytes <= ops::ConvolutionWorkspaceBytes(strided.param, strided.data, sizeof(float)));
    }
    Case forced = strided;
    forced.param.algorithm = "pointwise_gemm";
    for (OpReqType req : {kWriteTo, kAddTo}) {
      RunCase<Device, float, 4, 4>(stream, forced, Reqs{req, req, req, req});
      RunCase<Device, half_t, 4, 4>(stream, forced, Reqs{req, req, req, req});
      RunCase<Device, float, 4, 4>(stream, strided, Reqs{req, req, req, req});
    }
  }
}

#if !defined(__CUDACC__)
// A border that is data runs on a dense padded copy without padding, where a padded 1x1 kernel is
// pointwise (stride 1) or strided: the bound counts what pointwise_gemm takes there on the GPU (staged
// copies of narrow images, gathered pixels), host arithmetic alone.
TEST_CASE("ConvolutionWorkspaceBytes bounds a padded 1x1 kernel run on its padded copy", "[cpu][conv]") {
  for (index_t stride : {1, 2}) {
    ConvolutionParam p;
    p.kernel = {1, 1};
    p.stride = {stride, stride};
    p.pad = {1, 1};
    p.num_filter = 64;
    const std::vector<index_t> data = {4, 4, 6, 6};
    ConvolutionParam copy = p;
    copy.pad.clear();
    const ops::ConvGeometry g = ops::MakeConvGeometry(copy, {4, 4, 8, 8});
    const size_t limit = ops::WorkspaceLimitBytes(p.workspace);
    const size_t on_copy = sizeof(float) * size_t(ops::pointwise::GpuWorkspaceElems(g, limit, sizeof(float)));
    INFO("stride " << stride);
    REQUIRE(on_copy > 0);
    for (PadMode mode : {PadMode::kConstant, PadMode::kEdge, PadMode::kReflect}) {
      p.pad_mode = mode;
      p.pad_value = mode == PadMode::kConstant ? std::optional<double>(1.0) : std::nullopt;
      INFO("pad_mode " << PadModeName(mode));
      CHECK(ops::ConvolutionWorkspaceBytes(p, data, sizeof(float)) >= on_copy);
    }
    // Zeros: no copy, the padded geometry's own bound (im2col's columns).
    p.pad_mode = PadMode::kConstant;
    p.pad_value.reset();
    const ops::ConvGeometry padded = ops::MakeConvGeometry(p, data);
    CHECK(ops::ConvolutionWorkspaceBytes(p, data, sizeof(float)) ==
          sizeof(float) * size_t(ops::PlanIm2Col(padded, sizeof(float), limit).col_elems));
  }
}
#endif

#if !defined(__CUDACC__)
// A strided 1x1 kernel's gathered pixels are not taken in pieces: where they exceed the limit, selection
// refuses pointwise_gemm and the bound is the fallback's (one column at least; found by conv_shapes_fuzz).
TEST_CASE("ConvolutionWorkspaceBytes keeps to the limit where a strided 1x1 kernel's gathered pixels exceed it",
          "[cpu][conv]") {
  ConvolutionParam p;
  p.kernel = {1};
  p.stride = {256};
  p.num_filter = 256;
  p.workspace = 0;
  CHECK(ops::ConvolutionWorkspaceBytes(p, {2, 256}, 1) == 2);  // one column: 2 channels x 1 tap
  p.kernel = {1, 1};
  p.stride = {2, 2};
  p.num_filter = 8;
  const std::vector<index_t> data = {4, 16, 20, 20};  // gathered: 4 x 16 x 100 floats, 25,600 bytes
  const size_t gathered = sizeof(float) * 6400;
  for (double cap : {0.0, 0.01, 1.0}) {
    p.workspace = cap;
    INFO("cap " << cap << " MB");
    const size_t limit = ops::WorkspaceLimitBytes(cap);
    const size_t column = sizeof(float) * size_t(ops::PlanIm2Col(ops::MakeConvGeometry(p, data), sizeof(float), limit).col_elems);
    const size_t bound = ops::ConvolutionWorkspaceBytes(p, data, sizeof(float));
    CHECK(bound <= std::max(limit, column));
    if (limit >= gathered) CHECK(bound >= gathered);
  }
}
#endif

// 16 filters on 8 channels, 3x3, stride 1, padding 1: winograd_2x2's transforms (16 points x 24 channels
// per 4 outputs) outgrow im2col_gemm's columns (72 per output), so ConvolutionWorkspaceBytes must count them.
Case WinogradOutgrowsColumnsCase() {
  return MakeCase({3, 8, 11, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 16, 1, true);
}

#if !defined(__CUDACC__)
// winograd_2x2's transforms (the GPU's choice for strict float 3x3 stride-1 layers) are in the bound, dense
// input or not (a forward on dense data beside a padded data gradient still takes them), where they fit
// the cap, with the weight gradient's columns beside them in a granule of their own (a GPU backward may
// run the two at once) where the two together fit it too; where only each alone fits (a cap of 60,000
// bytes: one image's transforms take 54,272, its columns 31,680), the bound is the larger, within the cap;
// where the transforms do not fit, selection refuses them and the bound is the columns'. The plans are the
// same arithmetic on either device, so the CPU registry's algorithms tell what the GPU's ask.
TEST_CASE("ConvolutionWorkspaceBytes counts winograd_2x2's transforms where they fit the cap", "[cpu][conv]") {
  const Case c = WinogradOutgrowsColumnsCase();
  const auto& registry = ops::ConvRegistry<cpu, float>::Get();
  const auto* winograd = registry.Find("winograd_2x2");
  int each_alone = 0;  // checks of the middle cap's rule (it must be reached)
  for (double cap_mb : {c.param.workspace, 60000.0 / 1048576.0, 0.05}) {
    ConvolutionParam p = c.param;
    p.workspace = cap_mb;
    const ops::ConvGeometry g = ops::MakeConvGeometry(p, c.data);
    const ops::ConvProblem pr = ops::MakeConvProblem<cpu, float>(g, nullptr, true, cap_mb);
    const size_t limit = ops::WorkspaceLimitBytes(cap_mb);
    const size_t column = sizeof(float) * size_t(ops::PlanIm2Col(g, sizeof(float), limit).col_elems);
    const size_t weight_columns = registry.Find("im2col_gemm")->WorkspaceBytes(
        pr, ops::ConvStores::Only(ops::ConvPass::kBackwardWeight, ReqStore{true, false}));
    REQUIRE(weight_columns > 0);
    for (bool dense : {true, false}) {
      INFO("cap " << cap_mb << " MB, dense input " << dense);
      const size_t bound = ops::ConvolutionWorkspaceBytes(p, c.data, sizeof(float), dense);
      for (ops::ConvPass pass : {ops::ConvPass::kForward, ops::ConvPass::kBackwardData}) {
        const size_t bytes = winograd->WorkspaceBytes(pr, ops::ConvStores::Only(pass, ReqStore{true, false}));
        REQUIRE(bytes > column);  // the transforms outgrow the columns: the bound has to count them
        CHECK(bound <= std::max(limit, column));
        if (InWorkspaceGranules(bytes) + weight_columns <= limit)
          CHECK(bound == InWorkspaceGranules(bytes) + weight_columns);  // both passes' the same
        else if (bytes <= limit && ++each_alone)
          CHECK(bound == std::max({bytes, column, weight_columns}));  // 60,000 bytes: each alone fits
        else
          CHECK(bound == column);  // 0.05 MB: one image's transforms, 54,272 bytes, do not fit
      }
    }
  }
  CHECK(each_alone == 4);  // both passes, dense input or not
}
#endif

// A 3-D convolution of depth 1 whose one output plane reads only the depth padding (pad 1, stride 3: out
// depth (1 + 2 - 1) / 3 + 1 = 1, reading input plane -1): every output is the bias, and every gradient of
// the data and weight zero. Every algorithm that takes it, forced, and the library's choice; the 2-D
// algorithms (Winograd's, CUTLASS's, the rows kernel) must not read it as a 2-D problem.
TE_DEVICE_TEST_CASE("convolution of depth 1 whose window reads only depth padding", "[conv][algorithm]") {
  Case c = MakeCase({2, 3, 1, 9, 8}, {1, 3, 3}, {3, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4, 1, true);
  for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
    c.param.layout = layout;
    for (const std::string& name : ops::ListConvAlgorithms<Device, float>()) {
      INFO("algorithm '" << name << "'");
      Case k = c;
      k.param.algorithm = name;
      Reqs reqs;
      if (OnlyImplementedPasses<Device, float>(name, k, stream, &reqs)) RunCase<Device, float, 5, 5>(stream, k, reqs);
    }
    RunCase<Device, float, 5, 5>(stream, c, Reqs{});
  }
}

#if !defined(__CUDACC__)
// An empty batch of huge images: winograd_2x2 sizes a chunk of one image even then, so its plan would
// multiply out past 64 bits (16 points x 2^20 + 1 channels x 2^40 tiles); it refuses the problem, and the
// workspace bound is the columns', within the cap (UBSan, in CI, checks that nothing wraps on the way).
TEST_CASE("ConvolutionWorkspaceBytes of an empty batch of huge images: winograd_2x2 refuses", "[cpu][conv]") {
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = index_t(1) << 20;
  const std::vector<index_t> data = {0, 1, 2, index_t(1) << 41};
  const ops::ConvProblem pr = ops::MakeConvProblem<cpu, float>(ops::MakeConvGeometry(p, data), nullptr, true, p.workspace);
  const ops::ConvSupport s = ops::ConvRegistry<cpu, float>::Get().Find("winograd_2x2")->CanImplement(
      pr, ops::ConvPass::kBackwardData);
  CHECK_FALSE(s.ok);
  CHECK(s.why.find("overflow") != std::string::npos);
  const size_t bytes = ops::ConvolutionWorkspaceBytes(p, data, sizeof(float));
  CHECK(bytes <= std::max<size_t>(ops::WorkspaceLimitBytes(p.workspace), sizeof(float) * 9));
}
#endif

#if !defined(__CUDACC__)
// The joined weight gradient's products stay within BLAS's 32-bit sizes however large the workspace limit:
// images x positions (the joined rows) and filters x images.
TEST_CASE("im2col_gemm joins no more images than 32-bit gemm sizes allow", "[cpu][conv]") {
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 8;
  const index_t N = index_t(1) << 40;
  const ops::ConvGeometry one_pixel = ops::MakeConvGeometry(p, {N, 64, 1, 1});  // 576 filter entries, 1 position
  p.num_filter = 2;
  const ops::ConvGeometry few_filters = ops::MakeConvGeometry(p, {N, 64, 4, 4});  // 16 positions
  for (const ops::ConvGeometry& g : {one_pixel, few_filters}) {
    const ops::Im2ColPlan plan = ops::PlanIm2Col(g, sizeof(float), size_t(1) << 62, true);
    INFO("filters " << g.K << ", positions " << g.OutSize());
    CHECK(plan.JoinsImages());
    CHECK(plan.images == index_t(INT_MAX) / std::max(g.K, g.OutSize()));
  }
}
#endif

// shifted_gemm (the weight gradient of a stride-1 convolution, one gemm per tap on a padded grid), forced:
// each layout, padding before and after, dilation, groups, 1-D to 3-D, padded rows, every req, float,
// double and 16-bit; it refuses other passes and strides.
TE_DEVICE_TEST_CASE("convolution shifted_gemm: the weight gradient, one product per tap", "[conv][algorithm]") {
  const std::vector<Case> cases = {
      MakeCase({2, 3, 7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 1, true),
      MakeCase({1, 4, 9, 8}, {3, 2}, {1, 1}, {2, 0}, {2, 3}, 6, 2, false),
      MakeCase({3, 2, 5, 5}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, 3, 1, true),
      MakeCase({2, 3, 11}, {3}, {1}, {0}, {2}, 5, 1, true),
      MakeCase({1, 4, 4, 5, 6}, {2, 3, 3}, {1, 1, 1}, {1, 1, 0}, {1, 2, 1}, 4, 2, true),
  };
  size_t i = 0;
  for (Case c : cases) {
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      c.param.layout = layout;
      c.param.algorithm = "shifted_gemm";
      c.padded_rows = i % 2 == 1;
      INFO("case " << i << " " << ops::LayoutName(layout));
      CHECK(ImplementsPass<Device, float>("shifted_gemm", c, stream, ops::ConvPass::kBackwardWeight));
      CHECK_FALSE(ImplementsPass<Device, float>("shifted_gemm", c, stream, ops::ConvPass::kForward));
      CHECK_FALSE(ImplementsPass<Device, float>("shifted_gemm", c, stream, ops::ConvPass::kBackwardData));
      const Reqs reqs{kNullOp, kNullOp, ReqPattern(i).weight == kNullOp ? kAddTo : ReqPattern(i).weight, kWriteTo};
      if (c.data.size() == 3) {
        RunCase<Device, float, 3, 3>(stream, c, reqs);
      } else if (c.data.size() == 4) {
        RunCase<Device, float, 4, 4>(stream, c, reqs);
        RunCase<Device, double, 4, 4>(stream, c, reqs);
        RunCase<Device, half_t, 4, 4>(stream, c, reqs);
      } else {
        RunCase<Device, double, 5, 5>(stream, c, reqs);
      }
      ++i;
    }
  }
  Case strided = MakeCase({2, 3, 7, 6}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, 4, 1, true);
  CHECK(!ImplementsPass<Device, float>("shifted_gemm", strided, stream, ops::ConvPass::kBackwardWeight));
}

#if !defined(__CUDACC__)
// The CPU runs a batch of at least as many images as threads image by image on each thread
// (ops/cpu/conv_per_image.h), and other batches in chunks whose gemms are tiled over the threads (the
// weight gradient's tiles each summing over the images): every thread count gives the reference result
// on either path. Sizes are above the serial cut-off.
TEST_CASE("convolution on the CPU matches the reference under any thread count", "[cpu][conv]") {
  Stream<cpu>* stream = nullptr;
  const int before = GetNumThreads();
  std::vector<Case> cases = {
      MakeCase({3, 4, 13, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, 1, true),
      MakeCase({5, 6, 12, 11}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, 12, 2, true),
      MakeCase({2, 16, 9, 9}, {1, 1}, {}, {}, {}, 24, 1, true),  // pointwise: gemm on the input
      MakeCase({8, 5, 12, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, 1, true),
      MakeCase({8, 6, 11, 9}, {5, 3}, {2, 1}, {2, 0}, {1, 2}, 9, 3, false),  // groups, no bias
  };
  cases[4].padded_rows = true;
  int per_image_runs = 0, chunked_runs = 0;
  for (int n : {1, 2, 3, 4, 7}) {
    SetNumThreads(n);
    INFO(n << " threads");
    for (size_t i = 0; i < cases.size(); ++i) {
      const ops::ConvGeometry geom = ops::MakeConvGeometry(cases[i].param, cases[i].data);
      const ops::Im2ColPlan chunked = ops::PlanIm2Col(geom, sizeof(float), size_t(cases[i].param.workspace * 1048576));
      const bool per_image = !geom.IsPointwise() && ops::PlanConvPerImage(geom, n, chunked.col_elems, true).use;
      // 8 images are dealt evenly enough to 4 threads, not to 7 (two rounds with six threads idle).
      if (i >= 3 && n == 4) CHECK(per_image);
      if (n == 7 || i == 2) CHECK_FALSE(per_image);
      (per_image ? per_image_runs : chunked_runs) += 1;
      for (size_t r = 0; r < 6; ++r) RunCase<cpu, float, 4, 4>(stream, cases[i], ReqPattern(i + r));
    }
  }
  CHECK(per_image_runs > 0);
  CHECK(chunked_runs > 0);
  SetNumThreads(before);
}

// The per-image path for 1-D and 3-D data and in double, against the reference.
TEST_CASE("convolution on the CPU per image in 1-D, 3-D and double", "[cpu][conv]") {
  Stream<cpu>* stream = nullptr;
  const int before = GetNumThreads();
  SetNumThreads(2);
  const Case c1 = MakeCase({4, 5, 40}, {5}, {2}, {2}, {1}, 6, 1, true);
  const Case c3 = MakeCase({4, 3, 6, 7, 8}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 2}, 4, 1, true);
  for (const Case* c : {&c1, &c3}) {
    const ops::ConvGeometry geom = ops::MakeConvGeometry(c->param, c->data);
    const ops::Im2ColPlan chunked = ops::PlanIm2Col(geom, sizeof(double), size_t(c->param.workspace * 1048576));
    REQUIRE(ops::PlanConvPerImage(geom, 2, chunked.col_elems, true).use);
  }
  for (size_t r = 0; r < 6; ++r) {
    RunCase<cpu, double, 3, 3>(stream, c1, ReqPattern(r));
    RunCase<cpu, double, 5, 5>(stream, c3, ReqPattern(r));
  }
  SetNumThreads(before);
}

// The per-image path's im2col and col2im through a padded box (ops/cpu/padded_image.h) against the
// generic loops (cpu/patch.h): the same columns to the bit, the same gradient to rounding (the box sums
// in another order), stored and added, with padded rows left alone; the transposed columns of the
// weight gradient, groups taps first; rows narrower than, as wide as and
// wider than an AVX2 vector (with and without a tail), strides, dilation, 3-D, padding past the kernel's
// reach and input rows no window reads; under both instruction sets.
TEST_CASE("convolution per image: the padded box's im2col and col2im match cpu/patch.h", "[cpu][conv]") {
  struct Window {
    index_t C, in[3], k[3], s[3], d[3], pb[3], pe[3];  // pad before / after
  };
  const std::vector<Window> windows = {
      {3, {1, 14, 14}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},   // the trainer's conv2
      {2, {1, 5, 7}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},     // rows of 7
      {2, {1, 6, 8}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},     // rows of 8
      {2, {1, 4, 16}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},    // 16
      {2, {1, 4, 17}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},    // 17: two vectors and a tail
      {2, {1, 9, 20}, {1, 3, 3}, {1, 1, 2}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},    // stride 2 along x
      {2, {1, 7, 19}, {1, 3, 3}, {1, 1, 1}, {1, 1, 2}, {0, 1, 3}, {0, 0, 1}},    // dilated along x
      {4, {4, 5, 9}, {3, 2, 3}, {2, 1, 1}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}},     // 3-D, 2 groups of 2
      {1, {1, 3, 9}, {1, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 4, 6}, {0, 0, 0}},     // padding past the reach
      {2, {1, 10, 12}, {1, 3, 3}, {1, 3, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},   // last row never read
  };
  for (const Window& wnd : windows) {
    PatchGeometry g;
    g.N = 2, g.C = wnd.C, g.G = wnd.C % 2 == 0 ? 2 : 1;
    for (int i = 0; i < 3; ++i) {
      g.in[i] = wnd.in[i], g.kernel[i] = wnd.k[i], g.stride[i] = wnd.s[i], g.dilate[i] = wnd.d[i], g.pad[i] = wnd.pb[i];
      g.out[i] = (wnd.in[i] + wnd.pb[i] + wnd.pe[i] - (wnd.k[i] - 1) * wnd.d[i] - 1) / wnd.s[i] + 1;
    }
    const index_t stride = g.in[2] + 3, P = g.OutSize(), n = 1;  // padded rows; image 1 of 2
    const PatchChunk image{n, 1, 0, P};
    TensorContainer<cpu, 2, float> data(Shape2(g.N * g.C * g.in[0] * g.in[1], stride));
    TensorContainer<cpu, 2, float> col(Shape2(g.ColRows(), P)), want_col(Shape2(g.ColRows(), P));
    TensorContainer<cpu, 2, float> grad(data.shape_), want_grad(data.shape_);
    std::vector<float> padded(static_cast<size_t>(g.C * ops::PaddedBox(g).ChannelElems()));
    FillRandom(data);
    Im2Col(static_cast<Stream<cpu>*>(nullptr), g, image, data.dptr_, stride, want_col.dptr_);
    for (cpu_isa::Isa isa : {cpu_isa::Isa::kAvx2, cpu_isa::Isa::kBaseline}) {
      const cpu_isa::ScopedIsaLimit limit(isa);
      INFO("input " << g.in[0] << "x" << g.in[1] << "x" << g.in[2] << ", isa " << static_cast<int>(isa));
      const ops::PaddedBox box(g);
      Poison(col);
      ops::PadImage(g, box, n, data.dptr_, stride, padded.data());
      ops::PaddedIm2Col(g, box, padded.data(), col.dptr_);
      CHECK(ToVec(col) == ToVec(want_col));
      // Transposed, from the channels-last box: (P, C kk), each group's columns taps first.
      TensorContainer<cpu, 2, float> colT(Shape2(P, g.ColRows()));
      Poison(colT);
      ops::PadImageChannelsLast(g, box, n, data.dptr_, stride, padded.data());
      ops::PaddedIm2ColT(g, box, padded.data(), colT.dptr_);
      index_t moved = 0;
      for (index_t r = 0; r < g.ColRows(); ++r)  // r: (group, channel of the group, tap)
        for (index_t p = 0; p < P; ++p) {
          const index_t group = r / (g.Cg() * g.KernelSize()), e = r % (g.Cg() * g.KernelSize());
          moved += colT[p][group * g.Cg() * g.KernelSize() + ops::TapMajorIndex(g, e)] == want_col[r][p];
        }
      CHECK(moved == g.ColRows() * P);
      for (bool accumulate : {false, true}) {
        FillRandom(col);
        FillRandom(grad);
        Copy(want_grad, grad);
        Col2Im(static_cast<Stream<cpu>*>(nullptr), g, image, col.dptr_, want_grad.dptr_, stride, accumulate);
        ops::PaddedCol2Im(g, box, col.dptr_, padded.data());
        ops::UnpadImage(g, box, padded.data(), n, grad.dptr_, stride, accumulate);
        CheckVec(grad, ToVec(want_grad), 1e-5, accumulate ? "col2im, added" : "col2im, stored");
      }
    }
  }
}

// cpu_direct, forced: rows wider than a register tile with a tail, filter blocks with a partial last one,
// one filter, dilation along x, groups, 1-D to 3-D; the stacked form (fewer than 4 output channels: the
// one-filter forward, the data gradients of 1 and 2 channels, with dilation along y and a partial last
// block of rows); under both instruction sets and several thread counts.
// The weight gradient is summed in fixed chunks, so it is the same to the bit under any thread count.
TEST_CASE("convolution cpu_direct: tiles, tails, filter blocks, both instruction sets, any thread count",
          "[cpu][conv][algorithm]") {
  Stream<cpu>* stream = nullptr;
  const int before = GetNumThreads();
  std::vector<Case> cases = {
      MakeCase({2, 1, 9, 70}, {3, 5}, {1, 1}, {1, 2}, {1, 2}, 13, 1, true),          // 6 + 6 + 1 filters
      MakeCase({1, 2, 5, 6, 37}, {3, 3, 3}, {1, 1, 1}, {1, 0, 2}, {1, 2, 1}, 3, 1, false),
      MakeCase({3, 4, 50}, {7}, {1}, {3}, {1}, 8, 2, true),                           // groups of 2 channels
      MakeCase({2, 3, 8, 33}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, 1, 1, true),              // one filter
      MakeCase({1, 1, 4, 4, 300}, {2, 2, 7}, {1, 1, 1}, {0, 1, 3}, {1, 1, 1}, 5, 1, true),
      // More work items than the 64 chunks (chunks of several rows, an uneven deal, a panel reused).
      MakeCase({3, 2, 90, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 5, 1, true),
      // Padding past the kernel's reach and the input's width (the data gradient's origin is positive).
      MakeCase({2, 1, 6, 5}, {3, 3}, {1, 1}, {4, 6}, {1, 1}, 3, 1, false),
  };
  using Isa = cpu_isa::Isa;
  for (Case& c : cases) c.param.algorithm = "cpu_direct";
  for (Isa isa : {Isa::kAvx2, Isa::kBaseline}) {
    const cpu_isa::ScopedIsaLimit limit(isa);
    for (int n : {1, 2, 5}) {
      SetNumThreads(n);
      INFO(n << " threads, isa " << static_cast<int>(isa));
      for (size_t i = 0; i < cases.size(); ++i)
        for (size_t r = 0; r < 3; ++r) {
          if (cases[i].data.size() == 5) RunCase<cpu, float, 5, 5>(stream, cases[i], ReqPattern(i + r));
          if (cases[i].data.size() == 4 && i % 2 == 0) RunCase<cpu, double, 4, 4>(stream, cases[i], ReqPattern(i + r));
          if (cases[i].data.size() == 4 && i % 2 == 1) RunCase<cpu, float, 4, 4>(stream, cases[i], ReqPattern(i + r));
          if (cases[i].data.size() == 3) RunCase<cpu, float, 3, 3>(stream, cases[i], ReqPattern(i + r));
        }
    }
  }
  // The weight gradient, bit for bit, under 1 and 3 threads (270 rows in 64 chunks).
  ConvolutionParam p = cases[5].param;
  const Shape<4> xs = ToShape<4>(cases[5].data);
  const auto shapes = ops::InferConvShapes(p, cases[5].data);
  TensorContainer<cpu, 4, float> x(xs), dy(ToShape<4>(shapes.out)), w(ToShape<4>(shapes.weight)), dx(xs);
  TensorContainer<cpu, 1, float> db(Shape1(5));
  FillRandom(x.view());
  FillRandom(dy.view());
  FillRandom(w.view());
  std::vector<std::vector<float>> grads;
  for (int n : {1, 3}) {
    SetNumThreads(n);
    TensorContainer<cpu, 4, float> dw(ToShape<4>(shapes.weight));
    ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kNullOp, dx.view(), kWriteTo, dw.view(), kWriteTo,
                             db.view());
    grads.emplace_back(dw.dptr_, dw.dptr_ + dw.shape_.Size());
  }
  CHECK(grads[0] == grads[1]);
  SetNumThreads(before);
}

// A dilation near 2^62 (the output still 100 wide) would wrap cpu_direct's panel sizes: it refuses, and
// the algorithms that take the problem compute it.
TEST_CASE("convolution cpu_direct refuses sizes that would overflow", "[cpu][conv][algorithm][hostile]") {
  ConvolutionParam p;
  const index_t d = (index_t(1) << 62) - 182;
  p.kernel = {2};
  p.dilate = {d};
  p.pad = {d / 2};
  p.pad_end = {d / 2 + 99};
  p.num_filter = 1;
  p.no_bias = true;
  const std::vector<index_t> dshape = {1, 4, 1};
  const ops::ConvGeometry g = ops::MakeConvGeometry(p, dshape);
  REQUIRE(g.out[2] == 100);
  const ops::ConvProblem pr = ops::MakeConvProblem<cpu, float>(g, nullptr, true, p.workspace);
  const auto* direct = ops::ConvRegistry<cpu, float>::Get().Find("cpu_direct");
  REQUIRE(direct != nullptr);
  CHECK_FALSE(direct->CanImplement(pr, ops::ConvPass::kForward).ok);
  CHECK_FALSE(direct->Recommended(pr, ops::ConvPass::kForward));
  // What runs instead reads no input (every tap lands 2^61 outside the one-wide row) and forms no pointer
  // that far out (UBSan, in CI, checks the pointer arithmetic): zeros, by the heuristic and by im2col_gemm.
  for (const std::string algorithm : {"", "im2col_gemm"}) {
    INFO("algorithm '" << algorithm << "'");
    p.algorithm = algorithm;
    TensorContainer<cpu, 3, float> x(Shape3(1, 4, 1), 1.0f), w(Shape3(1, 4, 2), 1.0f), y(Shape3(1, 1, 100), 5.0f);
    TensorContainer<cpu, 3, float> dy(Shape3(1, 1, 100), 1.0f), dx(x.shape_, 3.0f), dw(w.shape_, 3.0f);
    TensorContainer<cpu, 1, float> b;
    ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view());
    ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp,
                             b.view());
    for (index_t i = 0; i < 100; ++i) CHECK(y.dptr_[i] == 0.0f);
    for (index_t i = 0; i < 4; ++i) CHECK(dx.dptr_[i] == 0.0f);
    for (index_t i = 0; i < 8; ++i) CHECK(dw.dptr_[i] == 0.0f);
  }
}

// An input of height 0 with padding: the output has rows, the data gradient none (an empty pass).
TEST_CASE("convolution cpu_direct with an empty input extent", "[cpu][conv][algorithm][hostile]") {
  for (const std::string algorithm : {"", "cpu_direct"}) {
    INFO("algorithm '" << algorithm << "'");
    ConvolutionParam p;
    p.kernel = {3, 3};
    p.pad = {2, 2};
    p.num_filter = 8;
    p.no_bias = true;
    p.algorithm = algorithm;
    TensorContainer<cpu, 4, float> x(Shape4(1, 1, 0, 64)), dx(Shape4(1, 1, 0, 64)), w(Shape4(8, 1, 3, 3), 1.0f);
    TensorContainer<cpu, 4, float> y(Shape4(1, 8, 2, 66), -1.0f), dy(Shape4(1, 8, 2, 66), 1.0f), dw(Shape4(8, 1, 3, 3), -1.0f);
    TensorContainer<cpu, 1, float> b;
    ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view());
    ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp, b.view());
    for (index_t i = 0; i < y.shape_.Size(); ++i) CHECK(y.dptr_[i] == 0.0f);
    for (index_t i = 0; i < dw.shape_.Size(); ++i) CHECK(dw.dptr_[i] == 0.0f);
  }
}

// An infinite input reaches only the outputs whose window holds it, as in im2col_gemm: cpu_direct's stacked
// rows (fewer than 4 output channels) skip the rows a window does not read instead of multiplying them by
// zero, and its weight gradient reads no input past the row. The heuristic picks cpu_direct here, within
// ConvolutionWorkspaceBytes for the backward's passes together.
TEST_CASE("convolution cpu_direct: an infinite input stays in its windows; the heuristic's choice and workspace",
          "[cpu][conv][algorithm][nan]") {
  Stream<cpu>* stream = nullptr;
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.num_filter = 1;
  p.no_bias = true;
  const std::vector<index_t> dshape = {1, 1, 70, 69};  // rows of 67 outputs: whole vectors and a tail
  const auto shapes = ops::InferConvShapes(p, dshape);
  TensorContainer<cpu, 4, float> x(ToShape<4>(dshape)), w(ToShape<4>(shapes.weight)), dy(ToShape<4>(shapes.out));
  TensorContainer<cpu, 1, float> b;
  FillRandom(x.view());
  FillRandom(w.view());
  FillRandom(dy.view());
  x[0][0][40][68] = std::numeric_limits<float>::infinity();  // the last column: only the weight gradient's tail reads it past the row
  x[0][0][5][3] = std::numeric_limits<float>::infinity();
  dy[0][0][30][10] = std::numeric_limits<float>::infinity();
  auto run = [&](const std::string& algorithm, TensorContainer<cpu, 4, float>* y, TensorContainer<cpu, 4, float>* dx,
                 TensorContainer<cpu, 4, float>* dw) {
    ConvolutionParam q = p;
    q.algorithm = algorithm;
    y->Resize(ToShape<4>(shapes.out)), dx->Resize(x.shape_), dw->Resize(w.shape_);
    ops::ConvolutionForward(q, x.view(), w.view(), b.view(), kWriteTo, y->view());
    ops::ConvolutionBackward(q, dy.view(), x.view(), w.view(), kWriteTo, dx->view(), kWriteTo, dw->view(), kNullOp,
                             b.view());
  };
  TensorContainer<cpu, 4, float> y1, dx1, dw1, y2, dx2, dw2;
  run("cpu_direct", &y1, &dx1, &dw1);
  run("im2col_gemm", &y2, &dx2, &dw2);
  auto same_pattern = [](const TensorContainer<cpu, 4, float>& a, const TensorContainer<cpu, 4, float>& r,
                         const char* what) { return SameFinitePattern(a, r, what, 1e-4); };
  CHECK(same_pattern(y1, y2, "forward") == 3 + 9);  // (40, 68) is in 3 windows, (5, 3) in 9
  CHECK(same_pattern(dx1, dx2, "data gradient") == 9);
  // The weight gradient with the last column's infinity alone: only the 3 taps of the kernel's last column read it.
  FillRandom(dy.view());
  x[0][0][5][3] = 0.5f;
  run("cpu_direct", &y1, &dx1, &dw1);
  run("im2col_gemm", &y2, &dx2, &dw2);
  CHECK(same_pattern(dw1, dw2, "weight gradient") == 3);
  // Chosen by the heuristic for every pass, within the bound the operator reports.
  std::vector<std::string> log;
  ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
  ops::ReleaseConvCaches<cpu>();
  TensorContainer<cpu, 4, float> y3(ToShape<4>(shapes.out)), dx3(x.shape_), dw3(w.shape_);
  ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y3.view());
  ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx3.view(), kWriteTo, dw3.view(), kNullOp,
                           b.view());
  ops::SetConvLog(nullptr);
  REQUIRE(log.size() == 3);
  for (const std::string& line : log) CHECK(line.find("-> cpu_direct (heuristic)") != std::string::npos);
  CHECK(ops::WorkspaceBytesHeld<cpu>(stream) <= ops::ConvolutionWorkspaceBytes(p, dshape, sizeof(float)));
}
#endif

#if defined(__CUDACC__)
// gpu_direct, forced: filter blocks of 8, 4, 2 and 1 with a partial last one, taps along x of 1 to 7,
// tiles along x and y with tails, dilation along x (phases) and y, padding past the kernel's reach (the
// data gradient's origin is positive), groups, 1-D to 3-D (the 7x7x7 of the imaging study), and more
// weight-gradient tiles than its 1024 chunks (an uneven deal); float, half and bf16. The tuner's register
// tiles (gpu_direct_8x16, gpu_direct_4x8: forward and data gradient) on the same cases, in float.
TEST_CASE("convolution gpu_direct: filter blocks, tiles, tails, phases, 1-D to 3-D", "[gpu][conv][algorithm]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = nullptr;
  std::vector<Case> cases = {
      MakeCase({2, 1, 37, 150}, {3, 5}, {1, 1}, {1, 2}, {1, 2}, 13, 1, true),           // 8 + 5 filters, 2 phases
      MakeCase({1, 1, 9, 20, 70}, {7, 7, 7}, {1, 1, 1}, {3, 3, 3}, {1, 1, 1}, 8, 1, false),
      MakeCase({2, 4, 50}, {7}, {1}, {3}, {1}, 8, 2, true),                               // groups of 2 channels
      MakeCase({2, 3, 8, 33}, {5, 1}, {1, 1}, {2, 0}, {1, 1}, 2, 1, true),                // one tap along x
      MakeCase({1, 2, 20, 90}, {3, 3}, {1, 1}, {2, 3}, {2, 3}, 3, 1, true),               // 3 phases, dilated rows
      MakeCase({2, 1, 6, 5}, {3, 3}, {1, 1}, {4, 6}, {1, 1}, 3, 1, false),                // padding past the input
      MakeCase({1100, 1, 10}, {5}, {1}, {2}, {1}, 3, 1, true),                            // 1100 tiles, 1024 chunks
      MakeCase({2, 2, 5, 6, 37}, {3, 3, 3}, {1, 1, 1}, {1, 0, 2}, {1, 2, 1}, 5, 1, false),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    c.param.algorithm = "gpu_direct";
    for (size_t r = 0; r < 3; ++r) {
      if (c.data.size() == 3) RunCase<gpu, float, 3, 3>(stream, c, ReqPattern(i + r));
      if (c.data.size() == 4) RunCase<gpu, float, 4, 4>(stream, c, ReqPattern(i + r));
      if (c.data.size() == 5) RunCase<gpu, float, 5, 5>(stream, c, ReqPattern(i + r));
    }
    if (c.data.size() == 4) {
      RunCase<gpu, half_t, 4, 4>(stream, c, ReqPattern(i + 1));
      RunCase<gpu, bf16_t, 4, 4>(stream, c, ReqPattern(i + 2));
    }
    for (const char* tile : {"gpu_direct_8x16", "gpu_direct_4x8"}) {
      Case v = c;
      v.param.algorithm = tile;
      Reqs reqs = ReqPattern(i);
      reqs.weight = kNullOp;  // the weight gradient is gpu_direct's (the tile refuses it)
      REQUIRE_FALSE(ImplementsPass<gpu, float>(tile, v, stream, ops::ConvPass::kBackwardWeight));
      if (v.data.size() == 3) RunCase<gpu, float, 3, 3>(stream, v, reqs);
      if (v.data.size() == 4) RunCase<gpu, float, 4, 4>(stream, v, reqs);
      if (v.data.size() == 5) RunCase<gpu, float, 5, 5>(stream, v, reqs);
    }
  }
}

// The one-channel volume of the imaging study, small: the heuristic takes gpu_direct for every pass; its
// weight gradient is summed in a fixed order (the same bits on every run); an infinite input reaches only
// the outputs whose window holds it, as with im2col_gemm.
TEST_CASE("convolution gpu_direct: the heuristic's choice, a deterministic weight gradient, infinities",
          "[gpu][conv][algorithm][nan]") {
  TE_REQUIRE_GPU();
  ConvolutionParam p;
  p.kernel = {7, 7, 7};
  p.num_filter = 8;
  p.no_bias = true;
  const std::vector<index_t> dshape = {2, 1, 12, 30, 75};
  const auto shapes = ops::InferConvShapes(p, dshape);
  TensorContainer<cpu, 5, float> xh(ToShape<5>(dshape)), wh(ToShape<5>(shapes.weight)), dyh(ToShape<5>(shapes.out));
  FillRandom(xh.view());
  FillRandom(wh.view());
  FillRandom(dyh.view());
  xh[1][0][6][20][74] = std::numeric_limits<float>::infinity();  // the row's last column
  TensorContainer<gpu, 5, float> x(xh.shape_), w(wh.shape_), dy(dyh.shape_);
  Copy(x.view(), xh.view()), Copy(w.view(), wh.view()), Copy(dy.view(), dyh.view());
  TensorContainer<gpu, 1, float> b;
  struct Result {
    TensorContainer<cpu, 5, float> y, dx, dw;
  };
  auto run = [&](const std::string& algorithm) {
    ConvolutionParam q = p;
    q.algorithm = algorithm;
    TensorContainer<gpu, 5, float> y(ToShape<5>(shapes.out)), dx(x.shape_), dw(w.shape_);
    ops::ConvolutionForward(q, x.view(), w.view(), b.view(), kWriteTo, y.view());
    ops::ConvolutionBackward(q, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp,
                             b.view());
    return Result{ToHost(y.view()), ToHost(dx.view()), ToHost(dw.view())};
  };
  std::vector<std::string> log;
  ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
  ops::ReleaseConvCaches<gpu>();
  const Result chosen = run(""), again = run(""), reference = run("im2col_gemm");
  ops::SetConvLog(nullptr);
  REQUIRE(log.size() >= 3);
  for (size_t i = 0; i < 3; ++i) CHECK(log[i].find("-> gpu_direct (heuristic)") != std::string::npos);
  auto same_pattern = [](const TensorContainer<cpu, 5, float>& a, const TensorContainer<cpu, 5, float>& r,
                         const char* what) { return SameFinitePattern(a, r, what, 1e-3); };
  // (z, y, x) = (6, 20, 74) is in 6 x 7 x 1 windows of the 6 x 24 x 69 output (x = 74 only in the last).
  CHECK(same_pattern(chosen.y, reference.y, "forward") == 8 * 6 * 7);
  CHECK(same_pattern(chosen.dx, reference.dx, "data gradient") == 0);
  // Read by the taps (tz >= 1, any ty, tx = 6) of every filter.
  CHECK(same_pattern(chosen.dw, reference.dw, "weight gradient") == 8 * 6 * 7);
  for (index_t i = 0; i < chosen.dw.shape_.Size(); ++i) CHECK(chosen.dw.dptr_[i] == again.dw.dptr_[i]);
}
#endif

#if defined(__CUDACC__)
// The selection log's lines while it lives (the log is reset when it ends, whatever happens in between).
struct ScopedConvLog {
  std::vector<std::string> lines;
  ScopedConvLog() { ops::SetConvLog([this](const std::string& l) { lines.push_back(l); }); }
  ~ScopedConvLog() { ops::SetConvLog(nullptr); }
};
// The one line of a selection log that names `pass` ("weight-grad", "forward float32", ...): its choice;
// required to be there.
std::string PassLine(const std::vector<std::string>& lines, const std::string& pass) {
  const auto line =
      std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(pass) != std::string::npos; });
  REQUIRE(line != lines.end());
  return *line;
}
// The problem key of a choice line of the log ("tensorexpr conv: <key>\n  ...").
std::string ChoiceKey(const std::string& line) {
  const std::string prefix = "tensorexpr conv: ";
  REQUIRE(line.rfind(prefix, 0) == 0);
  return line.substr(prefix.size(), line.find('\n') - prefix.size());
}
// Loads a tuned cache of one entry that gives the problem and pass of `key` to `algorithm` (the file is
// removed before anything is checked).
void LoadTunedChoice(const std::string& key, const std::string& algorithm) {
  const std::string path = "/tmp/tensorexpr_tuned_choice_" + std::to_string(::getpid());
  std::ofstream(path) << "tensorexpr conv cache 1\n" << key << "\t" << algorithm << "\n";
  const size_t loaded = ops::LoadConvCache(path);
  std::remove(path.c_str());
  REQUIRE(loaded == 1);
}
#endif

#if defined(__CUDACC__)
// Strict float's 3x3 stride-1 layers on the GPU, either layout: the heuristic takes winograd_2x2 for every
// pass (not under TF32 for these 8 channels, nor for 4 channels: gpu_direct's channels first, im2col_gemm's
// channels last); ConvolutionWorkspaceBytes counts its transforms. A tuned cache that gives the weight
// gradient to im2col_gemm instead runs it on the side stream beside the data gradient, the two workspaces
// together within the bound. The results match the float64 reference for every req.
TEST_CASE("convolution: the GPU heuristic takes winograd_2x2 for strict float 3x3 stride-1 layers", "[gpu][conv][winograd]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  const Case c = WinogradOutgrowsColumnsCase();
  const size_t bound = ops::ConvolutionWorkspaceBytes(c.param, c.data, sizeof(float));
  const ops::ConvProblem pr = ProblemOf<gpu, float>(c, stream);
  const auto& registry = ops::ConvRegistry<gpu, float>::Get();
  const ops::ConvStores weight_grad = ops::ConvStores::Only(ops::ConvPass::kBackwardWeight, ReqStore{true, false});
  const size_t columns = registry.Find("im2col_gemm")->WorkspaceBytes(pr, weight_grad);
  for (ops::ConvPass pass : {ops::ConvPass::kForward, ops::ConvPass::kBackwardData}) {
    const size_t transforms = registry.Find("winograd_2x2")->WorkspaceBytes(pr, ops::ConvStores::Only(pass, ReqStore{true, false}));
    CHECK(transforms > columns);
    CHECK(bound == InWorkspaceGranules(transforms) + columns);
  }
  auto chosen = [&](const Case& k, bool tf32) {
    std::vector<std::string> log;
    ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
    ops::ReleaseConvCaches<gpu>();
    ReleaseWorkspace(stream);
    stream->ReleaseSide();
    stream->set_tf32(tf32);
    Case run = k;
    if (tf32) run.tol_scale = kTF32TolScale;
    RunCase<gpu, float, 4, 4>(stream, run, Reqs{});
    stream->set_tf32(false);
    ops::SetConvLog(nullptr);
    return log;
  };
  const std::vector<std::string> strict = chosen(c, false);
  REQUIRE(strict.size() == 3);
  // From a released workspace, the three passes held no more than the bound (in the workspace's
  // granules): no pass asked for more than ConvolutionWorkspaceBytes said.
  CHECK(WorkspaceBytesHeld(stream) <= InWorkspaceGranules(bound));
  // The weight gradient on im2col_gemm, from a tuned cache (the line's key): it ran on the side stream with
  // its columns, the data gradient's transforms beside it, together within the bound.
  {
    ops::ReleaseConvCaches<gpu>();
    ReleaseWorkspace(stream);
    stream->ReleaseSide();
    LoadTunedChoice(ChoiceKey(PassLine(strict, "weight-grad")), "im2col_gemm");
    ScopedConvLog log;
    RunCase<gpu, float, 4, 4>(stream, c, Reqs{});
    CHECK(PassLine(log.lines, "data-grad float32").find("-> winograd_2x2 (heuristic)") != std::string::npos);
    CHECK(std::none_of(log.lines.begin(), log.lines.end(),
                       [](const std::string& l) { return l.find("weight-grad") != std::string::npos; }));
    CHECK(WorkspaceBytesHeld(stream) <= InWorkspaceGranules(bound));
    CHECK(stream->side() != nullptr);
    CHECK(WorkspaceBytesHeld(stream->side()) == InWorkspaceGranules(columns));
    for (size_t r = 0; r < 4; ++r) RunCase<gpu, float, 4, 4>(stream, c, ReqPattern(r));
  }
  Case last = c;  // channels last, the same
  last.param.layout = ops::Layout::kNHWC;
  const size_t bound_last = ops::ConvolutionWorkspaceBytes(last.param, ChannelsLastShape(last.data, last.batched), sizeof(float));
  const std::vector<std::string> strict_last = chosen(last, false);
  REQUIRE(strict_last.size() == 3);
  CHECK(WorkspaceBytesHeld(stream) <= InWorkspaceGranules(bound_last));
  for (const std::vector<std::string>* log : {&strict, &strict_last})
    for (const char* pass : {"forward float32", "data-grad float32", "weight-grad float32"})
      CHECK(PassLine(*log, pass).find("-> winograd_2x2 (heuristic)") != std::string::npos);
  for (const Case& k : {c, last}) {
    const std::vector<std::string> tf32 = chosen(k, true);
    REQUIRE(tf32.size() == 3);
    for (const std::string& line : tf32) CHECK(line.find("-> winograd") == std::string::npos);
  }
  Case few = c;  // gpu_direct's (registered before it): 4 channels, 16 filters, partials of 3 chunks
  few.data[1] = 4;
  const std::vector<std::string> direct = chosen(few, false);
  CHECK(direct.size() == 3);
  for (const std::string& line : direct) CHECK(line.find("-> gpu_direct (heuristic)") != std::string::npos);
  Case few_last = few;  // channels last, which gpu_direct refuses: not Winograd either
  few_last.param.layout = ops::Layout::kNHWC;
  const std::vector<std::string> few_last_log = chosen(few_last, false);
  CHECK(few_last_log.size() == 3);
  for (const std::string& line : few_last_log) CHECK(line.find("-> winograd") == std::string::npos);
  ops::ReleaseConvCaches<gpu>();
  for (size_t r = 0; r < 4; ++r) RunCase<gpu, float, 4, 4>(stream, c, ReqPattern(r));
  for (size_t r = 0; r < 4; ++r) RunCase<gpu, float, 4, 4>(stream, last, ReqPattern(r));
  DeleteStream(stream);
}

// Under TF32 the GPU heuristic takes winograd_2x2 only where CUTLASS's implicit GEMM has few output tiles:
// channels first, outputs of at most 14 x 14, 128 channels and filters or more. There it takes every pass,
// which match float64 within TF32's tolerance for every req (but the weight gradient of large filters over a
// short reduction: the test of those, below); one more row and column of output, channels last, or 64
// channels leave Winograd.
TEST_CASE("convolution: under TF32 the GPU heuristic takes winograd_2x2 for deep 3x3 layers of small planes", "[gpu][conv][winograd]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  stream->set_tf32(true);
  Case deep = MakeCase({2, 128, 14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 128, 1, true);
  deep.tol_scale = kTF32TolScale;
  auto lines_of = [&](const Case& k, const Reqs& reqs) {
    ScopedConvLog log;
    ops::ReleaseConvCaches<gpu>();
    RunCase<gpu, float, 4, 4>(stream, k, reqs);
    return log.lines;
  };
  const std::vector<std::string> chosen = lines_of(deep, Reqs{});
  for (const char* pass : {"forward float32", "data-grad float32", "weight-grad float32"})
    CHECK(PassLine(chosen, pass).find("-> winograd_2x2 (heuristic)") != std::string::npos);
  for (size_t r = 1; r < 4; ++r) RunCase<gpu, float, 4, 4>(stream, deep, ReqPattern(r));
  Case larger = deep, last = deep, shallow = deep;
  larger.data[2] = larger.data[3] = 15;
  last.param.layout = ops::Layout::kNHWC;
  shallow.data[1] = 64;
  for (const Case* k : {&larger, &last, &shallow}) {
    const std::vector<std::string> lines = lines_of(*k, Reqs{});
    CHECK(lines.size() == 3);
    for (const std::string& line : lines) CHECK(line.find("-> winograd") == std::string::npos);
  }
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// winograd_4x4's error under TF32 is about 30 times direct TF32's (bench/winograd_tf32_error.py): it refuses
// TF32 problems and says why, so neither the heuristic nor the tuner takes it there.
TEST_CASE("convolution: winograd_4x4 refuses TF32 problems", "[gpu][conv][winograd]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  stream->set_tf32(true);
  const Case deep = MakeCase({2, 128, 14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 128, 1, true);
  const ops::ConvSupport four = ops::ConvRegistry<gpu, float>::Get().Find("winograd_4x4")->CanImplement(
      ProblemOf<gpu, float>(deep, stream), ops::ConvPass::kForward);
  CHECK_FALSE(four.ok);
  CHECK(four.why.find("TF32") != std::string::npos);
  DeleteStream(stream);
}

// A forward's transforms that outgrow the data gradient's (no padding: the forward's tiles cover the
// output, the data gradient's the larger input) stay in the stream's workspace. A tuned im2col_gemm weight
// gradient beside winograd_2x2's data gradient would hold them there and its columns on the side stream,
// past the bound, so the backward runs the two in turn. (NCHW, N = 2, 8 -> 64 channels at 14 x 14, a cap
// of 385,838 bytes.)
TEST_CASE("convolution: an overlapped backward counts the workspace the stream already holds", "[gpu][conv][winograd]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  Case c = MakeCase({2, 8, 14, 14}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 64, 1, true);
  c.param.workspace = 385838.0 / 1048576.0;
  const ops::ConvProblem pr = ProblemOf<gpu, float>(c, stream);
  const auto& registry = ops::ConvRegistry<gpu, float>::Get();
  auto bytes = [&](const char* name, ops::ConvPass pass) {
    return registry.Find(name)->WorkspaceBytes(pr, ops::ConvStores::Only(pass, ReqStore{true, false}));
  };
  const size_t forward = bytes("winograd_2x2", ops::ConvPass::kForward),
               data = bytes("winograd_2x2", ops::ConvPass::kBackwardData),
               columns = bytes("im2col_gemm", ops::ConvPass::kBackwardWeight);
  const size_t bound = ops::ConvolutionWorkspaceBytes(c.param, c.data, sizeof(float));
  INFO("forward " << forward << " data " << data << " columns " << columns << " bound " << bound);
  // The premise: the pair alone fits the bound; the forward's transforms with the columns do not.
  REQUIRE(forward > data);
  REQUIRE(InWorkspaceGranules(data) + columns <= bound);
  REQUIRE(InWorkspaceGranules(forward) + columns > bound);
  std::string key;
  {
    ScopedConvLog log;
    ops::ReleaseConvCaches<gpu>();
    RunCase<gpu, float, 4, 4>(stream, c, Reqs{});
    key = ChoiceKey(PassLine(log.lines, "weight-grad"));
  }
  ops::ReleaseConvCaches<gpu>();
  ReleaseWorkspace(stream);
  stream->ReleaseSide();
  LoadTunedChoice(key, "im2col_gemm");
  RunCase<gpu, float, 4, 4>(stream, c, Reqs{});  // the forward, then the backward
  CHECK(WorkspaceBytesHeld(stream) <= InWorkspaceGranules(bound));
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// A backward whose data gradient takes no workspace (gpu_strided_dgrad, a channels-first float stem's)
// beside a weight gradient that takes columns (im2col_gemm), after a forward whose columns the stream
// keeps: run at once, the side stream's columns would sit beside the stream's for good, twice the bound,
// so the two run in turn. The choices are the tuned cache's, the premise checked in the log.
TEST_CASE("convolution: a backward with one pass free of workspace keeps both streams within the bound", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  const Case c = MakeCase({2, 3, 23, 21}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 70, 1, true);
  const size_t bound = ops::ConvolutionWorkspaceBytes(c.param, c.data, sizeof(float));
  std::string forward, data, weight;
  {
    ScopedConvLog log;
    ops::ReleaseConvCaches<gpu>();
    RunCase<gpu, float, 4, 4>(stream, c, Reqs{});
    forward = ChoiceKey(PassLine(log.lines, "forward")), data = ChoiceKey(PassLine(log.lines, "data-grad")),
    weight = ChoiceKey(PassLine(log.lines, "weight-grad"));
  }
  ops::ReleaseConvCaches<gpu>();
  ReleaseWorkspace(stream);
  stream->ReleaseSide();
  LoadTunedChoice(forward, "im2col_gemm");
  LoadTunedChoice(data, "gpu_strided_dgrad");
  LoadTunedChoice(weight, "im2col_gemm");
  // The premise: the forward's and the weight gradient's columns are workspace, the data gradient's none.
  const ops::ConvProblem pr = ProblemOf<gpu, float>(c, stream);
  const auto& registry = ops::ConvRegistry<gpu, float>::Get();
  auto bytes = [&](const char* name, ops::ConvPass pass) {
    return registry.Find(name)->WorkspaceBytes(pr, ops::ConvStores::Only(pass, ReqStore{true, false}));
  };
  REQUIRE(bytes("im2col_gemm", ops::ConvPass::kForward) > 0);
  REQUIRE(bytes("im2col_gemm", ops::ConvPass::kBackwardWeight) > 0);
  REQUIRE(bytes("gpu_strided_dgrad", ops::ConvPass::kBackwardData) == 0);
  RunCase<gpu, float, 4, 4>(stream, c, Reqs{});  // the forward, then the backward, on the cache's choices
  CHECK(WorkspaceBytesHeld(stream) <= InWorkspaceGranules(bound));
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// Strict float's strided 1x1 layers in channels last have no tensor-core kernel to prefer: the heuristic
// takes pointwise_gemm (gathered pixels, one product) for the forward and the weight gradient there, and
// for every pass under 3xTF32; strict float's data gradient goes to cutlass_implicit_gemm's SIMT kernel
// where the build has one, else to im2col_gemm. Under TF32 pointwise_gemm is recommended for no pass
// (filters this small), and the tensor-core or im2col algorithms run them.
TEST_CASE("convolution: the GPU heuristic takes pointwise_gemm for strict float strided 1x1 channels-last layers", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  Case c = MakeCase({3, 16, 9, 10}, {1, 1}, {2, 2}, {}, {}, 8, 1, true);
  c.param.layout = ops::Layout::kNHWC;
  const ops::ConvGeometry g = ops::MakeConvGeometry(c.param, ChannelsLastShape(c.data, c.batched));
  const auto& registry = ops::ConvRegistry<gpu, float>::Get();
  const auto* pointwise = registry.Find("pointwise_gemm");
  const auto* cutlass = registry.Find("cutlass_implicit_gemm");  // null in a build without CUTLASS
  for (ops::ConvMath math : {ops::ConvMath::kStrict, ops::ConvMath::kTF32x3, ops::ConvMath::kTF32}) {
    INFO("math " << ops::ConvMathName(math));
    stream->set_tf32(math == ops::ConvMath::kTF32);
    stream->set_tf32x3(math == ops::ConvMath::kTF32x3);
    const ops::ConvProblem pr = ops::MakeConvProblem<gpu, float>(g, stream, true, c.param.workspace);
    REQUIRE(pr.math == math);
    auto takes = [&](ops::ConvPass pass) {
      return math == ops::ConvMath::kTF32x3 || (math == ops::ConvMath::kStrict && pass != ops::ConvPass::kBackwardData);
    };
    for (ops::ConvPass pass : {ops::ConvPass::kForward, ops::ConvPass::kBackwardData, ops::ConvPass::kBackwardWeight})
      CHECK(pointwise->Recommended(pr, pass) == takes(pass));
    const bool simt_dgrad = cutlass != nullptr && math == ops::ConvMath::kStrict &&
                            cutlass->CanImplement(pr, ops::ConvPass::kBackwardData).ok;
    if (simt_dgrad) {
      CHECK(cutlass->Recommended(pr, ops::ConvPass::kBackwardData));
      CHECK_FALSE(cutlass->Recommended(pr, ops::ConvPass::kBackwardWeight));
    }
    // The selection's own word, pass by pass.
    std::vector<std::string> log;
    ops::SetConvLog([&](const std::string& line) { log.push_back(line); });
    ops::ReleaseConvCaches<gpu>();
    Case run = c;
    if (math == ops::ConvMath::kTF32) run.tol_scale = kTF32TolScale;
    RunCase<gpu, float, 4, 4>(stream, run, Reqs{});
    ops::SetConvLog(nullptr);
    REQUIRE(log.size() == 3);
    for (const std::string& line : log) {
      INFO(line);
      const bool data = line.find("data-grad") != std::string::npos;
      CHECK((line.find("-> pointwise_gemm (heuristic)") != std::string::npos) ==
            takes(data ? ops::ConvPass::kBackwardData : ops::ConvPass::kForward));
      if (data && math == ops::ConvMath::kStrict)
        CHECK(line.find(simt_dgrad ? "-> cutlass_implicit_gemm (heuristic)" : "-> im2col_gemm (heuristic)") !=
              std::string::npos);
    }
  }
  stream->set_tf32(false);
  stream->set_tf32x3(false);
  for (size_t r = 0; r < 4; ++r) RunCase<gpu, float, 4, 4>(stream, c, ReqPattern(r));
  DeleteStream(stream);
}

// The selection log's line for the pass it names (e.g. "weight-grad float32"), from a fresh selection
// (the caches released) while run() runs; required to be there.
template <typename Run>
std::string SelectionLine(const std::string& pass, Run&& run) {
  ScopedConvLog log;
  ops::ReleaseConvCaches<gpu>();
  run();
  return PassLine(log.lines, pass);
}

// gpu_strided_dgrad, forced (the other passes are not asked for: it computes the data gradient only):
// taps per stride of 1 to 4 (1x1, 3x3, 5x5 and 7x7 at stride 2, 11x11 at stride 4, 7x7 at
// stride 3), phases with fewer taps than others, 1 to 4 channels, more filters than a shared-memory chunk
// with a partial last one, padding wider than the kernel, asymmetric padding, unequal strides, odd sizes
// whose last phase rows and columns are short, 1-D, more (image, phase) pairs than a grid's z holds (the
// blocks loop over them); both layouts (channels last through a staged output
// gradient); every req; float, half and bf16. The heuristic takes it for a channels-first float stem; it
// refuses what it cannot do, saying why.
TEST_CASE("convolution gpu_strided_dgrad: phases, taps, channels, layouts", "[gpu][conv][algorithm]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  std::vector<Case> cases = {
      MakeCase({2, 3, 23, 21}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 70, 1, true),    // a stem: 3 chunks of filters
      MakeCase({2, 1, 9, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 5, 1, false),
      MakeCase({1, 2, 17, 12}, {5, 5}, {2, 2}, {2, 2}, {1, 1}, 33, 1, true),
      MakeCase({2, 4, 7, 9}, {1, 1}, {2, 2}, {0, 0}, {1, 1}, 9, 1, true),        // one tap per phase
      MakeCase({1, 3, 16, 15}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, 6, 1, false),     // even kernel
      MakeCase({2, 3, 35, 37}, {11, 11}, {4, 4}, {2, 2}, {1, 1}, 8, 1, true),   // 16 phases
      MakeCase({1, 2, 20, 19}, {7, 7}, {3, 3}, {0, 0}, {1, 1}, 4, 1, true),     // 9 phases, 3 taps
      MakeCase({2, 3, 11, 10}, {3, 5}, {1, 2}, {1, 2}, {1, 1}, 7, 1, true),     // stride 1 along y
      MakeCase({1, 2, 9, 8}, {3, 3}, {2, 2}, {4, 5}, {1, 1}, 3, 1, false),      // padding past the kernel
      MakeCase({3, 3, 40}, {7}, {2}, {3}, {1}, 12, 1, true),                    // 1-D
      MakeCase({4100, 1, 4, 4}, {4, 4}, {4, 4}, {0, 0}, {1, 1}, 1, 1, false),   // 65,600 (image, phase) pairs
  };
  Case asymmetric = MakeCase({2, 3, 13, 12}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, 5, 1, true);
  asymmetric.param.pad_end = Dims{1, 2};  // padding after only: the last inputs' windows reach past the data
  asymmetric.ref_pe = {1, 2};
  cases.push_back(asymmetric);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      Case c = cases[i];
      c.param.algorithm = "gpu_strided_dgrad";
      c.param.layout = layout;
      REQUIRE(ImplementsPass<gpu, float>("gpu_strided_dgrad", c, stream, ops::ConvPass::kBackwardData));
      REQUIRE_FALSE(ImplementsPass<gpu, float>("gpu_strided_dgrad", c, stream, ops::ConvPass::kForward));
      REQUIRE_FALSE(ImplementsPass<gpu, float>("gpu_strided_dgrad", c, stream, ops::ConvPass::kBackwardWeight));
      // A channels-last output gradient is staged channels first; the rest is read in place.
      const ops::ConvProblem pr = ProblemOf<gpu, float>(c, stream);
      const size_t staged = layout == ops::Layout::kNHWC ? size_t(pr.geom.N * pr.geom.K * pr.geom.OutSize()) * sizeof(float) : 0;
      CHECK(ops::ConvRegistry<gpu, float>::Get().Find("gpu_strided_dgrad")->WorkspaceBytes(
                pr, ops::ConvStores::Only(ops::ConvPass::kBackwardData, ReqStore{true, false})) == staged);
      for (size_t r = 0; r < 3; ++r) {
        Reqs reqs = ReqPattern(i + r);
        reqs.fwd = reqs.weight = kNullOp;  // the data gradient alone is this algorithm's
        if (reqs.data == kNullOp) reqs.data = kAddTo;
        if (c.data.size() == 3) RunCase<gpu, float, 3, 3>(stream, c, reqs);
        if (c.data.size() == 4) RunCase<gpu, float, 4, 4>(stream, c, reqs);
      }
      if (c.data.size() == 4) {
        RunCase<gpu, half_t, 4, 4>(stream, c, Reqs{kNullOp, kWriteTo, kNullOp, kWriteTo});
        RunCase<gpu, bf16_t, 4, 4>(stream, c, Reqs{kNullOp, kAddTo, kNullOp, kNullOp});
      }
    }
  }
  // The heuristic's choice for a float stem, the other passes alongside: channels first under strict and
  // TF32 math, channels last under strict math only (TF32's im2col_gemm is faster there).
  for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
    for (bool tf32 : {false, true}) {
      Case stem = cases[0];
      stem.param.layout = layout;
      stream->set_tf32(tf32);
      if (tf32) stem.tol_scale = kTF32TolScale;
      const std::string line = SelectionLine("data-grad float32", [&] { RunCase<gpu, float, 4, 4>(stream, stem, Reqs{}); });
      INFO(line);
      CHECK((line.find("-> gpu_strided_dgrad (heuristic)") != std::string::npos) == (layout == ops::Layout::kNCHW || !tf32));
    }
  }
  stream->set_tf32(false);
  // Refusals, with their reasons.
  auto why = [&](const Case& k) {
    const auto* a = ops::ConvRegistry<gpu, float>::Get().Find("gpu_strided_dgrad");
    REQUIRE(a != nullptr);
    const ops::ConvSupport s = a->CanImplement(ProblemOf<gpu, float>(k, stream), ops::ConvPass::kBackwardData);
    CHECK_FALSE(s.ok);
    return s.why;
  };
  CHECK(why(MakeCase({1, 5, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, 1, true)).find("4 input channels") != std::string::npos);
  CHECK(why(MakeCase({1, 4, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, 2, true)).find("one group") != std::string::npos);
  CHECK(why(MakeCase({1, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {2, 2}, 4, 1, true)).find("undilated") != std::string::npos);
  CHECK(why(MakeCase({1, 3, 9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 1, true)).find("strided") != std::string::npos);
  CHECK(why(MakeCase({1, 3, 19, 19}, {9, 9}, {2, 2}, {4, 4}, {1, 1}, 4, 1, true)).find("4 taps per stride") !=
        std::string::npos);
  CHECK(why(MakeCase({1, 3, 5, 5, 5}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 4, 1, true)).find("2-D") !=
        std::string::npos);
  CHECK(why(MakeCase({1, 3, 1, 9, 9}, {1, 3, 3}, {3, 2, 2}, {1, 1, 1}, {1, 1, 1}, 4, 1, true)).find("2-D") !=
        std::string::npos);  // one output plane, reading only the depth padding
  CHECK(why(MakeCase({1, 1, 3, 3}, {1, 1}, {65536, 65536}, {0, 0}, {1, 1}, 2, 1, true)).find("phases") !=
        std::string::npos);  // 2^32 phases
  Case padded = cases[1];
  padded.padded_rows = true;
  CHECK(why(padded).find("dense rows") != std::string::npos);
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// ResNet-50's stem in miniature, for the tests of one infinite value: 2 images of 3 channels, 15 x 14, into 8
// filters of 7 x 7 at stride 2 with padding 3, no bias, in `layout`.
const std::vector<index_t> kSmallStemData = {2, 3, 15, 14};
ConvolutionParam SmallStemParam(ops::Layout layout) {
  ConvolutionParam p;
  p.kernel = {7, 7};
  p.stride = {2, 2};
  p.pad = {3, 3};
  p.num_filter = 8;
  p.no_bias = true;
  p.layout = layout;
  return p;
}

// gpu_strided_dgrad with one infinite output gradient: it reaches only the inputs its taps reach (7 rows x
// 4 columns x 3 channels here), as with im2col_gemm, and no NaN appears where a phase has fewer taps than
// another (the even phases of a 7-tap kernel at stride 2 have 4, the odd ones 3); either layout.
TEST_CASE("convolution gpu_strided_dgrad: an infinite output gradient reaches only its taps' inputs", "[gpu][conv][algorithm][nan]") {
  TE_REQUIRE_GPU();
  for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
    const bool last = layout == ops::Layout::kNHWC;
    INFO("layout " << ops::LayoutName(layout));
    const ConvolutionParam p = SmallStemParam(layout);
    const std::vector<index_t> dshape = last ? ChannelsLastShape(kSmallStemData, true) : kSmallStemData;
    const auto shapes = ops::InferConvShapes(p, dshape);
    TensorContainer<cpu, 4, float> xh(ToShape<4>(dshape)), wh(ToShape<4>(shapes.weight)), dyh(ToShape<4>(shapes.out));
    FillRandom(xh.view());
    FillRandom(wh.view());
    FillRandom(dyh.view());
    // Image 1, filter 5, output (3, 0): inputs y = 3 .. 9 and x = 0 .. 3 (x = -3 .. -1 are padding).
    (last ? dyh[1][3][0][5] : dyh[1][5][3][0]) = std::numeric_limits<float>::infinity();
    TensorContainer<gpu, 4, float> x(xh.shape_), w(wh.shape_), dy(dyh.shape_);
    Copy(x.view(), xh.view()), Copy(w.view(), wh.view()), Copy(dy.view(), dyh.view());
    TensorContainer<gpu, 1, float> b;
    auto data_grad = [&](const char* algorithm) {
      ConvolutionParam q = p;
      q.algorithm = algorithm;
      TensorContainer<gpu, 4, float> dx(x.shape_), dw(w.shape_);
      ops::ConvolutionBackward(q, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kNullOp, dw.view(), kNullOp,
                               b.view());
      return ToHost(dx.view());
    };
    const auto ours = data_grad("gpu_strided_dgrad"), reference = data_grad("im2col_gemm");
    CHECK(SameFinitePattern(ours, reference, "data gradient", 1e-4) == 7 * 4 * 3);
  }
}

// gpu_stem_mma, forced (the forward only): a stem with more filters than a block's 64 (a partial second
// block), output rows longer than a tile's 128 pixels, stems of more output rows than the GPU holds blocks
// (a block walks several rows, keeping the input rows they share, and its run crosses tiles and images,
// where it stages every row again), odd filters and pixels per row (no paired stores), one input channel at stride 1 (the Fashion-MNIST
// trainer's first layer), 8 channels at stride 1, 2 channels at stride 4 and 1 at stride 8 (every fold),
// dilation along y with unequal strides, 1-D, more work items than the GPU holds blocks (each block walks
// several), padding past the kernel, padding after, and the longest reduction it takes (1024 entries);
// both layouts; half and bf16; written and added, the bias fused into its store (the fused forms with a
// residual and relu: tests/gpu/conv_cutlass_test.cu). It refuses what it cannot do, saying why.
TEST_CASE("convolution gpu_stem_mma: folds, filter blocks, row tiles, layouts", "[gpu][conv][algorithm]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  std::vector<Case> cases = {
      MakeCase({3, 3, 29, 27}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 70, 1, true),     // a stem, 2 filter blocks
      MakeCase({16, 3, 40, 300}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 16, 1, true),   // rows of 150 pixels
      MakeCase({48, 3, 64, 70}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 7, 1, true),     // 1536 rows, odd K and OW
      MakeCase({2, 1, 28, 28}, {5, 5}, {1, 1}, {2, 2}, {1, 1}, 32, 1, true),     // 1 channel, stride 1
      MakeCase({2, 8, 9, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 5, 1, false),      // 8 channels, stride 1
      MakeCase({1, 2, 20, 23}, {8, 8}, {4, 4}, {1, 1}, {1, 1}, 16, 1, true),     // 2 channels, stride 4
      MakeCase({1, 1, 30, 40}, {3, 11}, {2, 8}, {1, 2}, {1, 1}, 7, 1, true),     // 1 channel, stride 8
      MakeCase({2, 2, 13, 11}, {3, 3}, {3, 2}, {2, 1}, {2, 1}, 5, 1, true),      // dilated along y
      MakeCase({3, 4, 40}, {5}, {2}, {2}, {1}, 9, 1, true),                      // 1-D
      MakeCase({48, 3, 64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, 1, true),     // 3072 work items
      MakeCase({1, 3, 9, 8}, {3, 3}, {2, 2}, {4, 5}, {1, 1}, 130, 1, false),     // padding past the kernel
      MakeCase({1, 4, 40, 44}, {16, 16}, {2, 2}, {3, 3}, {1, 1}, 9, 1, true),    // 16 rows of 64 entries
  };
  Case asymmetric = MakeCase({2, 3, 13, 12}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, 5, 1, true);
  asymmetric.param.pad_end = Dims{1, 2};
  asymmetric.ref_pe = {1, 2};
  cases.push_back(asymmetric);
  const auto* algorithm = ops::ConvRegistry<gpu, half_t>::Get().Find("gpu_stem_mma");
  REQUIRE(algorithm != nullptr);
  const ops::ConvSupport here = algorithm->CanImplement(ProblemOf<gpu, half_t>(cases[0], stream), ops::ConvPass::kForward);
  if (!here.ok && here.why.find("compute capability") != std::string::npos) {
    WARN("skipped: " << here.why);
    DeleteStream(stream);
    return;
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      Case c = cases[i];
      c.param.algorithm = "gpu_stem_mma";
      c.param.layout = layout;
      INFO("case " << i << " " << ops::LayoutName(layout));
      const ops::ConvSupport fits = algorithm->CanImplement(ProblemOf<gpu, half_t>(c, stream), ops::ConvPass::kForward);
      if (!fits.ok && fits.why.find("shared memory") != std::string::npos) {  // 1024 entries: 169 KB
        WARN("case " << i << " skipped: " << fits.why);
        continue;
      }
      REQUIRE(ImplementsPass<gpu, half_t>("gpu_stem_mma", c, stream, ops::ConvPass::kForward));
      REQUIRE(ImplementsPass<gpu, bf16_t>("gpu_stem_mma", c, stream, ops::ConvPass::kForward));
      REQUIRE_FALSE(ImplementsPass<gpu, half_t>("gpu_stem_mma", c, stream, ops::ConvPass::kBackwardData));
      REQUIRE_FALSE(ImplementsPass<gpu, half_t>("gpu_stem_mma", c, stream, ops::ConvPass::kBackwardWeight));
      CHECK(algorithm->WorkspaceBytes(ProblemOf<gpu, half_t>(c, stream),
                                      ops::ConvStores::Only(ops::ConvPass::kForward, ReqStore{true, false})) == 0);
      const bool one_d = c.data.size() == 3;
      for (OpReqType req : {kWriteTo, kAddTo}) {
        const Reqs reqs{req, kNullOp, kNullOp, kNullOp};
        if (one_d) {
          RunCase<gpu, half_t, 3, 3>(stream, c, reqs);
          RunCase<gpu, bf16_t, 3, 3>(stream, c, reqs);
        } else {
          RunCase<gpu, half_t, 4, 4>(stream, c, reqs);
          RunCase<gpu, bf16_t, 4, 4>(stream, c, reqs);
        }
      }
    }
  }
  // Refusals, with their reasons.
  auto why = [&](const Case& k, ops::ConvPass pass = ops::ConvPass::kForward) {
    const ops::ConvSupport s = algorithm->CanImplement(ProblemOf<gpu, half_t>(k, stream), pass);
    CHECK_FALSE(s.ok);
    return s.why;
  };
  CHECK(why(cases[0], ops::ConvPass::kBackwardData).find("forward only") != std::string::npos);
  CHECK(why(MakeCase({1, 4, 9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 2, true)).find("one group") != std::string::npos);
  CHECK(why(MakeCase({1, 5, 12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 4, 1, true)).find("at most 8") !=
        std::string::npos);  // 5 channels at stride 2
  CHECK(why(MakeCase({1, 2, 12, 12}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, 4, 1, true)).find("1, 2, 4 or 8") !=
        std::string::npos);
  CHECK(why(MakeCase({1, 2, 12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 2}, 4, 1, true)).find("undilated along x") !=
        std::string::npos);
  CHECK(why(MakeCase({1, 4, 40, 40}, {17, 17}, {2, 2}, {1, 1}, {1, 1}, 4, 1, true)).find("1024 entries") !=
        std::string::npos);  // 17 rows of 80 entries
  CHECK(why(MakeCase({1, 3, 5, 5, 5}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4, 1, true)).find("2-D") !=
        std::string::npos);
  Case padded = cases[3];
  padded.padded_rows = true;
  CHECK(why(padded).find("dense rows") != std::string::npos);
  CHECK(ops::ConvRegistry<gpu, float>::Get().Find("gpu_stem_mma") == nullptr);  // half and bf16 only
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// gpu_stem_mma with one infinite input: every output whose window holds it is not finite, as with
// im2col_gemm, and so are those whose folded columns reach it through a zero tap (a 7-wide kernel at stride
// 2 reads 8 columns: the output whose window ends one column before it, 3 rows x 8 filters here); every
// other output is finite and matches im2col_gemm's; either layout.
TEST_CASE("convolution gpu_stem_mma: an infinite input reaches its windows and the folded columns' zero taps", "[gpu][conv][algorithm][nan]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  const ops::ConvSupport here = ops::ConvRegistry<gpu, half_t>::Get().Find("gpu_stem_mma")->CanImplement(
      ProblemOf<gpu, half_t>(MakeCase({2, 3, 15, 14}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 8, 1, false), stream),
      ops::ConvPass::kForward);
  DeleteStream(stream);
  if (!here.ok) {
    WARN("skipped: " << here.why);
    return;
  }
  for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
    const bool last = layout == ops::Layout::kNHWC;
    INFO("layout " << ops::LayoutName(layout));
    const ConvolutionParam p = SmallStemParam(layout);
    const std::vector<index_t> dshape = last ? ChannelsLastShape(kSmallStemData, true) : kSmallStemData;
    const auto shapes = ops::InferConvShapes(p, dshape);
    TensorContainer<cpu, 4, half_t> xh(ToShape<4>(dshape)), wh(ToShape<4>(shapes.weight));
    FillRandom(xh.view());
    FillRandom(wh.view());
    // Image 1, channel 1, input (6, 8): the windows of outputs y = 2 .. 4, x = 3 .. 5; output x = 2's
    // folded columns reach x = 8 through its zero eighth tap.
    (last ? xh[1][6][8][1] : xh[1][1][6][8]) = half_t(std::numeric_limits<float>::infinity());
    TensorContainer<gpu, 4, half_t> x(xh.shape_), w(wh.shape_);
    Copy(x.view(), xh.view()), Copy(w.view(), wh.view());
    TensorContainer<gpu, 1, half_t> b;
    auto forward = [&](const char* algorithm) {
      ConvolutionParam q = p;
      q.algorithm = algorithm;
      TensorContainer<gpu, 4, half_t> y(ToShape<4>(shapes.out));
      ops::ConvolutionForward(q, x.view(), w.view(), b.view(), kWriteTo, y.view());
      return ToHost(y.view());
    };
    const auto ours = forward("gpu_stem_mma"), reference = forward("im2col_gemm");
    int windows = 0, zero_taps = 0;
    for (index_t n = 0; n < 2; ++n)
      for (index_t oy = 0; oy < 8; ++oy)
        for (index_t ox = 0; ox < 7; ++ox)
          for (index_t k = 0; k < 8; ++k) {
            const float a = float(last ? ours[n][oy][ox][k] : ours[n][k][oy][ox]);
            const float r = float(last ? reference[n][oy][ox][k] : reference[n][k][oy][ox]);
            INFO("image " << n << " output (" << oy << ", " << ox << ") filter " << k);
            if (!std::isfinite(r)) {
              CHECK_FALSE(std::isfinite(a));
              ++windows;
            } else if (!std::isfinite(a)) {
              CHECK((n == 1 && oy >= 2 && oy <= 4 && ox == 2));
              ++zero_taps;
            } else {
              CHECK(a == Approx(r).epsilon(1e-2).margin(2e-2));
            }
          }
    CHECK(windows == 3 * 3 * 8);
    CHECK(zero_taps == 3 * 8);
  }
}

// Strict float's weight gradients are not CUTLASS's SIMT kernels' by default: im2col_gemm's split
// products and winograd_2x2 beat them on every ResNet-50 layer measured (ops/conv_cutlass.h). A stem's
// goes to im2col_gemm, a 3x3 stride-1 layer's to winograd_2x2. Forced, the SIMT kernels still match
// float64 for every req, small filters and large, either layout (every pass the build has kernels for,
// the weight gradient always).
TEST_CASE("convolution: the GPU heuristic leaves strict float's weight gradients to im2col_gemm and winograd_2x2, not SIMT", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  const auto* cutlass = ops::ConvRegistry<gpu, float>::Get().Find("cutlass_implicit_gemm");
  if (cutlass == nullptr) {
    WARN("skipped: this build has no CUTLASS kernels");
    return;
  }
  Stream<gpu>* stream = NewStream<gpu>();
  auto problem = [&](const Case& k) { return ProblemOf<gpu, float>(k, stream); };
  const ops::ConvPass weight = ops::ConvPass::kBackwardWeight;
  Case small = MakeCase({2, 128, 6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 128, 1, true);  // 147,456 values
  small.param.layout = ops::Layout::kNHWC;
  const ops::ConvSupport simt = cutlass->CanImplement(problem(small), weight);
  if (!simt.ok) {
    WARN("skipped: no strict-fp32 weight-gradient kernel in this build: " << simt.why);
    DeleteStream(stream);
    return;
  }
  Case stem = MakeCase({2, 3, 15, 14}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 64, 1, true);
  stem.param.layout = ops::Layout::kNHWC;
  Case large = MakeCase({2, 256, 4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 256, 1, true);  // 589,824 values
  large.param.layout = ops::Layout::kNHWC;
  Case first = small;  // channels first
  first.param.layout = ops::Layout::kNCHW;
  for (const Case* k : {&small, &stem, &large, &first}) CHECK_FALSE(cutlass->Recommended(problem(*k), weight));
  for (const Case* k : {&small, &stem}) {
    const std::string line = SelectionLine("weight-grad float32", [&] { RunCase<gpu, float, 4, 4>(stream, *k, Reqs{}); });
    INFO(line);
    CHECK(line.find(k == &small ? "-> winograd_2x2 (heuristic)" : "-> im2col_gemm (heuristic)") != std::string::npos);
  }
  const std::pair<Case, const char*> forced[] = {{small, "small"}, {stem, "stem"}, {large, "large"}, {first, "channels-first"}};
  for (auto [k, name] : forced) {
    INFO("forced on the SIMT kernels: the " << name << " case");
    k.param.algorithm = "cutlass_implicit_gemm";
    REQUIRE(cutlass->CanImplement(problem(k), weight).ok);
    for (size_t r = 0; r < 4; ++r) {
      Reqs reqs = ReqPattern(r);
      REQUIRE(OnlyImplementedPasses<gpu, float>("cutlass_implicit_gemm", k, stream, &reqs));
      RunCase<gpu, float, 4, 4>(stream, k, reqs);
    }
  }
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// An RGB stem: the forward in half and bf16 goes to gpu_stem_mma in either layout (to im2col_gemm where
// that cannot run: before compute capability 8.0), not to CUTLASS (whose kernel pads the channels and,
// channels first, adds the transforms to and from channels last); the weight gradient stays CUTLASS's. Both
// are checked against float64. Unstrided, or on 8 channels, the forward is not gpu_stem_mma's.
template <typename DType>
void CheckStemForward(Stream<gpu>* stream, ops::Layout layout) {
  const auto& registry = ops::ConvRegistry<gpu, DType>::Get();
  const auto* cutlass = registry.Find("cutlass_implicit_gemm");
  const auto* stem_mma = registry.Find("gpu_stem_mma");
  Case stem = MakeCase({2, 3, 15, 14}, {7, 7}, {2, 2}, {3, 3}, {1, 1}, 64, 1, true);
  stem.param.layout = layout;
  const ops::ConvProblem pr = ProblemOf<gpu, DType>(stem, stream);
  if (!cutlass->CanImplement(pr, ops::ConvPass::kForward).ok) {
    WARN("skipped: no " << DataType<DType>::name() << " stem kernel in this build");
    return;
  }
  INFO((layout == ops::Layout::kNHWC ? "channels last" : "channels first"));
  CHECK_FALSE(cutlass->Recommended(pr, ops::ConvPass::kForward));
  CHECK(cutlass->Recommended(pr, ops::ConvPass::kBackwardWeight));
  const bool mma = stem_mma->CanImplement(pr, ops::ConvPass::kForward).ok;
  CHECK(stem_mma->Recommended(pr, ops::ConvPass::kForward));
  CHECK_FALSE(stem_mma->Recommended(pr, ops::ConvPass::kBackwardData));
  const std::string line = SelectionLine(std::string("forward ") + DataType<DType>::name(), [&] {
    RunCase<gpu, DType, 4, 4>(stream, stem, Reqs{kWriteTo, kNullOp, kWriteTo, kNullOp});
  });
  CHECK(line.find(mma ? "-> gpu_stem_mma (heuristic)" : "-> im2col_gemm (heuristic)") != std::string::npos);
  Case unstrided = MakeCase({2, 3, 15, 14}, {7, 7}, {1, 1}, {3, 3}, {1, 1}, 64, 1, true);
  Case eight = MakeCase({2, 8, 15, 14}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, 64, 1, true);
  for (Case* k : {&unstrided, &eight}) {
    k->param.layout = layout;
    CHECK_FALSE(stem_mma->Recommended(ProblemOf<gpu, DType>(*k, stream), ops::ConvPass::kForward));
  }
  ops::ReleaseConvCaches<gpu>();
}
TEST_CASE("convolution: the GPU heuristic takes gpu_stem_mma for a stem's 16-bit forward", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  if (ops::ConvRegistry<gpu, half_t>::Get().Find("cutlass_implicit_gemm") == nullptr) {
    WARN("skipped: this build has no CUTLASS kernels");
    return;
  }
  Stream<gpu>* stream = NewStream<gpu>();
  for (ops::Layout layout : {ops::Layout::kNHWC, ops::Layout::kNCHW}) {
    CheckStemForward<half_t>(stream, layout);
    CheckStemForward<bf16_t>(stream, layout);
  }
  DeleteStream(stream);
}

// A tensor-core weight gradient of large filters over a short reduction (ops::WeightGradIsShortAndWide) is
// not the implicit GEMM's: a 3x3 kernel's goes to im2col_gemm in either layout (half, bf16 and TF32), a
// channels-last strided 1x1 kernel's to pointwise_gemm, registered before it (half and bf16). Over a long
// reduction both stay CUTLASS's. The short ones run against float64.
template <typename DType>
void CheckShortWideWeightGradient(Stream<gpu>* stream, bool tf32) {
  const auto& registry = ops::ConvRegistry<gpu, DType>::Get();
  const auto* cutlass = registry.Find("cutlass_implicit_gemm");
  const auto* pointwise = registry.Find("pointwise_gemm");
  INFO(DataType<DType>::name() << (tf32 ? " TF32" : ""));
  stream->set_tf32(tf32);
  auto in_layout = [&](Case k, ops::Layout layout) {
    k.param.layout = layout;
    if (tf32) k.tol_scale = kTF32TolScale;
    return k;
  };
  auto problem = [&](const Case& k) { return ProblemOf<gpu, DType>(k, stream); };
  const ops::ConvPass weight = ops::ConvPass::kBackwardWeight;
  // 176 x 176 x 3 x 3 = 278,784 filter values; 2 x 7 x 7 = 98 positions, against 2 x 48 x 48 = 4608.
  const Case wide_3x3 = MakeCase({2, 176, 7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 176, 1, true);
  const Case wide_3x3_long = MakeCase({2, 176, 48, 48}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 176, 1, true);
  const Case wide = in_layout(wide_3x3, ops::Layout::kNHWC);
  const Case wide_long = in_layout(wide_3x3_long, ops::Layout::kNHWC);
  const Case wide_first = in_layout(wide_3x3, ops::Layout::kNCHW);
  const Case wide_first_long = in_layout(wide_3x3_long, ops::Layout::kNCHW);
  // 512 x 512 filter values, strided: 98 positions against 4608.
  const Case strided = in_layout(MakeCase({2, 512, 14, 14}, {1, 1}, {2, 2}, {}, {}, 512, 1, true), ops::Layout::kNHWC);
  const Case strided_long = in_layout(MakeCase({2, 512, 96, 96}, {1, 1}, {2, 2}, {}, {}, 512, 1, true), ops::Layout::kNHWC);
  CHECK(ops::WeightGradIsShortAndWide(problem(wide).geom));
  CHECK(ops::WeightGradIsShortAndWide(problem(wide_first).geom));
  CHECK(ops::WeightGradIsShortAndWide(problem(strided).geom));
  CHECK_FALSE(ops::WeightGradIsShortAndWide(problem(wide_long).geom));
  CHECK_FALSE(ops::WeightGradIsShortAndWide(problem(wide_first_long).geom));
  CHECK_FALSE(ops::WeightGradIsShortAndWide(problem(strided_long).geom));
  const bool sixteen_bit = sizeof(DType) == 2;
  std::vector<std::pair<const Case*, const char*>> runs = {{&wide, "-> im2col_gemm (heuristic)"},
                                                           {&wide_first, "-> im2col_gemm (heuristic)"}};
  if (sixteen_bit) runs.push_back({&strided, "-> pointwise_gemm (heuristic)"});
  if (cutlass != nullptr && cutlass->CanImplement(problem(wide), weight).ok) {
    CHECK_FALSE(cutlass->Recommended(problem(wide), weight));
    CHECK_FALSE(cutlass->Recommended(problem(wide_first), weight));
    CHECK(cutlass->Recommended(problem(wide_long), weight));
    CHECK(cutlass->Recommended(problem(wide_first_long), weight));
    if (sixteen_bit) CHECK(cutlass->Recommended(problem(strided_long), weight));
  } else {
    WARN("no CUTLASS weight-gradient kernel here: im2col_gemm and pointwise_gemm take them anyway");
  }
  if (sixteen_bit) {
    CHECK(pointwise->Recommended(problem(strided), weight));
    CHECK_FALSE(pointwise->Recommended(problem(strided_long), weight));
  }
  for (const auto& run : runs) {
    const Case& k = *run.first;
    const std::string line =
        SelectionLine("weight-grad", [&] { RunCase<gpu, DType, 4, 4>(stream, k, Reqs{kWriteTo, kWriteTo, kAddTo, kWriteTo}); });
    INFO(line);
    CHECK(line.find(run.second) != std::string::npos);
  }
  stream->set_tf32(false);
  ops::ReleaseConvCaches<gpu>();
}
TEST_CASE("convolution: the GPU heuristic leaves large filters over a short reduction to cuBLAS products", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  CheckShortWideWeightGradient<half_t>(stream, false);
  CheckShortWideWeightGradient<bf16_t>(stream, false);
  CheckShortWideWeightGradient<float>(stream, true);
  DeleteStream(stream);
}

// A channels-last strided 1x1 data gradient of 2048 filters or more goes to pointwise_gemm (its product,
// then each entry stored once), in half, bf16 and TF32; with 1024 filters it does not. The chosen one runs
// against float64, written and added.
template <typename DType>
void CheckStridedDataGradientOnPointwise(Stream<gpu>* stream, bool tf32) {
  const auto* pointwise = ops::ConvRegistry<gpu, DType>::Get().Find("pointwise_gemm");
  INFO(DataType<DType>::name() << (tf32 ? " TF32" : ""));
  stream->set_tf32(tf32);
  Case many = MakeCase({2, 8, 6, 7}, {1, 1}, {2, 2}, {}, {}, 2048, 1, true);
  many.param.layout = ops::Layout::kNHWC;
  if (tf32) many.tol_scale = kTF32TolScale;
  Case fewer = many;
  fewer.param.num_filter = 1024;
  auto problem = [&](const Case& k) { return ProblemOf<gpu, DType>(k, stream); };
  CHECK(pointwise->Recommended(problem(many), ops::ConvPass::kBackwardData));
  CHECK_FALSE(pointwise->Recommended(problem(fewer), ops::ConvPass::kBackwardData));
  CHECK_FALSE(pointwise->Recommended(problem(many), ops::ConvPass::kForward));
  const std::string line = SelectionLine("data-grad", [&] {
    for (OpReqType data : {kWriteTo, kAddTo}) RunCase<gpu, DType, 4, 4>(stream, many, Reqs{kWriteTo, data, kWriteTo, kWriteTo});
  });
  INFO(line);
  CHECK(line.find("-> pointwise_gemm (heuristic)") != std::string::npos);
  stream->set_tf32(false);
  ops::ReleaseConvCaches<gpu>();
}
TEST_CASE("convolution: the GPU heuristic takes pointwise_gemm for a channels-last strided data gradient of many filters", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  CheckStridedDataGradientOnPointwise<half_t>(stream, false);
  CheckStridedDataGradientOnPointwise<bf16_t>(stream, false);
  CheckStridedDataGradientOnPointwise<float>(stream, true);
  DeleteStream(stream);
}

// TF32's channels-last strided 1x1 forward into 1024 filters or more over 512 channels or more goes to
// pointwise_gemm (the gathered pixels, one product); into 512 filters, or from 256 channels, it does not.
// The chosen one runs against float64 with its bias, written and added.
TEST_CASE("convolution: the GPU heuristic takes pointwise_gemm for TF32's channels-last strided forward into many filters", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  stream->set_tf32(true);
  const auto* pointwise = ops::ConvRegistry<gpu, float>::Get().Find("pointwise_gemm");
  Case many = MakeCase({2, 512, 6, 7}, {1, 1}, {2, 2}, {}, {}, 1024, 1, true);
  many.param.layout = ops::Layout::kNHWC;
  many.tol_scale = kTF32TolScale;
  Case fewer_filters = many, fewer_channels = many;
  fewer_filters.param.num_filter = 512;
  fewer_channels.data[1] = 256;
  auto recommended = [&](const Case& k) {
    return pointwise->Recommended(ProblemOf<gpu, float>(k, stream), ops::ConvPass::kForward);
  };
  CHECK(recommended(many));
  CHECK_FALSE(recommended(fewer_filters));
  CHECK_FALSE(recommended(fewer_channels));
  const std::string line = SelectionLine("forward float32", [&] {
    for (OpReqType out : {kWriteTo, kAddTo}) RunCase<gpu, float, 4, 4>(stream, many, Reqs{out, kWriteTo, kWriteTo, kWriteTo});
  });
  INFO(line);
  CHECK(line.find("-> pointwise_gemm (heuristic)") != std::string::npos);
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(stream);
}

// A backward's weight gradient runs on the stream's side stream, at the same time as the data gradient,
// when their tensors are apart and one pass takes no workspace (pointwise_gemm takes none for images of
// 256 pixels); the results match float64 for every req. A data gradient written over the data that the
// weight gradient reads runs in turn (the weight gradient first) and matches the run apart.
TEST_CASE("convolution: a backward's weight gradient overlaps the data gradient on the stream's side stream", "[gpu][conv]") {
  TE_REQUIRE_GPU();
  Stream<gpu>* stream = NewStream<gpu>();
  Case c = MakeCase({2, 8, 16, 16}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 12, 1, true);
  c.param.algorithm = "pointwise_gemm";
  RunCase<gpu, float, 4, 4>(stream, c, Reqs{});
  CHECK(stream->side() != nullptr);
  for (size_t r = 0; r < 6; ++r) RunCase<gpu, float, 4, 4>(stream, c, ReqPattern(r));

  ConvolutionParam p = c.param;
  p.no_bias = true;
  TensorContainer<cpu, 4, float> xh(Shape4(2, 8, 16, 16)), wh(Shape4(12, 8, 1, 1)), dyh(Shape4(2, 12, 16, 16));
  FillRandom(xh.view()), FillRandom(wh.view()), FillRandom(dyh.view());
  Stream<gpu>* other = NewStream<gpu>();
  auto x = DeviceCopy<gpu>(xh.view(), stream, false), dx = DeviceCopy<gpu>(xh.view(), stream, false);
  auto w = DeviceCopy<gpu>(wh.view(), stream, false), dw = DeviceCopy<gpu>(wh.view(), stream, false);
  auto dy = DeviceCopy<gpu>(dyh.view(), stream, false);
  auto x_over = DeviceCopy<gpu>(xh.view(), other, false), w_over = DeviceCopy<gpu>(wh.view(), other, false);
  auto dw_over = DeviceCopy<gpu>(wh.view(), other, false), dy_over = DeviceCopy<gpu>(dyh.view(), other, false);
  const Tensor<gpu, 1, float> no_bias;
  ops::ConvolutionBackward(p, dy.view(), x.view(), w.view(), kWriteTo, dx.view(), kWriteTo, dw.view(), kNullOp, no_bias);
  ops::ConvolutionBackward(p, dy_over.view(), x_over.view(), w_over.view(), kWriteInplace, x_over.view(), kWriteTo,
                           dw_over.view(), kNullOp, no_bias);
  CHECK(other->side() == nullptr);
  const auto dx_apart = ToHost(dx.view()), dw_apart = ToHost(dw.view());
  CheckClose(ToHost(x_over.view()).view(), [&](const Shape<4>& i) { return double(AtX(dx_apart.view(), i)); },
             ConvTol<float>(12), "data grad over the data");
  CheckClose(ToHost(dw_over.view()).view(), [&](const Shape<4>& i) { return double(AtX(dw_apart.view(), i)); },
             ConvTol<float>(2 * 256), "weight grad beside it");
  ops::ReleaseConvCaches<gpu>();
  DeleteStream(other);
  DeleteStream(stream);
}
#endif

// Winograd, forced (every pass): outputs that are not a whole number of tiles, padding 0 to 2 (the data
// gradient's origin moves with it), groups, one-channel and one-filter problems, and a workspace cap that
// leaves room for one image's tiles at a time (the weight gradient summed over chunks); float and double,
// both layouts.
TE_DEVICE_TEST_CASE("convolution winograd_2x2 and winograd_4x4: tails, padding, groups, chunks", "[conv][algorithm][winograd]") {
  std::vector<Case> cases = {
      MakeCase({3, 5, 13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 7, 1, true),
      MakeCase({2, 6, 9, 10}, {3, 3}, {1, 1}, {0, 2}, {1, 1}, 4, 2, false),
      MakeCase({2, 1, 6, 17}, {3, 3}, {1, 1}, {2, 0}, {1, 1}, 1, 1, true),
      MakeCase({4, 8, 7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 16, 1, true),
  };
  cases[3].param.workspace = 0.03;  // 30 KB: the 4 images in chunks of one
  for (const char* name : {"winograd_2x2", "winograd_4x4"}) {
    for (ops::Layout layout : {ops::Layout::kNCHW, ops::Layout::kNHWC}) {
      for (size_t i = 0; i < cases.size(); ++i) {
        Case c = cases[i];
        c.param.algorithm = name;
        c.param.layout = layout;
        if (std::string(name) == "winograd_4x4") c.tol_scale = kWinograd4x4TolScale;
        INFO("algorithm " << name << " case " << i << (layout == ops::Layout::kNHWC ? " NHWC" : " NCHW"));
        for (size_t r = 0; r < 3; ++r) {
          const Reqs reqs = ReqPattern(i + r);
          RunCase<Device, float, 4, 4>(stream, c, reqs);
          RunCase<Device, double, 4, 4>(stream, c, reqs);
        }
      }
    }
  }
  // Its plan's sizes are bounded before they are multiplied out: a geometry of 2^28 x 2^28 outputs with 64
  // channels each side (built by hand: the operator's own checks refuse such tensors earlier) is refused.
  ops::ConvGeometry hg;
  hg.N = 1, hg.C = 64, hg.K = 64, hg.G = 1;
  hg.in[1] = hg.in[2] = hg.out[1] = hg.out[2] = index_t(1) << 28;
  hg.kernel[1] = hg.kernel[2] = 3;
  hg.pad[1] = hg.pad[2] = 1;
  const ops::ConvProblem hp = ops::MakeConvProblem<Device, float>(hg, stream, true, 1024);
  for (const char* name : {"winograd_2x2", "winograd_4x4"}) {
    const ops::ConvSupport s = ops::ConvRegistry<Device, float>::Get().Find(name)->CanImplement(hp, ops::ConvPass::kForward);
    CHECK_FALSE(s.ok);
    CHECK(s.why.find("overflow") != std::string::npos);
  }
}

TE_DEVICE_TEST_CASE("convolution half and bf16 accumulate in float", "[conv]") {
  const std::vector<Case> cases = {
      MakeCase({2, 4, 9, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, 2, true),
      MakeCase({2, 5, 6, 7}, {1, 1}, {}, {}, {}, 3, 1, true),
      MakeCase({1, 3, 11, 10}, {5, 5}, {2, 2}, {2, 2}, {1, 1}, 4, 1, false),
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    RunCase<Device, half_t, 4, 4>(stream, cases[i], ReqPattern(i));
    RunCase<Device, bf16_t, 4, 4>(stream, cases[i], ReqPattern(i + 1));
  }
  RunCase<Device, half_t, 5, 5>(stream, Grid3D()[0], ReqPattern(1));
  RunCase<Device, bf16_t, 3, 3>(stream, Grid1D()[0], ReqPattern(0));
}

// A case whose padding `mode` computes, with the padding per side the reference expects (worked out by hand).
Case PaddingModeCase(Dims data, Dims kernel, Dims stride, Dims dilate, ConvPadding mode, Dims pb, Dims pe) {
  Case c = MakeCase(data, kernel, stride, {}, dilate, 3, 1, true);
  c.param.padding = mode;
  c.ref_pb = pb;
  c.ref_pe = pe;
  return c;
}

TE_DEVICE_TEST_CASE("convolution SAME_UPPER, SAME_LOWER, VALID and asymmetric explicit padding", "[conv]") {
  // SAME: output = ceil(in / stride); total padding (out - 1) * stride + span - in, the odd pixel after
  // (SAME_UPPER) or before (SAME_LOWER).
  // H: in 8, k 4, s 2 -> out 4, total 2*3 + 4 - 8 = 2 -> (1, 1).  W: in 7, k 3, s 2 -> out 4, total 2 -> (1, 1).
  RunCase<Device, float, 4, 4>(
      stream, PaddingModeCase({2, 3, 8, 7}, {4, 3}, {2, 2}, {1, 1}, ConvPadding::kSame, {1, 1}, {1, 1}), ReqPattern(0));
  // H: in 9, k 4, s 1 -> out 9, total 3 -> (1, 2), lower (2, 1).  W: in 10, k 3 dilated 2 (span 5), s 3 ->
  // out 4, total 3*3 + 5 - 10 = 4 -> (2, 2).
  const Case upper = PaddingModeCase({1, 2, 9, 10}, {4, 3}, {1, 3}, {1, 2}, ConvPadding::kSameUpper, {1, 2}, {2, 2});
  const Case lower = PaddingModeCase({1, 2, 9, 10}, {4, 3}, {1, 3}, {1, 2}, ConvPadding::kSameLower, {2, 2}, {1, 2});
  RunCase<Device, float, 4, 4>(stream, upper, ReqPattern(1));
  RunCase<Device, double, 4, 4>(stream, upper, ReqPattern(2));
  RunCase<Device, float, 4, 4>(stream, lower, ReqPattern(1));
  RunCase<Device, double, 4, 4>(stream, lower, ReqPattern(5));
  // 3-D, asymmetric in depth: in 6, k 2, s 1 -> total 1 -> (0, 1), lower (1, 0); channels last too.
  RunCase<Device, double, 5, 5>(stream, PaddingModeCase({1, 2, 6, 5, 4}, {2, 3, 3}, {1, 1, 1}, {1, 1, 1},
                                                        ConvPadding::kSame, {0, 1, 1}, {1, 1, 1}), ReqPattern(3));
  Case lower3 = PaddingModeCase({1, 2, 6, 5, 4}, {2, 3, 3}, {1, 1, 1}, {1, 1, 1}, ConvPadding::kSameLower, {1, 1, 1},
                                {0, 1, 1});
  RunCase<Device, double, 5, 5>(stream, lower3, ReqPattern(3));
  lower3.param.layout = ops::Layout::kNHWC;
  RunCase<Device, float, 5, 5>(stream, lower3, ReqPattern(4));
  // 1-D SAME_LOWER: in 7, k 4, s 2 -> out 4, total 3 -> (2, 1).
  RunCase<Device, double, 3, 3>(
      stream, PaddingModeCase({2, 3, 7}, {4}, {2}, {1}, ConvPadding::kSameLower, {2}, {1}), ReqPattern(2));
  // VALID ignores padding: out = (in - span) / stride + 1.
  RunCase<Device, float, 4, 4>(
      stream, PaddingModeCase({2, 2, 9, 8}, {3, 2}, {2, 1}, {1, 1}, ConvPadding::kValid, {0, 0}, {0, 0}), ReqPattern(4));
  // Explicit asymmetric padding through pad_end.
  {
    Case c = MakeCase({2, 3, 7, 6}, {3, 3}, {2, 1}, {0, 2}, {1, 1}, 2, 1, true);
    c.param.pad_end = {2, 1};
    c.ref_pe = {2, 1};
    RunCase<Device, float, 4, 4>(stream, c, ReqPattern(5));
  }
}

// Border modes (pad_mode, pad_value): the reference reads the border through RefPadIndex; each case in every
// mode, under a req pattern the case index picks.
TE_DEVICE_TEST_CASE("convolution border modes: constant value, edge, reflect and wrap", "[conv][border]") {
  struct Border {
    PadMode mode;
    std::optional<double> value;
  };
  const Border borders[] = {{PadMode::kConstant, 1.5}, {PadMode::kEdge, {}}, {PadMode::kReflect, {}},
                            {PadMode::kWrap, {}}};
  std::vector<Case> cases = {
      MakeCase({2, 4, 6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 1, true),
      MakeCase({1, 4, 7, 6}, {3, 3}, {2, 1}, {2, 1}, {1, 2}, 6, 2, false),  // groups, stride, dilation
      MakeCase({2, 3, 7}, {3}, {1}, {3}, {1}, 2, 1, true),                  // 1-D, border as wide as the data
      MakeCase({1, 2, 3}, {5}, {1}, {4}, {1}, 2, 1, true),                  // wider: reflect and wrap go round
      MakeCase({1, 2, 3, 4, 5}, {3, 3, 3}, {1, 1, 2}, {1, 1, 1}, {1, 1, 1}, 3, 1, true),  // 3-D
      MakeCase({3, 5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, 1, true, false),            // unbatched
      PaddingModeCase({1, 2, 9, 10}, {4, 3}, {1, 3}, {1, 2}, ConvPadding::kSameLower, {2, 2}, {1, 2}),
  };
  {
    Case c = MakeCase({2, 3, 7, 6}, {3, 3}, {2, 1}, {0, 2}, {1, 1}, 2, 1, true);  // asymmetric
    c.param.pad_end = {2, 1};
    c.ref_pe = {2, 1};
    cases.push_back(c);
  }
  size_t i = 0;
  for (const Border& border : borders) {
    for (Case c : cases) {
      c.param.pad_mode = border.mode;
      c.param.pad_value = border.value;
      c.padded_rows = i % 2 == 1;
      const Reqs reqs = ReqPattern(i++);
      INFO("border " << PadModeName(border.mode) << " data " << c.data.size() << "-D");
      if (c.data.size() == 3 && c.batched) RunCase<Device, double, 3, 3>(stream, c, reqs);
      if (c.data.size() == 3 && !c.batched) RunCase<Device, float, 3, 4>(stream, c, reqs);
      if (c.data.size() == 4) RunCase<Device, float, 4, 4>(stream, c, reqs);
      if (c.data.size() == 5) RunCase<Device, double, 5, 5>(stream, c, reqs);
    }
    Case last = cases[1];  // channels last, and half precision
    last.param.pad_mode = border.mode;
    last.param.pad_value = border.value;
    last.param.layout = ops::Layout::kNHWC;
    RunCase<Device, float, 4, 4>(stream, last, ReqPattern(i++));
    RunCase<Device, half_t, 4, 4>(stream, last, ReqPattern(i++));
  }
}

TE_DEVICE_TEST_CASE("convolution accepts an unbatched input as N = 1", "[conv]") {
  Case c = MakeCase({3, 7, 8}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, 4, 1, true, false);
  REQUIRE(ops::InferConvShapes(c.param, c.data).out == Dims{4, 7, 4});
  RunCase<Device, float, 3, 4>(stream, c, ReqPattern(0));
  RunCase<Device, float, 3, 4>(stream, c, ReqPattern(1));
  Case c1 = MakeCase({2, 9}, {3}, {2}, {1}, {1}, 3, 1, true, false);  // unbatched 1-D (C, W)
  RunCase<Device, double, 2, 3>(stream, c1, ReqPattern(2));
}

TE_DEVICE_TEST_CASE("convolution with an empty batch writes zero gradients", "[conv]") {
  Case c = MakeCase({0, 3, 5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, 1, true);
  RunCase<Device, float, 4, 4>(stream, c, Reqs{kWriteTo, kWriteTo, kWriteTo, kWriteTo});
  RunCase<Device, float, 4, 4>(stream, c, Reqs{kAddTo, kAddTo, kAddTo, kAddTo});
}

// ---- chunked vs folded workspace -------------------------------------------------------------------------
TE_DEVICE_TEST_CASE("convolution gives the same result under every workspace cap", "[conv][workspace]") {
  // The column matrix of one image: 3*3*3 rows x 6*5 positions = 810 doubles = 6480 bytes.
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.stride = {2, 1};
  p.pad = {1, 1};
  p.num_filter = 4;
  p.num_group = 1;
  const Dims dshape = {5, 3, 11, 5};
  const double MB = 1048576.0;
  const ops::ConvGeometry geom = ops::MakeConvGeometry(p, dshape);
  REQUIRE(geom.ColRows() == 27);
  REQUIRE(geom.OutSize() == 30);
  struct CapCase {
    double cap_mb;
    index_t images, positions;
  };
  const CapCase caps[] = {
      {1024.0, 5, 30},                // everything folded into one chunk
      {810.0 * 2 * 8 / MB, 2, 30},    // two images per chunk (5 = 2 + 2 + 1)
      {810.0 * 8 / MB, 1, 30},        // one image per chunk
      {27.0 * 7 * 8 / MB, 1, 7},      // positions of one image split into chunks of 7
      {0.0, 1, 1},                    // no cap at all: one column at a time
  };
  TensorContainer<cpu, 4, double> xh(ToShape<4>(dshape)), dyh(Shape4(5, 4, 6, 5));
  TensorContainer<cpu, 4, double> wh(Shape4(4, 3, 3, 3));
  TensorContainer<cpu, 1, double> bh(Shape1(4));
  FillRandom(xh.view());
  FillRandom(dyh.view());
  FillRandom(wh.view());
  FillRandom(bh.view());
  auto xd = DeviceCopy<Device>(xh.view(), stream, false);
  auto dyd = DeviceCopy<Device>(dyh.view(), stream, false);
  auto wd = DeviceCopy<Device>(wh.view(), stream, false);
  auto bd = DeviceCopy<Device>(bh.view(), stream, false);
  std::vector<double> y_first, dx_first, dw_first, db_first;
  for (const CapCase& cc : caps) {
    p.workspace = cc.cap_mb;
    const ops::Im2ColPlan plan = ops::PlanIm2Col(geom, sizeof(double), size_t(p.workspace * MB));
    INFO("cap " << cc.cap_mb << " MB");
    CHECK(plan.images == cc.images);
    CHECK(plan.positions == cc.positions);
    CHECK(ops::ConvolutionWorkspaceBytes(p, dshape, sizeof(double)) ==
          size_t(cc.images * 27 * cc.positions * sizeof(double)));
    TensorContainer<Device, 4, double> yd, dxd, dwd;
    TensorContainer<Device, 1, double> dbd;
    for (auto* t : {&yd, &dxd}) t->set_stream(stream);
    yd.Resize(Shape4(5, 4, 6, 5));
    dxd.Resize(ToShape<4>(dshape));
    dwd.set_stream(stream);
    dwd.Resize(Shape4(4, 3, 3, 3));
    dbd.set_stream(stream);
    dbd.Resize(Shape1(4));
    ops::ConvolutionForward(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
    ops::ConvolutionBackward(p, dyd.view(), xd.view(), wd.view(), kWriteTo, dxd.view(), kWriteTo, dwd.view(),
                             kWriteTo, dbd.view());
    const auto y = ToVec(ToHost(yd.view()).view()), dx = ToVec(ToHost(dxd.view()).view()),
               dw = ToVec(ToHost(dwd.view()).view()), db = ToVec(ToHost(dbd.view()).view());
    if (y_first.empty()) {
      y_first = y, dx_first = dx, dw_first = dw, db_first = db;
      continue;
    }
    auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > 1e-12 * std::max(1.0, std::fabs(a[i]))) return false;
      return true;
    };
    CHECK(same(y, y_first));
    CHECK(same(dx, dx_first));
    CHECK(same(dw, dw_first));
    CHECK(same(db, db_first));
  }
  // And the folded run against the reference (the others equal it).
  Case c;
  c.data = dshape;
  c.param = p;
  c.param.workspace = 1024.0;
  c.ref_pb = {1, 1};
  c.ref_pe = {1, 1};
  RunCase<Device, double, 4, 4>(stream, c, Reqs{});
  c.param.workspace = 27.0 * 7 * 8 / MB;
  RunCase<Device, double, 4, 4>(stream, c, ReqPattern(1));
}

// Runs case c forced on im2col_gemm in DType under a workspace for `images` joined images (the plan's
// own count), after checking that the plan joins them (one image: it does not join), keeps to the limit
// and is within ConvolutionWorkspaceBytes.
template <typename Device, typename DType, int dim>
void RunJoinedWgrad(Stream<Device>* stream, Case c, index_t images, const Reqs& reqs) {
  const ops::ConvGeometry g = ops::MakeConvGeometry(c.param, c.data);
  // One image's columns and transposed dY, and the alignment gap once (a power-of-two division: exact).
  const index_t per_image = (g.ColRows() + g.K) * g.OutSize();
  c.param.workspace = double((images * per_image + 64) * index_t(sizeof(DType))) / 1048576.0;
  const size_t limit = ops::WorkspaceLimitBytes(c.param.workspace);
  const ops::Im2ColPlan plan = ops::PlanIm2Col(g, sizeof(DType), limit, true);
  INFO(images << " joined images of " << sizeof(DType) << "-byte elements");
  CHECK(plan.JoinsImages() == (images > 1));
  if (images > 1) CHECK(plan.images == images);
  const size_t bytes = size_t(plan.WorkspaceElems()) * sizeof(DType);
  CHECK(bytes <= limit);
  CHECK(ops::ConvolutionWorkspaceBytes(c.param, c.data, sizeof(DType)) >= bytes);
  RunCase<Device, DType, dim, dim>(stream, c, reqs);
}

// A 1x1 unpadded kernel's data gradient, channels last, through im2col_gemm and pointwise_gemm: col2im stores
// each column entry into the one pixel that reads it (the GPU's once-per-entry kernel) after zeroing the
// images. Strides that skip pixels, groups, end padding past the last pixel, padded rows, a small workspace,
// and every req.
TE_DEVICE_TEST_CASE("convolution scatters a channels-last 1x1 data gradient once per entry", "[conv][layout]") {
  std::vector<Case> cases = {
      MakeCase({2, 6, 9, 11}, {1, 1}, {2, 3}, {}, {}, 5, 1, true),
      MakeCase({3, 6, 7, 5}, {1, 1}, {2, 2}, {}, {}, 4, 2, false),
      MakeCase({2, 4, 8, 9}, {1, 1}, {2, 3}, {}, {}, 3, 1, true),  // end padding: positions past the input
      MakeCase({2, 6, 9, 11}, {1, 1}, {3, 2}, {}, {}, 5, 1, true),
      MakeCase({2, 8, 6, 6}, {1, 1}, {1, 1}, {}, {}, 3, 1, false),  // stride 1: every pixel read
  };
  cases[2].param.pad_end = {1, 2};
  cases[2].ref_pe = {1, 2};
  cases[3].padded_rows = true;
  cases[3].param.workspace = 0.0005;  // 524 bytes: im2col_gemm's columns an image at a time (float), or
                                      // chunks of 10 and 8 positions (double)
  for (const char* name : {"im2col_gemm", "pointwise_gemm"}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (i == 2 && std::string(name) == "pointwise_gemm") continue;  // padding is not a 1x1 kernel's there
      Case c = cases[i];
      c.param.layout = ops::Layout::kNHWC;
      c.param.algorithm = name;
      INFO("algorithm " << name << " case " << i);
      for (size_t r = 0; r < 4; ++r) {
        RunCase<Device, float, 4, 4>(stream, c, ReqPattern(i + r));
        RunCase<Device, double, 4, 4>(stream, c, ReqPattern(i + r));
      }
    }
  }
}

// im2col_gemm's channels-first weight gradient joins a chunk's images where the filters outgrow an image's
// output (Cg*kk > P, conv_im2col_gemm.h): one product over the images' positions, dY's chunk transposed
// beside the columns. Forced, against the reference: groups, strides, 1-D and 3-D, padded rows, both
// stores, float, double and half; in each, caps that join all the images, two per chunk with one left
// over, and none (the cap fits one joined image, which runs the per-image form); alone and with the data
// gradient in the same call (which overwrites the joined columns image-major).
TE_DEVICE_TEST_CASE("convolution im2col_gemm joins a chunk's images for the weight gradient", "[conv][workspace]") {
  const std::vector<Case> cases = {
      MakeCase({5, 8, 6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, 1, true),   // 72 filter entries, 30 positions
      MakeCase({3, 12, 7, 7}, {3, 3}, {2, 2}, {0, 1}, {1, 1}, 8, 2, false),  // groups: 54 against 12
      MakeCase({4, 6, 9}, {5}, {2}, {2}, {1}, 4, 1, true),                   // 1-D: 30 against 5
      MakeCase({3, 4, 4, 5, 4}, {2, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 5, 1, true),  // 3-D: 72 against 60
  };
  const Reqs with_data{kNullOp, kWriteTo, kWriteTo, kNullOp}, weight_only{kNullOp, kNullOp, kAddTo, kAddTo};
  for (size_t i = 0; i < cases.size(); ++i) {
    Case c = cases[i];
    c.param.algorithm = "im2col_gemm";
    c.padded_rows = i % 2 == 1;
    const ops::ConvGeometry g = ops::MakeConvGeometry(c.param, c.data);
    REQUIRE(g.Cg() * g.KernelSize() > g.OutSize());
    for (index_t images : {g.N, index_t(2), index_t(1)}) {
      INFO("case " << i);
      if (c.data.size() == 3) {
        RunJoinedWgrad<Device, double, 3>(stream, c, images, with_data);
        RunJoinedWgrad<Device, float, 3>(stream, c, images, weight_only);
      } else if (c.data.size() == 4) {
        RunJoinedWgrad<Device, double, 4>(stream, c, images, with_data);
        RunJoinedWgrad<Device, float, 4>(stream, c, images, weight_only);
        RunJoinedWgrad<Device, half_t, 4>(stream, c, images, with_data);
      } else {
        RunJoinedWgrad<Device, double, 5>(stream, c, images, weight_only);
      }
    }
  }
}

// ---- finite differences ------------------------------------------------------------------------------------
// L(x, W, b) = sum(conv(x, W, b) * R): its gradients are the backward pass with dY = R.
TE_DEVICE_TEST_CASE("convolution gradients match finite differences in double", "[conv][grad]") {
  std::vector<Case> cases = {
      MakeCase({2, 4, 6, 5}, {3, 3}, {2, 1}, {1, 1}, {1, 2}, 4, 2, true),
      MakeCase({2, 2, 9}, {3}, {1}, {2}, {2}, 3, 1, true),
      MakeCase({1, 2, 4, 4, 5}, {2, 3, 2}, {1, 1, 2}, {1, 0, 1}, {1, 1, 1}, 2, 1, true),
  };
  // And each border that is data (reflect, edge, wrap, a constant value) on the first two.
  for (PadMode mode : {PadMode::kReflect, PadMode::kEdge, PadMode::kWrap, PadMode::kConstant}) {
    for (size_t k = 0; k < 2; ++k) {
      Case c = cases[k];
      c.param.pad_mode = mode;
      if (mode == PadMode::kConstant) c.param.pad_value = -0.75;
      cases.push_back(c);
    }
  }
  for (const Case& cs : cases) {
    INFO("pad_mode " << PadModeName(cs.param.pad_mode));
    const auto shapes = ops::InferConvShapes(cs.param, cs.data);
    auto run = [&](auto dshape_tag) {
      constexpr int dd = decltype(dshape_tag)::value;
      const Shape<dd> xs = ToShape<dd>(cs.data), ys = ToShape<dd>(shapes.out);
      const Shape<dd> ws = ToShape<dd>(shapes.weight);
      TensorContainer<cpu, dd, double> xh(xs), rh(ys), wh(ws);
      TensorContainer<cpu, 1, double> bh(Shape1(cs.param.num_filter));
      FillRandom(xh.view());
      FillRandom(rh.view());
      FillRandom(wh.view());
      FillRandom(bh.view());
      auto xd = DeviceCopy<Device>(xh.view(), stream, false);
      auto rd = DeviceCopy<Device>(rh.view(), stream, false);
      auto wd = DeviceCopy<Device>(wh.view(), stream, false);
      auto bd = DeviceCopy<Device>(bh.view(), stream, false);
      TensorContainer<Device, dd, double> yd, dxd, dwd;
      TensorContainer<Device, 1, double> dbd;
      yd.set_stream(stream), dxd.set_stream(stream), dwd.set_stream(stream), dbd.set_stream(stream);
      yd.Resize(ys), dxd.Resize(xs), dwd.Resize(ws), dbd.Resize(Shape1(cs.param.num_filter));
      const std::vector<double> R = ToVec(rh.view());
      auto loss = [&]() {
        ops::ConvolutionForward(cs.param, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
        const auto y = ToVec(ToHost(yd.view()).view());
        double l = 0;
        for (size_t i = 0; i < y.size(); ++i) l += y[i] * R[i];
        return l;
      };
      ops::ConvolutionBackward(cs.param, rd.view(), xd.view(), wd.view(), kWriteTo, dxd.view(), kWriteTo,
                               dwd.view(), kWriteTo, dbd.view());
      const auto gx = ToVec(ToHost(dxd.view()).view()), gw = ToVec(ToHost(dwd.view()).view()),
                 gb = ToVec(ToHost(dbd.view()).view());
      // Central differences on a sample of elements of each parameter (the host copy is perturbed and
      // sent again, so the op always reads an untouched device tensor layout).
      const double h = 1e-5;
      auto check = [&](auto& host, auto& dev, const std::vector<double>& grad, const char* what) {
        std::uniform_int_distribution<index_t> pick(0, host.shape_.Size() - 1);
        for (int t = 0; t < 6; ++t) {
          const index_t i = pick(Rng());
          const double orig = host.dptr_[i];
          host.dptr_[i] = orig + h;
          Copy(dev.view(), host.view(), stream);
          const double lp = loss();
          host.dptr_[i] = orig - h;
          Copy(dev.view(), host.view(), stream);
          const double lm = loss();
          host.dptr_[i] = orig;
          Copy(dev.view(), host.view(), stream);
          const double fd = (lp - lm) / (2 * h);
          INFO(what << " element " << i << ": finite difference " << fd << " vs backward " << grad[i]);
          CHECK(std::fabs(fd - grad[i]) <= 1e-6 * std::max(1.0, std::fabs(fd)));
        }
      };
      check(xh, xd, gx, "data");
      check(wh, wd, gw, "weight");
      check(bh, bd, gb, "bias");
    };
    if (cs.data.size() == 4) run(std::integral_constant<int, 4>());
    if (cs.data.size() == 3) run(std::integral_constant<int, 3>());
    if (cs.data.size() == 5) run(std::integral_constant<int, 5>());
  }
}

// ---- the workspace resource ------------------------------------------------------------------------------
// It grows to exactly the request in whole granules, never further (a caller's bound holds).
TE_DEVICE_TEST_CASE("workspace grows when needed and is reused", "[conv][workspace]") {
  ops::ReleaseWorkspace<Device>(stream);
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == 0);
  auto a = ops::get_space_typed<Device, 2, float>(Shape2(10, 100), stream);
  CHECK(a.shape_ == Shape2(10, 100));
  CHECK(a.CheckContiguous());
  const size_t held = ops::WorkspaceBytesHeld<Device>(stream);
  CHECK(held == InWorkspaceGranules(4000));
  auto b = ops::get_space_typed<Device, 1, double>(Shape1(50), stream);  // smaller: the same memory
  CHECK(static_cast<void*>(b.dptr_) == static_cast<void*>(a.dptr_));
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == held);
  CHECK(StreamOrDefault(stream)->workspace().HeldAfter(4100) == InWorkspaceGranules(4100));
  auto grown = ops::get_space_typed<Device, 1, float>(Shape1(1025), stream);  // a little larger: just that
  CHECK(grown.shape_ == Shape1(1025));
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == InWorkspaceGranules(4100));
  auto c = ops::get_space_typed<Device, 3, float>(Shape3(10, 100, 10), stream);  // larger: grows
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == InWorkspaceGranules(40000));
  // The memory is usable: write it and read it back.
  TensorContainer<cpu, 3, float> h(c.shape_);
  FillRandom(h.view());
  Copy(c, h.view(), stream);
  auto back = ToHost(c);
  CheckClose(back.view(), [&](const Shape<3>& i) { return AtX(h.view(), i); }, 0.0, "workspace round trip");
  // An op reports its need up front, and afterwards the stream holds at least that much.
  // (A 5 x 5 kernel: a 3 x 3 one's need also counts Winograd's transforms beside the columns.)
  ConvolutionParam p;
  p.kernel = {5, 5};
  p.pad = {2, 2};
  p.num_filter = 2;
  p.algorithm = "im2col_gemm";  // the algorithm whose need ConvolutionWorkspaceBytes reports (with 3 channels the
                                // heuristic would pick cpu_direct, which needs less)
  ops::ReleaseWorkspace<Device>(stream);
  const size_t need = ops::ConvolutionWorkspaceBytes(p, {2, 3, 40, 40}, sizeof(float));
  CHECK(need == size_t(2 * 75 * 1600 * 4));
  TensorContainer<cpu, 4, float> xh(Shape4(2, 3, 40, 40)), wh(Shape4(2, 3, 5, 5));
  TensorContainer<cpu, 1, float> bh(Shape1(2));
  FillRandom(xh.view()), FillRandom(wh.view()), FillRandom(bh.view());
  auto xd = DeviceCopy<Device>(xh.view(), stream, false);
  auto wd = DeviceCopy<Device>(wh.view(), stream, false);
  auto bd = DeviceCopy<Device>(bh.view(), stream, false);
  TensorContainer<Device, 4, float> yd;
  yd.set_stream(stream);
  yd.Resize(Shape4(2, 2, 40, 40));
  ops::ConvolutionForward(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == InWorkspaceGranules(need));
  const size_t after_first = ops::WorkspaceBytesHeld<Device>(stream);
  ops::ConvolutionForward(p, xd.view(), wd.view(), bd.view(), kAddTo, yd.view());  // reused, not grown
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == after_first);
  Sync(stream);
  ops::ReleaseWorkspace<Device>(stream);
  CHECK(ops::WorkspaceBytesHeld<Device>(stream) == 0);
}

// The workspace belongs to its stream: another stream, or another thread's default stream, has its own.
TE_DEVICE_TEST_CASE("each stream owns its workspace, and so does each thread's default stream",
                    "[conv][workspace]") {
  Stream<Device>* own = NewStream<Device>();
  ops::ReleaseAllWorkspaces<Device>();
  ops::get_space_typed<Device, 1, float>(Shape1(1000), own);
  CHECK(ops::WorkspaceBytesHeld<Device>(own) >= 4000);
  CHECK(ops::WorkspaceBytesHeld<Device>(nullptr) == 0);
  size_t other_before = 1, other_after = 0;
  std::thread([&] {
    other_before = ops::WorkspaceBytesHeld<Device>(nullptr);
    ops::get_space_typed<Device, 1, float>(Shape1(100), nullptr);
    other_after = ops::WorkspaceBytesHeld<Device>(nullptr);
  }).join();  // the thread's default stream, and its workspace, end with it
  CHECK(other_before == 0);
  CHECK(other_after >= 400);
  CHECK(ops::WorkspaceBytesHeld<Device>(nullptr) == 0);
  ops::ReleaseAllWorkspaces<Device>();
  CHECK(ops::WorkspaceBytesHeld<Device>(own) == 0);
  ops::get_space_typed<Device, 1, float>(Shape1(1000), own);
  own->Wait();
  DeleteStream(own);  // frees its workspace
}

// ---- shape and cost inference, errors ---------------------------------------------------------------------
TE_DEVICE_TEST_CASE("convolution shape and cost inference", "[conv]") {
  ConvolutionParam p;
  p.kernel = {7, 7};
  p.stride = {2, 2};
  p.pad = {3, 3};
  p.num_filter = 64;
  const auto s = ops::InferConvShapes(p, {32, 3, 224, 224});
  CHECK(s.out == Dims{32, 64, 112, 112});
  CHECK(s.weight == Dims{64, 3, 7, 7});
  CHECK(s.bias == Dims{64});
  const auto c = ops::InferConvCost(p, {32, 3, 224, 224}, 4);
  const double macs = 32.0 * 64 * 112 * 112 * 3 * 49;
  CHECK(c.forward_flops == 2 * macs + 32.0 * 64 * 112 * 112);
  CHECK(c.backward_data_flops == 2 * macs);
  CHECK(c.backward_weight_flops == 2 * macs);
  CHECK(c.forward_bytes == 4.0 * (32.0 * 3 * 224 * 224 + 64 * 3 * 49 + 64 + 32.0 * 64 * 112 * 112));
  p.no_bias = true;
  p.num_group = 1;
  p.kernel = {3, 3, 3};
  p.stride = {};
  p.pad = {};
  p.num_filter = 8;
  const auto s3 = ops::InferConvShapes(p, {2, 4, 5, 6, 7});
  CHECK(s3.out == Dims{2, 8, 3, 4, 5});
  CHECK(s3.weight == Dims{8, 4, 3, 3, 3});
  CHECK(s3.bias.empty());
  // The 3-D benchmark case: 1x1x256^3 input, 8 filters 7x7x7.
  ConvolutionParam big;
  big.kernel = {7, 7, 7};
  big.num_filter = 8;
  const auto s_big = ops::InferConvShapes(big, {1, 1, 256, 256, 256});
  CHECK(s_big.out == Dims{1, 8, 250, 250, 250});
}

using te_test::RequireError;

TE_DEVICE_TEST_CASE("convolution rejects bad parameters with useful messages", "[conv][error]") {
  auto base = [] {
    ConvolutionParam p;
    p.kernel = {3, 3};
    p.stride = {1, 1};
    p.pad = {1, 1};
    p.dilate = {1, 1};
    p.num_filter = 4;
    p.num_group = 2;
    return p;
  };
  const Dims data = {2, 6, 8, 8};
  auto infer = [&](ConvolutionParam p, Dims d = {}) {
    return [p, d, &data] { ops::InferConvShapes(p, d.empty() ? data : d); };
  };
  ConvolutionParam p = base();
  p.stride = {1, 0};
  RequireError(infer(p), {"stride[1] = 0", "(1,0)"});
  p = base();
  p.dilate = {0, 1};
  RequireError(infer(p), {"dilate[0] = 0"});
  p = base();
  p.pad = {-1, 1};
  RequireError(infer(p), {"pad[0] = -1"});
  p = base();
  p.pad_end = {1, -2};
  RequireError(infer(p), {"pad_end[1] = -2"});
  p = base();
  p.pad_mode = PadMode::kReflect;
  p.pad_value = 2.0;
  RequireError(infer(p), {"pad_value 2", "constant", "reflect"});
  p = base();
  p.pad_mode = static_cast<PadMode>(9);
  RequireError(infer(p), {"unknown pad_mode 9"});
  p = base();
  p.pad_mode = PadMode::kEdge;
  RequireError(infer(p, {2, 6, 0, 8}), {"edge padding of spatial dimension 0", "(2,6,0,8)", "has none"});
  p = base();
  p.kernel = {0, 3};
  RequireError(infer(p), {"kernel[0] = 0"});
  p = base();
  p.kernel = {11, 3};
  RequireError(infer(p), {"kernel[0] = 11", "spans 11", "(2,6,8,8)", "10 after padding"});
  p = base();
  p.dilate = {1, 5};
  RequireError(infer(p), {"kernel[1] = 3", "dilate 5", "spans 11"});
  p = base();
  p.num_group = 4;
  RequireError(infer(p), {"input channels C = 6", "num_group = 4"});
  p = base();
  p.num_filter = 5;
  RequireError(infer(p), {"num_filter = 5", "num_group = 2"});
  p = base();
  p.num_group = 0;
  RequireError(infer(p), {"num_group = 0"});
  p = base();
  p.num_filter = 0;
  RequireError(infer(p), {"num_filter = 0"});
  p = base();
  p.stride = {1, 1, 1};
  RequireError(infer(p), {"stride (1,1,1)", "3 entries", "2 spatial"});
  p = base();
  p.kernel = {3, 3, 3, 3};
  RequireError(infer(p, {1, 2, 3, 4, 5, 6}), {"1, 2 or 3 spatial dimensions"});
  p = base();
  RequireError(infer(p, {6, 8}), {"data shape (6,8)", "expected 4 dimensions"});
  p = base();
  p.padding = ConvPadding::kSame;
  RequireError(infer(p), {"SAME_UPPER", "pad (1,1)"});
  p.padding = ConvPadding::kSameLower;
  RequireError(infer(p), {"SAME_LOWER", "pad (1,1)"});
  p = base();
  p.padding = static_cast<ConvPadding>(9);
  RequireError(infer(p), {"unknown padding mode 9"});

  // Tensors that do not match the inferred shapes.
  p = base();
  TensorContainer<Device, 4, float> x(Shape4(2, 6, 8, 8)), w(Shape4(4, 3, 3, 3)), y(Shape4(2, 4, 8, 8));
  TensorContainer<Device, 4, float> w_bad(Shape4(4, 6, 3, 3)), y_bad(Shape4(2, 4, 7, 8));
  TensorContainer<Device, 1, float> b(Shape1(4)), b_bad(Shape1(3));
  RequireError([&] { ops::ConvolutionForward(p, x.view(), w_bad.view(), b.view(), kWriteTo, y.view()); },
               {"weight shape (4,6,3,3)", "(4,3,3,3)"});
  RequireError([&] { ops::ConvolutionForward(p, x.view(), w.view(), b_bad.view(), kWriteTo, y.view()); },
               {"bias shape (3,)", "(4,)"});
  RequireError([&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y_bad.view()); },
               {"output shape (2,4,7,8)", "(2,4,8,8)"});
  RequireError([&] {
    ops::ConvolutionBackward(p, y.view(), x.view(), w.view(), kWriteTo, x.view(), kWriteTo, w_bad.view(), kWriteTo,
                             b.view());
  }, {"weight gradient shape (4,6,3,3)"});
  RequireError([&] {
    ops::ConvolutionBackward(p, y.view(), x.view(), w.view(), kWriteTo, x.view(), kWriteTo, w.view(), kWriteTo,
                             b_bad.view());
  }, {"bias gradient shape (3,)"});
  TensorContainer<Device, 4, float> y_padded(Shape4(2, 4, 8, 8), true);  // rows padded to 16 floats
  RequireError([&] { ops::ConvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y_padded.view()); },
               {"output of shape (2,4,8,8) must be contiguous"});
  // A weight of another rank than the kernel.
  TensorContainer<Device, 3, float> w1(Shape3(4, 3, 3));
  TensorContainer<Device, 3, float> x1(Shape3(2, 6, 8)), y1(Shape3(2, 4, 8));
  RequireError([&] { ops::ConvolutionForward(p, x1.view(), w1.view(), b.view(), kWriteTo, y1.view()); },
               {"1 spatial dimensions", "kernel (3,3)"});
}

// Hostile 64-bit values in the parameters or the data shape: an Error naming the operation, never a wrapped
// (negative or tiny) shape, cost or workspace size.
TEST_CASE("convolution inference rejects values whose products overflow", "[cpu][conv][hostile]") {
  const index_t big = index_t(1) << 62;
  auto param = [](Dims kernel, Dims dilate, Dims pad, index_t K = 4) {
    ConvolutionParam p;
    p.kernel = kernel;
    p.dilate = dilate;
    p.pad = pad;
    p.num_filter = K;
    return p;
  };
  auto all = [](const ConvolutionParam& p, const Dims& d) {
    return [p, d] {
      ops::InferConvShapes(p, d);
      ops::InferConvCost(p, d, 4);
      ops::ConvolutionWorkspaceBytes(p, d, 8);
    };
  };
  RequireError(all(param({big, 3}, {4, 1}, {}), {1, 1, 8, 8}), {"(kernel - 1) * dilate", "4611686018427387903 * 4"});
  RequireError(all(param({3, 3}, {}, {big, big}), {1, 1, 8, 8}), {"Convolution: input + pad"});
  RequireError(all(param({3, 3}, {}, {1, 1}), {big, big, 8, 8}), {"Convolution: tensor size", "overflows"});
  RequireError(all(param({3, 3}, {}, {1, 1}), {1, 1, big, big}), {"Convolution: tensor size"});
  RequireError(all(param({3, 3}, {}, {1, 1}, big), {2, 1, 8, 8}), {"Convolution: tensor size"});
  // The column matrix of one image: C * kernel * positions elements.
  RequireError(all(param({1, 1}, {}, {}), {1, index_t(1) << 40, 1 << 12, 1 << 12}), {"Convolution: tensor size"});
  ConvolutionParam same = param({3, 3}, {}, {});
  same.padding = ConvPadding::kSame;
  same.stride = {std::numeric_limits<index_t>::max(), 1};  // input + stride - 1 overflows
  RequireError(all(same, {1, 1, 8, 8}), {"SAME padding"});
  ConvolutionParam nan_ws = param({3, 3}, {}, {1, 1});
  for (double ws : {std::nan(""), HUGE_VAL, -1.0}) {
    nan_ws.workspace = ws;
    RequireError(all(nan_ws, {1, 1, 8, 8}), {"workspace", "must be a finite number >= 0"});
  }
}
