// conv_fixed_test.cc — ConvolutionForwardFixed (<tensorexpr/ops/conv_fixed.h>) against a float64 loop over
// the dequantised data, written from the definition: uint8 and int8 data in several fixed-point formats
// (Q2.6 among them), float and 8-bit outputs, every req, bias, groups, stride, dilation, padding, 1-D to
// 3-D, channels last, padded rows; rounding to the nearest (ties to even) and saturation; NaN stored as 0;
// and the errors bad formats and shapes raise.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>
#include "test_util.h"
#include <tensorexpr/ops/conv_fixed.h>

namespace {
using namespace te_test;
using tensorexpr::ops::ConvolutionParam;
using tensorexpr::ops::FixedPoint;

// One problem: data (N, C, spatial...) channels first; the parameters say the rest.
struct FixedCase {
  std::vector<index_t> data;  // channels first
  ConvolutionParam param;
};

FixedCase MakeFixedCase(std::vector<index_t> data, std::vector<index_t> kernel, std::vector<index_t> stride,
                        std::vector<index_t> pad, std::vector<index_t> dilate, index_t filters, index_t groups,
                        bool bias) {
  FixedCase c;
  c.data = data;
  c.param.kernel = kernel;
  c.param.stride = stride.empty() ? std::vector<index_t>(kernel.size(), 1) : stride;
  c.param.pad = pad.empty() ? std::vector<index_t>(kernel.size(), 0) : pad;
  c.param.dilate = dilate.empty() ? std::vector<index_t>(kernel.size(), 1) : dilate;
  c.param.num_filter = filters;
  c.param.num_group = groups;
  c.param.no_bias = !bias;
  return c;
}

// The float64 convolution of x (channels first, flat) with w plus b, as out's flat channels-first values;
// l1 gets the sum of the terms' magnitudes per output (what float rounding of the sum scales with).
std::vector<double> Reference(const FixedCase& c, const std::vector<index_t>& out_shape, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& b, std::vector<double>* l1) {
  const int sd = int(c.param.kernel.size());
  index_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  for (int i = 0; i < sd; ++i) {
    const int j = 3 - sd + i;
    in[j] = c.data[2 + i], out[j] = out_shape[2 + i], k[j] = c.param.kernel[i], s[j] = c.param.stride[i],
    d[j] = c.param.dilate[i], p[j] = c.param.pad[i];
  }
  const index_t N = c.data[0], C = c.data[1], K = c.param.num_filter, G = c.param.num_group, Cg = C / G, Kg = K / G;
  std::vector<double> y(size_t(N * K * out[0] * out[1] * out[2]), 0.0);
  l1->assign(y.size(), 0.0);
  for (index_t n = 0; n < N; ++n)
    for (index_t f = 0; f < K; ++f)
      for (index_t oz = 0; oz < out[0]; ++oz)
        for (index_t oy = 0; oy < out[1]; ++oy)
          for (index_t ox = 0; ox < out[2]; ++ox) {
            double sum = c.param.no_bias ? 0.0 : b[size_t(f)], magnitude = std::fabs(sum);
            for (index_t ci = 0; ci < Cg; ++ci)
              for (index_t kz = 0; kz < k[0]; ++kz)
                for (index_t ky = 0; ky < k[1]; ++ky)
                  for (index_t kx = 0; kx < k[2]; ++kx) {
                    const index_t z = oz * s[0] - p[0] + kz * d[0], yy = oy * s[1] - p[1] + ky * d[1],
                                  xx = ox * s[2] - p[2] + kx * d[2];
                    if (z < 0 || z >= in[0] || yy < 0 || yy >= in[1] || xx < 0 || xx >= in[2]) continue;
                    const index_t c_in = f / Kg * Cg + ci;
                    const double term = w[size_t((((f * Cg + ci) * k[0] + kz) * k[1] + ky) * k[2] + kx)] *
                                        x[size_t((((n * C + c_in) * in[0] + z) * in[1] + yy) * in[2] + xx)];
                    sum += term, magnitude += std::fabs(term);
                  }
            const size_t o = size_t((((n * K + f) * out[0] + oz) * out[1] + oy) * out[2] + ox);
            y[o] = sum, (*l1)[o] = magnitude;
          }
  return y;
}

// round(v * 2^frac) to the nearest, ties to even, saturated at T's range: the stored integer.
template <typename T>
double Quantise(double v, int frac) {
  const double q = std::nearbyint(std::ldexp(v, frac));
  return std::min<double>(std::numeric_limits<T>::max(), std::max<double>(std::numeric_limits<T>::lowest(), q));
}

// How far a float sum may stray from the float64 one: a few hundred terms, each rounded in float.
double SumTolerance(double l1) { return 1e-5 * l1 + 1e-6; }

// Whether v * 2^frac lies within the float sum's error of a rounding tie (it may round either way).
bool NearTie(double v, double tolerance, int frac) {
  const double t = std::ldexp(v, frac);
  return std::fabs(t - std::floor(t) - 0.5) <= std::ldexp(tolerance, frac);
}

// Runs case c with In data in `in_format`, into float and into Out in `out_format`, with `req`, and checks
// both against the reference; the data may have padded rows.
template <typename Device, int dim, typename In, typename Out>
void RunFixedCase(Stream<Device>* stream, const FixedCase& c, FixedPoint in_format, FixedPoint out_format,
                  OpReqType req, bool padded_rows) {
  const auto shapes = tensorexpr::ops::InferConvShapes(c.param, c.data);
  Shape<dim> xs, ys, ws;
  for (int i = 0; i < dim; ++i) xs[i] = c.data[i], ys[i] = shapes.out[i], ws[i] = shapes.weight[i];
  TensorContainer<cpu, dim, In> xh(xs);
  TensorContainer<cpu, dim, float> wh(ws), y0f(ys);
  TensorContainer<cpu, 1, float> bh(Shape1(c.param.num_filter));
  TensorContainer<cpu, dim, Out> y0q(ys);
  FillRandom(xh.view(), double(std::numeric_limits<In>::lowest()), double(std::numeric_limits<In>::max()) + 1);
  // Filters that bring the sums near the output's range, so that some saturate and most do not.
  const double taps = double(shapes.weight[1]) * ws.ProdShape(2, dim);
  FillRandom(wh.view(), -3.0 / std::sqrt(taps), 3.0 / std::sqrt(taps));
  FillRandom(bh.view(), -0.5, 0.5);
  FillRandom(y0f.view(), -1.0, 1.0);
  FillRandom(y0q.view(), double(std::numeric_limits<Out>::lowest()), double(std::numeric_limits<Out>::max()) + 1);

  std::vector<double> x(size_t(xs.Size())), w(wh.dptr_, wh.dptr_ + ws.Size()), b(bh.dptr_, bh.dptr_ + bh.shape_.Size());
  for (index_t i = 0; i < xs.Size(); ++i) x[size_t(i)] = std::ldexp(double(xh.dptr_[i]), -in_format.frac_bits);
  std::vector<double> l1;
  const std::vector<double> y = Reference(c, shapes.out, x, w, b, &l1);

  // Padded rows: the data as a view of every other row of a taller tensor.
  TensorContainer<Device, dim, In> xd_store;
  xd_store.set_stream(stream);
  Shape<dim> tall = xs;
  tall[dim - 1] = padded_rows ? xs[dim - 1] + 3 : xs[dim - 1];
  xd_store.Resize(tall);
  Tensor<Device, dim, In> xd = xd_store.view();
  if (padded_rows) {
    TensorContainer<cpu, dim, In> th(tall, In(7));
    for (index_t r = 0; r < xs.ProdShape(0, dim - 1); ++r)
      for (index_t i = 0; i < xs[dim - 1]; ++i) th.dptr_[r * tall[dim - 1] + i] = xh.dptr_[r * xs[dim - 1] + i];
    Copy(xd_store.view(), th.view(), stream);
    xd.shape_ = xs;
    xd.stride_ = tall[dim - 1];
  } else {
    Copy(xd_store.view(), xh.view(), stream);
  }
  auto wd = ToDevice(wh.view(), stream), yf = ToDevice(y0f.view(), stream);
  auto bd = ToDevice(bh.view(), stream);
  auto yq = ToDevice(y0q.view(), stream);
  tensorexpr::ops::ConvolutionForwardFixed(c.param, xd, in_format, wd.view(), bd.view(), req, yf.view());
  tensorexpr::ops::ConvolutionForwardFixed(c.param, xd, in_format, wd.view(), bd.view(), req, yq.view(), out_format);
  const TensorContainer<cpu, dim, float> gf = ToHost(yf.view());
  const TensorContainer<cpu, dim, Out> gq = ToHost(yq.view());

  INFO("data " << xs << " " << DataType<In>::name() << " Q." << in_format.frac_bits << ", out " << ys << " "
               << DataType<Out>::name() << " Q." << out_format.frac_bits << ", req " << OpReqName(req)
               << (padded_rows ? ", padded rows" : ""));
  index_t bad_float = 0, bad_fixed = 0, near_ties = 0, saturated = 0;
  for (index_t i = 0; i < ys.Size(); ++i) {
    const double r = y[size_t(i)];
    // float: as req says, within the float sum's rounding
    const double tolerance = SumTolerance(l1[size_t(i)] + std::fabs(y0f.dptr_[i]));
    const double want_f = req == kNullOp ? y0f.dptr_[i] : req == kAddTo ? y0f.dptr_[i] + r : r;
    if (!(std::fabs(gf.dptr_[i] - want_f) <= tolerance)) ++bad_float;
    // fixed: the integer exactly, but for sums within float rounding of a tie, which may round either way
    const double old_value = std::ldexp(double(y0q.dptr_[i]), -out_format.frac_bits);
    const double v = req == kAddTo ? old_value + r : r;
    const double want_q = req == kNullOp ? double(y0q.dptr_[i]) : Quantise<Out>(v, out_format.frac_bits);
    const double got_q = double(gq.dptr_[i]);
    if (req != kNullOp && NearTie(v, SumTolerance(l1[size_t(i)]), out_format.frac_bits)) {
      ++near_ties;
      if (std::fabs(got_q - want_q) > 1) ++bad_fixed;
    } else if (got_q != want_q) {
      ++bad_fixed;
    }
    if (want_q == std::numeric_limits<Out>::max() || want_q == std::numeric_limits<Out>::lowest()) ++saturated;
  }
  INFO(near_ties << " sums near a rounding tie, " << saturated << " saturated of " << ys.Size());
  CHECK(bad_float == 0);
  CHECK(bad_fixed == 0);
}

std::vector<FixedCase> FixedCases() {
  return {
      MakeFixedCase({2, 3, 9, 11}, {3, 3}, {}, {1, 1}, {}, 4, 1, true),
      MakeFixedCase({1, 4, 10, 9}, {3, 3}, {2, 1}, {0, 1}, {1, 2}, 6, 2, true),  // groups, stride, dilation
      MakeFixedCase({2, 1, 40}, {7}, {}, {3}, {}, 8, 1, false),                  // 1-D, one channel
      MakeFixedCase({1, 1, 9, 10, 12}, {3, 3, 3}, {}, {1, 1, 1}, {}, 8, 1, true),  // a small volume
  };
}

}  // namespace

// Q2.6 data to Q2.6 and Q4.4 output, uint8 intensities (Q0.8 and Q8.0), every req, padded rows.
TE_DEVICE_TEST_CASE("fixed-point convolution matches the float64 reference, rounded and saturated", "[conv][fixed]") {
  const std::vector<FixedCase> cases = FixedCases();
  const OpReqType reqs[] = {kWriteTo, kAddTo, kWriteInplace, kNullOp};
  for (size_t i = 0; i < cases.size(); ++i) {
    const FixedCase& c = cases[i];
    const OpReqType req = reqs[i % 4], req2 = reqs[(i + 1) % 4];
    const bool padded = i % 2 == 1;
    auto run = [&](auto dims) {
      constexpr int d = decltype(dims)::value;
      RunFixedCase<Device, d, int8_t, int8_t>(stream, c, FixedPoint{6}, FixedPoint{6}, req, padded);
      RunFixedCase<Device, d, int8_t, uint8_t>(stream, c, FixedPoint{6}, FixedPoint{4}, req2, !padded);
      RunFixedCase<Device, d, uint8_t, uint8_t>(stream, c, FixedPoint{8}, FixedPoint{5}, req2, padded);
      RunFixedCase<Device, d, uint8_t, int8_t>(stream, c, FixedPoint{0}, FixedPoint{0}, req, !padded);
    };
    if (c.data.size() == 3) run(std::integral_constant<int, 3>());
    if (c.data.size() == 4) run(std::integral_constant<int, 4>());
    if (c.data.size() == 5) run(std::integral_constant<int, 5>());
  }
}

// Channels last through the same float path; the data's layout is the parameter's.
TE_DEVICE_TEST_CASE("fixed-point convolution in channels last equals channels first", "[conv][fixed][layout]") {
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 5;
  TensorContainer<cpu, 4, int8_t> xh(Shape4(2, 3, 7, 8)), xl(Shape4(2, 7, 8, 3));
  TensorContainer<cpu, 4, float> wh(Shape4(5, 3, 3, 3)), wl(Shape4(5, 3, 3, 3));
  TensorContainer<cpu, 1, float> bh(Shape1(5));
  FillRandom(xh.view(), -128, 128);
  FillRandom(wh.view(), -0.3, 0.3);
  FillRandom(bh.view(), -0.5, 0.5);
  for (index_t n = 0; n < 2; ++n)
    for (index_t ch = 0; ch < 3; ++ch)
      for (index_t y = 0; y < 7; ++y)
        for (index_t x = 0; x < 8; ++x) xl[n][y][x][ch] = xh[n][ch][y][x];
  for (index_t k = 0; k < 5; ++k)
    for (index_t ch = 0; ch < 3; ++ch)
      for (index_t y = 0; y < 3; ++y)
        for (index_t x = 0; x < 3; ++x) wl[k][y][x][ch] = wh[k][ch][y][x];
  auto run = [&](const ConvolutionParam& q, const TensorContainer<cpu, 4, int8_t>& x,
                 const TensorContainer<cpu, 4, float>& w, Shape<4> out) {
    auto xd = ToDevice(x.view(), stream);
    auto wd = ToDevice(w.view(), stream);
    auto bd = ToDevice(bh.view(), stream);
    TensorContainer<Device, 4, int8_t> y;
    y.set_stream(stream);
    y.Resize(out);
    tensorexpr::ops::ConvolutionForwardFixed(q, xd.view(), FixedPoint{6}, wd.view(), bd.view(), kWriteTo, y.view(),
                                             FixedPoint{5});
    return ToHost(y.view());
  };
  const auto first = run(p, xh, wh, Shape4(2, 5, 7, 8));
  ConvolutionParam last = p;
  last.layout = tensorexpr::ops::Layout::kNHWC;
  const auto second = run(last, xl, wl, Shape4(2, 7, 8, 5));
  index_t differ = 0;
  for (index_t n = 0; n < 2; ++n)
    for (index_t k = 0; k < 5; ++k)
      for (index_t y = 0; y < 7; ++y)
        for (index_t x = 0; x < 8; ++x) differ += std::abs(int(first[n][k][y][x]) - int(second[n][y][x][k])) > 1;
  CHECK(differ == 0);
}

// A NaN filter makes every sum NaN: stored as 0, as the saturating conversion says; infinite sums saturate.
TE_DEVICE_TEST_CASE("fixed-point convolution stores NaN as 0 and saturates infinities", "[conv][fixed][nan]") {
  ConvolutionParam p;
  p.kernel = {3};
  p.num_filter = 2;
  p.no_bias = true;
  TensorContainer<cpu, 3, uint8_t> xh(Shape3(1, 1, 6), uint8_t(100));
  TensorContainer<cpu, 3, float> wh(Shape3(2, 1, 3), 1.0f);
  wh[0][0][1] = std::numeric_limits<float>::quiet_NaN();
  wh[1][0][1] = -std::numeric_limits<float>::infinity();
  auto xd = ToDevice(xh.view(), stream);
  auto wd = ToDevice(wh.view(), stream);
  TensorContainer<Device, 1, float> bd;
  TensorContainer<Device, 3, int8_t> y;
  y.set_stream(stream);
  y.Resize(Shape3(1, 2, 4));
  tensorexpr::ops::ConvolutionForwardFixed(p, xd.view(), FixedPoint{2}, wd.view(), bd.view(), kWriteTo, y.view(),
                                           FixedPoint{1});
  const auto h = ToHost(y.view());
  for (index_t x = 0; x < 4; ++x) {
    CHECK(h[0][0][x] == 0);
    CHECK(h[0][1][x] == -128);
  }
}

TE_DEVICE_TEST_CASE("fixed-point convolution rejects bad formats and shapes with useful messages", "[conv][fixed][error]") {
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.num_filter = 2;
  p.no_bias = true;
  TensorContainer<Device, 4, uint8_t> x(Shape4(1, 1, 5, 5));
  TensorContainer<Device, 4, float> w(Shape4(2, 1, 3, 3)), yf(Shape4(1, 2, 3, 3));
  TensorContainer<Device, 1, float> b;
  TensorContainer<Device, 4, uint8_t> y(Shape4(1, 2, 3, 3)), wrong(Shape4(1, 2, 3, 4));
  RequireError([&] { tensorexpr::ops::ConvolutionForwardFixed(p, x.view(), FixedPoint{17}, w.view(), b.view(), kWriteTo, yf.view()); },
               {"data", "17 fraction bits", "0 to 16"});
  RequireError([&] {
    tensorexpr::ops::ConvolutionForwardFixed(p, x.view(), FixedPoint{2}, w.view(), b.view(), kWriteTo, y.view(), FixedPoint{-1});
  }, {"output", "-1 fraction bits"});
  RequireError([&] {
    tensorexpr::ops::ConvolutionForwardFixed(p, x.view(), FixedPoint{2}, w.view(), b.view(), kWriteTo, wrong.view(), FixedPoint{0});
  }, {"output shape", "(1,2,3,4)", "(1,2,3,3)"});
}
