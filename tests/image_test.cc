// Tests for the image expressions pad, crop and mirror (expr/pad.h, crop.h, mirror.h): every element
// against a float64 reference on fresh random data, for 2-D to 5-D images, odd and size-0 extents,
// row-padded (strided) operands and destinations, nested expressions, += and the errors.
#include "test_util.h"
#include <tensorexpr/expr/pad.h>
#include <tensorexpr/expr/crop.h>
#include <tensorexpr/expr/mirror.h>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;

// A device copy of a host tensor whose rows are padded (a strided view), unlike ToDevice's.
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> ToDevicePadded(const Tensor<cpu, dim, DType>& h, Stream<Device>* s) {
  TensorContainer<Device, dim, DType> d(true);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}

// A device tensor of `shape` full of poison (row-padded when `padded`), so unwritten elements show.
template <typename Device, int dim, typename DType = float>
TensorContainer<Device, dim, DType> PoisonedOn(const Shape<dim>& shape, Stream<Device>* s, bool padded) {
  TensorContainer<cpu, dim, DType> h(shape);
  Poison(h.view());
  return padded ? ToDevicePadded<Device>(h.view(), s) : ToDevice<Device>(h.view(), s);
}

// The host source and its device copy.
template <typename Device, int dim>
struct Source {
  TensorContainer<cpu, dim, float> host;
  TensorContainer<Device, dim, float> dev;
  Source(const Shape<dim>& shape, Stream<Device>* s, bool padded) : host(shape) {
    FillRandom(host.view());
    dev = padded ? ToDevicePadded<Device>(host.view(), s) : ToDevice<Device>(host.view(), s);
  }
};

// Index of the element `idx` moved by (dy, dx) in the last two dimensions; false when it leaves `shape`.
template <int dim>
bool Shifted(const Shape<dim>& shape, Shape<dim> idx, index_t dy, index_t dx, Shape<dim>* out) {
  idx[dim - 2] += dy;
  idx[dim - 1] += dx;
  if (idx[dim - 2] < 0 || idx[dim - 2] >= shape[dim - 2] || idx[dim - 1] < 0 || idx[dim - 1] >= shape[dim - 1])
    return false;
  *out = idx;
  return true;
}

// pad(src, ...) built by `make` pads (top, bottom, left, right); checks =, += and the shape.
template <typename Device, int dim, typename Make>
void CheckPad(const Shape<dim>& shape, index_t top, index_t bottom, index_t left, index_t right, Make make,
              bool padded, Stream<Device>* s) {
  Source<Device, dim> src(shape, s, padded);
  Shape<dim> oshape = shape;
  oshape[dim - 2] += top + bottom;
  oshape[dim - 1] += left + right;
  INFO("pad source " << shape << " top " << top << " bottom " << bottom << " left " << left << " right " << right
                     << (padded ? " (padded rows)" : ""));
  const auto e = make(src.dev.view());
  REQUIRE(e.shape() == oshape);
  const auto ref = [&](const Shape<dim>& idx) {
    Shape<dim> at;
    return Shifted(shape, idx, -top, -left, &at) ? At(src.host.view(), at) : 0.0;
  };
  auto out = PoisonedOn<Device>(oshape, s, padded);
  out = e;
  CheckAll(ToHost(out.view()).view(), ref, Tol<float>(), "pad =");

  TensorContainer<cpu, dim, float> base(oshape);
  FillRandom(base.view());
  auto acc = ToDevice<Device>(base.view(), s);
  acc += e;
  CheckAll(ToHost(acc.view()).view(), [&](const Shape<dim>& idx) { return At(base.view(), idx) + ref(idx); },
           Tol<float>(), "pad +=");
}

template <typename Device, int dim>
void CheckPadForms(const Shape<dim>& shape, Stream<Device>* s) {
  for (index_t p = 0; p <= 2; ++p)
    CheckPad<Device>(shape, p, p, p, p, [p](auto t) { return pad(t, p); }, p == 1, s);
  CheckPad<Device>(shape, 2, 2, 1, 1, [](auto t) { return pad(t, 2, 1); }, false, s);
  CheckPad<Device>(shape, 0, 0, 3, 3, [](auto t) { return pad(t, 0, 3); }, true, s);
  CheckPad<Device>(shape, 1, 0, 2, 3, [](auto t) { return pad(t, 1, 0, 2, 3); }, true, s);
  CheckPad<Device>(shape, 0, 3, 0, 1, [](auto t) { return pad(t, 0, 3, 0, 1); }, false, s);
}

// crop(src, (h, w), sy, sx) and the centred crop(src, (h, w)).
template <typename Device, int dim>
void CheckCrop(const Shape<dim>& shape, index_t h, index_t w, bool padded, Stream<Device>* s) {
  Source<Device, dim> src(shape, s, padded);
  Shape<dim> oshape = shape;
  oshape[dim - 2] = h;
  oshape[dim - 1] = w;
  const index_t cy = (shape[dim - 2] - h) / 2, cx = (shape[dim - 1] - w) / 2;
  const index_t starts[3][2] = {{0, 0}, {shape[dim - 2] - h, shape[dim - 1] - w}, {cy / 2, (cx + 1) / 2}};
  for (const auto& st : starts) {
    INFO("crop source " << shape << " to " << h << "x" << w << " at (" << st[0] << "," << st[1] << ")"
                        << (padded ? " (padded rows)" : ""));
    const auto e = crop(src.dev.view(), Shape2(h, w), st[0], st[1]);
    REQUIRE(e.shape() == oshape);
    auto out = PoisonedOn<Device>(oshape, s, padded);
    out = e;
    CheckAll(ToHost(out.view()).view(), [&](const Shape<dim>& idx) {
      Shape<dim> at = idx;
      at[dim - 2] += st[0];
      at[dim - 1] += st[1];
      return At(src.host.view(), at);
    }, Tol<float>(), "crop");
  }
  INFO("centre crop of " << shape << " to " << h << "x" << w);
  auto out = PoisonedOn<Device>(oshape, s, !padded);
  out = crop(src.dev.view(), Shape2(h, w));
  CheckAll(ToHost(out.view()).view(), [&](const Shape<dim>& idx) {
    Shape<dim> at = idx;
    at[dim - 2] += cy;
    at[dim - 1] += cx;
    return At(src.host.view(), at);
  }, Tol<float>(), "centre crop");
}

template <typename Device, int dim>
void CheckMirror(const Shape<dim>& shape, bool padded, Stream<Device>* s) {
  Source<Device, dim> src(shape, s, padded);
  INFO("mirror of " << shape << (padded ? " (padded rows)" : ""));
  auto out = PoisonedOn<Device>(shape, s, !padded);
  out = mirror(src.dev.view());
  const auto ref = [&](const Shape<dim>& idx) {
    Shape<dim> at = idx;
    at[dim - 1] = shape[dim - 1] - 1 - idx[dim - 1];
    return At(src.host.view(), at);
  };
  CheckAll(ToHost(out.view()).view(), ref, Tol<float>(), "mirror =");
  TensorContainer<cpu, dim, float> base(shape);
  FillRandom(base.view());
  auto acc = ToDevice<Device>(base.view(), s);
  acc += mirror(src.dev.view());
  CheckAll(ToHost(acc.view()).view(), [&](const Shape<dim>& idx) { return At(base.view(), idx) + ref(idx); },
           Tol<float>(), "mirror +=");
}

}  // namespace

TE_DEVICE_TEST_CASE("pad matches the reference for every form, 2-D to 5-D images", "[image][pad]") {
  CheckPadForms<Device>(Shape2(5, 7), stream);
  CheckPadForms<Device>(Shape3(3, 1, 1), stream);
  CheckPadForms<Device>(Shape3(2, 9, 1031), stream);
  CheckPadForms<Device>(Shape4(2, 3, 17, 6), stream);
  CheckPadForms<Device>(Shape4(1, 4, 8, 8), stream);
  CheckPadForms<Device>(Shape5(2, 2, 3, 5, 4), stream);
}

TE_DEVICE_TEST_CASE("pad handles empty images and empty batches", "[image][pad]") {
  // H = 0: the result is all padding, and the source is never read.
  CheckPad<Device>(Shape3(2, 0, 3), 1, 1, 1, 1, [](auto t) { return pad(t, 1); }, false, stream);
  CheckPad<Device>(Shape3(2, 4, 0), 0, 2, 1, 0, [](auto t) { return pad(t, 0, 2, 1, 0); }, false, stream);
  // N = 0: nothing to write.
  TensorContainer<Device, 4, float> src(Shape4(0, 3, 4, 5));
  TensorContainer<Device, 4, float> out(Shape4(0, 3, 6, 7));
  out = pad(src.view(), 1);
  CHECK(out.shape_ == Shape4(0, 3, 6, 7));
}

TE_DEVICE_TEST_CASE("pad of a nested expression and pad composed with crop and mirror", "[image][pad]") {
  const Shape<4> shape = Shape4(2, 3, 7, 9);
  Source<Device, 4> a(shape, stream, true), b(shape, stream, false);
  auto out = PoisonedOn<Device>(Shape4(2, 3, 11, 11), stream, false);
  out = pad(a.dev.view() * 2.0f + b.dev.view(), 2, 1);
  CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& idx) {
    Shape<4> at;
    return Shifted(shape, idx, -2, -1, &at) ? 2.0 * At(a.host.view(), at) + At(b.host.view(), at) : 0.0;
  }, Tol<float>(), "pad(2a + b)");

  // crop(pad(mirror(a))) with the crop undoing the pad gives mirror(a) back.
  auto round = PoisonedOn<Device>(shape, stream, true);
  round = crop(pad(mirror(a.dev.view()), 1, 2, 3, 1), Shape2(7, 9), 1, 3);
  CheckAll(ToHost(round.view()).view(), [&](const Shape<4>& idx) {
    Shape<4> at = idx;
    at[3] = 8 - idx[3];
    return At(a.host.view(), at);
  }, Tol<float>(), "crop(pad(mirror(a)))");
}

TE_DEVICE_TEST_CASE("crop matches the reference at the corners and in the centre", "[image][crop]") {
  CheckCrop<Device>(Shape2(9, 8), 3, 5, false, stream);
  CheckCrop<Device>(Shape3(3, 17, 1033), 16, 1000, true, stream);
  CheckCrop<Device>(Shape3(2, 5, 5), 5, 5, false, stream);
  CheckCrop<Device>(Shape4(2, 3, 7, 10), 1, 1, true, stream);
  CheckCrop<Device>(Shape4(1, 2, 6, 9), 4, 6, false, stream);
  CheckCrop<Device>(Shape5(2, 1, 3, 8, 7), 5, 2, true, stream);
  CheckCrop<Device>(Shape4(2, 3, 6, 9), 0, 4, false, stream);  // an empty window is legal
}

TE_DEVICE_TEST_CASE("mirror flips the last dimension", "[image][mirror]") {
  CheckMirror<Device>(Shape1(1), false, stream);
  CheckMirror<Device>(Shape1(1001), false, stream);
  CheckMirror<Device>(Shape2(7, 3), true, stream);
  CheckMirror<Device>(Shape3(3, 5, 17), false, stream);
  CheckMirror<Device>(Shape4(2, 3, 5, 1030), true, stream);
  CheckMirror<Device>(Shape4(2, 3, 4, 0), false, stream);
  // Mirroring twice is the identity.
  Source<Device, 3> a(Shape3(2, 3, 11), stream, true);
  auto out = PoisonedOn<Device>(Shape3(2, 3, 11), stream, false);
  out = mirror(mirror(a.dev.view()));
  CheckAll(ToHost(out.view()).view(), [&](const Shape<3>& idx) { return At(a.host.view(), idx); }, Tol<float>(),
           "mirror(mirror(a))");
}

TE_DEVICE_TEST_CASE("pad, crop and mirror work in double and half", "[image]") {
  TensorContainer<cpu, 3, double> hd(Shape3(2, 5, 7));
  FillRandom(hd.view());
  auto dd = ToDevice<Device>(hd.view(), stream);
  TensorContainer<Device, 3, double> od(Shape3(2, 4, 7));
  od = crop(mirror(pad(dd.view(), 1)), Shape2(4, 7), 2, 1);
  CheckAll(ToHost(od.view()).view(), [&](const Shape<3>& idx) {
    // crop row r, column q of the padded 7x9 image: mirrored column is 8 - (q + 1).
    const index_t py = idx[1] + 2, px = 8 - (idx[2] + 1);
    const index_t y = py - 1, x = px - 1;
    return (y >= 0 && y < 5 && x >= 0 && x < 7) ? At(hd.view(), Shape3(idx[0], y, x)) : 0.0;
  }, Tol<double>(), "double crop(mirror(pad))");

  TensorContainer<cpu, 3, half_t> hh(Shape3(3, 4, 9));
  FillRandom(hh.view());
  auto dh = ToDevice<Device>(hh.view(), stream);
  TensorContainer<Device, 3, half_t> oh(Shape3(3, 6, 11));
  oh = pad(dh.view(), 1);
  CheckAll(ToHost(oh.view()).view(), [&](const Shape<3>& idx) {
    Shape<3> at;
    return Shifted(Shape3(3, 4, 9), idx, -1, -1, &at) ? At(hh.view(), at) : 0.0;
  }, Tol<half_t>(), "half pad");
}

TE_DEVICE_TEST_CASE("pad and crop reject bad parameters with messages naming them", "[image][errors]") {
  TensorContainer<Device, 4, float> src(Shape4(2, 3, 5, 7));
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE_THROWS_AS(pad(src.view(), -1), Error);
  std::string m = message([&] { (void)pad(src.view(), 1, 0, -2, 0); });
  CHECK(m.find("pad") != std::string::npos);
  CHECK(m.find("-2") != std::string::npos);
  CHECK(m.find("(2,3,5,7)") != std::string::npos);

  REQUIRE_THROWS_AS(crop(src.view(), Shape2(6, 7)), Error);
  m = message([&] { (void)crop(src.view(), Shape2(6, 7)); });
  CHECK(m.find("crop") != std::string::npos);
  CHECK(m.find("(6,7)") != std::string::npos);
  CHECK(m.find("(2,3,5,7)") != std::string::npos);
  REQUIRE_THROWS_AS(crop(src.view(), Shape2(3, 3), 3, 0), Error);
  REQUIRE_THROWS_AS(crop(src.view(), Shape2(3, 3), 0, 5), Error);
  REQUIRE_THROWS_AS(crop(src.view(), Shape2(3, 3), -1, 0), Error);
  m = message([&] { (void)crop(src.view(), Shape2(3, 3), 1, 6); });
  CHECK(m.find("(1,6)") != std::string::npos);
  CHECK(m.find("(2,3,5,7)") != std::string::npos);

  // The destination shape is checked by the assignment.
  TensorContainer<Device, 4, float> wrong(Shape4(2, 3, 7, 7));
  Tensor<Device, 4, float> view = wrong.view();
  REQUIRE_THROWS_AS(view = pad(src.view(), 1), Error);
  m = message([&] { view = pad(src.view(), 1); });
  CHECK(m.find("(2,3,7,9)") != std::string::npos);
}
