// ops_train_test.cc — the training operators: Random (moments, seeds, padded rows), BatchNorm against a
// float64 reference (training forward, running statistics, inference, backward checked by finite
// differences in double, reqs, fix_gamma, use_global_stats), Dropout (kept fraction, exact scaling, the
// same mask in backward, inference identity), SGD (plain, momentum, weight decay, clipping) against a
// hand computation, and the Xavier / He initialisers (ranges, variances). Errors name the bad values.
#include "test_util.h"
#include <tensorexpr/random.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/random.cuh>
#endif
#include <tensorexpr/ops/batch_norm.h>
#include <tensorexpr/ops/dropout.h>
#include <tensorexpr/ops/init.h>
#include <tensorexpr/ops/sgd.h>

namespace {
using namespace te_test;
using namespace tensorexpr::ops;

// The values of a host tensor in row-major order, as double.
template <int dim, typename DType>
std::vector<double> Values(const Tensor<cpu, dim, DType>& t) {
  std::vector<double> v;
  v.reserve(t.shape_.Size());
  ForEachIndex(t.shape_, [&](const Shape<dim>& idx) { v.push_back(At(t, idx)); });
  return v;
}

// A host tensor of `shape` (padded rows when asked) with fresh random values in [lo, hi).
template <int dim, typename DType>
TensorContainer<cpu, dim, DType> RandomHost(const Shape<dim>& shape, bool pad, double lo = -1, double hi = 1) {
  TensorContainer<cpu, dim, DType> h(shape, pad);
  Poison(h.view());
  FillRandom(h.view(), lo, hi);
  return h;
}

// Every element a view spans, padding included, as one 1-D view.
template <typename Device, int dim, typename DType>
Tensor<Device, 1, DType> Span(const Tensor<Device, dim, DType>& t) {
  return Tensor<Device, 1, DType>(t.dptr_, Shape1(t.MSize()), t.stream_);
}

// A device tensor with the same layout (padding included) and bytes as a host one.
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> ToDeviceSame(const TensorContainer<cpu, dim, DType>& h, bool pad,
                                                 Stream<Device>* s) {
  TensorContainer<Device, dim, DType> d(pad);
  d.set_stream(s);
  d.Resize(h.shape_);
  REQUIRE(d.stride_ == h.stride_);
  Copy(Span(d.view()), Span(h.view()), s);
  Sync(s);
  return d;
}

// What Poison() leaves in a DType (12345 is not representable in half / bf16).
template <typename DType>
double kPoison() {
  return AsDouble(static_cast<DType>(12345.0f));
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
double Var(const std::vector<double>& v) {
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}

// ================================ Random =================================================================

template <typename Device, typename DType>
void CheckRandomMoments(Stream<Device>* stream) {
  INFO("dtype " << DataType<DType>::name());
  Random<Device, DType> rnd(1234 + Seed());
  rnd.set_stream(stream);
  // Padded rows, an odd count (cuRAND draws normals in pairs), about 1e5 samples.
  const Shape<2> shape = Shape2(251, 401);
  TensorContainer<Device, 2, DType> t(true);
  t.set_stream(stream);
  t.Resize(shape);
  REQUIRE(t.stride_ > shape[1]);
  TensorContainer<cpu, 2, DType> poison(shape, true);
  Poison(poison.view());
  const double tol_q = std::is_same<DType, bf16_t>::value ? 1e-2 : 2e-3;  // quantisation of the dtype

  // Uniform in [-1, 3]: mean 1, variance 16 / 12. The standard error of the mean is ~0.004.
  Copy(Span(t.view()), Span(poison.view()), stream);
  Tensor<Device, 2, DType> tv = t.view();
  rnd.SampleUniform(&tv, -1.0f, 3.0f);  // mshadow's pointer form
  TensorContainer<cpu, 1, DType> span = ToHost(Span(t.view()));
  TensorContainer<cpu, 2, DType> h = ToHost(t.view());
  std::vector<double> u = Values(h.view());
  double lo = 1e9, hi = -1e9;
  for (double x : u) lo = std::min(lo, x), hi = std::max(hi, x);
  CHECK(lo >= -1.0 - tol_q);
  CHECK(hi <= 3.0 + tol_q);
  CHECK(std::fabs(Mean(u) - 1.0) < 0.03);
  CHECK(std::fabs(Var(u) / (16.0 / 12.0) - 1.0) < 0.03);
  // The padding of every row is untouched.
  for (index_t r = 0; r < shape[0]; ++r)
    for (index_t c = shape[1]; c < t.stride_; ++c) REQUIRE(AsDouble(span.dptr_[r * t.stride_ + c]) == kPoison<DType>());

  // Gaussian N(0.5, 2^2).
  rnd.SampleGaussian(t.view(), 0.5f, 2.0f);
  std::vector<double> g = Values(ToHost(t.view()).view());
  CHECK(std::fabs(Mean(g) - 0.5) < 0.05);
  CHECK(std::fabs(Var(g) / 4.0 - 1.0) < 0.03);
  // Roughly 68.3% within one standard deviation: the shape, not only the moments.
  index_t within = 0;
  for (double x : g) within += std::fabs(x - 0.5) < 2.0;
  CHECK(std::fabs(double(within) / double(g.size()) - 0.6827) < 0.01);
}

TE_DEVICE_TEST_CASE("Random: uniform and gaussian moments, padded rows untouched", "[ops][random]") {
  CheckRandomMoments<Device, float>(stream);
  CheckRandomMoments<Device, double>(stream);
  CheckRandomMoments<Device, half_t>(stream);
  CheckRandomMoments<Device, bf16_t>(stream);
}

TE_DEVICE_TEST_CASE("Random: the same seed gives the same numbers, another seed others", "[ops][random]") {
  TensorContainer<Device, 2, float> a(Shape2(17, 33)), b(Shape2(17, 33));
  Random<Device, float> r1(7), r2(7), r3(8);
  r1.SampleGaussian(a.view(), 0.0f, 1.0f);
  r2.SampleGaussian(b.view(), 0.0f, 1.0f);
  std::vector<double> va = Values(ToHost(a.view()).view()), vb = Values(ToHost(b.view()).view());
  CHECK(va == vb);
  // Seed() restarts the sequence.
  r1.Seed(7);
  r1.SampleGaussian(b.view(), 0.0f, 1.0f);
  CHECK(Values(ToHost(b.view()).view()) == va);
  r3.SampleGaussian(b.view(), 0.0f, 1.0f);
  CHECK(Values(ToHost(b.view()).view()) != va);
  // The next draw continues the sequence: different numbers.
  r2.SampleUniform(b.view(), 0.0f, 1.0f);
  r1.SampleUniform(a.view(), 0.0f, 1.0f);
  std::vector<double> ua = Values(ToHost(a.view()).view());
  CHECK(ua == Values(ToHost(b.view()).view()));
  CHECK(ua != va);
  // sigma = 0 gives the mean exactly.
  r1.SampleGaussian(a.view(), 2.5f, 0.0f);
  for (double v : Values(ToHost(a.view()).view())) REQUIRE(v == 2.5);
  // Size 0 and bad parameters.
  TensorContainer<Device, 1, float> empty(Shape1(0));
  r1.SampleUniform(empty.view(), 0.0f, 1.0f);
  r1.SampleGaussian(empty.view(), 0.0f, 1.0f);
  try {
    r1.SampleGaussian(a.view(), 0.0f, -2.0f);
    FAIL("no Error for a negative sigma");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("sigma = -2") && Catch::Contains("(17,33)"));
  }
  REQUIRE_THROWS_AS(r1.SampleUniform(a.view(), 2.0f, 1.0f), tensorexpr::Error);
}

// ================================ BatchNorm ==============================================================

// Batch normalisation of (N, C, S) data in double (S = the spatial positions, 1 for 2-D data).
struct RefBN {
  index_t N, C, S;
  std::vector<double> mean, var, inv_std;
  index_t At(index_t n, index_t c, index_t s) const { return (n * C + c) * S + s; }

  std::vector<double> Forward(const std::vector<double>& x, const std::vector<double>& gamma,
                              const std::vector<double>& beta, double eps, bool fix_gamma) {
    const double m = double(N * S);
    mean.assign(C, 0);
    var.assign(C, 0);
    inv_std.assign(C, 0);
    for (index_t c = 0; c < C; ++c) {
      for (index_t n = 0; n < N; ++n)
        for (index_t s = 0; s < S; ++s) mean[c] += x[At(n, c, s)];
      mean[c] /= m;
      for (index_t n = 0; n < N; ++n)
        for (index_t s = 0; s < S; ++s) var[c] += (x[At(n, c, s)] - mean[c]) * (x[At(n, c, s)] - mean[c]);
      var[c] /= m;
      inv_std[c] = 1.0 / std::sqrt(var[c] + eps);
    }
    return Normalise(x, mean, inv_std, gamma, beta, fix_gamma);
  }
  std::vector<double> Normalise(const std::vector<double>& x, const std::vector<double>& mu,
                                const std::vector<double>& istd, const std::vector<double>& gamma,
                                const std::vector<double>& beta, bool fix_gamma) const {
    std::vector<double> y(x.size());
    for (index_t n = 0; n < N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t s = 0; s < S; ++s) {
          const index_t i = At(n, c, s);
          y[i] = (fix_gamma ? 1.0 : gamma[c]) * (x[i] - mu[c]) * istd[c] + beta[c];
        }
    return y;
  }
};

template <int dim>
RefBN MakeRef(const Shape<dim>& s) {
  RefBN r;
  r.N = s[0];
  r.C = s[1];
  r.S = s.Size() / (s[0] * s[1]);
  return r;
}

template <typename Device, int dim, typename DType>
void CheckBatchNormForward(Stream<Device>* stream, const Shape<dim>& shape, bool pad, bool fix_gamma) {
  INFO("dtype " << DataType<DType>::name() << ", shape " << shape << (pad ? " padded" : "")
                << (fix_gamma ? ", fix_gamma" : ""));
  const index_t C = shape[1];
  BatchNormParam p;
  p.eps = 1e-3;
  p.momentum = 0.8;
  p.fix_gamma = fix_gamma;
  const double tol = Tol<DType>() * (std::is_same<DType, double>::value ? 1e3 : is_low_precision<DType>::value ? 3 : 10);
  auto x = RandomHost<dim, DType>(shape, pad, -2, 3);
  auto gamma = RandomHost<1, DType>(Shape1(C), false, 0.5, 2);
  auto beta = RandomHost<1, DType>(Shape1(C), false);
  auto run_mean = RandomHost<1, DType>(Shape1(C), false);
  auto run_var = RandomHost<1, DType>(Shape1(C), false, 0.5, 2);
  auto dx = ToDeviceSame<Device>(x, pad, stream);
  auto dgamma = ToDevice<Device>(gamma.view(), stream), dbeta = ToDevice<Device>(beta.view(), stream);
  auto dmm = ToDevice<Device>(run_mean.view(), stream), dmv = ToDevice<Device>(run_var.view(), stream);
  TensorContainer<Device, 1, DType> smean(Shape1(C)), sinv(Shape1(C));
  TensorContainer<Device, dim, DType> dout(pad);
  dout.set_stream(stream);
  dout.Resize(shape);
  TensorContainer<cpu, dim, DType> poison(shape, pad);
  Poison(poison.view());
  Copy(Span(dout.view()), Span(poison.view()), stream);

  RefBN ref = MakeRef(shape);
  const std::vector<double> xv = Values(x.view()), gv = Values(gamma.view()), bv = Values(beta.view());
  const std::vector<double> y = ref.Forward(xv, gv, bv, p.eps, fix_gamma);

  // Training: output, saved statistics, running statistics.
  BatchNormForward(p, true, dx.view(), dgamma.view(), dbeta.view(), dmm.view(), dmv.view(), kWriteTo, dout.view(),
                   smean.view(), sinv.view());
  auto hout = ToHost(dout.view());
  std::vector<double> got = Values(hout.view());
  index_t bad = 0;
  for (size_t i = 0; i < y.size(); ++i) bad += !(std::fabs(got[i] - y[i]) <= tol * std::max(1.0, std::fabs(y[i])));
  CHECK(bad == 0);
  CheckAll(ToHost(smean.view()).view(), [&](const Shape<1>& i) { return ref.mean[i[0]]; }, tol, "save_mean");
  CheckAll(ToHost(sinv.view()).view(), [&](const Shape<1>& i) { return ref.inv_std[i[0]]; }, tol, "save_inv_std");
  std::vector<double> mm = Values(run_mean.view()), mv = Values(run_var.view());
  for (index_t c = 0; c < C; ++c) {
    mm[c] = 0.8 * mm[c] + 0.2 * ref.mean[c];
    mv[c] = 0.8 * mv[c] + 0.2 * ref.var[c];
  }
  CheckAll(ToHost(dmm.view()).view(), [&](const Shape<1>& i) { return mm[i[0]]; }, tol, "moving_mean");
  CheckAll(ToHost(dmv.view()).view(), [&](const Shape<1>& i) { return mv[i[0]]; }, tol, "moving_var");
  // The padding of the output rows is untouched.
  auto span = ToHost(Span(dout.view()));
  const Shape<2> s2 = shape.FlatTo2D();
  for (index_t r = 0; r < s2[0]; ++r)
    for (index_t c = s2[1]; c < dout.stride_; ++c) REQUIRE(AsDouble(span.dptr_[r * dout.stride_ + c]) == kPoison<DType>());

  // Inference uses the running statistics (as just updated, rounded to DType) and leaves them alone.
  const std::vector<double> mm_now = Values(ToHost(dmm.view()).view()), mv_now = Values(ToHost(dmv.view()).view());
  std::vector<double> istd(C);
  for (index_t c = 0; c < C; ++c) istd[c] = 1.0 / std::sqrt(mv_now[c] + p.eps);
  const std::vector<double> yi = ref.Normalise(xv, mm_now, istd, gv, bv, fix_gamma);
  // kAddTo onto what is there.
  BatchNormForward(p, false, dx.view(), dgamma.view(), dbeta.view(), dmm.view(), dmv.view(), kAddTo, dout.view(),
                   Tensor<Device, 1, DType>(), Tensor<Device, 1, DType>());
  got = Values(ToHost(dout.view()).view());
  const std::vector<double> before = Values(hout.view());
  bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double want = before[i] + yi[i];
    bad += !(std::fabs(got[i] - want) <= 2 * tol * std::max(1.0, std::fabs(want)));
  }
  CHECK(bad == 0);
  CHECK(Values(ToHost(dmm.view()).view()) == mm_now);
  CHECK(Values(ToHost(dmv.view()).view()) == mv_now);
  // kNullOp in inference writes nothing.
  Copy(Span(dout.view()), Span(poison.view()), stream);
  BatchNormForward(p, false, dx.view(), dgamma.view(), dbeta.view(), dmm.view(), dmv.view(), kNullOp, dout.view(),
                   Tensor<Device, 1, DType>(), Tensor<Device, 1, DType>());
  for (double v : Values(ToHost(dout.view()).view())) REQUIRE(v == kPoison<DType>());
}

TE_DEVICE_TEST_CASE("BatchNorm forward: training, running statistics, inference, reqs", "[ops][batchnorm]") {
  CheckBatchNormForward<Device, 4, float>(stream, Shape4(4, 3, 5, 7), true, false);
  CheckBatchNormForward<Device, 4, float>(stream, Shape4(4, 3, 5, 7), false, true);
  CheckBatchNormForward<Device, 4, double>(stream, Shape4(3, 5, 4, 17), true, false);
  CheckBatchNormForward<Device, 2, float>(stream, Shape2(17, 5), false, false);
  CheckBatchNormForward<Device, 2, double>(stream, Shape2(1, 3), true, false);  // one value per channel
  CheckBatchNormForward<Device, 2, float>(stream, Shape2(6, 5), true, false);   // padded rows: dense copies
  CheckBatchNormForward<Device, 4, half_t>(stream, Shape4(8, 4, 6, 6), true, false);
  CheckBatchNormForward<Device, 4, bf16_t>(stream, Shape4(2, 3, 3, 5), false, false);
  // A long reduction: 2000 values per channel.
  CheckBatchNormForward<Device, 4, float>(stream, Shape4(20, 2, 10, 10), false, false);
}

// Loss L = sum(w * BN(x)) for the finite differences.
double BNLoss(RefBN ref, const std::vector<double>& x, const std::vector<double>& gamma,
              const std::vector<double>& beta, const std::vector<double>& w, double eps, bool fix_gamma) {
  const std::vector<double> y = ref.Forward(x, gamma, beta, eps, fix_gamma);
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += w[i] * y[i];
  return l;
}

template <typename Device, int dim, typename DType>
void CheckBatchNormBackward(Stream<Device>* stream, const Shape<dim>& shape, bool pad, bool fix_gamma,
                            bool global_stats) {
  INFO("dtype " << DataType<DType>::name() << ", shape " << shape << (pad ? " padded" : "")
                << (fix_gamma ? ", fix_gamma" : "") << (global_stats ? ", use_global_stats" : ""));
  const index_t C = shape[1];
  BatchNormParam p;
  p.eps = 1e-2;
  p.fix_gamma = fix_gamma;
  p.use_global_stats = global_stats;
  const double tol = std::is_same<DType, double>::value ? 1e-6 : 20 * Tol<DType>();
  auto x = RandomHost<dim, DType>(shape, pad, -2, 2);
  auto dy = RandomHost<dim, DType>(shape, pad);
  auto gamma = RandomHost<1, DType>(Shape1(C), false, 0.5, 2);
  auto beta = RandomHost<1, DType>(Shape1(C), false);
  auto run_mean = RandomHost<1, DType>(Shape1(C), false);
  auto run_var = RandomHost<1, DType>(Shape1(C), false, 0.5, 2);
  auto dx = ToDeviceSame<Device>(x, pad, stream), ddy = ToDeviceSame<Device>(dy, pad, stream);
  auto dgamma = ToDevice<Device>(gamma.view(), stream), dbeta = ToDevice<Device>(beta.view(), stream);
  auto dmm = ToDevice<Device>(run_mean.view(), stream), dmv = ToDevice<Device>(run_var.view(), stream);
  TensorContainer<Device, 1, DType> smean(Shape1(C)), sinv(Shape1(C)), ggrad(Shape1(C)), bgrad(Shape1(C));
  TensorContainer<Device, dim, DType> dout(pad), xgrad(pad);
  for (auto* t : {&dout, &xgrad}) {
    t->set_stream(stream);
    t->Resize(shape);
  }
  // The forward saves the statistics (and, without global stats, moves the running ones).
  BatchNormForward(p, true, dx.view(), dgamma.view(), dbeta.view(), dmm.view(), dmv.view(), kWriteTo, dout.view(),
                   smean.view(), sinv.view());
  const std::vector<double> mm = Values(ToHost(dmm.view()).view()), mv = Values(ToHost(dmv.view()).view());
  auto grad_poison = RandomHost<dim, DType>(shape, pad);
  Copy(Span(xgrad.view()), Span(grad_poison.view()), stream);
  ggrad = DType(7.0f);
  bgrad = DType(-3.0f);
  BatchNormBackward(p, ddy.view(), dx.view(), dgamma.view(), smean.view(), sinv.view(), dmm.view(), dmv.view(), kWriteTo,
                    xgrad.view(), kWriteTo, ggrad.view(), kAddTo, bgrad.view());

  // The reference gradients by central differences of L = sum(dy * BN(x)) in double.
  RefBN ref = MakeRef(shape);
  std::vector<double> xv = Values(x.view()), gv = Values(gamma.view()), bv = Values(beta.view());
  const std::vector<double> w = Values(dy.view());
  const double h = 1e-5;
  std::vector<double> gx(xv.size()), gg(C), gb(C);
  if (global_stats) {
    // Constants: the statistics are the running ones, so dx = gamma inv_std dy, dgamma = sum dy xhat.
    for (index_t n = 0; n < ref.N; ++n)
      for (index_t c = 0; c < C; ++c)
        for (index_t s = 0; s < ref.S; ++s) {
          const index_t i = ref.At(n, c, s);
          const double istd = 1.0 / std::sqrt(mv[c] + p.eps);
          gx[i] = (fix_gamma ? 1.0 : gv[c]) * istd * w[i];
          gg[c] += w[i] * (xv[i] - mm[c]) * istd;
          gb[c] += w[i];
        }
  } else {
    for (size_t i = 0; i < xv.size(); ++i) {
      const double keep = xv[i];
      xv[i] = keep + h;
      const double lp = BNLoss(ref, xv, gv, bv, w, p.eps, fix_gamma);
      xv[i] = keep - h;
      const double lm = BNLoss(ref, xv, gv, bv, w, p.eps, fix_gamma);
      xv[i] = keep;
      gx[i] = (lp - lm) / (2 * h);
    }
    for (index_t c = 0; c < C; ++c) {
      for (auto* v : {&gv, &bv}) {
        const double keep = (*v)[c];
        (*v)[c] = keep + h;
        const double lp = BNLoss(ref, xv, gv, bv, w, p.eps, fix_gamma);
        (*v)[c] = keep - h;
        const double lm = BNLoss(ref, xv, gv, bv, w, p.eps, fix_gamma);
        (*v)[c] = keep;
        (v == &gv ? gg : gb)[c] = (lp - lm) / (2 * h);
      }
    }
  }
  if (fix_gamma) std::fill(gg.begin(), gg.end(), 0.0);  // gamma is fixed at 1: no gradient
  const std::vector<double> got = Values(ToHost(xgrad.view()).view());
  index_t bad = 0;
  std::string first;
  for (size_t i = 0; i < gx.size(); ++i)
    if (!(std::fabs(got[i] - gx[i]) <= tol * std::max(1.0, std::fabs(gx[i])))) {
      if (bad++ == 0) first = Message("data gradient ", i, ": got ", got[i], ", expected ", gx[i]);
    }
  INFO(first);
  CHECK(bad == 0);
  CheckAll(ToHost(ggrad.view()).view(), [&](const Shape<1>& i) { return gg[i[0]]; }, tol, "gamma gradient");
  CheckAll(ToHost(bgrad.view()).view(), [&](const Shape<1>& i) { return gb[i[0]] - 3.0; }, tol,
           "beta gradient (kAddTo onto -3)");

  // kAddTo on the data gradient, kNullOp on gamma (untouched), kWriteTo on beta.
  ggrad = DType(7.0f);
  BatchNormBackward(p, ddy.view(), dx.view(), dgamma.view(), smean.view(), sinv.view(), dmm.view(), dmv.view(), kAddTo,
                    xgrad.view(), kNullOp, ggrad.view(), kWriteTo, bgrad.view());
  const std::vector<double> got2 = Values(ToHost(xgrad.view()).view());
  bad = 0;
  for (size_t i = 0; i < gx.size(); ++i) bad += !(std::fabs(got2[i] - 2 * got[i]) <= tol * std::max(1.0, std::fabs(got[i])));
  CHECK(bad == 0);
  for (double v : Values(ToHost(ggrad.view()).view())) REQUIRE(v == 7.0);
  CheckAll(ToHost(bgrad.view()).view(), [&](const Shape<1>& i) { return gb[i[0]]; }, tol, "beta gradient");
}

TE_DEVICE_TEST_CASE("BatchNorm backward matches finite differences in double, with reqs", "[ops][batchnorm]") {
  CheckBatchNormBackward<Device, 4, double>(stream, Shape4(3, 2, 3, 5), true, false, false);
  CheckBatchNormBackward<Device, 4, double>(stream, Shape4(2, 3, 2, 3), false, true, false);
  CheckBatchNormBackward<Device, 2, double>(stream, Shape2(7, 3), false, false, false);
  CheckBatchNormBackward<Device, 4, double>(stream, Shape4(2, 3, 2, 3), true, false, true);
  CheckBatchNormBackward<Device, 4, float>(stream, Shape4(4, 3, 3, 3), true, false, false);
  CheckBatchNormBackward<Device, 2, float>(stream, Shape2(9, 4), false, true, true);
  CheckBatchNormBackward<Device, 2, double>(stream, Shape2(6, 3), true, false, false);  // padded rows
  CheckBatchNormBackward<Device, 4, half_t>(stream, Shape4(4, 2, 3, 3), false, false, false);
}

TE_DEVICE_TEST_CASE("BatchNorm: errors name the shapes and values", "[ops][batchnorm]") {
  TensorContainer<Device, 4, float> x(Shape4(2, 3, 4, 4), 1.0f), y(Shape4(2, 3, 4, 4));
  TensorContainer<Device, 1, float> c3(Shape1(3), 1.0f), c4(Shape1(4), 1.0f), s1(Shape1(3)), s2(Shape1(3));
  BatchNormParam p;
  try {
    BatchNormForward(p, true, x.view(), c4.view(), c3.view(), c3.view(), c3.view(), kWriteTo, y.view(), s1.view(),
                     s2.view());
    FAIL("no Error for a gamma of the wrong length");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("gamma") && Catch::Contains("(4,)") && Catch::Contains("(2,3,4,4)"));
  }
  p.eps = -1;
  try {
    BatchNormForward(p, true, x.view(), c3.view(), c3.view(), c3.view(), c3.view(), kWriteTo, y.view(), s1.view(),
                     s2.view());
    FAIL("no Error for a negative eps");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("eps = -1"));
  }
  p.eps = 1e-3;
  TensorContainer<Device, 4, float> wrong(Shape4(2, 3, 4, 5));
  REQUIRE_THROWS_AS(BatchNormBackward(p, wrong.view(), x.view(), c3.view(), s1.view(), s2.view(), c3.view(),
                                      c3.view(), kWriteTo, y.view(), kWriteTo, s1.view(), kWriteTo, s2.view()),
                    tensorexpr::Error);
  // Training on an empty batch has no statistics.
  TensorContainer<Device, 2, float> e(Shape2(0, 3)), ey(Shape2(0, 3));
  REQUIRE_THROWS_AS(BatchNormForward(p, true, e.view(), c3.view(), c3.view(), c3.view(), c3.view(), kWriteTo,
                                     ey.view(), s1.view(), s2.view()),
                    tensorexpr::Error);
  // ...while inference on it is a no-op.
  BatchNormForward(p, false, e.view(), c3.view(), c3.view(), c3.view(), c3.view(), kWriteTo, ey.view(),
                   Tensor<Device, 1, float>(), Tensor<Device, 1, float>());
}

// ================================ Dropout ================================================================

template <typename Device, typename DType>
void CheckDropout(Stream<Device>* stream, double p_drop) {
  INFO("dtype " << DataType<DType>::name() << ", p = " << p_drop);
  using A = compute_t<DType>;
  const Shape<2> shape = Shape2(300, 347);
  DropoutParam p;
  p.p = p_drop;
  Random<Device, DType> rnd(99 + Seed());
  rnd.set_stream(stream);
  auto x = RandomHost<2, DType>(shape, true, 0.5, 2);  // never zero: a zero output means dropped
  auto dy = RandomHost<2, DType>(shape, true);
  auto dx = ToDeviceSame<Device>(x, true, stream), ddy = ToDeviceSame<Device>(dy, true, stream);
  TensorContainer<Device, 2, DType> out(true), mask(true), grad(true);
  for (auto* t : {&out, &mask, &grad}) {
    t->set_stream(stream);
    t->Resize(shape);
  }
  DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  const std::vector<double> xv = Values(x.view()), ov = Values(ToHost(out.view()).view());
  const std::vector<double> mv = Values(ToHost(mask.view()).view());
  const double scale = AsDouble(DType(A(1) / A(1.0 - p_drop)));
  index_t kept = 0, bad_mask = 0, bad_out = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    kept += mv[i] != 0;
    bad_mask += !(mv[i] == 0 || mv[i] == scale);
    // Exact: the product rounded once from compute_t.
    bad_out += ov[i] != AsDouble(DType(A(xv[i]) * A(mv[i])));
  }
  CHECK(bad_mask == 0);
  CHECK(bad_out == 0);
  // The kept fraction: the standard error is ~0.0015 for 1e5 draws.
  CHECK(std::fabs(double(kept) / double(xv.size()) - (1.0 - p_drop)) < 0.01);
  // Backward uses the same mask.
  DropoutBackward(p, ddy.view(), mask.view(), kWriteTo, grad.view());
  const std::vector<double> dyv = Values(dy.view()), gv = Values(ToHost(grad.view()).view());
  index_t bad_grad = 0;
  for (size_t i = 0; i < gv.size(); ++i) bad_grad += gv[i] != AsDouble(DType(A(dyv[i]) * A(mv[i])));
  CHECK(bad_grad == 0);
  // kAddTo doubles it.
  DropoutBackward(p, ddy.view(), mask.view(), kAddTo, grad.view());
  const std::vector<double> gv2 = Values(ToHost(grad.view()).view());
  bad_grad = 0;
  for (size_t i = 0; i < gv.size(); ++i) bad_grad += gv2[i] != AsDouble(DType(A(gv[i]) + A(gv[i])));
  CHECK(bad_grad == 0);
  // A second draw gives another mask.
  DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(ToHost(mask.view()).view()) != mv);
  // Inference: the identity; the mask is left alone.
  auto mask_before = ToHost(mask.view());
  DropoutForward(p, false, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(ToHost(out.view()).view()) == xv);
  CHECK(Values(ToHost(mask.view()).view()) == Values(mask_before.view()));
}

TE_DEVICE_TEST_CASE("Dropout: kept fraction, exact scaling, same mask in backward, inference identity",
                    "[ops][dropout]") {
  CheckDropout<Device, float>(stream, 0.3);
  CheckDropout<Device, double>(stream, 0.5);
  CheckDropout<Device, half_t>(stream, 0.1);
}

TE_DEVICE_TEST_CASE("Dropout: p = 0 keeps all, p = 1 drops all, errors", "[ops][dropout]") {
  Random<Device, float> rnd(5);
  auto x = RandomHost<2, float>(Shape2(3, 17), false);
  auto dx = ToDevice<Device>(x.view(), stream);
  TensorContainer<Device, 2, float> out(Shape2(3, 17)), mask(Shape2(3, 17));
  DropoutParam p;
  p.p = 0;
  DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(ToHost(out.view()).view()) == Values(x.view()));
  p.p = 1;
  DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  for (double v : Values(ToHost(out.view()).view())) REQUIRE(v == 0.0);
  p.p = 1.5;
  try {
    DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
    FAIL("no Error for p = 1.5");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("p = 1.5"));
  }
  p.p = 0.5;
  TensorContainer<Device, 2, float> wrong(Shape2(3, 16));
  try {
    DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), wrong.view());
    FAIL("no Error for a mask of the wrong shape");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("(3,16)") && Catch::Contains("(3,17)"));
  }
}

// ================================ SGD ====================================================================

template <typename Device, typename DType>
void CheckSGD(Stream<Device>* stream, bool pad) {
  INFO("dtype " << DataType<DType>::name() << (pad ? ", padded" : ""));
  const Shape<2> shape = Shape2(13, 37);
  const double tol = 4 * Tol<DType>();
  auto w = RandomHost<2, DType>(shape, pad), g = RandomHost<2, DType>(shape, pad, -3, 3);
  auto m = RandomHost<2, DType>(shape, pad, -0.1, 0.1);
  const std::vector<double> wv = Values(w.view()), gv = Values(g.view()), mv = Values(m.view());
  const double lr = 0.1, wd = 0.01, rescale = 0.5, clip = 1.0, momentum = 0.9;
  auto clipped = [&](double gi, double c) { return c < 0 ? gi : std::max(-c, std::min(c, gi)); };

  for (double c : {-1.0, clip}) {
    INFO("clip_gradient " << c);
    // Plain SGD, into the weight itself (kWriteInplace).
    auto dw = ToDeviceSame<Device>(w, pad, stream), dg = ToDeviceSame<Device>(g, pad, stream);
    SGDParam sp;
    sp.lr = lr;
    sp.wd = wd;
    sp.rescale_grad = rescale;
    sp.clip_gradient = c;
    SGDUpdate(sp, dw.view(), dg.view(), kWriteInplace, dw.view());
    std::vector<double> got = Values(ToHost(dw.view()).view());
    index_t bad = 0;
    for (size_t i = 0; i < wv.size(); ++i) {
      const double want = (1 - lr * wd) * wv[i] - lr * clipped(rescale * gv[i], c);
      bad += !(std::fabs(got[i] - want) <= tol * std::max(1.0, std::fabs(want)));
    }
    CHECK(bad == 0);

    // Momentum: two steps, so the state carries over.
    auto dw2 = ToDeviceSame<Device>(w, pad, stream), dm = ToDeviceSame<Device>(m, pad, stream);
    SGDMomParam mp;
    mp.lr = lr;
    mp.momentum = momentum;
    mp.wd = wd;
    mp.rescale_grad = rescale;
    mp.clip_gradient = c;
    std::vector<double> ww = wv, mm = mv;
    for (int step = 0; step < 2; ++step) {
      SGDMomUpdate(mp, dw2.view(), dg.view(), dm.view(), kWriteInplace, dw2.view());
      for (size_t i = 0; i < ww.size(); ++i) {
        mm[i] = momentum * mm[i] - lr * wd * ww[i] - lr * clipped(rescale * gv[i], c);
        ww[i] += mm[i];
      }
    }
    got = Values(ToHost(dw2.view()).view());
    const std::vector<double> gotm = Values(ToHost(dm.view()).view());
    bad = 0;
    for (size_t i = 0; i < ww.size(); ++i) {
      bad += !(std::fabs(got[i] - ww[i]) <= tol * std::max(1.0, std::fabs(ww[i])));
      bad += !(std::fabs(gotm[i] - mm[i]) <= tol * std::max(1.0, std::fabs(mm[i])));
    }
    CHECK(bad == 0);
  }
  // kWriteTo into a separate output leaves the weight alone; kNullOp writes nothing.
  auto dw = ToDeviceSame<Device>(w, pad, stream), dg = ToDeviceSame<Device>(g, pad, stream);
  TensorContainer<Device, 2, DType> out(pad);
  out.set_stream(stream);
  out.Resize(shape);
  out = DType(5.0f);
  SGDParam sp;
  sp.lr = lr;
  SGDUpdate(sp, dw.view(), dg.view(), kNullOp, out.view());
  for (double v : Values(ToHost(out.view()).view())) REQUIRE(v == 5.0);
  SGDUpdate(sp, dw.view(), dg.view(), kWriteTo, out.view());
  CHECK(Values(ToHost(dw.view()).view()) == wv);
  CheckAll(ToHost(out.view()).view(), [&](const Shape<2>& i) { return wv[i[0] * 37 + i[1]] - lr * gv[i[0] * 37 + i[1]]; },
           tol, "sgd kWriteTo");

  // The one-pass momentum update with a separate output: kNullOp leaves the momentum alone; kWriteTo and
  // kAddTo update the momentum in place and store (or add) weight + momentum, the weight untouched.
  SGDMomParam mp;
  mp.lr = lr;
  mp.momentum = momentum;
  auto dm = ToDeviceSame<Device>(m, pad, stream);
  SGDMomUpdate(mp, dw.view(), dg.view(), dm.view(), kNullOp, out.view());
  CHECK(Values(ToHost(dm.view()).view()) == mv);
  for (const OpReqType req : {kWriteTo, kAddTo}) {
    INFO("req " << static_cast<int>(req));
    dm = ToDeviceSame<Device>(m, pad, stream);
    out = DType(5.0f);
    SGDMomUpdate(mp, dw.view(), dg.view(), dm.view(), req, out.view());
    CHECK(Values(ToHost(dw.view()).view()) == wv);
    auto new_mom = [&](index_t k) { return momentum * mv[k] - lr * gv[k]; };
    CheckAll(ToHost(dm.view()).view(), [&](const Shape<2>& i) { return new_mom(i[0] * 37 + i[1]); }, tol,
             "sgd_mom momentum");
    CheckAll(ToHost(out.view()).view(), [&](const Shape<2>& i) {
      const index_t k = i[0] * 37 + i[1];
      return (req == kAddTo ? 5.0 : 0.0) + wv[k] + new_mom(k);
    }, tol, "sgd_mom output");
  }
}

TE_DEVICE_TEST_CASE("SGD: plain and momentum steps against a hand computation", "[ops][sgd]") {
  CheckSGD<Device, float>(stream, false);
  CheckSGD<Device, double>(stream, true);
  CheckSGD<Device, half_t>(stream, true);
  TensorContainer<Device, 2, float> a(Shape2(3, 4)), b(Shape2(4, 3));
  try {
    SGDUpdate(SGDParam(), a.view(), b.view(), kWriteTo, a.view());
    FAIL("no Error for a gradient of the wrong shape");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("(4,3)") && Catch::Contains("(3,4)"));
  }
  TensorContainer<Device, 2, float> mom(Shape2(3, 5));
  try {
    SGDMomUpdate(SGDMomParam(), a.view(), a.view(), mom.view(), kWriteInplace, a.view());
    FAIL("no Error for a momentum of the wrong shape");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("sgd_mom_update: momentum shape (3,5)") && Catch::Contains("(3,4)"));
  }
}

// ================================ Initialisers ===========================================================

TE_DEVICE_TEST_CASE("Xavier and He initialisers: ranges and variances", "[ops][init]") {
  Random<Device, float> rnd(31 + Seed());
  rnd.set_stream(stream);
  // Fully connected (out 200, in 300), Xavier uniform, avg: bound sqrt(3 / 250).
  TensorContainer<Device, 2, float> fc(Shape2(200, 300));
  XavierParam xp;
  const double bound = XavierInit(xp, &rnd, fc.view());
  CHECK(bound == Approx(std::sqrt(3.0 / 250.0)));
  std::vector<double> v = Values(ToHost(fc.view()).view());
  double lo = 1e9, hi = -1e9;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  CHECK(lo >= -bound);
  CHECK(hi <= bound);
  CHECK(lo < -0.95 * bound);  // the whole range is used
  CHECK(hi > 0.95 * bound);
  CHECK(std::fabs(Var(v) / (bound * bound / 3) - 1) < 0.03);
  CHECK(std::fabs(Mean(v)) < 0.02 * bound);

  // Convolution (64, 32, 3, 3): fan_in 288, fan_out 576.
  TensorContainer<Device, 4, float> conv(Shape4(64, 32, 3, 3));
  Fans f = ComputeFans(conv.shape_);
  CHECK(f.fan_in == 288);
  CHECK(f.fan_out == 576);
  xp.rnd_type = InitRandType::kGaussian;
  xp.factor_type = XavierFactorType::kIn;
  xp.magnitude = 2;
  const double sd = XavierInit(xp, &rnd, conv.view());
  CHECK(sd == Approx(std::sqrt(2.0 / 288)));
  v = Values(ToHost(conv.view()).view());
  CHECK(std::fabs(Var(v) / (sd * sd) - 1) < 0.05);
  xp.factor_type = XavierFactorType::kOut;
  CHECK(XavierInit(xp, &rnd, conv.view()) == Approx(std::sqrt(2.0 / 576)));

  // He normal (fan_in), and uniform with the same variance, for a leaky slope.
  HeParam hp;
  const double he = HeInit(hp, &rnd, conv.view());
  CHECK(he == Approx(std::sqrt(2.0 / 288)));
  v = Values(ToHost(conv.view()).view());
  CHECK(std::fabs(Var(v) / (he * he) - 1) < 0.05);
  CHECK(std::fabs(Mean(v)) < 0.05 * he);
  hp.rnd_type = InitRandType::kUniform;
  hp.mode = FanMode::kOut;
  hp.negative_slope = 0.5;
  const double hb = HeInit(hp, &rnd, conv.view());
  CHECK(hb == Approx(std::sqrt(3.0) * std::sqrt(2.0 / (1.25 * 576))));
  v = Values(ToHost(conv.view()).view());
  for (double x : v) REQUIRE(std::fabs(x) <= hb);
  CHECK(std::fabs(Var(v) / (2.0 / (1.25 * 576)) - 1) < 0.05);

  xp.magnitude = 0;
  try {
    XavierInit(xp, &rnd, fc.view());
    FAIL("no Error for magnitude 0");
  } catch (const tensorexpr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("magnitude = 0"));
  }
}

}  // namespace
