// deconv_test.cc — the Deconvolution operator (ops/deconvolution.h) against a naive float64 transposed
// convolution written from the definition (y[o] += x[i] W[t] where o = i stride - pad + t dilate), on fresh
// random inputs: 1-D / 2-D / 3-D, groups (depthwise too), strides, dilations, asymmetric padding, adj,
// target_shape, SAME_UPPER / SAME_LOWER / VALID, unbatched data, channels last, padded output rows, every
// req, every dtype, every convolution algorithm that implements the passes; gradients by central differences
// and the adjoint identities in double; shapes worked out by hand; errors for every bad parameter. The ONNX
// oracle's ConvTranspose cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/ops/deconvolution.h>

namespace {
using namespace te_test;
using ops::ConvPadding;
using ops::DeconvolutionParam;
using Dims = std::vector<index_t>;

// One case: the data shape (channels first) and the parameters; channels last runs permuted copies.
struct DeconvCase {
  Dims data;
  bool batched = true;
  DeconvolutionParam param;
  bool padded_rows = false;  // the output and its gradient with padded rows
};

DeconvCase MakeDeconv(Dims data, Dims kernel, Dims stride, Dims dilate, Dims pad, Dims adj, index_t K, index_t G,
                      bool bias, bool batched = true) {
  DeconvCase c;
  c.data = data;
  c.batched = batched;
  c.param.kernel = kernel;
  c.param.stride = stride;
  c.param.dilate = dilate;
  c.param.pad = pad;
  c.param.adj = adj;
  c.param.num_filter = K;
  c.param.num_group = G;
  c.param.no_bias = !bias;
  return c;
}

// The reference: every case as 3-D with leading extents of 1. Data (N, C, in), weight (C, K/G, k), output
// (N, K, out); the padding before (pb) and the output extents by deconv_param.h's rules, worked out here.
struct RefDeconv {
  index_t N = 1, C = 1, K = 1, G = 1;
  index_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
          pb[3] = {0, 0, 0};
  index_t Cg() const { return C / G; }
  index_t Kg() const { return K / G; }
  index_t OutSize() const { return out[0] * out[1] * out[2]; }
  // Calls f(output index, data index, weight index) for every product of the transposed convolution.
  template <typename F>
  void ForEachTap(F f) const {
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t iz = 0; iz < in[0]; ++iz)
          for (index_t iy = 0; iy < in[1]; ++iy)
            for (index_t ix = 0; ix < in[2]; ++ix)
              for (index_t fk = 0; fk < Kg(); ++fk)
                for (index_t tz = 0; tz < k[0]; ++tz)
                  for (index_t ty = 0; ty < k[1]; ++ty)
                    for (index_t tx = 0; tx < k[2]; ++tx) {
                      const index_t oz = iz * s[0] - pb[0] + tz * d[0], oy = iy * s[1] - pb[1] + ty * d[1],
                                    ox = ix * s[2] - pb[2] + tx * d[2];
                      if (oz < 0 || oz >= out[0] || oy < 0 || oy >= out[1] || ox < 0 || ox >= out[2]) continue;
                      const index_t fo = (c / Cg()) * Kg() + fk;
                      f((((n * K + fo) * out[0] + oz) * out[1] + oy) * out[2] + ox,
                        (((n * C + c) * in[0] + iz) * in[1] + iy) * in[2] + ix,
                        (((c * Kg() + fk) * k[0] + tz) * k[1] + ty) * k[2] + tx);
                    }
  }
};

RefDeconv MakeRef(const DeconvCase& cs) {
  const DeconvolutionParam& p = cs.param;
  const size_t nd = p.kernel.size(), off = 3 - nd, first = cs.batched ? 2 : 1;
  RefDeconv r;
  r.N = cs.batched ? cs.data[0] : 1;
  r.C = cs.data[first - 1];
  r.K = p.num_filter;
  r.G = p.num_group;
  auto at = [](const Dims& v, size_t i, index_t fill) { return v.empty() ? fill : v[i]; };
  for (size_t i = 0; i < nd; ++i) {
    const index_t in = cs.data[first + i], k = p.kernel[i], s = at(p.stride, i, 1), d = at(p.dilate, i, 1);
    const index_t full = s * (in - 1) + (k - 1) * d + 1 + at(p.adj, i, 0);
    index_t pb = at(p.pad, i, 0), pe = at(p.pad_end, i, pb);
    if (!p.target_shape.empty() || p.padding == ConvPadding::kSameUpper || p.padding == ConvPadding::kSameLower) {
      const index_t total = full - (p.target_shape.empty() ? in * s : p.target_shape[i]);
      pb = p.padding == ConvPadding::kSameUpper ? total / 2 : (total + 1) / 2;  // the odd pixel after / before
      pe = total - pb;
    } else if (p.padding == ConvPadding::kValid) {
      pb = pe = 0;
    }
    r.in[off + i] = in;
    r.k[off + i] = k;
    r.s[off + i] = s;
    r.d[off + i] = d;
    r.pb[off + i] = pb;
    r.out[off + i] = full - pb - pe;
  }
  return r;
}

template <typename DType>
double SumTol(index_t terms) {  // sums of `terms` products of values in [-1, 1]
  return Tol<DType>() * std::max(1.0, std::sqrt(double(terms)) / 2);
}

struct Reqs {
  OpReqType fwd = kWriteTo, data = kWriteTo, weight = kWriteTo, bias = kWriteTo;
};
Reqs ReqPattern(size_t i) {
  static const Reqs patterns[] = {
      {kWriteTo, kWriteTo, kWriteTo, kWriteTo},   {kAddTo, kAddTo, kAddTo, kAddTo},
      {kWriteInplace, kWriteTo, kAddTo, kNullOp}, {kNullOp, kAddTo, kNullOp, kWriteTo},
      {kWriteTo, kNullOp, kWriteTo, kAddTo},      {kAddTo, kWriteInplace, kWriteInplace, kWriteInplace},
  };
  return patterns[i % (sizeof(patterns) / sizeof(patterns[0]))];
}

// Forward and backward of one case against the reference; ddim the data's rank, wdim the weight's.
template <typename Device, typename DType, int ddim, int wdim>
void RunDeconv(Stream<Device>* stream, const DeconvCase& cs, Reqs reqs) {
  const bool last = cs.param.layout == ops::Layout::kNHWC;
  DeconvolutionParam first_param = cs.param;
  first_param.layout = ops::Layout::kNCHW;
  const RefDeconv r = MakeRef(cs);
  const ops::DeconvShapes shapes = ops::InferDeconvShapes(first_param, cs.data);
  Dims want_out = cs.batched ? Dims{r.N, r.K} : Dims{r.K}, want_w = {r.C, r.Kg()};
  for (size_t i = 0; i < cs.param.kernel.size(); ++i) {
    want_out.push_back(r.out[3 - cs.param.kernel.size() + i]);
    want_w.push_back(cs.param.kernel[i]);
  }
  REQUIRE(shapes.out == want_out);
  REQUIRE(shapes.weight == want_w);
  REQUIRE(shapes.bias == (cs.param.no_bias ? Dims{} : Dims{r.K}));
  if (last) {
    const ops::DeconvShapes cl = ops::InferDeconvShapes(cs.param, ChannelsLastShape(cs.data, cs.batched));
    REQUIRE(cl.out == ChannelsLastShape(shapes.out, cs.batched));
    REQUIRE(cl.weight == ChannelsLastShape(shapes.weight, true));
  }
  const Shape<ddim> xs = ToShape<ddim>(cs.data), ys = ToShape<ddim>(shapes.out);
  const Shape<wdim> ws = ToShape<wdim>(shapes.weight);
  auto xh = Uniform<ddim, DType>(xs), dyh = Uniform<ddim, DType>(ys);
  auto wh = Uniform<wdim, DType>(ws);
  auto bh = Uniform<1, DType>(Shape1(r.K));
  TensorContainer<cpu, ddim, DType> yh(ys), dxh(xs);
  TensorContainer<cpu, wdim, DType> dwh(ws);
  TensorContainer<cpu, 1, DType> dbh(Shape1(r.K));
  const Vec x = ToVec(xh.view()), w = ToVec(wh.view()), b = ToVec(bh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), reqs.fwd), dx0 = Prefill(dxh.view(), reqs.data);
  const Vec dw0 = Prefill(dwh.view(), reqs.weight), db0 = Prefill(dbh.view(), reqs.bias);
  Vec y(dy.size(), 0.0), dx(x.size(), 0.0), dw(w.size(), 0.0), db(b.size(), 0.0);
  r.ForEachTap([&](index_t yi, index_t xi, index_t wi) {
    y[size_t(yi)] += x[size_t(xi)] * w[size_t(wi)];
    dx[size_t(xi)] += dy[size_t(yi)] * w[size_t(wi)];
    dw[size_t(wi)] += dy[size_t(yi)] * x[size_t(xi)];
  });
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t f = size_t((index_t(i) / r.OutSize()) % r.K);
    if (!cs.param.no_bias) y[i] += b[f];
    db[f] += dy[i];
  }

  auto xd = Dev<Device>(Permuted(xh.view(), last, true, cs.batched).view(), stream);
  auto dxd = Dev<Device>(Permuted(dxh.view(), last, true, cs.batched).view(), stream);
  auto yd = Dev<Device>(Permuted(yh.view(), last, true, cs.batched).view(), stream, cs.padded_rows);
  auto dyd = Dev<Device>(Permuted(dyh.view(), last, true, cs.batched).view(), stream, cs.padded_rows);
  auto wd = Dev<Device>(Permuted(wh.view(), last, true, true).view(), stream);
  auto dwd = Dev<Device>(Permuted(dwh.view(), last, true, true).view(), stream);
  auto bd = Dev<Device>(bh.view(), stream), dbd = Dev<Device>(dbh.view(), stream);
  ops::DeconvolutionForward(cs.param, xd.view(), wd.view(), bd.view(), reqs.fwd, yd.view());
  ops::DeconvolutionBackward(cs.param, dyd.view(), xd.view(), wd.view(), reqs.data, dxd.view(), reqs.weight,
                             dwd.view(), reqs.bias, dbd.view());
  auto back = [&](const auto& d, bool batched) { return Permuted(ToHost(d.view()).view(), last, false, batched); };
  INFO("data " << xs << " weight " << ws << " out " << ys << " group " << r.G << " reqs fwd/data/weight/bias "
               << OpReqName(reqs.fwd) << "/" << OpReqName(reqs.data) << "/" << OpReqName(reqs.weight) << "/"
               << OpReqName(reqs.bias) << " dtype " << DataType<DType>::name() << " layout "
               << ops::LayoutName(cs.param.layout) << " padding " << ops::ConvPaddingName(cs.param.padding)
               << " padded rows " << cs.padded_rows << " algorithm '" << cs.param.algorithm << "'");
  const index_t taps = r.k[0] * r.k[1] * r.k[2];
  CheckVec(back(yd, cs.batched).view(), Expect(reqs.fwd, y0, y), SumTol<DType>(r.Cg() * taps), "forward");
  CheckVec(back(dxd, cs.batched).view(), Expect(reqs.data, dx0, dx), SumTol<DType>(r.Kg() * taps), "data grad");
  CheckVec(back(dwd, true).view(), Expect(reqs.weight, dw0, dw),
           SumTol<DType>(r.N * r.in[0] * r.in[1] * r.in[2]), "weight grad");
  // With no_bias the bias gradient is never touched, whatever its req.
  CheckVec(ToHost(dbd.view()).view(), Expect(cs.param.no_bias ? kNullOp : reqs.bias, db0, db),
           SumTol<DType>(r.N * r.OutSize()), "bias grad");
}

template <typename Device, typename DType>
void RunAnyRank(Stream<Device>* stream, const DeconvCase& c, Reqs reqs) {
  const size_t nd = c.param.kernel.size();
  if (c.batched) {
    if (nd == 1) RunDeconv<Device, DType, 3, 3>(stream, c, reqs);
    if (nd == 2) RunDeconv<Device, DType, 4, 4>(stream, c, reqs);
    if (nd == 3) RunDeconv<Device, DType, 5, 5>(stream, c, reqs);
  } else {
    if (nd == 1) RunDeconv<Device, DType, 2, 3>(stream, c, reqs);
    if (nd == 2) RunDeconv<Device, DType, 3, 4>(stream, c, reqs);
    if (nd == 3) RunDeconv<Device, DType, 4, 5>(stream, c, reqs);
  }
}

// Groups, depthwise, strides, dilations, asymmetric padding, adj, pointwise; 1-D, 2-D, 3-D.
std::vector<DeconvCase> Grid() {
  std::vector<DeconvCase> v;
  v.push_back(MakeDeconv({2, 4, 5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 6, 2, true));
  v.push_back(MakeDeconv({1, 3, 4, 4}, {4, 4}, {2, 2}, {}, {1, 1}, {}, 2, 1, false));
  v.push_back(MakeDeconv({2, 4, 3, 5}, {3, 2}, {1, 3}, {2, 1}, {0, 1}, {0, 2}, 4, 4, true));  // depthwise
  v.back().param.pad_end = {2, 0};
  v.push_back(MakeDeconv({1, 2, 5, 5}, {1, 1}, {}, {}, {}, {}, 3, 1, true));  // pointwise
  v.push_back(MakeDeconv({2, 4, 5, 5}, {1, 1}, {}, {}, {}, {}, 3, 1, true));  // a batch of them (staged on the GPU)
  v.push_back(MakeDeconv({2, 4, 3, 3}, {1, 1}, {2, 2}, {}, {}, {}, 3, 1, false));  // strided (gathered)
  v.push_back(MakeDeconv({3, 2, 4, 3}, {3, 3}, {3, 2}, {1, 2}, {2, 0}, {2, 1}, 3, 1, false));
  v.push_back(MakeDeconv({2, 6, 3, 4}, {2, 3}, {2, 1}, {}, {}, {}, 4, 2, true));
  v.back().padded_rows = true;
  v.push_back(MakeDeconv({2, 3, 7}, {3}, {2}, {2}, {1}, {1}, 4, 1, true));
  v.push_back(MakeDeconv({1, 4, 5}, {4}, {3}, {}, {0}, {2}, 2, 2, false));
  v.back().padded_rows = true;
  v.push_back(MakeDeconv({1, 2, 3, 4, 3}, {2, 3, 2}, {2, 1, 2}, {}, {0, 1, 1}, {1, 0, 0}, 3, 1, true));
  v.push_back(MakeDeconv({2, 2, 2, 3, 2}, {3, 3, 3}, {1, 1, 1}, {1, 2, 1}, {1, 1, 1}, {}, 2, 2, true));
  v.push_back(MakeDeconv({2, 4, 6, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 0}, {}, 6, 2, true));  // 3 x 3, stride 1
  return v;
}

// The padding modes: target_shape (MXNet's rule, and with SAME_UPPER), SAME_UPPER / SAME_LOWER, VALID.
std::vector<DeconvCase> ModeCases() {
  std::vector<DeconvCase> v;
  DeconvCase c = MakeDeconv({2, 3, 4, 5}, {3, 4}, {2, 2}, {1, 1}, {}, {}, 4, 1, true);
  c.param.target_shape = {8, 9};  // full 9 x 12: total 1 and 3, the odd pixel before
  v.push_back(c);
  c.param.padding = ConvPadding::kSameUpper;  // the odd pixel after
  v.push_back(c);
  c.param.target_shape = {};
  for (ConvPadding m : {ConvPadding::kSameUpper, ConvPadding::kSameLower, ConvPadding::kValid}) {
    c.param.padding = m;
    v.push_back(c);
  }
  DeconvCase d = MakeDeconv({1, 2, 5}, {4}, {3}, {2}, {}, {1}, 2, 2, false);  // full 3 * 4 + 7 + 1 = 20: total 5
  d.param.padding = ConvPadding::kSameLower;
  v.push_back(d);
  d.param.padding = ConvPadding::kExplicit;
  d.param.target_shape = {14};
  v.push_back(d);
  return v;
}

}  // namespace

TE_DEVICE_TEST_CASE("deconvolution float and double match the float64 reference over the grid", "[deconv]") {
  const std::vector<DeconvCase> grid = Grid();
  for (size_t i = 0; i < grid.size(); ++i) {
    RunAnyRank<Device, float>(stream, grid[i], ReqPattern(i));
    RunAnyRank<Device, double>(stream, grid[i], ReqPattern(i + 3));
  }
}

TE_DEVICE_TEST_CASE("deconvolution every req on one geometry", "[deconv]") {
  const DeconvCase c = Grid()[0];
  for (OpReqType req : kAllReqs) {
    RunAnyRank<Device, float>(stream, c, Reqs{req, req, req, req});
    RunAnyRank<Device, float>(stream, c, Reqs{req, kNullOp, req, req});
    RunAnyRank<Device, float>(stream, c, Reqs{req, req, kNullOp, req});
  }
}

TE_DEVICE_TEST_CASE("deconvolution target_shape, SAME_UPPER, SAME_LOWER and VALID", "[deconv]") {
  const std::vector<DeconvCase> modes = ModeCases();
  for (size_t i = 0; i < modes.size(); ++i) RunAnyRank<Device, double>(stream, modes[i], ReqPattern(i));
}

TE_DEVICE_TEST_CASE("deconvolution channels last, unbatched, half and bf16", "[deconv][layout]") {
  const std::vector<DeconvCase> grid = Grid();
  for (size_t i : {0, 2, 6, 9}) {
    DeconvCase c = grid[i];
    c.param.layout = ops::Layout::kNHWC;
    RunAnyRank<Device, float>(stream, c, ReqPattern(i));
  }
  DeconvCase unbatched = MakeDeconv({4, 3, 5}, {3, 3}, {2, 1}, {}, {1, 0}, {1, 0}, 6, 2, true, false);
  RunAnyRank<Device, float>(stream, unbatched, ReqPattern(0));
  unbatched.param.layout = ops::Layout::kNHWC;
  RunAnyRank<Device, double>(stream, unbatched, ReqPattern(1));
  RunAnyRank<Device, double>(stream, MakeDeconv({3, 7}, {3}, {2}, {}, {1}, {}, 2, 1, true, false), ReqPattern(2));
  for (size_t i : {0, 1, 6}) {
    RunAnyRank<Device, half_t>(stream, grid[i], ReqPattern(i));
    RunAnyRank<Device, bf16_t>(stream, grid[i], ReqPattern(i + 1));
  }
}

TE_DEVICE_TEST_CASE("deconvolution with an empty batch writes a zero weight gradient", "[deconv]") {
  RunAnyRank<Device, float>(stream, MakeDeconv({0, 3, 4, 4}, {3, 3}, {2, 2}, {}, {1, 1}, {}, 2, 1, true),
                            Reqs{kWriteTo, kWriteTo, kWriteTo, kWriteTo});
}

// Each convolution algorithm, forced by name, on the grid cases it implements a pass of; the passes it
// does not implement (Winograd's weight gradient, all but shifted_gemm's) run with the req kNullOp.
TE_DEVICE_TEST_CASE("deconvolution through every convolution algorithm that implements it", "[deconv][algorithm]") {
  for (const std::string& name : ops::ListConvAlgorithms<Device, float>()) {
    INFO("algorithm " << name);
    const auto* a = ops::ConvRegistry<Device, float>::Get().Find(name);
    REQUIRE(a != nullptr);
    int ran = 0;
    const std::vector<DeconvCase> grid = Grid();
    for (size_t i = 0; i < grid.size(); ++i) {
      DeconvCase c = grid[i];
      c.param.algorithm = name;
      const ops::ConvProblem pr = ops::MakeConvProblem<Device, float>(ops::MakeDeconvGeometry(c.param, c.data),
                                                                      stream, !c.padded_rows, c.param.workspace);
      // The deconvolution's forward is the convolution's data gradient, its data gradient the forward.
      const bool fwd = a->CanImplement(pr, ops::ConvPass::kBackwardData).ok,
                 data = a->CanImplement(pr, ops::ConvPass::kForward).ok,
                 weight = a->CanImplement(pr, ops::ConvPass::kBackwardWeight).ok;
      if (!fwd && !data && !weight) continue;
      Reqs reqs = ReqPattern(i);
      if (!fwd) reqs.fwd = kNullOp;
      if (!data) reqs.data = kNullOp;
      if (!weight) reqs.weight = kNullOp;
      RunAnyRank<Device, float>(stream, c, reqs);
      ++ran;
    }
    if (name != "cutlass_implicit_gemm") CHECK(ran > 0);  // tensor-core kernels: aligned channels-last problems
  }
}

// L(x, W, b) = sum(deconv(x, W, b) * R): its gradients are the backward pass with dY = R. Linear in x and in
// W: <deconv(x, W), R> = <x, dx> = <W, dW> with no bias.
TE_DEVICE_TEST_CASE("deconvolution gradients: finite differences and the adjoint identities in double",
                    "[deconv][grad]") {
  for (DeconvCase cs : {MakeDeconv({2, 4, 3, 2}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {1, 0}, 4, 2, true),
                        MakeDeconv({1, 2, 4}, {3}, {2}, {}, {1}, {1}, 3, 1, true)}) {
    auto run = [&](auto rank) {
      constexpr int dd = decltype(rank)::value;
      const ops::DeconvShapes shapes = ops::InferDeconvShapes(cs.param, cs.data);
      const Shape<dd> xs = ToShape<dd>(cs.data), ys = ToShape<dd>(shapes.out), ws = ToShape<dd>(shapes.weight);
      const index_t K = cs.param.num_filter;
      auto xh = Uniform<dd, double>(xs), wh = Uniform<dd, double>(ws), rh = Uniform<dd, double>(ys);
      auto bh = Uniform<1, double>(Shape1(K));
      const Vec x = ToVec(xh.view()), w = ToVec(wh.view()), b = ToVec(bh.view()), R = ToVec(rh.view());
      auto forward = [&](const Vec& xv, const Vec& wv, const Vec& bv, bool bias) {
        DeconvolutionParam p = cs.param;
        p.no_bias = !bias;
        auto xd = Dev<Device>(FromVec<dd, double>(xs, xv).view(), stream);
        auto wd = Dev<Device>(FromVec<dd, double>(ws, wv).view(), stream);
        auto bd = Dev<Device>(FromVec<1, double>(Shape1(K), bv).view(), stream);
        TensorContainer<Device, dd, double> yd(ys);
        yd.set_stream(stream);
        ops::DeconvolutionForward(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
        return ToVec(ToHost(yd.view()).view());
      };
      auto xd = Dev<Device>(xh.view(), stream), wd = Dev<Device>(wh.view(), stream);
      auto rd = Dev<Device>(rh.view(), stream);
      TensorContainer<Device, dd, double> dxd(xs), dwd(ws);
      TensorContainer<Device, 1, double> dbd(Shape1(K));
      dxd.set_stream(stream), dwd.set_stream(stream), dbd.set_stream(stream);
      ops::DeconvolutionBackward(cs.param, rd.view(), xd.view(), wd.view(), kWriteTo, dxd.view(), kWriteTo,
                                 dwd.view(), kWriteTo, dbd.view());
      const Vec gx = ToVec(ToHost(dxd.view()).view()), gw = ToVec(ToHost(dwd.view()).view()),
                gb = ToVec(ToHost(dbd.view()).view());
      CheckFiniteDifferences(x, R, [&](const Vec& v) { return forward(v, w, b, true); }, gx, "data");
      CheckFiniteDifferences(w, R, [&](const Vec& v) { return forward(x, v, b, true); }, gw, "weight");
      CheckFiniteDifferences(b, R, [&](const Vec& v) { return forward(x, w, v, true); }, gb, "bias");
      const Vec y = forward(x, w, b, false);
      double yr = 0, xdx = 0, wdw = 0;
      for (size_t i = 0; i < y.size(); ++i) yr += y[i] * R[i];
      for (size_t i = 0; i < x.size(); ++i) xdx += x[i] * gx[i];
      for (size_t i = 0; i < w.size(); ++i) wdw += w[i] * gw[i];
      CHECK(std::fabs(yr - xdx) <= 1e-12 * std::max(1.0, std::fabs(yr)));
      CHECK(std::fabs(yr - wdw) <= 1e-12 * std::max(1.0, std::fabs(yr)));
    };
    if (cs.data.size() == 4) run(std::integral_constant<int, 4>());
    if (cs.data.size() == 3) run(std::integral_constant<int, 3>());
  }
}

TE_DEVICE_TEST_CASE("deconvolution shape inference, worked out by hand", "[deconv]") {
  DeconvolutionParam p;
  p.kernel = {4, 4};
  p.stride = {2, 2};
  p.pad = {1, 1};
  p.num_filter = 8;
  // 2 (4 - 1) + 4 - 1 - 1 = 8: the usual 2x upsampling.
  CHECK(ops::InferDeconvShapes(p, {2, 3, 4, 4}).out == Dims{2, 8, 8, 8});
  CHECK(ops::InferDeconvShapes(p, {2, 3, 4, 4}).weight == Dims{3, 8, 4, 4});
  CHECK(ops::InferDeconvShapes(p, {2, 3, 4, 4}).bias.empty());  // no_bias is MXNet's default
  p.no_bias = false;
  p.num_group = 3;
  p.num_filter = 12;
  p.adj = {1, 0};  // one more row at the end: 2 (4 - 1) + 4 + 1 - 2 = 9; 2 (5 - 1) + 4 - 2 = 10
  CHECK(ops::InferDeconvShapes(p, {6, 4, 5}).out == Dims{12, 9, 10});
  CHECK(ops::InferDeconvShapes(p, {6, 4, 5}).weight == Dims{6, 4, 4, 4});
  CHECK(ops::InferDeconvShapes(p, {6, 4, 5}).bias == Dims{12});
  p.layout = ops::Layout::kNHWC;
  CHECK(ops::InferDeconvShapes(p, {1, 4, 5, 6}).out == Dims{1, 9, 10, 12});
  CHECK(ops::InferDeconvShapes(p, {1, 4, 5, 6}).weight == Dims{6, 4, 4, 4});
  p.num_group = 2;  // weight (C, kernel..., K / G)
  CHECK(ops::InferDeconvShapes(p, {1, 4, 5, 6}).weight == Dims{6, 4, 4, 6});
  DeconvolutionParam q;
  q.kernel = {3};
  q.stride = {3};
  q.dilate = {2};
  q.num_filter = 1;
  CHECK(ops::InferDeconvShapes(q, {1, 1, 5}).out == Dims{1, 1, 17});  // VALID-like: 3 * 4 + 5
  q.padding = ConvPadding::kSameLower;
  CHECK(ops::InferDeconvShapes(q, {1, 1, 5}).out == Dims{1, 1, 15});  // 5 * 3
  q.padding = ConvPadding::kExplicit;
  q.target_shape = {16};
  CHECK(ops::InferDeconvShapes(q, {1, 1, 5}).out == Dims{1, 1, 16});
  const ops::ConvGeometry g = ops::MakeDeconvGeometry(q, {1, 1, 5});
  CHECK(g.pad[2] == 1);  // total 1: the odd pixel before
  CHECK(g.pad_end[2] == 0);
}

TE_DEVICE_TEST_CASE("deconvolution rejects bad parameters with useful messages", "[deconv][error]") {
  auto base = [] {
    DeconvolutionParam p;
    p.kernel = {3, 3};
    p.stride = {2, 2};
    p.pad = {1, 1};
    p.num_filter = 4;
    p.num_group = 2;
    return p;
  };
  const Dims data = {2, 6, 5, 5};
  auto infer = [&](DeconvolutionParam p, Dims d = {}) {
    return [p, d, &data] { ops::InferDeconvShapes(p, d.empty() ? data : d); };
  };
  struct Bad {
    std::function<void(DeconvolutionParam&)> set;
    std::vector<std::string> parts;
  };
  const std::vector<Bad> bad = {
      {[](DeconvolutionParam& p) { p.kernel = {0, 3}; }, {"Deconvolution: kernel[0] = 0"}},
      {[](DeconvolutionParam& p) { p.kernel = {3, 3, 3, 3}; }, {"1, 2 or 3 spatial dimensions"}},
      {[](DeconvolutionParam& p) { p.stride = {1, 0}; }, {"stride[1] = 0", "(1,0)"}},
      {[](DeconvolutionParam& p) { p.stride = {1, 1, 1}; }, {"stride (1,1,1)", "3 entries"}},
      {[](DeconvolutionParam& p) { p.dilate = {0, 1}; }, {"dilate[0] = 0"}},
      {[](DeconvolutionParam& p) { p.pad = {-1, 1}; }, {"pad[0] = -1"}},
      {[](DeconvolutionParam& p) { p.pad_end = {1, -2}; }, {"pad_end[1] = -2"}},
      {[](DeconvolutionParam& p) { p.adj = {2, 0}; }, {"adj[0] = 2", "below stride[0] = 2"}},
      {[](DeconvolutionParam& p) { p.adj = {0, -1}; }, {"adj[1] = -1"}},
      {[](DeconvolutionParam& p) { p.pad = {}, p.target_shape = {10, 0}; }, {"target_shape[1] = 0"}},
      {[](DeconvolutionParam& p) { p.pad = {}, p.target_shape = {12, 9}; }, {"12", "target_shape", "exceeds", "11"}},
      {[](DeconvolutionParam& p) { p.target_shape = {9, 9}; }, {"target_shape (9,9)", "leave pad and pad_end empty"}},
      {[](DeconvolutionParam& p) { p.pad = {}, p.target_shape = {9, 9}, p.padding = ConvPadding::kValid; },
       {"not VALID"}},
      {[](DeconvolutionParam& p) { p.padding = ConvPadding::kSameLower; }, {"SAME_LOWER", "pad (1,1)"}},
      {[](DeconvolutionParam& p) { p.padding = static_cast<ConvPadding>(7); }, {"unknown padding mode 7"}},
      {[](DeconvolutionParam& p) { p.pad = {}, p.kernel = {1, 1}, p.padding = ConvPadding::kSameUpper; },
       {"SAME padding", "exceeds"}},  // 1 + 2 (5 - 1) = 9 < 10
      {[](DeconvolutionParam& p) { p.pad = {6, 1}; }, {"padding 6 + 6", "leaves no output", "11"}},
      {[](DeconvolutionParam& p) { p.num_filter = 0; }, {"num_filter = 0"}},
      {[](DeconvolutionParam& p) { p.num_filter = 5; }, {"num_filter = 5", "num_group = 2"}},
      {[](DeconvolutionParam& p) { p.num_group = 0; }, {"num_group = 0"}},
      {[](DeconvolutionParam& p) { p.num_group = 4; }, {"input channels C = 6", "num_group = 4"}},
      {[](DeconvolutionParam& p) { p.workspace = std::nan(""); }, {"workspace", "finite"}},
      {[](DeconvolutionParam& p) { p.layout = static_cast<ops::Layout>(5); }, {"unknown layout 5"}},
  };
  for (const Bad& b : bad) {
    DeconvolutionParam p = base();
    b.set(p);
    RequireError(infer(p), b.parts);
  }
  RequireError(infer(base(), {6, 5}), {"data shape (6,5)", "expected 4 dimensions"});
  RequireError(infer(base(), {2, 6, 0, 5}), {"spatial dimension 0", "is 0"});
  // Overflowing extents: an Error naming the product, never a wrapped shape.
  DeconvolutionParam huge = base();
  huge.stride = {std::numeric_limits<index_t>::max() / 2, 1};
  RequireError(infer(huge), {"Deconvolution: stride * (input - 1)", "overflows a 64-bit index"});

  // Tensors that do not match the inferred shapes.
  DeconvolutionParam p = base();
  p.no_bias = false;
  TensorContainer<Device, 4, float> x(Shape4(2, 6, 5, 5)), w(Shape4(6, 2, 3, 3)), y(Shape4(2, 4, 9, 9));
  TensorContainer<Device, 4, float> w_bad(Shape4(6, 4, 3, 3)), y_bad(Shape4(2, 4, 10, 9));
  TensorContainer<Device, 1, float> b(Shape1(4)), b_bad(Shape1(6));
  RequireError([&] { ops::DeconvolutionForward(p, x.view(), w_bad.view(), b.view(), kWriteTo, y.view()); },
               {"Deconvolution: weight shape (6,4,3,3)", "(6,2,3,3)"});
  RequireError([&] { ops::DeconvolutionForward(p, x.view(), w.view(), b_bad.view(), kWriteTo, y.view()); },
               {"bias shape (6,)", "(4,)"});
  RequireError([&] { ops::DeconvolutionForward(p, x.view(), w.view(), b.view(), kWriteTo, y_bad.view()); },
               {"output shape (2,4,10,9)", "(2,4,9,9)"});
  RequireError([&] {
    ops::DeconvolutionBackward(p, y.view(), x.view(), w.view(), kWriteTo, x.view(), kWriteTo, w_bad.view(), kWriteTo,
                               b.view());
  }, {"weight gradient shape (6,4,3,3)"});
  RequireError([&] {
    ops::DeconvolutionBackward(p, y_bad.view(), x.view(), w.view(), kWriteTo, x.view(), kNullOp, w.view(), kNullOp,
                               b.view());
  }, {"output gradient shape (2,4,10,9)"});
  RequireError([&] {
    ops::DeconvolutionBackward(p, y.view(), x.view(), w.view(), kWriteTo, x.view(), kNullOp, w.view(), kWriteTo,
                               b_bad.view());
  }, {"bias gradient shape (6,)"});
  RequireError([&] { ops::DeconvolutionForward(p, x.view(), w.view(), b.view(), static_cast<OpReqType>(8), y.view()); },
               {"Deconvolution forward", "unknown OpReqType 8"});
  TensorContainer<Device, 4, float> x_padded(Shape4(2, 6, 5, 5), true);
  if (x_padded.stride_ != 5)
    RequireError([&] { ops::DeconvolutionForward(p, x_padded.view(), w.view(), b.view(), kWriteTo, y.view()); },
                 {"Deconvolution: data of shape (2,6,5,5) must be contiguous"});
  TensorContainer<Device, 3, float> w1(Shape3(6, 2, 3));
  TensorContainer<Device, 3, float> x1(Shape3(2, 6, 5)), y1(Shape3(2, 4, 9));
  RequireError([&] { ops::DeconvolutionForward(p, x1.view(), w1.view(), b.view(), kWriteTo, y1.view()); },
               {"Deconvolution: the weight has 1 spatial dimensions", "kernel (3,3)"});
}
