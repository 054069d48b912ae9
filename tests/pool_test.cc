// Tests for pool<Reducer>, avg_pool and unpool<Reducer> (expr/pool.h): against float64 loops on fresh
// random data for maximum / sum / minimum, non-square kernels, strides 1..3, 2-D to 5-D images, the
// explicit (clipped, "ceil") output shape, ties in max pooling, strided operands, poisoned outputs, +=,
// several dtypes and the error messages.
#include "test_util.h"
#include <cmath>
#include <limits>
#include <tensorexpr/expr/pool.h>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;

struct Window {
  index_t ky, kx, sy, sx;
};
std::ostream& operator<<(std::ostream& os, const Window& w) {
  return os << "kernel " << w.ky << "x" << w.kx << " stride " << w.sy << "x" << w.sx;
}

// Element (plane, y, x) of a host image stack as double.
template <int dim, typename DType>
double PlaneAt(const Tensor<cpu, dim, DType>& t, index_t plane, index_t y, index_t x) {
  return AsDouble(t.dptr_[(plane * t.shape_[dim - 2] + y) * t.stride_ + x]);
}
template <int dim>
index_t Planes(const Shape<dim>& s) { return s.ProdShape(0, dim - 2); }
// Plane index of a multi-index.
template <int dim>
index_t PlaneOf(const Shape<dim>& s, const Shape<dim>& idx) {
  index_t p = 0;
  for (int i = 0; i < dim - 2; ++i) p = p * s[i] + idx[i];
  return p;
}

// Naive pooling of window (py, px) of `plane`, clipped to the image: 0 = max, 1 = sum, 2 = min.
template <int dim, typename DType>
double NaivePool(const Tensor<cpu, dim, DType>& src, int kind, const Window& w, index_t plane, index_t py,
                 index_t px) {
  const index_t h = src.shape_[dim - 2], wd = src.shape_[dim - 1];
  double acc = kind == 0 ? -INFINITY : kind == 1 ? 0.0 : INFINITY;
  for (index_t y = py * w.sy; y < std::min(py * w.sy + w.ky, h); ++y)
    for (index_t x = px * w.sx; x < std::min(px * w.sx + w.kx, wd); ++x) {
      const double v = PlaneAt(src, plane, y, x);
      acc = kind == 0 ? std::max(acc, v) : kind == 1 ? acc + v : std::min(acc, v);
    }
  return acc;
}

// Naive unpool (a scatter over the windows) laid out as (plane, y, x).
template <int dim, typename DType>
std::vector<double> NaiveUnpool(const Tensor<cpu, dim, DType>& src, const Tensor<cpu, dim, DType>& pooled,
                                const Tensor<cpu, dim, DType>& grad, bool every_window, const Window& w) {
  const index_t h = src.shape_[dim - 2], wd = src.shape_[dim - 1];
  const index_t ph = pooled.shape_[dim - 2], pw = pooled.shape_[dim - 1];
  std::vector<double> out(static_cast<size_t>(Planes(src.shape_) * h * wd), 0.0);
  for (index_t p = 0; p < Planes(src.shape_); ++p)
    for (index_t py = 0; py < ph; ++py)
      for (index_t px = 0; px < pw; ++px)
        for (index_t y = py * w.sy; y < std::min(py * w.sy + w.ky, h); ++y)
          for (index_t x = px * w.sx; x < std::min(px * w.sx + w.kx, wd); ++x)
            if (every_window || PlaneAt(src, p, y, x) == PlaneAt(pooled, p, py, px))
              out[(p * h + y) * wd + x] += PlaneAt(grad, p, py, px);
  return out;
}

template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> Upload(const Tensor<cpu, dim, DType>& h, Stream<Device>* s, bool padded) {
  if (!padded) return ToDevice<Device>(h, s);
  TensorContainer<Device, dim, DType> d(true);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> Poisoned(const Shape<dim>& shape, Stream<Device>* s, bool padded) {
  TensorContainer<cpu, dim, DType> h(shape);
  Poison(h.view());
  return Upload<Device>(h.view(), s, padded);
}
template <int dim>
Shape<dim> WithSpatial(Shape<dim> s, index_t h, index_t w) {
  s[dim - 2] = h;
  s[dim - 1] = w;
  return s;
}
// The "ceil" pooled size (Caffe's): ceil((h - k) / s) + 1, less one when the last window would start
// past the image.
index_t CeilOut(index_t h, index_t k, index_t s) {
  const index_t out = (h - k + s - 1) / s + 1;
  return (out - 1) * s >= h ? out - 1 : out;
}
// test_util's CheckAll reads through float: compare doubles at float precision.
template <typename DType>
double PoolTol() { return std::is_same<DType, double>::value ? 1e-6 : Tol<DType>(); }

// pool<Reducer> with the default and the explicit output shape, =, += and (for sum) avg_pool.
template <typename Device, typename Reducer, int kind, int dim, typename DType = float>
void CheckPool(const Shape<dim>& shape, const Window& w, bool padded, Stream<Device>* s, double lo = -1.0,
               double hi = 1.0) {
  INFO("pool<" << Reducer::name() << "> of " << shape << " " << w << (padded ? " (padded rows)" : ""));
  const index_t h = shape[dim - 2], wd = shape[dim - 1];
  TensorContainer<cpu, dim, DType> host(shape);
  FillRandom(host.view(), lo, hi);
  auto src = Upload<Device>(host.view(), s, padded);
  const double tol = PoolTol<DType>() * (kind == 1 ? 4 : 1);

  const Shape<dim> oshape = WithSpatial(shape, (h - w.ky) / w.sy + 1, (wd - w.kx) / w.sx + 1);
  const auto ref = [&](const Shape<dim>& i) {
    return NaivePool(host.view(), kind, w, PlaneOf(oshape, i), i[dim - 2], i[dim - 1]);
  };
  auto out = Poisoned<Device, dim, DType>(oshape, s, !padded);
  out = pool<Reducer>(src.view(), w.ky, w.kx, w.sy, w.sx);
  CheckAll(ToHost(out.view()).view(), ref, tol, "pool =");

  TensorContainer<cpu, dim, DType> base(oshape);
  FillRandom(base.view(), lo, hi);
  auto acc = Upload<Device>(base.view(), s, padded);
  acc += pool<Reducer>(src.view(), w.ky, w.kx, w.sy, w.sx);
  CheckAll(ToHost(acc.view()).view(), [&](const Shape<dim>& i) { return At(base.view(), i) + ref(i); },
           tol * 2, "pool +=");

  // "Ceil" output: the last window may run past the image and is clipped.
  const Shape<dim> cshape = WithSpatial(shape, CeilOut(h, w.ky, w.sy), CeilOut(wd, w.kx, w.sx));
  auto ceil_out = Poisoned<Device, dim, DType>(cshape, s, padded);
  ceil_out = pool<Reducer>(src.view(), Shape2(cshape[dim - 2], cshape[dim - 1]), w.ky, w.kx, w.sy, w.sx);
  CheckAll(ToHost(ceil_out.view()).view(), [&](const Shape<dim>& i) {
    return NaivePool(host.view(), kind, w, PlaneOf(cshape, i), i[dim - 2], i[dim - 1]);
  }, tol, "pool with explicit (ceil) shape");

  if constexpr (kind == 1 && !std::is_integral<DType>::value) {
    auto avg = Poisoned<Device, dim, DType>(oshape, s, padded);
    avg = avg_pool(src.view(), w.ky, w.kx, w.sy, w.sx);
    CheckAll(ToHost(avg.view()).view(), [&](const Shape<dim>& i) { return ref(i) / static_cast<double>(w.ky * w.kx); },
             tol, "avg_pool");
    avg = avg_pool(src.view(), Shape2(oshape[dim - 2], oshape[dim - 1]), w.ky, w.kx, w.sy, w.sx);
    CheckAll(ToHost(avg.view()).view(), [&](const Shape<dim>& i) { return ref(i) / static_cast<double>(w.ky * w.kx); },
             tol, "avg_pool with explicit shape");
  }
}

// unpool<Reducer> against the naive scatter, with the pooled data produced by the library's pool.
// `ceil` uses the explicit, clipped output shape. Integer-valued data makes max / min ties common.
template <typename Device, typename Reducer, int dim, typename DType = float>
void CheckUnpool(const Shape<dim>& shape, const Window& w, bool ceil, bool ties, bool padded, Stream<Device>* s) {
  INFO("unpool<" << Reducer::name() << "> of " << shape << " " << w << (ceil ? " ceil shape" : "")
                 << (ties ? " with ties" : "") << (padded ? " (padded rows)" : ""));
  const index_t h = shape[dim - 2], wd = shape[dim - 1];
  TensorContainer<cpu, dim, DType> host(shape);
  if (ties) {
    FillRandom(host.view(), -2.0, 2.0);  // integer-valued after the floor below
    ForEachIndex(shape, [&](const Shape<dim>& i) {
      DType& v = host.dptr_[(PlaneOf(shape, i) * h + i[dim - 2]) * host.stride_ + i[dim - 1]];
      v = static_cast<DType>(std::floor(AsDouble(v)));
    });
  } else {
    FillRandom(host.view());
  }
  auto src = Upload<Device>(host.view(), s, padded);
  const Shape<dim> pshape =
      ceil ? WithSpatial(shape, CeilOut(h, w.ky, w.sy), CeilOut(wd, w.kx, w.sx))
           : WithSpatial(shape, (h - w.ky) / w.sy + 1, (wd - w.kx) / w.sx + 1);
  TensorContainer<Device, dim, DType> pooled(pshape);
  pooled = pool<Reducer>(src.view(), Shape2(pshape[dim - 2], pshape[dim - 1]), w.ky, w.kx, w.sy, w.sx);
  const auto hpooled = ToHost(pooled.view());
  TensorContainer<cpu, dim, DType> hgrad(pshape);
  FillRandom(hgrad.view());
  auto grad = Upload<Device>(hgrad.view(), s, padded);

  const bool every = std::is_same<Reducer, red::sum>::value;
  const std::vector<double> ref = NaiveUnpool(host.view(), hpooled.view(), hgrad.view(), every, w);
  const auto ref_at = [&](const Shape<dim>& i) { return ref[(PlaneOf(shape, i) * h + i[dim - 2]) * wd + i[dim - 1]]; };
  const double tol = PoolTol<DType>() * 4;
  auto out = Poisoned<Device, dim, DType>(shape, s, !padded);
  out = unpool<Reducer>(src.view(), pooled.view(), grad.view(), w.ky, w.kx, w.sy, w.sx);
  CheckAll(ToHost(out.view()).view(), ref_at, tol, "unpool =");
  // Nested in another expression, the CPU evaluates the plan (the GPU always does): same values.
  auto out2 = Poisoned<Device, dim, DType>(shape, s, padded);
  out2 = unpool<Reducer>(src.view(), pooled.view(), grad.view(), w.ky, w.kx, w.sy, w.sx) * 2;
  CheckAll(ToHost(out2.view()).view(), [&](const Shape<dim>& i) { return 2 * ref_at(i); }, tol, "unpool plan");

  TensorContainer<cpu, dim, DType> base(shape);
  FillRandom(base.view());
  auto acc = Upload<Device>(base.view(), s, padded);
  acc += unpool<Reducer>(src.view(), pooled.view(), grad.view(), w.ky, w.kx, w.sy, w.sx);
  CheckAll(ToHost(acc.view()).view(), [&](const Shape<dim>& i) { return At(base.view(), i) + ref_at(i); }, tol * 2,
           "unpool +=");
}

const Window kWindows[] = {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 1, 1}, {3, 2, 2, 3}, {2, 3, 3, 1},
                           {3, 3, 2, 2}, {1, 3, 1, 2}, {4, 1, 3, 1}, {2, 2, 1, 3}};

}  // namespace

TE_DEVICE_TEST_CASE("pool<maximum|sum|minimum> and avg_pool match the reference", "[pool]") {
  int which = 0;
  for (const Window& w : kWindows) {
    const bool padded = which++ % 2 == 1;
    CheckPool<Device, red::maximum, 0>(Shape4(2, 3, 9, 11), w, padded, stream);
    CheckPool<Device, red::sum, 1>(Shape4(1, 2, 7, 8), w, !padded, stream);
    CheckPool<Device, red::minimum, 2>(Shape3(3, 10, 5), w, padded, stream);
    CheckPool<Device, red::sum, 1>(Shape3(2, 4, 4), Window{std::min<index_t>(w.ky, 4), std::min<index_t>(w.kx, 4), w.sy, w.sx}, padded, stream);
  }
  CheckPool<Device, red::maximum, 0>(Shape2(17, 13), Window{3, 3, 2, 2}, false, stream);
  CheckPool<Device, red::sum, 1>(Shape5(2, 2, 2, 6, 7), Window{2, 3, 2, 2}, true, stream);
  CheckPool<Device, red::maximum, 0>(Shape4(2, 3, 1, 1), Window{1, 1, 1, 1}, true, stream);
  CheckPool<Device, red::maximum, 0>(Shape3(2, 5, 1033), Window{3, 3, 2, 2}, true, stream);
  CheckPool<Device, red::sum, 1>(Shape3(1, 3, 1100), Window{3, 4, 1, 3}, false, stream);
  // All-negative data: the max must not come out as the reducer's initial value or 0.
  CheckPool<Device, red::maximum, 0>(Shape4(2, 2, 6, 6), Window{2, 2, 2, 2}, false, stream, -9.0, -1.0);
}

TE_DEVICE_TEST_CASE("pool in double, half and int32", "[pool]") {
  CheckPool<Device, red::maximum, 0, 4, double>(Shape4(2, 3, 7, 9), Window{3, 2, 2, 3}, true, stream);
  CheckPool<Device, red::sum, 1, 3, double>(Shape3(3, 8, 8), Window{2, 2, 2, 2}, false, stream);
  CheckPool<Device, red::maximum, 0, 4, half_t>(Shape4(2, 2, 7, 6), Window{2, 3, 1, 2}, false, stream);
  CheckPool<Device, red::sum, 1, 4, half_t>(Shape4(1, 3, 6, 6), Window{3, 3, 1, 1}, true, stream);
  CheckPool<Device, red::sum, 1, 3, int32_t>(Shape3(2, 9, 7), Window{3, 3, 2, 2}, false, stream, -50.0, 50.0);
  CheckPool<Device, red::maximum, 0, 3, int32_t>(Shape3(2, 9, 7), Window{2, 3, 3, 1}, true, stream, -50.0, 50.0);
}

TE_DEVICE_TEST_CASE("pool of empty batches and of nested expressions", "[pool]") {
  TensorContainer<Device, 4, float> empty(Shape4(0, 3, 6, 6));
  TensorContainer<Device, 4, float> out(Shape4(0, 3, 3, 3));
  out = pool<red::maximum>(empty.view(), 2, 2, 2, 2);
  CHECK(out.shape_ == Shape4(0, 3, 3, 3));
  TensorContainer<Device, 4, float> back(Shape4(0, 3, 6, 6));
  back = unpool<red::maximum>(empty.view(), out.view(), out.view(), 2, 2, 2, 2);
  CHECK(back.shape_ == Shape4(0, 3, 6, 6));

  // Max pooling of relu-like data written as an expression: pool(a * a) and 0.5 * pool(a + b).
  TensorContainer<cpu, 3, float> ha(Shape3(2, 7, 9)), hb(Shape3(2, 7, 9));
  FillRandom(ha.view());
  FillRandom(hb.view());
  auto a = ToDevice<Device>(ha.view(), stream);
  auto b = ToDevice<Device>(hb.view(), stream);
  TensorContainer<Device, 3, float> res(Shape3(2, 3, 4));
  res = 0.5f * pool<red::sum>(a.view() + b.view(), 3, 3, 2, 2);
  CheckAll(ToHost(res.view()).view(), [&](const Shape<3>& i) {
    return 0.5 * (NaivePool(ha.view(), 1, Window{3, 3, 2, 2}, i[0], i[1], i[2]) +
                  NaivePool(hb.view(), 1, Window{3, 3, 2, 2}, i[0], i[1], i[2]));
  }, 1e-5, "0.5 * pool<sum>(a + b)");
}

TE_DEVICE_TEST_CASE("unpool routes the gradient as pooling chose", "[pool][unpool]") {
  int which = 0;
  for (const Window& w : kWindows) {
    const bool padded = which++ % 2 == 0;
    CheckUnpool<Device, red::maximum>(Shape4(2, 3, 9, 11), w, false, false, padded, stream);
    CheckUnpool<Device, red::maximum>(Shape4(1, 2, 8, 7), w, true, true, !padded, stream);
    CheckUnpool<Device, red::sum>(Shape3(3, 10, 5), w, which % 3 == 0, false, padded, stream);
    CheckUnpool<Device, red::minimum>(Shape3(2, 6, 9), w, false, true, padded, stream);
  }
  CheckUnpool<Device, red::maximum>(Shape2(13, 17), Window{3, 3, 2, 2}, true, true, true, stream);
  CheckUnpool<Device, red::sum>(Shape5(2, 1, 2, 7, 6), Window{2, 3, 1, 2}, false, false, false, stream);
  CheckUnpool<Device, red::maximum>(Shape3(2, 4, 1031), Window{2, 2, 2, 2}, false, true, true, stream);
  CheckUnpool<Device, red::maximum, 4, double>(Shape4(2, 2, 7, 7), Window{3, 3, 2, 2}, true, true, false, stream);
  CheckUnpool<Device, red::sum, 4, half_t>(Shape4(1, 2, 6, 7), Window{2, 2, 1, 1}, false, false, true, stream);
  // Kernel = stride, non-square (the CPU's no-overlap path), with uncovered and clipped edges.
  CheckUnpool<Device, red::maximum>(Shape4(2, 3, 10, 7), Window{3, 2, 3, 2}, false, true, true, stream);
  CheckUnpool<Device, red::maximum>(Shape4(2, 3, 10, 7), Window{3, 2, 3, 2}, true, false, false, stream);
  CheckUnpool<Device, red::sum, 4, half_t>(Shape4(2, 2, 9, 9), Window{2, 2, 2, 2}, true, false, true, stream);
}

TE_DEVICE_TEST_CASE("max pooling propagates NaN, keeps -inf, and unpool routes a NaN window to its NaN pixel",
                    "[pool][nan]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  TensorContainer<cpu, 3, float> h(Shape3(2, 5, 5));
  FillRandom(h.view());
  h[0][2][2] = nan;
  for (index_t y = 0; y < 5; ++y)
    for (index_t x = 0; x < 5; ++x) h[1][y][x] = -inf;
  auto img = ToDevice<Device>(h.view(), stream);
  // 2x2 stride 2 tiles; 3x3 stride 2 overlaps (all four windows cover the NaN).
  for (index_t k : {index_t(2), index_t(3)}) {
    INFO("kernel " << k);
    TensorContainer<Device, 3, float> pooled(Shape3(2, 2, 2)), back(Shape3(2, 5, 5));
    pooled.set_stream(stream);
    back.set_stream(stream);
    pooled = pool<red::maximum>(img.view(), k, k, 2, 2);
    const auto p = ToHost(pooled.view());
    CHECK(std::isnan(p[0][1][1]));
    CHECK(std::isnan(p[0][0][0]) == (k == 3));
    for (index_t i = 0; i < 4; ++i) CHECK(p[1].dptr_[i] == -inf);  // not -FLT_MAX
    TensorContainer<cpu, 3, float> ones(Shape3(2, 2, 2), 1.f);
    auto grad = ToDevice<Device>(ones.view(), stream);
    back = unpool<red::maximum>(img.view(), pooled.view(), grad.view(), k, k, 2, 2);
    const auto b = ToHost(back.view());
    CHECK(b[0][2][2] == (k == 2 ? 1.f : 4.f));
    CHECK(b[0][3][3] == 0.f);
  }
}

TE_DEVICE_TEST_CASE("pool and unpool reject bad parameters with messages naming them", "[pool][errors]") {
  TensorContainer<Device, 4, float> src(Shape4(2, 3, 5, 6));
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE_THROWS_AS(pool<red::maximum>(src.view(), 6, 2, 1, 1), Error);
  std::string m = message([&] { (void)pool<red::maximum>(src.view(), 2, 7, 1, 1); });
  CHECK(m.find("pool") != std::string::npos);
  CHECK(m.find("2x7") != std::string::npos);
  CHECK(m.find("5x6") != std::string::npos);
  REQUIRE_THROWS_AS(pool<red::sum>(src.view(), 2, 2, 0, 1), Error);
  REQUIRE_THROWS_AS(pool<red::sum>(src.view(), 0, 2, 1, 1), Error);
  m = message([&] { (void)pool<red::sum>(src.view(), 2, 2, 1, 0); });
  CHECK(m.find("stride 1x0") != std::string::npos);
  // An explicit output shape whose last window starts past the image.
  CHECK(pool<red::maximum>(src.view(), Shape2(3, 3), 2, 2, 2, 2).shape() == Shape4(2, 3, 3, 3));
  REQUIRE_THROWS_AS(pool<red::maximum>(src.view(), Shape2(4, 3), 2, 2, 2, 2), Error);
  m = message([&] { (void)pool<red::maximum>(src.view(), Shape2(3, 4), 2, 2, 2, 2); });
  CHECK(m.find("3x4") != std::string::npos);

  TensorContainer<Device, 4, float> pooled(Shape4(2, 3, 2, 3)), grad(Shape4(2, 3, 2, 3)), other(Shape4(2, 3, 3, 3));
  CHECK(unpool<red::maximum>(src.view(), pooled.view(), grad.view(), 2, 2, 2, 2).shape() == Shape4(2, 3, 5, 6));
  REQUIRE_THROWS_AS(unpool<red::maximum>(src.view(), pooled.view(), other.view(), 2, 2, 2, 2), Error);
  m = message([&] { (void)unpool<red::maximum>(src.view(), pooled.view(), other.view(), 2, 2, 2, 2); });
  CHECK(m.find("unpool") != std::string::npos);
  CHECK(m.find("(2,3,2,3)") != std::string::npos);
  CHECK(m.find("(2,3,3,3)") != std::string::npos);
  TensorContainer<Device, 4, float> wrong_planes(Shape4(2, 4, 2, 3));
  m = message([&] { (void)unpool<red::sum>(src.view(), wrong_planes.view(), wrong_planes.view(), 2, 2, 2, 2); });
  CHECK(m.find("(2,3,5,6)") != std::string::npos);
  CHECK(m.find("(2,4,2,3)") != std::string::npos);
  REQUIRE_THROWS_AS(unpool<red::sum>(src.view(), pooled.view(), grad.view(), 2, 2, 3, 3), Error);
  REQUIRE_THROWS_AS(unpool<red::sum>(src.view(), pooled.view(), grad.view(), 2, 8, 2, 2), Error);
}
