// mshadow_api_test.cc — the functions and expressions mshadow's API has beyond the core families (issue 16),
// on both devices, each against a naive float64 loop: Softmax / SoftmaxGrad (2-D, 3-D, ignore_label),
// VectorDot, BatchGEMM, AddTakeGrad, one_hot_encode, mat_choose_row_element, mat_fill_row_element,
// take / take_grad, implicit_dot, mask, chpool, upsampling_nearest, range, broadcast_scalar, pool with
// a reducer written to mshadow's interface, the one-stride pool / unpool, Random's sample expressions
// and samplers, Tensor::MemSize, AllocHost / FreeHost.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "test_util.h"

using namespace tensorexpr;
using namespace tensorexpr::expr;
using te_test::At;
using te_test::CheckAll;
using te_test::FillRandom;
using te_test::Poison;
using te_test::ToDevice;
using te_test::ToHost;

namespace {

// A reducer written to mshadow's interface (SetInitValue, Reduce on volatile references): the maximum.
struct mshadow_style_max {
  template <typename DType>
  TE_XINLINE static void SetInitValue(DType& v) {
    v = DType(-1e30f);
  }
  template <typename DType>
  TE_XINLINE static void Reduce(volatile DType& dst, volatile DType src) {
    if (src > dst) dst = src;
  }
};

// Random whole numbers in [lo, hi) stored as floats (MXNet's labels in the data's dtype).
template <int dim>
TensorContainer<cpu, dim, float> RandomIndices(const Shape<dim>& s, int lo, int hi) {
  TensorContainer<cpu, dim, float> t(s);
  std::uniform_int_distribution<int> u(lo, hi - 1);
  for (index_t i = 0; i < t.MSize(); ++i) t.dptr_[i] = static_cast<float>(u(te_test::Rng()));
  return t;
}

}  // namespace

TE_DEVICE_TEST_CASE("Softmax and SoftmaxGrad (2-D and 3-D) match naive loops", "[mshadow_api]") {
  // 2-D: rows of K = 7, odd batch; large values test the stability of the max subtraction.
  TensorContainer<cpu, 2, float> e(Shape2(5, 7));
  FillRandom(e.view(), -30.0, 30.0);
  auto de = ToDevice<Device>(e.view(), stream);
  TensorContainer<Device, 2, float> dp(e.shape_);
  dp.set_stream(stream);
  Softmax(dp.view(), de.view());
  const auto p = ToHost(dp.view());
  CheckAll(p.view(), [&](const Shape<2>& i) {
    double m = -1e300, s = 0;
    for (index_t k = 0; k < 7; ++k) m = std::max(m, At(e.view(), Shape2(i[0], k)));
    for (index_t k = 0; k < 7; ++k) s += std::exp(At(e.view(), Shape2(i[0], k)) - m);
    return std::exp(At(e.view(), i) - m) / s;
  });
  // In place, as mshadow allows.
  Softmax(de.view(), de.view());
  CheckAll(ToHost(de.view()).view(), [&](const Shape<2>& i) { return At(p.view(), i); });

  // SoftmaxGrad 2-D, with and without ignore_label.
  const auto label = RandomIndices(Shape1(5), 0, 7);
  auto dl = ToDevice<Device>(label.view(), stream);
  TensorContainer<Device, 2, float> dg(e.shape_);
  dg.set_stream(stream);
  SoftmaxGrad(dg.view(), dp.view(), dl.view());
  CheckAll(ToHost(dg.view()).view(),
           [&](const Shape<2>& i) { return At(p.view(), i) - (i[1] == index_t(label[i[0]]) ? 1.0 : 0.0); });
  const float ignored = label[2];
  SoftmaxGrad(dg.view(), dp.view(), dl.view(), ignored);
  CheckAll(ToHost(dg.view()).view(), [&](const Shape<2>& i) {
    if (label[i[0]] == ignored) return 0.0;
    return At(p.view(), i) - (i[1] == index_t(label[i[0]]) ? 1.0 : 0.0);
  });

  // 3-D (N, K, M): a softmax over K at every (n, m).
  TensorContainer<cpu, 3, float> e3(Shape3(2, 5, 3));
  FillRandom(e3.view(), -4.0, 4.0);
  auto de3 = ToDevice<Device>(e3.view(), stream);
  TensorContainer<Device, 3, float> dp3(e3.shape_);
  dp3.set_stream(stream);
  Softmax(dp3.view(), de3.view());
  const auto p3 = ToHost(dp3.view());
  CheckAll(p3.view(), [&](const Shape<3>& i) {
    double m = -1e300, s = 0;
    for (index_t k = 0; k < 5; ++k) m = std::max(m, At(e3.view(), Shape3(i[0], k, i[2])));
    for (index_t k = 0; k < 5; ++k) s += std::exp(At(e3.view(), Shape3(i[0], k, i[2])) - m);
    return std::exp(At(e3.view(), i) - m) / s;
  });
  const auto label3 = RandomIndices(Shape2(2, 3), 0, 5);
  auto dl3 = ToDevice<Device>(label3.view(), stream);
  TensorContainer<Device, 3, float> dg3(e3.shape_);
  dg3.set_stream(stream);
  SoftmaxGrad(dg3.view(), dp3.view(), dl3.view());
  CheckAll(ToHost(dg3.view()).view(), [&](const Shape<3>& i) {
    return At(p3.view(), i) - (i[1] == index_t(label3[i[0]][i[2]]) ? 1.0 : 0.0);
  });
  const float ignored3 = label3[1][1];
  SoftmaxGrad(dg3.view(), dp3.view(), dl3.view(), ignored3);
  CheckAll(ToHost(dg3.view()).view(), [&](const Shape<3>& i) {
    const float l = label3[i[0]][i[2]];
    if (l == ignored3) return 0.0;
    return At(p3.view(), i) - (i[1] == index_t(l) ? 1.0 : 0.0);
  });

  // Mismatched shapes are errors that name them.
  TensorContainer<Device, 2, float> wrong(Shape2(5, 6));
  CHECK_THROWS_WITH(Softmax(wrong.view(), de.view()), Catch::Contains("(5,6)") && Catch::Contains("(5,7)"));
  TensorContainer<Device, 1, float> short_label(Shape1(4));
  CHECK_THROWS_WITH(SoftmaxGrad(dg.view(), dp.view(), short_label.view()), Catch::Contains("label shape (4,)"));
}

TE_DEVICE_TEST_CASE("VectorDot and BatchGEMM match naive loops", "[mshadow_api]") {
  TensorContainer<cpu, 1, double> a(Shape1(37)), b(Shape1(37));
  FillRandom(a.view());
  FillRandom(b.view());
  auto da = ToDevice<Device>(a.view(), stream);
  auto db = ToDevice<Device>(b.view(), stream);
  TensorContainer<Device, 1, double> d(Shape1(1));
  d.set_stream(stream);
  VectorDot(d.view(), da.view(), db.view());
  double ref = 0;
  for (index_t i = 0; i < 37; ++i) ref += a[i] * b[i];
  CHECK(ToHost(d.view())[0] == Approx(ref).epsilon(1e-12));
  TensorContainer<Device, 1, double> two(Shape1(2));
  CHECK_THROWS_WITH(VectorDot(two.view(), da.view(), db.view()), Catch::Contains("shape (1)"));

  // BatchGEMM<true, false>: dst[i] = alpha lhs[i]^T rhs[i] + beta dst[i].
  const index_t B = 3, M = 4, N = 5, K = 6;
  TensorContainer<cpu, 3, float> l(Shape3(B, K, M)), r(Shape3(B, K, N)), c0(Shape3(B, M, N));
  FillRandom(l.view());
  FillRandom(r.view());
  FillRandom(c0.view());
  auto dl = ToDevice<Device>(l.view(), stream);
  auto dr = ToDevice<Device>(r.view(), stream);
  auto dc = ToDevice<Device>(c0.view(), stream);
  TensorContainer<Device, 1, float*> workspace(Shape1(3 * B));
  const float alpha = 0.75f, beta = -0.5f;
  BatchGEMM<true, false>(dc.view(), dl.view(), dr.view(), alpha, beta, workspace.view());
  CheckAll(ToHost(dc.view()).view(), [&](const Shape<3>& i) {
    double s = 0;
    for (index_t k = 0; k < K; ++k) s += At(l.view(), Shape3(i[0], k, i[1])) * At(r.view(), Shape3(i[0], k, i[2]));
    return alpha * s + beta * At(c0.view(), i);
  });
  // beta = 0 does not read the destination: NaN there does not survive.
  TensorContainer<cpu, 3, float> nan(c0.shape_, std::numeric_limits<float>::quiet_NaN());
  auto dn = ToDevice<Device>(nan.view(), stream);
  BatchGEMM<true, false>(dn.view(), dl.view(), dr.view(), 1.0f, 0.0f, workspace.view());
  CheckAll(ToHost(dn.view()).view(), [&](const Shape<3>& i) {
    double s = 0;
    for (index_t k = 0; k < K; ++k) s += At(l.view(), Shape3(i[0], k, i[1])) * At(r.view(), Shape3(i[0], k, i[2]));
    return s;
  });
  CHECK_THROWS_WITH((BatchGEMM<false, false>(dc.view(), dl.view(), dr.view(), alpha, beta, workspace.view())),
                    Catch::Contains("inner dimensions differ"));
}

TE_DEVICE_TEST_CASE("one_hot_encode, mat_choose_row_element, mat_fill_row_element", "[mshadow_api]") {
  const index_t N = 6, K = 5;
  auto index = RandomIndices(Shape1(N), 0, K);
  index[4] = 7.0f;   // out of range: picks nothing
  index[5] = 1.5f;   // not a whole number: picks nothing
  TensorContainer<cpu, 2, float> src(Shape2(N, K));
  TensorContainer<cpu, 1, float> val(Shape1(N));
  FillRandom(src.view());
  FillRandom(val.view());
  auto di = ToDevice<Device>(index.view(), stream);
  auto ds = ToDevice<Device>(src.view(), stream);
  auto dv = ToDevice<Device>(val.view(), stream);
  auto picks = [&](index_t row, index_t col) { return row < 4 && index_t(index[row]) == col; };

  TensorContainer<Device, 2, float> out(Shape2(N, K));
  out.set_stream(stream);
  out = one_hot_encode(di.view(), K) * 2.0f;
  CheckAll(ToHost(out.view()).view(), [&](const Shape<2>& i) { return picks(i[0], i[1]) ? 2.0 : 0.0; });
  out = mat_fill_row_element(ds.view(), dv.view(), di.view());
  CheckAll(ToHost(out.view()).view(),
           [&](const Shape<2>& i) { return picks(i[0], i[1]) ? At(val.view(), Shape1(i[0])) : At(src.view(), i); });
  TensorContainer<Device, 1, float> chosen(Shape1(N));
  chosen.set_stream(stream);
  chosen = mat_choose_row_element(ds.view(), di.view());
  const auto hc = ToHost(chosen.view());
  for (index_t r = 0; r < 4; ++r) CHECK(hc[r] == src[r][index_t(index[r])]);
  CHECK(std::isnan(hc[4]));
  CHECK(std::isnan(hc[5]));
  // int32 indices work too.
  TensorContainer<cpu, 1, int32_t> ii(Shape1(N));
  for (index_t r = 0; r < N; ++r) ii[r] = r % K;
  auto dii = ToDevice<Device>(ii.view(), stream);
  chosen = mat_choose_row_element(ds.view(), dii.view());
  const auto hc2 = ToHost(chosen.view());
  for (index_t r = 0; r < N; ++r) CHECK(hc2[r] == src[r][r % K]);
  TensorContainer<Device, 1, float> shorter(Shape1(N - 1));
  CHECK_THROWS_WITH(mat_choose_row_element(ds.view(), shorter.view()), Catch::Contains("index shape (5,)"));
}

TE_DEVICE_TEST_CASE("take, take_grad and AddTakeGrad: clipped and wrapped indices", "[mshadow_api]") {
  const index_t N = 9, K = 4, C = 3;
  auto index = RandomIndices(Shape1(N), -3, K + 3);  // some out of range on either side
  TensorContainer<cpu, 2, float> table(Shape2(K, C)), grad(Shape2(N, C));
  FillRandom(table.view());
  FillRandom(grad.view());
  auto di = ToDevice<Device>(index.view(), stream);
  auto dt = ToDevice<Device>(table.view(), stream);
  auto dg = ToDevice<Device>(grad.view(), stream);
  auto clip = [&](index_t i) { return std::min<index_t>(std::max<index_t>(index_t(index[i]), 0), K - 1); };
  auto wrap = [&](index_t i) { return ((index_t(index[i]) % K) + K) % K; };

  TensorContainer<Device, 2, float> rows(Shape2(N, C));
  rows.set_stream(stream);
  rows = take(di.view(), dt.view());
  CheckAll(ToHost(rows.view()).view(), [&](const Shape<2>& i) { return At(table.view(), Shape2(clip(i[0]), i[1])); });
  rows = take<false>(di.view(), dt.view());
  CheckAll(ToHost(rows.view()).view(), [&](const Shape<2>& i) { return At(table.view(), Shape2(wrap(i[0]), i[1])); });

  auto grad_ref = [&](auto row_of, index_t k, index_t c) {
    double s = 0;
    for (index_t i = 0; i < N; ++i)
      if (row_of(i) == k) s += At(grad.view(), Shape2(i, c));
    return s;
  };
  TensorContainer<Device, 2, float> tg(Shape2(K, C));
  tg.set_stream(stream);
  tg = take_grad(di.view(), dg.view(), K);
  CheckAll(ToHost(tg.view()).view(), [&](const Shape<2>& i) { return grad_ref(clip, i[0], i[1]); });
  tg = take_grad<false>(di.view(), dg.view(), K) * 1.0f;  // inside an expression: the gather on every device
  CheckAll(ToHost(tg.view()).view(), [&](const Shape<2>& i) { return grad_ref(wrap, i[0], i[1]); });
  TensorContainer<cpu, 2, float> start(Shape2(K, C));
  FillRandom(start.view());
  auto acc = ToDevice<Device>(start.view(), stream);
  AddTakeGrad(acc.view(), di.view(), dg.view());
  CheckAll(ToHost(acc.view()).view(),
           [&](const Shape<2>& i) { return At(start.view(), i) + grad_ref(clip, i[0], i[1]); });
  TensorContainer<Device, 2, float> empty_table(Shape2(0, C));
  CHECK_THROWS_WITH(take(di.view(), empty_table.view()), Catch::Contains("no rows"));
}

TE_DEVICE_TEST_CASE("implicit_dot, mask, broadcast_scalar and range", "[mshadow_api]") {
  TensorContainer<cpu, 2, float> a(Shape2(5, 7)), b(Shape2(3, 7)), c(Shape2(5, 3));
  FillRandom(a.view());
  FillRandom(b.view());
  FillRandom(c.view());
  auto da = ToDevice<Device>(a.view(), stream);
  auto db = ToDevice<Device>(b.view(), stream);
  auto dc = ToDevice<Device>(c.view(), stream);
  TensorContainer<Device, 2, float> out(Shape2(5, 3));
  out.set_stream(stream);
  out = implicit_dot(da.view() * 2.0f, db.view().T()) + dc.view();
  CheckAll(ToHost(out.view()).view(), [&](const Shape<2>& i) {
    double s = 0;
    for (index_t k = 0; k < 7; ++k) s += 2.0 * At(a.view(), Shape2(i[0], k)) * At(b.view(), Shape2(i[1], k));
    return s + At(c.view(), i);
  });
  CHECK_THROWS_WITH(implicit_dot(da.view(), db.view()), Catch::Contains("(5,7)") && Catch::Contains("(3,7)"));

  // mask over a 3-D source: whole items kept or scaled.
  TensorContainer<cpu, 3, float> s3(Shape3(4, 2, 3));
  TensorContainer<cpu, 1, float> m(Shape1(4));
  FillRandom(s3.view());
  FillRandom(m.view());
  auto ds3 = ToDevice<Device>(s3.view(), stream);
  auto dm = ToDevice<Device>(m.view(), stream);
  TensorContainer<Device, 3, float> o3(s3.shape_);
  o3.set_stream(stream);
  o3 = mask(dm.view(), ds3.view());
  CheckAll(ToHost(o3.view()).view(), [&](const Shape<3>& i) { return At(s3.view(), i) * m[i[0]]; });

  // broadcast_scalar: a (1) tensor on the device spread over a shape.
  TensorContainer<cpu, 1, float> one(Shape1(1), 2.5f);
  auto d1 = ToDevice<Device>(one.view(), stream);
  o3 = ds3.view() * broadcast_scalar(d1.view(), o3.shape_);
  CheckAll(ToHost(o3.view()).view(), [&](const Shape<3>& i) { return At(s3.view(), i) * 2.5; });
  CHECK_THROWS_WITH(broadcast_scalar(dm.view(), o3.shape_), Catch::Contains("shape (1)"));

  // range<float>(start, stop, step, repeat).
  TensorContainer<Device, 1, float> r(Shape1(6));
  r.set_stream(stream);
  r = range<float>(1.0f, 4.0f, 1.5f, 3);  // 1 1 1 2.5 2.5 2.5
  CheckAll(ToHost(r.view()).view(), [&](const Shape<1>& i) { return 1.0 + 1.5 * double(i[0] / 3); });
  r = range<float>(5.0f, -1.0f, -1.0f) * 2.0f;  // 10 8 6 4 2 0
  CheckAll(ToHost(r.view()).view(), [&](const Shape<1>& i) { return 2.0 * (5.0 - double(i[0])); });
  CHECK_THROWS_WITH(range<float>(0.0f, 1.0f, 0.0f), Catch::Contains("step must not be 0"));
  CHECK_THROWS_WITH(range<float>(0.0f, 1.0f, -1.0f), Catch::Contains("runs away"));
}

TE_DEVICE_TEST_CASE("chpool, upsampling_nearest, mshadow-interface reducers, one-stride pool / unpool",
                    "[mshadow_api]") {
  const index_t N = 2, C = 6, H = 4, W = 5;
  TensorContainer<cpu, 4, float> x(Shape4(N, C, H, W));
  FillRandom(x.view());
  auto dx = ToDevice<Device>(x.view(), stream);
  TensorContainer<Device, 4, float> out(x.shape_);
  out.set_stream(stream);
  // Local response normalisation's sum of squares over 5 neighbouring channels.
  out = chpool<red::sum>(F<op::square>(dx.view()), 5);
  CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) {
    double s = 0;
    for (index_t c = std::max<index_t>(0, i[1] - 2); c <= std::min<index_t>(C - 1, i[1] + 2); ++c) {
      const double v = At(x.view(), Shape4(i[0], c, i[2], i[3]));
      s += v * v;
    }
    return s;
  });
  // Strided and padded, with a reducer written to mshadow's interface: (6 + 2 - 3) / 2 + 1 = 3 channels.
  TensorContainer<Device, 4, float> pooled_c(Shape4(N, 3, H, W));
  pooled_c.set_stream(stream);
  pooled_c = chpool<mshadow_style_max>(dx.view(), 3, 2, 1);
  CheckAll(ToHost(pooled_c.view()).view(), [&](const Shape<4>& i) {
    double m = -1e300;
    for (index_t c = std::max<index_t>(0, 2 * i[1] - 1); c < std::min<index_t>(C, 2 * i[1] + 2); ++c)
      m = std::max(m, At(x.view(), Shape4(i[0], c, i[2], i[3])));
    return m;
  });
  CHECK_THROWS_WITH(chpool<red::sum>(dx.view(), 4), Catch::Contains("odd"));

  TensorContainer<Device, 4, float> up(Shape4(N, C, 3 * H, 3 * W));
  up.set_stream(stream);
  up = upsampling_nearest(dx.view(), 3);
  CheckAll(ToHost(up.view()).view(),
           [&](const Shape<4>& i) { return At(x.view(), Shape4(i[0], i[1], i[2] / 3, i[3] / 3)); });

  // pool<R>(src, k, k, stride) with a user reducer; unpool<maximum>(src, pooled, grad, k, k, stride).
  TensorContainer<Device, 4, float> p(Shape4(N, C, 2, 2)), g(Shape4(N, C, 2, 2));
  p.set_stream(stream);
  g.set_stream(stream);
  p = pool<mshadow_style_max>(dx.view(), 2, 2, 2);
  const auto hp = ToHost(p.view());
  CheckAll(hp.view(), [&](const Shape<4>& i) {
    double m = -1e300;
    for (index_t y = 2 * i[2]; y < 2 * i[2] + 2; ++y)
      for (index_t z = 2 * i[3]; z < 2 * i[3] + 2; ++z) m = std::max(m, At(x.view(), Shape4(i[0], i[1], y, z)));
    return m;
  });
  g = 1.0f;
  out = unpool<red::maximum>(dx.view(), p.view(), g.view(), 2, 2, 2);
  CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) {
    const index_t py = i[2] / 2, px = i[3] / 2;
    if (py >= 2 || px >= 2) return 0.0;
    return At(x.view(), i) == At(hp.view(), Shape4(i[0], i[1], py, px)) ? 1.0 : 0.0;
  });
  // The pshape form with one stride: windows past the edge are clipped.
  TensorContainer<Device, 4, float> p3(Shape4(N, C, 2, 3));
  p3.set_stream(stream);
  p3 = pool<red::sum>(dx.view(), Shape2(2, 3), 3, 3, 2);
  CheckAll(ToHost(p3.view()).view(), [&](const Shape<4>& i) {
    double s = 0;
    for (index_t y = 2 * i[2]; y < std::min<index_t>(H, 2 * i[2] + 3); ++y)
      for (index_t z = 2 * i[3]; z < std::min<index_t>(W, 2 * i[3] + 3); ++z) s += At(x.view(), Shape4(i[0], i[1], y, z));
    return s;
  });

  // A user reducer in the reductions: reduce_except_dim and reduce_with_axis.
  TensorContainer<Device, 1, float> per_c(Shape1(C));
  per_c.set_stream(stream);
  per_c = reduce_except_dim<mshadow_style_max, 1>(dx.view());
  CheckAll(ToHost(per_c.view()).view(), [&](const Shape<1>& c) {
    double m = -1e300;
    te_test::ForEachIndex(x.shape_, [&](const Shape<4>& i) {
      if (i[1] == c[0]) m = std::max(m, At(x.view(), i));
    });
    return m;
  });
}

TE_DEVICE_TEST_CASE("Random: gaussian(shape) / uniform(shape) expressions and the samplers' moments",
                    "[mshadow_api]") {
  Random<Device, float> rnd(te_test::Seed());
  rnd.set_stream(stream);
  const index_t n = 1 << 16;
  TensorContainer<Device, 2, float> t(Shape2(256, n / 256));
  t.set_stream(stream);
  auto moments = [&](double* mean, double* var) {
    const auto h = ToHost(t.view());
    double s = 0, s2 = 0;
    for (index_t i = 0; i < n; ++i) s += h.dptr_[i];
    *mean = s / n;
    for (index_t i = 0; i < n; ++i) s2 += (h.dptr_[i] - *mean) * (h.dptr_[i] - *mean);
    *var = s2 / n;
  };
  double mean, var;
  t = rnd.gaussian(t.shape_) * 2.0f + 1.0f;
  moments(&mean, &var);
  CHECK(mean == Approx(1.0).margin(0.05));
  CHECK(var == Approx(4.0).epsilon(0.05));
  t = rnd.uniform(t.shape_);
  moments(&mean, &var);
  CHECK(mean == Approx(0.5).margin(0.01));
  CHECK(var == Approx(1.0 / 12).epsilon(0.05));
  rnd.SampleGamma(&t, 2.0f, 1.5f);  // mean 3, variance 4.5
  moments(&mean, &var);
  CHECK(mean == Approx(3.0).epsilon(0.03));
  CHECK(var == Approx(4.5).epsilon(0.08));
  rnd.SampleGamma(t.view(), 0.5f, 2.0f);  // shape below 1: mean 1, variance 2
  moments(&mean, &var);
  CHECK(mean == Approx(1.0).epsilon(0.04));
  CHECK(var == Approx(2.0).epsilon(0.1));
  rnd.SampleExponential(&t, 4.0f);  // mean 0.25, variance 1/16
  moments(&mean, &var);
  CHECK(mean == Approx(0.25).epsilon(0.03));
  CHECK(var == Approx(0.0625).epsilon(0.08));
  rnd.SamplePoisson(&t, 3.5f);
  moments(&mean, &var);
  CHECK(mean == Approx(3.5).epsilon(0.03));
  CHECK(var == Approx(3.5).epsilon(0.08));
  const auto counts = ToHost(t.view());
  for (index_t i = 0; i < n; ++i) REQUIRE(counts.dptr_[i] == std::floor(counts.dptr_[i]));
  rnd.SampleNegativeBinomial(&t, 3.0f, 0.4f);  // mean k(1-p)/p = 4.5, variance mean/p = 11.25
  moments(&mean, &var);
  CHECK(mean == Approx(4.5).epsilon(0.04));
  CHECK(var == Approx(11.25).epsilon(0.1));
  rnd.SampleGeneralizedNegativeBinomial(&t, 2.0f, 0.5f);  // mean 2, variance mu + alpha mu^2 = 4
  moments(&mean, &var);
  CHECK(mean == Approx(2.0).epsilon(0.04));
  CHECK(var == Approx(4.0).epsilon(0.1));
  CHECK_THROWS_WITH(rnd.SampleGamma(&t, -1.0f, 1.0f), Catch::Contains("alpha = -1"));
  CHECK_THROWS_WITH(rnd.SampleNegativeBinomial(&t, 3.0f, 1.5f), Catch::Contains("p = 1.5"));
}

TE_DEVICE_TEST_CASE("Tensor::MemSize and AllocHost / FreeHost", "[mshadow_api]") {
  TensorContainer<Device, 3, float> t(Shape3(2, 3, 5), true);  // padded rows
  CHECK(t.view().template MemSize<0>() == t.MSize());
  CHECK(t.view().template MemSize<1>() == 3 * t.stride_);
  CHECK(t.view().template MemSize<2>() == t.stride_);
  CHECK(t.view().template MemSize<3>() == 1);
  Tensor<cpu, 2, float> h(Shape2(3, 7));
  AllocHost<Device>(&h);
  CHECK(h.CheckContiguous());
  h = 4.0f;
  auto d = ToDevice<Device>(h, stream);
  CHECK(ToHost(d.view())[2][6] == 4.0f);
  FreeHost<Device>(&h);
  CHECK(h.dptr_ == nullptr);
  CHECK_THROWS_WITH(FreeHost<Device>(&h), Catch::Contains("freed twice"));
}
