// broadcast_test.cc — broadcast<dimcast>, repmat, broadcast_with_axis, broadcast_keepdim against a float64
// reference on fresh random data: every dimension count 1..5, every broadcast position, odd and large
// extents, padded and offset source views, composition with elementwise maps, +=, size-0 edges, errors.
#include "random_views.h"
#include "test_util.h"
#include <tensorexpr/expr/broadcast.h>
#include <tensorexpr/expr/reshape.h>
#include <algorithm>
#include <utility>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;
using Catch::Matchers::Contains;

// ---- broadcast<dimcast> -------------------------------------------------------------------------------
template <typename Device, int dim, int dimcast>
void CheckBroadcast1D(const Shape<dim>& s, Stream<Device>* stream) {
  // The 1-D source is sometimes a row of a padded matrix (an offset view).
  auto v = MakeInput<Device, 1>(Shape1(s[dimcast]), RandInt(0, 1) ? Layout::kContiguous : Layout::kRowsOfPadded, stream);
  auto out = MakeOutput<Device>(s, RandInt(0, 1) == 1, stream);
  Tensor<Device, dim, float> o = out.view();
  o = broadcast<dimcast>(v.dev, s);
  INFO("broadcast<" << dimcast << ">(v, " << s << "), v " << LayoutName(v.layout));
  CheckAll(ToHost(o), [&](const Shape<dim>& idx) { return At(v.host, Shape1(idx[dimcast])); });
}

}  // namespace

TE_DEVICE_TEST_CASE("broadcast<dimcast> matches the reference for every dimension and position", "[broadcast]") {
  auto for_dim = [&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    StaticFor<dim>([&](auto cast_c) {
      constexpr int dimcast = decltype(cast_c)::value;
      for (const Shape<dim>& s : TestShapes<dim>()) CheckBroadcast1D<Device, dim, dimcast>(s, stream);
    });
  };
  StaticFor<5>(for_dim);
}

TE_DEVICE_TEST_CASE("broadcast<dimcast> of an expression, with += and Assign(kAddTo)", "[broadcast]") {
  const Shape<3> s = Shape3(5, 17, 3);
  auto v = MakeInput<Device, 1>(Shape1(17), Layout::kContiguous, stream);
  auto w = MakeInput<Device, 1>(Shape1(17), Layout::kContiguous, stream);
  TensorContainer<cpu, 3, float> init;
  auto out = MakeOutput<Device>(s, true, stream, &init);
  Tensor<Device, 3, float> o = out.view();
  o += broadcast<1>(v.dev * w.dev - 0.5f, s);
  CheckAll(ToHost(o), [&](const Shape<3>& i) {
    return At(init.view(), i) + At(v.host, Shape1(i[1])) * At(w.host, Shape1(i[1])) - 0.5;
  });
  // Assign with kAddTo accumulates once more; kNullOp leaves the output alone.
  Assign(o, kAddTo, broadcast<1>(v.dev, s));
  Assign(o, kNullOp, broadcast<1>(w.dev, s));
  CheckAll(ToHost(o), [&](const Shape<3>& i) {
    const double vi = At(v.host, Shape1(i[1]));
    return At(init.view(), i) + vi * At(w.host, Shape1(i[1])) - 0.5 + vi;
  });
}

TE_DEVICE_TEST_CASE("broadcast composes with reshape and maps: reshape(a, s) * 2 + broadcast<1>(v, s)", "[broadcast]") {
  for (int rep = 0; rep < 3; ++rep) {
    const Shape<2> s = Shape2(RandInt(1, 40), RandInt(1, 40));
    const Shape<3> as = Shape3(s[0], 1, s[1]);  // the same elements, another shape
    auto a = MakeInput<Device, 3>(as, RandLayout(), stream);
    auto v = MakeInput<Device, 1>(Shape1(s[1]), Layout::kContiguous, stream);
    auto out = MakeOutput<Device>(s, rep == 1, stream);
    Tensor<Device, 2, float> o = out.view();
    o = reshape(a.dev, s) * 2.0f + broadcast<1>(v.dev, s);
    CheckAll(ToHost(o), [&](const Shape<2>& i) {
      return At(a.host, Shape3(i[0], 0, i[1])) * 2.0 + At(v.host, Shape1(i[1]));
    });
    // Broadcasting along rows and along columns in one expression: an outer sum.
    const Shape<2> t = Shape2(s[1], s[0]);
    auto u = MakeInput<Device, 1>(Shape1(s[0]), Layout::kContiguous, stream);
    auto out2 = MakeOutput<Device>(t, true, stream);
    Tensor<Device, 2, float> o2 = out2.view();
    o2 = broadcast<0>(v.dev, t) - broadcast<1>(u.dev, t);
    CheckAll(ToHost(o2), [&](const Shape<2>& i) { return At(v.host, Shape1(i[0])) - At(u.host, Shape1(i[1])); });
  }
}

TE_DEVICE_TEST_CASE("broadcast works for double and keeps values exactly", "[broadcast]") {
  const Shape<4> s = Shape4(3, 2, 7, 5);
  auto v = MakeInput<Device, 1, double>(Shape1(7), Layout::kContiguous, stream);
  auto out = MakeOutput<Device, 4, double>(s, true, stream);
  Tensor<Device, 4, double> o = out.view();
  o = broadcast<2>(v.dev, s);
  CheckAll(ToHost(o), [&](const Shape<4>& i) { return AsDouble(v.host[i[2]]); }, 0.0);
}

TE_DEVICE_TEST_CASE("repmat(v, nrow) repeats v as rows", "[broadcast]") {
  for (const index_t nrow : {index_t(1), index_t(3), index_t(1029)}) {
    const index_t len = RandInt(1, 2) == 1 ? 17 : 1;
    auto v = MakeInput<Device, 1>(Shape1(len), Layout::kRowsOfPadded, stream);
    auto out = MakeOutput<Device>(Shape2(nrow, len), true, stream);
    Tensor<Device, 2, float> o = out.view();
    o = repmat(v.dev, nrow);
    CHECK(repmat(v.dev, nrow).shape() == Shape2(nrow, len));
    CheckAll(ToHost(o), [&](const Shape<2>& i) { return At(v.host, Shape1(i[1])); });
  }
}

namespace {
// ---- broadcast_with_axis ------------------------------------------------------------------------------
template <typename Device, int srcdim>
void CheckWithAxis(const Shape<srcdim>& s, int axis, index_t size, Stream<Device>* stream) {
  auto a = MakeInput<Device, srcdim>(s, RandLayout(), stream);
  const auto e = broadcast_with_axis(a.dev, axis, size);
  Shape<srcdim + 1> want;
  for (int i = 0, j = 0; i <= srcdim; ++i) want[i] = i == axis + 1 ? size : s[j++];
  REQUIRE(e.shape() == want);
  auto out = MakeOutput<Device>(want, RandInt(0, 1) == 1, stream);
  Tensor<Device, srcdim + 1, float> o = out.view();
  o = e;
  INFO("broadcast_with_axis(a " << s << ", axis " << axis << ", size " << size << "), a " << LayoutName(a.layout));
  CheckAll(ToHost(o), [&](const Shape<srcdim + 1>& idx) {
    Shape<srcdim> si;  // the output index without the inserted dimension
    for (int i = 0, j = 0; i <= srcdim; ++i)
      if (i != axis + 1) si[j++] = idx[i];
    return At(a.host, si);
  });
}

// ---- broadcast_keepdim --------------------------------------------------------------------------------
template <typename Device, int dim>
void CheckKeepdim(Shape<dim> s, int axis, index_t size, Stream<Device>* stream) {
  s[axis] = 1;
  auto a = MakeInput<Device, dim>(s, RandLayout(), stream);
  Shape<dim> want = s;
  want[axis] = size;
  auto out = MakeOutput<Device>(want, RandInt(0, 1) == 1, stream);
  Tensor<Device, dim, float> o = out.view();
  o = broadcast_keepdim(a.dev, axis, size);
  INFO("broadcast_keepdim(a " << s << ", axis " << axis << ", size " << size << "), a " << LayoutName(a.layout));
  CheckAll(ToHost(o), [&](Shape<dim> idx) {
    idx[axis] = 0;
    return At(a.host, idx);
  });
}
}  // namespace

TE_DEVICE_TEST_CASE("broadcast_with_axis matches the reference for every axis, source dims 1..4", "[broadcast]") {
  StaticFor<4>([&](auto dim_c) {
    constexpr int srcdim = decltype(dim_c)::value + 1;
    for (int axis = -1; axis < srcdim; ++axis) {
      for (const Shape<srcdim>& s : TestShapes<srcdim>()) {
        const index_t size = s.Size() > 1000 ? RandInt(1, 3) : std::vector<index_t>{1, 3, 17}[RandInt(0, 2)];
        CheckWithAxis<Device>(s, axis, size, stream);
      }
      CheckWithAxis<Device>(RandShape<srcdim>(20), axis, 1031, stream);  // a large new dimension
    }
  });
}

TE_DEVICE_TEST_CASE("broadcast_keepdim matches the reference for every axis, dims 1..5", "[broadcast]") {
  StaticFor<5>([&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    for (int axis = 0; axis < dim; ++axis) {
      for (const Shape<dim>& s : TestShapes<dim>()) {
        const index_t size = s.Size() > 1000 ? RandInt(1, 3) : std::vector<index_t>{1, 2, 5, 17}[RandInt(0, 3)];
        CheckKeepdim<Device>(s, axis, size, stream);
      }
      CheckKeepdim<Device>(RandShape<dim>(20), axis, 1031, stream);
    }
  });
}

TE_DEVICE_TEST_CASE("broadcast_with_axis and broadcast_keepdim of expressions, nested, with +=", "[broadcast]") {
  const Shape<3> s = Shape3(4, 1, 9);
  auto a = MakeInput<Device, 3>(s, Layout::kPadded, stream);
  auto b = MakeInput<Device, 3>(s, Layout::kContiguous, stream);
  // keepdim over a map, then a new dimension in front of it: (2, 4, 5, 9).
  const Shape<4> want = Shape4(2, 4, 5, 9);
  TensorContainer<cpu, 4, float> init;
  auto out = MakeOutput<Device>(want, true, stream, &init);
  Tensor<Device, 4, float> o = out.view();
  o += broadcast_with_axis(broadcast_keepdim(a.dev * b.dev + 1.0f, 1, 5), -1, 2) * 3.0f;
  CheckAll(ToHost(o), [&](const Shape<4>& i) {
    const Shape<3> si = Shape3(i[1], 0, i[3]);
    return At(init.view(), i) + (At(a.host, si) * At(b.host, si) + 1.0) * 3.0;
  });
}

TE_DEVICE_TEST_CASE("broadcast size-0 edges evaluate nothing and do not fail", "[broadcast]") {
  auto v = MakeInput<Device, 1>(Shape1(5), Layout::kContiguous, stream);
  auto empty = MakeInput<Device, 1>(Shape1(0), Layout::kContiguous, stream);
  auto out = MakeOutput<Device>(Shape2(0, 5), false, stream);
  Tensor<Device, 2, float> o = out.view();
  o = broadcast<1>(v.dev, Shape2(0, 5));
  o += repmat(v.dev, 0);
  auto out2 = MakeOutput<Device>(Shape3(3, 0, 2), false, stream);
  Tensor<Device, 3, float> o2 = out2.view();
  o2 = broadcast<1>(empty.dev, Shape3(3, 0, 2));
  auto a = MakeInput<Device, 2>(Shape2(3, 4), Layout::kPadded, stream);
  auto out3 = MakeOutput<Device>(Shape3(3, 0, 4), false, stream);
  Tensor<Device, 3, float> o3 = out3.view();
  o3 = broadcast_with_axis(a.dev, 0, 0);
  CHECK(broadcast_with_axis(a.dev, 1, 0).shape() == Shape3(3, 4, 0));
  CHECK(broadcast_keepdim(broadcast_with_axis(a.dev, 0, 1), 1, 0).shape() == Shape3(3, 0, 4));
  Sync(stream);
}

TE_DEVICE_TEST_CASE("broadcast errors name the operation, the shapes and the bad value", "[broadcast]") {
  auto v = MakeInput<Device, 1>(Shape1(4), Layout::kContiguous, stream);
  auto a = MakeInput<Device, 3>(Shape3(2, 1, 5), Layout::kContiguous, stream);
  REQUIRE_THROWS_AS(broadcast<1>(v.dev, Shape2(3, 5)), tensorexpr::Error);
  REQUIRE_THROWS_WITH(broadcast<1>(v.dev, Shape2(3, 5)),
                      Contains("broadcast<1>") && Contains("(4,)") && Contains("(3,5)"));
  REQUIRE_THROWS_AS(repmat(v.dev, -2), tensorexpr::Error);
  REQUIRE_THROWS_WITH(repmat(v.dev, -2), Contains("repmat") && Contains("-2"));
  REQUIRE_THROWS_AS(broadcast_with_axis(a.dev, 3, 2), tensorexpr::Error);
  REQUIRE_THROWS_WITH(broadcast_with_axis(a.dev, 3, 2),
                      Contains("broadcast_with_axis") && Contains("axis 3") && Contains("(2,1,5)"));
  REQUIRE_THROWS_WITH(broadcast_with_axis(a.dev, -2, 2), Contains("axis -2") && Contains("(2,1,5)"));
  REQUIRE_THROWS_WITH(broadcast_with_axis(a.dev, 0, -1), Contains("size") && Contains("-1"));
  REQUIRE_THROWS_AS(broadcast_keepdim(a.dev, 2, 3), tensorexpr::Error);
  REQUIRE_THROWS_WITH(broadcast_keepdim(a.dev, 2, 3),
                      Contains("broadcast_keepdim") && Contains("(2,1,5)") && Contains("extent 1 at axis 2"));
  REQUIRE_THROWS_WITH(broadcast_keepdim(a.dev, 3, 3), Contains("axis 3") && Contains("(2,1,5)"));
  REQUIRE_THROWS_WITH(broadcast_keepdim(a.dev, -1, 3), Contains("axis -1"));
  // A correct broadcast assigned to a tensor of another shape: the assignment names both shapes.
  auto out = MakeOutput<Device>(Shape2(3, 4), false, stream);
  Tensor<Device, 2, float> o = out.view();
  REQUIRE_THROWS_AS(o = broadcast<1>(v.dev, Shape2(2, 4)), tensorexpr::Error);
  REQUIRE_THROWS_WITH(o = broadcast<1>(v.dev, Shape2(2, 4)), Contains("(3,4)") && Contains("(2,4)"));
}
