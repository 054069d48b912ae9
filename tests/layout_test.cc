// layout_test.cc — reshape, swapaxis, transpose, slice, concat against a float64 reference on fresh random
// data: dimension counts 1..5, every axis, odd and large extents, padded and offset source views,
// expressions as sources, composition with maps, +=, size-0 edges, and the errors.
#include "random_views.h"
#include "test_util.h"
#include <tensorexpr/expr/broadcast.h>
#include <tensorexpr/expr/concat.h>
#include <tensorexpr/index_div.h>
#include <tensorexpr/expr/reshape.h>
#include <tensorexpr/expr/slice.h>
#include <tensorexpr/expr/swapaxis.h>
#include <tensorexpr/expr/transpose.h>
#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;
using Catch::Matchers::Contains;

// Row-major flat index of idx in shape s, and back.
template <int dim>
index_t Ravel(const Shape<dim>& idx, const Shape<dim>& s) {
  index_t i = 0;
  for (int d = 0; d < dim; ++d) i = i * s[d] + idx[d];
  return i;
}
template <int dim>
Shape<dim> Unravel(index_t i, const Shape<dim>& s) {
  Shape<dim> idx;
  for (int d = dim - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

// A random shape of `dim` dimensions holding exactly `total` elements (total's prime factors spread at
// random); with keep_last > 0 the last extent is keep_last (which must divide total).
template <int dim>
Shape<dim> RandFactorShape(index_t total, index_t keep_last = 0) {
  Shape<dim> s;
  for (int i = 0; i < dim; ++i) s[i] = 1;
  if (total == 0) {
    for (int i = 0; i < dim; ++i) s[i] = RandInt(1, 4);
    s[RandInt(0, dim - 1)] = 0;
    return s;
  }
  const int spread = keep_last > 0 && dim > 1 ? dim - 1 : dim;
  if (keep_last > 0 && dim > 1) {
    s[dim - 1] = keep_last;
    total /= keep_last;
  }
  for (index_t p = 2; total > 1; ++p) {
    while (total % p == 0) {
      s[RandInt(0, spread - 1)] *= p;
      total /= p;
    }
  }
  return s;
}

}  // namespace

// ---- IndexDiv: the divider every plan uses, and IndexDiv32, its 32-bit form ---------------------------
#if !defined(__CUDACC__)  // host arithmetic; on the GPU the same formula runs inside every plan tested below
namespace {
// Div (IndexDiv or IndexDiv32, whose indices are T, of `bits` bits below the sign) against the plain
// division: every small divisor and dividend, powers of two and their neighbours with dividends up to the
// largest, and random divisors of every magnitude.
template <typename Div, typename T>
void CheckDividesExactly(int bits) {
  index_t bad = 0, checked = 0;
  std::string first;
  auto check = [&](const Div& div, T n) {
    ++checked;
    T r;
    const T q = div.DivMod(n, &r);
    const T d = static_cast<T>(div.divisor_);
    if (q != n / d || r != n % d) {
      if (bad++ == 0) first = Message(n, " / ", d, " gave ", q, " rem ", r);
    }
  };
  const T kMax = std::numeric_limits<T>::max();
  auto random = [bits]() { return static_cast<T>(Rng()() >> (64 - bits) >> RandInt(0, bits - 1)); };
  for (T d = 1; d <= 1500; ++d) {
    const Div div = Div::Make(d);
    for (T n = 0; n <= 1500; ++n) check(div, n);
  }
  for (int k = 0; k < bits; ++k) {
    for (T d : {T(T(1) << k), T((T(1) << k) + 1), std::max<T>(1, T((T(1) << k) - 1)), kMax, T(kMax - 1)}) {
      const Div div = Div::Make(d);
      for (int j = 0; j < 200; ++j) {
        check(div, random());
        check(div, T(kMax - RandInt(0, 1000)));
        const T mult = T(RandInt(0, std::min<index_t>(kMax / d, 1000)) * d);  // a multiple and the index before
        check(div, mult);
        if (mult > 0) check(div, T(mult - 1));
      }
    }
  }
  for (int j = 0; j < 200000; ++j) {
    const T d = std::max<T>(1, random());
    const Div div = Div::Make(d);
    const T n = random();
    check(div, n);
    const T q = n / d;
    check(div, T(q * d));
    if (q > 0) check(div, T(q * d - 1));
  }
  INFO(first);
  INFO("wrong: " << bad << " of " << checked);
  CHECK(bad == 0);
  // Divisors below 1 only come from empty shapes (never evaluated) and act as 1.
  T r;
  CHECK(Div::Make(0).DivMod(T(7), &r) == 7);
  CHECK(r == 0);
}
}  // namespace

TEST_CASE("IndexDiv divides every non-negative index exactly", "[layout][cpu]") {
  CheckDividesExactly<IndexDiv, index_t>(63);
}
TEST_CASE("IndexDiv32 divides every non-negative int exactly, and refuses divisors past an int", "[layout][cpu]") {
  CheckDividesExactly<IndexDiv32, int>(31);
  CHECK_THROWS_WITH(IndexDiv32::Make(index_t(1) << 31), Catch::Contains("does not fit an int"));
}
#endif

// ---- reshape --------------------------------------------------------------------------------------------
namespace {
template <typename Device, int srcdim, int dstdim>
void CheckReshape(const Shape<srcdim>& s, const Shape<dstdim>& t, Stream<Device>* stream) {
  auto a = MakeInput<Device, srcdim>(s, RandLayout(), stream);
  auto out = MakeOutput<Device>(t, RandInt(0, 1) == 1, stream);
  Tensor<Device, dstdim, float> o = out.view();
  o = reshape(a.dev, t);
  INFO("reshape(a " << s << " " << LayoutName(a.layout) << ", " << t << ")");
  CheckAll(ToHost(o), [&](const Shape<dstdim>& idx) { return At(a.host, Unravel(Ravel(idx, t), s)); });
}
}  // namespace

TE_DEVICE_TEST_CASE("reshape between any dimension counts 1..5 matches the reference", "[layout]") {
  StaticFor<5>([&](auto src_c) {
    constexpr int srcdim = decltype(src_c)::value + 1;
    StaticFor<5>([&](auto dst_c) {
      constexpr int dstdim = decltype(dst_c)::value + 1;
      for (const Shape<srcdim>& s : TestShapes<srcdim>()) {
        CheckReshape<Device>(s, RandFactorShape<dstdim>(s.Size()), stream);             // any split
        CheckReshape<Device>(s, RandFactorShape<dstdim>(s.Size(), s[srcdim - 1]), stream);  // last dim kept
      }
    });
  });
}

TE_DEVICE_TEST_CASE("reshape of an expression, with += and a single-row source", "[layout]") {
  auto a = MakeInput<Device, 2>(Shape2(6, 35), Layout::kPadded, stream);
  auto b = MakeInput<Device, 2>(Shape2(6, 35), Layout::kRowsOfPadded, stream);
  const Shape<3> t = Shape3(5, 7, 6);
  TensorContainer<cpu, 3, float> init;
  auto out = MakeOutput<Device>(t, true, stream, &init);
  Tensor<Device, 3, float> o = out.view();
  o += reshape(a.dev * b.dev - 2.0f, t);
  CheckAll(ToHost(o), [&](const Shape<3>& i) {
    const Shape<2> si = Unravel(Ravel(i, t), Shape2(6, 35));
    return At(init.view(), i) + At(a.host, si) * At(b.host, si) - 2.0;
  });
  // A (1, 1, n) source is one row: its elements spread over many output rows.
  auto r = MakeInput<Device, 3>(Shape3(1, 1, 1155), Layout::kPadded, stream);
  auto out2 = MakeOutput<Device>(Shape4(3, 5, 7, 11), false, stream);
  Tensor<Device, 4, float> o2 = out2.view();
  o2 = reshape(r.dev, Shape4(3, 5, 7, 11));
  CheckAll(ToHost(o2), [&](const Shape<4>& i) { return At(r.host, Shape3(0, 0, Ravel(i, Shape4(3, 5, 7, 11)))); });
  // Reshaping twice gives the source back.
  auto out3 = MakeOutput<Device>(Shape2(6, 35), true, stream);
  Tensor<Device, 2, float> o3 = out3.view();
  o3 = reshape(reshape(a.dev, Shape3(7, 5, 6)), Shape2(6, 35));
  CheckAll(ToHost(o3), [&](const Shape<2>& i) { return At(a.host, i); }, 0.0);
}

// ---- swapaxis / transpose ---------------------------------------------------------------------------------
namespace {
template <typename Device, int dim, typename E>
void CheckPermuted(const Input<Device, dim>& a, const E& e, const Shape<dim>& axes, const char* what) {
  Shape<dim> want;
  for (int i = 0; i < dim; ++i) want[i] = a.host.shape_[axes[i]];
  REQUIRE(e.shape() == want);
  auto out = MakeOutput<Device>(want, RandInt(0, 1) == 1, a.dev.stream_);
  Tensor<Device, dim, float> o = out.view();
  o = e;
  INFO(what << " of a " << a.host.shape_ << " (" << LayoutName(a.layout) << "), axes " << axes);
  CheckAll(ToHost(o), [&](const Shape<dim>& idx) {
    Shape<dim> si;
    for (int i = 0; i < dim; ++i) si[axes[i]] = idx[i];
    return At(a.host, si);
  }, 0.0);
}
}  // namespace

TE_DEVICE_TEST_CASE("swapaxis<a1, a2> matches the reference for every pair of axes, dims 1..5", "[layout]") {
  StaticFor<5>([&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    StaticFor<dim>([&](auto a1_c) {
      StaticFor<dim>([&](auto a2_c) {
        constexpr int a1 = decltype(a1_c)::value, a2 = decltype(a2_c)::value;
        Shape<dim> axes;
        for (int i = 0; i < dim; ++i) axes[i] = i;
        std::swap(axes[a1], axes[a2]);
        for (const Shape<dim>& s : TestShapes<dim>()) {
          auto a = MakeInput<Device, dim>(s, RandLayout(), stream);
          CheckPermuted(a, swapaxis<a1, a2>(a.dev), axes, "swapaxis");
        }
      });
    });
  });
}

TE_DEVICE_TEST_CASE("transpose(e, axes) matches the reference for random permutations, dims 1..5", "[layout]") {
  StaticFor<5>([&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    std::vector<Shape<dim>> perms;
    Shape<dim> identity, reversed, rotated;
    for (int i = 0; i < dim; ++i) {
      identity[i] = i;
      reversed[i] = dim - 1 - i;
      rotated[i] = (i + 1) % dim;
    }
    perms.push_back(identity);
    perms.push_back(reversed);
    perms.push_back(rotated);
    for (int k = 0; k < 6; ++k) {
      Shape<dim> p = identity;
      std::shuffle(p.shape_, p.shape_ + dim, Rng());
      perms.push_back(p);
    }
    for (const Shape<dim>& axes : perms) {
      for (const Shape<dim>& s : TestShapes<dim>()) {
        auto a = MakeInput<Device, dim>(s, RandLayout(), stream);
        CheckPermuted(a, transpose(a.dev, axes), axes, "transpose");
      }
    }
  });
}

TE_DEVICE_TEST_CASE("transpose merges dimensions that stay neighbours and keeps the values right", "[layout]") {
  // Runs of dimensions that move together, and extent-1 dimensions between them.
  const Shape<5> s = Shape5(3, 4, 1, 5, 7);
  for (const Shape<5>& axes : {Shape5(0, 1, 2, 4, 3), Shape5(1, 2, 3, 4, 0), Shape5(4, 0, 1, 2, 3),
                               Shape5(3, 4, 0, 1, 2), Shape5(2, 0, 1, 3, 4), Shape5(0, 3, 1, 2, 4)}) {
    auto a = MakeInput<Device, 5>(s, RandLayout(), stream);
    CheckPermuted(a, transpose(a.dev, axes), axes, "transpose");
  }
  // A 2-D transpose equals e.T().
  auto m = MakeInput<Device, 2>(Shape2(17, 1031), Layout::kPadded, stream);
  auto out = MakeOutput<Device>(Shape2(1031, 17), true, stream);
  Tensor<Device, 2, float> o = out.view();
  o = transpose(m.dev, Shape2(1, 0)) - m.dev.T();
  CheckAll(ToHost(o), [&](const Shape<2>&) { return 0.0; }, 0.0);
}

// Sizes at which transposes run in tiles (cuda/transpose.cuh) or cache blocks (cpu/transpose.h): both tile sides
// at least 16, edges that are not multiples of the 32-element tile, the source's last dimensions spread
// over several output dimensions, an inner block between them and the output's last, padded rows on
// either side, = and +=, both index widths, and a source that is an expression rather than a tensor.
// The source's layout, = or +=, and a tensor or an expression as the source, as given.
template <typename Device, typename DType, int dim>
void CheckTiledTransposeAs(Stream<Device>* stream, const Shape<dim>& s, const Shape<dim>& axes, Layout layout,
                           bool add, bool of_expression) {
  Shape<dim> want;
  for (int i = 0; i < dim; ++i) want[i] = s[axes[i]];
  for (bool force64 : Index64Modes<Device>()) {
    Index64Scope scope(force64);
    auto a = MakeInput<Device, dim, DType>(s, layout, stream);
    TensorContainer<cpu, dim, DType> init;
    auto out = MakeOutput<Device, dim, DType>(want, RandInt(0, 1) == 1, stream, &init);
    Tensor<Device, dim, DType> o = out.view();
    if (of_expression) {
      if (add) o += transpose(a.dev * DType(2), axes);
      else o = transpose(a.dev * DType(2), axes);
    } else {
      if (add) o += transpose(a.dev, axes);
      else o = transpose(a.dev, axes);
    }
    INFO("transpose of a " << s << " (" << LayoutName(layout) << "), axes " << axes << (add ? ", +=" : ", =")
                           << (of_expression ? ", of 2 * a" : "") << (force64 ? ", 64-bit indices" : ""));
    CheckAll(ToHost(o), [&](const Shape<dim>& idx) {
      Shape<dim> si;
      for (int i = 0; i < dim; ++i) si[axes[i]] = idx[i];
      const double v = At(a.host, si) * (of_expression ? 2.0 : 1.0);
      return add ? v + At(init.view(), idx) : v;
    }, add || std::is_same<DType, half_t>::value ? Tol<DType>() : 0.0);  // a float sum rounds
  }
}
// ... drawn at random.
template <typename Device, typename DType, int dim>
void CheckTiledTranspose(Stream<Device>* stream, const Shape<dim>& s, const Shape<dim>& axes) {
  const Layout layout = RandLayout();
  const bool add = RandInt(0, 1) == 1, of_expression = RandInt(0, 1) == 1;
  CheckTiledTransposeAs<Device, DType>(stream, s, axes, layout, add, of_expression);
}

TE_DEVICE_TEST_CASE("transposes large enough for tiles match the reference", "[layout][transpose_tiles]") {
  CheckTiledTranspose<Device, float>(stream, Shape2(70, 33), Shape2(1, 0));
  CheckTiledTranspose<Device, double>(stream, Shape2(16, 100), Shape2(1, 0));
  CheckTiledTranspose<Device, float>(stream, Shape3(3, 45, 37), Shape3(0, 2, 1));      // NCW -> NWC
  CheckTiledTranspose<Device, half_t>(stream, Shape3(2, 67, 40), Shape3(0, 2, 1));
  CheckTiledTranspose<Device, float>(stream, Shape4(2, 40, 5, 7), Shape4(0, 2, 3, 1));  // NCHW -> NHWC: c = H*W
  CheckTiledTranspose<Device, float>(stream, Shape4(2, 5, 19, 40), Shape4(0, 3, 1, 2));  // NHWC -> NCHW: inner H
  CheckTiledTranspose<Device, float>(stream, Shape4(17, 3, 2, 33), Shape4(3, 1, 2, 0));
  CheckTiledTranspose<Device, int32_t>(stream, Shape5(2, 3, 20, 4, 18), Shape5(0, 4, 2, 3, 1));
  // Output rows longer than the CPU's row loop keeps in L1 (cpu/transpose.h blocks them).
  CheckTiledTranspose<Device, float>(stream, Shape2(300, 37), Shape2(1, 0));
  CheckTiledTranspose<Device, double>(stream, Shape3(2, 300, 20), Shape3(0, 2, 1));
  CheckTiledTranspose<Device, float>(stream, Shape4(1, 20, 300, 9), Shape4(0, 3, 1, 2));
  // Several whole tiles and an edge along both sides.
  CheckTiledTranspose<Device, float>(stream, Shape2(129, 200), Shape2(1, 0));
  CheckTiledTranspose<Device, double>(stream, Shape3(2, 100, 70), Shape3(0, 2, 1));
  // The 2-D e.T() runs the same tiles.
  auto m = MakeInput<Device, 2>(Shape2(50, 65), RandLayout(), stream);
  auto out = MakeOutput<Device>(Shape2(65, 50), true, stream);
  Tensor<Device, 2, float> o = out.view();
  o = m.dev.T();
  CheckAll(ToHost(o), [&](const Shape<2>& idx) { return At(m.host, Shape2(idx[1], idx[0])); }, 0.0);
}

// A tensor under transpose(e, axes) is read through a pointer and one step per output row (the GPU's tiles,
// cpu/transpose.h's blocks): from every source layout, padded rows and a Slice() of them included, with =
// and +=, in both index widths.
TE_DEVICE_TEST_CASE("tiled transposes of a tensor read every source layout right", "[layout][transpose_tiles]") {
  for (Layout layout : {Layout::kContiguous, Layout::kPadded, Layout::kRowsOfPadded}) {
    for (bool add : {false, true}) {
      CheckTiledTransposeAs<Device, float>(stream, Shape3(2, 67, 40), Shape3(0, 2, 1), layout, add, false);
      CheckTiledTransposeAs<Device, half_t>(stream, Shape4(2, 40, 5, 7), Shape4(0, 2, 3, 1), layout, add, false);
      CheckTiledTransposeAs<Device, double>(stream, Shape4(3, 2, 33, 20), Shape4(3, 1, 0, 2), layout, add, false);
    }
  }
}

#if !defined(__CUDACC__)
// cpu/transpose.h's register tiles (the widest this processor runs: cpu/transpose_tiles.h; a plain `=`
// from a tensor) and their edges: c and x not multiples of the tile or the 64-element block, c spanning source rows
// (padded or not: only adjacent sources take tiles), padded and offset (unaligned) destinations, += and
// sources that are expressions (the element loop), and outputs of many blocks. Each call draws its
// layout, saver and source kind at random; several calls cover them.
TEST_CASE("CPU transpose register tiles match the reference at their edges", "[layout][transpose_tiles][cpu]") {
  Stream<cpu>* stream = nullptr;
  for (int rep = 0; rep < 4; ++rep) {
    CheckTiledTranspose<cpu, float>(stream, Shape2(131, 67), Shape2(1, 0));
    CheckTiledTranspose<cpu, int32_t>(stream, Shape3(2, 65, 130), Shape3(0, 2, 1));
    CheckTiledTranspose<cpu, double>(stream, Shape3(3, 69, 71), Shape3(0, 2, 1));
    CheckTiledTranspose<cpu, int64_t>(stream, Shape2(77, 129), Shape2(1, 0));
    CheckTiledTranspose<cpu, float>(stream, Shape4(2, 70, 5, 7), Shape4(0, 2, 3, 1));  // c = H*W spans rows
    CheckTiledTranspose<cpu, double>(stream, Shape4(2, 66, 3, 6), Shape4(0, 2, 3, 1));
    CheckTiledTranspose<cpu, float>(stream, Shape4(2, 5, 19, 70), Shape4(0, 3, 1, 2));  // inner H
  }
  // Outputs of many blocks in both directions (16 MiB and more): float and double, with tile edges.
  CheckTiledTranspose<cpu, float>(stream, Shape3(2, 1030, 2051), Shape3(0, 2, 1));
  CheckTiledTranspose<cpu, double>(stream, Shape2(1027, 2050), Shape2(1, 0));
  // An offset destination: the same tiles with unaligned stores.
  TensorContainer<cpu, 2, float> a(Shape2(2053, 2049)), big(Shape2(2050, 2053), 7.0f);
  FillRandom(a.view());
  Tensor<cpu, 2, float> o = big.view().Slice(1, 2050);
  o = a.view().T();
  CheckAll(o, [&](const Shape<2>& idx) { return double(a[idx[1]][idx[0]]); }, 0.0);
  CHECK(big[0][2052] == 7.0f);  // the row before the view is untouched
}

// Outputs of streaming_store::kMinBytes and more leave in streaming stores (cpu/streaming_store.h): maps
// over a flat range and row by row, transposes through their L1 buffer (tiles and the element loop of
// an expression source); destinations that start inside a line (plain stores up to the first whole
// line and after the last) and padded rows whose padding must stay untouched; 1-, 4- and 8-byte elements.
TEST_CASE("CPU assignments past the caches stream whole lines and match the reference", "[layout][streaming][cpu]") {
  constexpr index_t kBig = index_t(33) << 20;  // bytes: past the streaming threshold
  static_assert(streaming_store::kMinBytes <= kBig, "the outputs below must stream");
  SECTION("a flat map into a destination one element past a line boundary") {
    const index_t n = kBig / 4 + 5;
    TensorContainer<cpu, 1, float> x(Shape1(n)), y(Shape1(n + 1), -1.0f);
    FillRandom(x.view());
    Tensor<cpu, 1, float> o(y.dptr_ + 1, Shape1(n), n, nullptr);
    o = x.view() * 2.0f + 1.0f;
    CheckAll(o, [&](const Shape<1>& i) { return double(x[i[0]] * 2.0f + 1.0f); }, 0.0);
    CHECK(y[0] == -1.0f);
  }
  SECTION("a flat map of bytes") {
    const index_t n = kBig + 7;
    TensorContainer<cpu, 1, int8_t> a(Shape1(n)), b(Shape1(n));
    for (index_t i = 0; i < n; ++i) a[i] = static_cast<int8_t>(i % 121 - 60);
    b = a.view() + a.view();
    CheckAll(b.view(), [&](const Shape<1>& i) { return 2.0 * double(a[i[0]]); }, 0.0);
  }
  SECTION("a broadcast row by row into padded rows") {
    const index_t rows = 64 * 130, w = 1031, pitch = 1037;
    TensorContainer<cpu, 3, float> x(Shape3(64, 130, w));
    TensorContainer<cpu, 1, float> bias(Shape1(130));
    TensorContainer<cpu, 1, float> storage(Shape1(rows * pitch), 5.0f);
    FillRandom(x.view());
    FillRandom(bias.view());
    Tensor<cpu, 3, float> y(storage.dptr_, Shape3(64, 130, w), pitch, nullptr);
    y = x.view() + broadcast<1>(bias.view(), y.shape_);
    CheckAll(y, [&](const Shape<3>& i) { return double(x[i[0]][i[1]][i[2]] + bias[i[1]]); }, 0.0);
    index_t touched = 0;
    for (index_t r = 0; r < rows; ++r)
      for (index_t k = w; k < pitch; ++k) touched += storage[r * pitch + k] != 5.0f;
    CHECK(touched == 0);
  }
  SECTION("a broadcast over rows shorter than a line (NCHW 7 x 7 activations), contiguous and padded") {
    const Shape<4> shape = Shape4(64, 1024, 19, 7);  // 35 MB of floats
    const index_t rows = shape.ProdShape(0, 3);
    TensorContainer<cpu, 4, float> x(shape);
    TensorContainer<cpu, 1, float> bias(Shape1(shape[1]));
    FillRandom(x.view());
    FillRandom(bias.view());
    for (index_t pitch : {index_t(7), index_t(9)}) {
      INFO("row pitch " << pitch);
      TensorContainer<cpu, 1, float> storage(Shape1(rows * pitch), 5.0f);
      Tensor<cpu, 4, float> y(storage.dptr_, shape, pitch, nullptr);
      y = F<op::relu>(x.view() + broadcast<1>(bias.view(), shape));
      CheckAll(y, [&](const Shape<4>& i) { return std::max(0.0, double(x[i[0]][i[1]][i[2]][i[3]] + bias[i[1]])); }, 0.0);
      index_t touched = 0;
      for (index_t r = 0; r < rows; ++r)
        for (index_t k = 7; k < pitch; ++k) touched += storage[r * pitch + k] != 5.0f;
      CHECK(touched == 0);
    }
  }
  SECTION("a.T() of floats into a destination that starts inside a line") {
    const index_t n = 3001;  // 36 MB
    TensorContainer<cpu, 2, float> a(Shape2(n, n + 2)), big(Shape2(n + 3, n + 8), 7.0f);
    FillRandom(a.view());
    // Rows 1.. and columns 5.. of big, 12036 bytes apart: each row starts at another offset in its line.
    Tensor<cpu, 2, float> t(big.dptr_ + big.stride_ + 5, Shape2(n + 2, n), big.stride_, nullptr);
    t = a.view().T();
    CheckAll(t, [&](const Shape<2>& i) { return double(a[i[1]][i[0]]); }, 0.0);
    index_t touched = 0;  // the columns around the view and the rows before and after it
    for (index_t r = 0; r < n + 3; ++r)
      for (index_t c = 0; c < n + 8; ++c)
        touched += (r == 0 || r > n + 2 || c < 5 || c >= n + 5) && big[r][c] != 7.0f;
    CHECK(touched == 0);
  }
  SECTION("NCHW -> NHWC of doubles and of an expression") {
    TensorContainer<cpu, 3, double> x(Shape3(2, 257, 8195)), y(Shape3(2, 8195, 257));
    FillRandom(x.view());
    y = transpose(x.view(), Shape3(0, 2, 1));
    CheckAll(y.view(), [&](const Shape<3>& i) { return x[i[0]][i[2]][i[1]]; }, 0.0);
    y = transpose(x.view() * 2.0, Shape3(0, 2, 1));
    CheckAll(y.view(), [&](const Shape<3>& i) { return 2.0 * x[i[0]][i[2]][i[1]]; }, 0.0);
  }
}

// The instruction sets the CPU transposes may run on this machine (cpu/isa.h): AVX2's tiles where the
// processor has them, and always the SSE2 fallback (AVX2 turned off).
std::vector<cpu_isa::Isa> IsasToTest() {
  std::vector<cpu_isa::Isa> isas{cpu_isa::Isa::kBaseline};
  if (cpu_isa::DetectedIsa() >= cpu_isa::Isa::kAvx2) isas.push_back(cpu_isa::Isa::kAvx2);
  return isas;
}
const char* IsaName(cpu_isa::Isa isa) { return isa == cpu_isa::Isa::kAvx2 ? "AVX2" : "baseline (SSE2)"; }

// dst = a.T() and dst = transpose(x, (0, 2, 1)) under `isa`, each element against a naive loop, bit for
// bit: `a` a padded (rows, cols) view, dst an offset, padded view whose padding and the elements before it
// must stay untouched. Element values are distinct patterns of the type's bits (int8 wraps).
template <typename DType>
void CheckTransposeUnderIsa(cpu_isa::Isa isa, index_t rows, index_t cols, index_t src_pad, index_t dst_offset,
                            index_t dst_pad) {
  const cpu_isa::ScopedIsaLimit limit(isa);
  const auto pattern = [](index_t i) { return static_cast<DType>(static_cast<int64_t>(i * 2654435761ll % 1000003) - 500000); };
  TensorContainer<cpu, 1, DType> src_mem(Shape1(rows * (cols + src_pad)));
  for (index_t i = 0; i < src_mem.shape_[0]; ++i) src_mem[i] = pattern(i);
  const Tensor<cpu, 2, DType> a(src_mem.dptr_, Shape2(rows, cols), cols + src_pad, nullptr);
  const index_t dst_stride = rows + dst_pad;
  const DType poison = static_cast<DType>(77);
  TensorContainer<cpu, 1, DType> dst_mem(Shape1(dst_offset + cols * dst_stride), poison);
  Tensor<cpu, 2, DType> t(dst_mem.dptr_ + dst_offset, Shape2(cols, rows), dst_stride, nullptr);
  t = a.T();
  index_t wrong = 0, touched = 0;
  for (index_t i = 0; i < dst_offset; ++i) touched += dst_mem[i] != poison;
  for (index_t j = 0; j < cols; ++j) {
    for (index_t i = 0; i < rows; ++i) wrong += t.dptr_[j * dst_stride + i] != a.dptr_[i * a.stride_ + j];
    for (index_t i = rows; i < dst_stride; ++i) touched += t.dptr_[j * dst_stride + i] != poison;
  }
  INFO(IsaName(isa) << ": a.T() of (" << rows << ", " << cols << ") " << sizeof(DType) << "-byte elements, source padding "
                    << src_pad << ", destination offset " << dst_offset << " and padding " << dst_pad);
  CHECK(wrong == 0);
  CHECK(touched == 0);
  // The same source as NCHW -> NHWC with N = 2 (rows split in two planes when even).
  if (rows % 2 == 0) {
    const Tensor<cpu, 3, DType> x(src_mem.dptr_, Shape3(2, rows / 2, cols), cols + src_pad, nullptr);
    TensorContainer<cpu, 3, DType> y(Shape3(2, cols, rows / 2));
    y = transpose(x, Shape3(0, 2, 1));
    index_t wrong3 = 0;
    for (index_t n = 0; n < 2; ++n)
      for (index_t p = 0; p < cols; ++p)
        for (index_t c = 0; c < rows / 2; ++c) wrong3 += y[n][p][c] != x[n][c][p];
    CHECK(wrong3 == 0);
  }
}

// cpu/transpose_tiles.h's AVX2 tiles (8 x 8 of 4-byte types, 4 x 4 of 8-byte ones) and the SSE2 fallback,
// each forced through cpu_isa::ScopedIsaLimit: extents that are not multiples of 8 or of the 64-element
// block, padded sources, offset and padded destinations, int8 (no tiles: the element loop), and outputs
// on both sides of streaming_store::kMinBytes (32 MiB: the L1 buffer that streams whole lines).
TEST_CASE("CPU transposes match naive loops with AVX2 tiles and with the SSE2 fallback", "[layout][transpose_tiles][isa][cpu]") {
  if (cpu_isa::DetectedIsa() < cpu_isa::Isa::kAvx2) WARN("this processor has no AVX2: only the SSE2 fallback is tested");
  for (cpu_isa::Isa isa : IsasToTest()) {
    for (index_t src_pad : {index_t(0), index_t(3)}) {
      CheckTransposeUnderIsa<float>(isa, 131, 67, src_pad, 0, 0);
      CheckTransposeUnderIsa<float>(isa, 200, 203, src_pad, 1, 5);
      CheckTransposeUnderIsa<int32_t>(isa, 72, 65, src_pad, 3, 1);
      CheckTransposeUnderIsa<float>(isa, 66, 9, src_pad, 0, 0);
      CheckTransposeUnderIsa<double>(isa, 130, 71, src_pad, 1, 2);
      CheckTransposeUnderIsa<int64_t>(isa, 67, 129, src_pad, 0, 3);
      CheckTransposeUnderIsa<int8_t>(isa, 100, 77, src_pad, 5, 3);
      CheckTransposeUnderIsa<float>(isa, 1030, 517, src_pad, 0, 0);  // many blocks, below the threshold
    }
    // Outputs past 32 MiB stream from the L1 buffer.
    constexpr index_t kMiB = index_t(1) << 20;
    static_assert(streaming_store::kMinBytes <= 32 * kMiB, "the outputs below must stream");
    CheckTransposeUnderIsa<float>(isa, 2902, 2891, 0, 0, 0);
    CheckTransposeUnderIsa<float>(isa, 2893, 2899, 1, 3, 2);
    CheckTransposeUnderIsa<double>(isa, 2050, 2051, 0, 1, 1);
    CheckTransposeUnderIsa<int8_t>(isa, 5802, 5787, 0, 7, 0);
  }
}

// The device-generic tiled cases above (random layouts, savers and expression sources) once more with
// AVX2 turned off, so that the SSE2 fallback also meets them on an AVX2 machine.
TEST_CASE("CPU transposes with AVX2 turned off match the reference at tile edges", "[layout][transpose_tiles][isa][cpu]") {
  const cpu_isa::ScopedIsaLimit baseline(cpu_isa::Isa::kBaseline);
  Stream<cpu>* stream = nullptr;
  for (int rep = 0; rep < 2; ++rep) {
    CheckTiledTranspose<cpu, float>(stream, Shape2(131, 67), Shape2(1, 0));
    CheckTiledTranspose<cpu, int32_t>(stream, Shape3(2, 65, 130), Shape3(0, 2, 1));
    CheckTiledTranspose<cpu, double>(stream, Shape3(3, 69, 71), Shape3(0, 2, 1));
    CheckTiledTranspose<cpu, float>(stream, Shape4(2, 70, 5, 7), Shape4(0, 2, 3, 1));
    CheckTiledTranspose<cpu, float>(stream, Shape4(2, 5, 19, 70), Shape4(0, 3, 1, 2));
  }
}
#endif

TE_DEVICE_TEST_CASE("transpose and swapaxis of expressions, with +=", "[layout]") {
  const Shape<4> s = Shape4(2, 3, 5, 7);
  auto a = MakeInput<Device, 4>(s, Layout::kPadded, stream);
  auto b = MakeInput<Device, 4>(s, Layout::kRowsOfPadded, stream);
  const Shape<4> axes = Shape4(3, 1, 0, 2);
  const Shape<4> t = Shape4(7, 3, 2, 5);
  TensorContainer<cpu, 4, float> init;
  auto out = MakeOutput<Device>(t, true, stream, &init);
  Tensor<Device, 4, float> o = out.view();
  o += transpose(a.dev + b.dev, axes) * 0.5f + swapaxis<0, 3>(swapaxis<0, 2>(a.dev));
  // swapaxis<0,2> then <0,3>: (2,3,5,7) -> (5,3,2,7) -> (7,3,2,5), the same permutation as axes.
  CheckAll(ToHost(o), [&](const Shape<4>& i) {
    const Shape<4> si = Shape4(i[2], i[1], i[3], i[0]);
    return At(init.view(), i) + (At(a.host, si) + At(b.host, si)) * 0.5 + At(a.host, si);
  });
}

// ---- slice ---------------------------------------------------------------------------------------------
namespace {
template <typename Device, int dim, int sdim>
void CheckSlice(const Shape<dim>& s, index_t begin, index_t end, Stream<Device>* stream, index_t step = 1) {
  auto a = MakeInput<Device, dim>(s, RandLayout(), stream);
  Shape<dim> want = s;
  want[sdim] = 0;  // count the indices the slice visits
  for (index_t i = begin; step > 0 ? i < end : i > end; i += step) ++want[sdim];
  auto out = MakeOutput<Device>(want, RandInt(0, 1) == 1, stream);
  Tensor<Device, dim, float> o = out.view();
  const auto e = slice<sdim>(a.dev, begin, end, step);
  INFO("slice<" << sdim << ">(a " << s << " " << LayoutName(a.layout) << ", " << begin << ", " << end << ", "
                << step << ")");
  REQUIRE(e.shape() == want);
  o = e;
  CheckAll(ToHost(o), [&](Shape<dim> idx) {
    idx[sdim] = begin + idx[sdim] * step;
    return At(a.host, idx);
  }, 0.0);
}
}  // namespace

TE_DEVICE_TEST_CASE("slice<sdim> matches the reference for every dimension, dims 1..5", "[layout]") {
  StaticFor<5>([&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    StaticFor<dim>([&](auto sdim_c) {
      constexpr int sdim = decltype(sdim_c)::value;
      for (const Shape<dim>& s : TestShapes<dim>()) {
        const index_t n = s[sdim];
        const index_t begin = RandInt(0, n), end = RandInt(begin, n);
        CheckSlice<Device, dim, sdim>(s, begin, end, stream);  // random range (possibly empty)
        CheckSlice<Device, dim, sdim>(s, 0, n, stream);        // the whole dimension
        if (n >= 3) CheckSlice<Device, dim, sdim>(s, 1, n - 1, stream);
        // Steps: forwards from a random start, and backwards from the end or the middle through index 0.
        const index_t step = RandInt(2, 4);
        CheckSlice<Device, dim, sdim>(s, begin, n, stream, step);
        if (n >= 1) CheckSlice<Device, dim, sdim>(s, n - 1, -1, stream, -1);
        if (n >= 1) CheckSlice<Device, dim, sdim>(s, RandInt(0, n - 1), -1, stream, -step);
      }
    });
  });
}

TE_DEVICE_TEST_CASE("slice of expressions and of slices, with +=", "[layout]") {
  const Shape<3> s = Shape3(9, 17, 13);
  auto a = MakeInput<Device, 3>(s, Layout::kRowsOfPadded, stream);
  auto v = MakeInput<Device, 1>(Shape1(13), Layout::kContiguous, stream);
  const Shape<3> t = Shape3(4, 5, 13);
  TensorContainer<cpu, 3, float> init;
  auto out = MakeOutput<Device>(t, true, stream, &init);
  Tensor<Device, 3, float> o = out.view();
  // Rows 2..6 of dimension 0, then 3..8 of dimension 1 of a map over a, then 1..5 of that.
  o += slice<1>(slice<1>(slice<0>(a.dev * 2.0f + broadcast<2>(v.dev, s), 2, 6), 3, 9), 1, 6);
  CheckAll(ToHost(o), [&](const Shape<3>& i) {
    return At(init.view(), i) + At(a.host, Shape3(i[0] + 2, i[1] + 4, i[2])) * 2.0 + At(v.host, Shape1(i[2]));
  });
}

// ---- concat --------------------------------------------------------------------------------------------
namespace {
// kTensors: both operands tensors (a plain `=` of them copies rows: expr/row_copy.h); otherwise the
// right operand is an expression, so the two operands have different node types and the map runs.
template <typename Device, int dim, int cdim, bool kTensors = false>
void CheckConcat(Shape<dim> s, index_t la, index_t lb, Stream<Device>* stream) {
  Shape<dim> sa = s, sb = s;
  sa[cdim] = la;
  sb[cdim] = lb;
  auto a = MakeInput<Device, dim>(sa, RandLayout(), stream);
  auto b = MakeInput<Device, dim>(sb, RandLayout(), stream);
  Shape<dim> want = s;
  want[cdim] = la + lb;
  auto out = MakeOutput<Device>(want, RandInt(0, 1) == 1, stream);
  Tensor<Device, dim, float> o = out.view();
  const double scale = kTensors ? 1.0 : 1.5;
  if constexpr (kTensors) {
    const auto e = concat<cdim>(a.dev, b.dev);
    REQUIRE(e.shape() == want);
    o = e;
  } else {
    const auto e = concat<cdim>(a.dev, b.dev * 1.5f);
    REQUIRE(e.shape() == want);
    o = e;
  }
  INFO("concat<" << cdim << ">(a " << sa << " " << LayoutName(a.layout) << ", b " << sb << " "
                 << LayoutName(b.layout) << ")" << (kTensors ? " of tensors" : ""));
  CheckAll(ToHost(o), [&](Shape<dim> idx) {
    if (idx[cdim] < la) return At(a.host, idx);
    idx[cdim] -= la;
    return At(b.host, idx) * scale;
  });
}
}  // namespace

TE_DEVICE_TEST_CASE("concat<cdim> matches the reference for every dimension, dims 1..5", "[layout]") {
  StaticFor<5>([&](auto dim_c) {
    constexpr int dim = decltype(dim_c)::value + 1;
    StaticFor<dim>([&](auto cdim_c) {
      constexpr int cdim = decltype(cdim_c)::value;
      for (const Shape<dim>& s : TestShapes<dim>()) {
        const index_t la = s[cdim] > 100 ? s[cdim] : RandInt(1, 9), lb = RandInt(1, 5);
        CheckConcat<Device, dim, cdim>(s, la, lb, stream);
        CheckConcat<Device, dim, cdim>(s, 0, lb, stream);  // one operand empty, the result is not
        CheckConcat<Device, dim, cdim>(s, la, 0, stream);
        CheckConcat<Device, dim, cdim, true>(s, la, lb, stream);
        CheckConcat<Device, dim, cdim, true>(s, 0, lb, stream);
      }
    });
  });
}

TE_DEVICE_TEST_CASE("concat of four operands along each dimension", "[layout]") {
  const index_t widths[] = {2, 1, 3, 0};  // one operand empty along the joined dimension
  StaticFor<3>([&](auto cdim_c) {
    constexpr int cdim = decltype(cdim_c)::value;
    std::vector<decltype(MakeInput<Device, 3>(Shape3(1, 1, 1), Layout::kContiguous, stream))> in;
    for (index_t w : widths) {
      Shape<3> s = Shape3(3, 4, 5);
      s[cdim] = w;
      in.push_back(MakeInput<Device, 3>(s, RandLayout(), stream));
    }
    Shape<3> t = Shape3(3, 4, 5);
    t[cdim] = 6;
    TensorContainer<cpu, 3, float> init;
    auto out = MakeOutput<Device>(t, true, stream, &init);
    Tensor<Device, 3, float> o = out.view();
    o += concat<cdim>(in[0].dev, in[1].dev, in[2].dev * 2.0f, in[3].dev);
    INFO("concat<" << cdim << "> of widths 2, 1, 3, 0");
    CheckAll(ToHost(o), [&](const Shape<3>& i) {
      Shape<3> src = i;  // the index in the operand k that holds element i
      size_t k = 0;
      while (src[cdim] >= widths[k]) src[cdim] -= widths[k++];
      return At(init.view(), i) + At(in[k].host, src) * (k == 2 ? 2.0 : 1.0);
    });
  });
}

TE_DEVICE_TEST_CASE("concat of concats and of slices, with +=", "[layout]") {
  auto a = MakeInput<Device, 3>(Shape3(3, 4, 5), Layout::kPadded, stream);
  auto b = MakeInput<Device, 3>(Shape3(3, 2, 5), Layout::kRowsOfPadded, stream);
  auto c = MakeInput<Device, 3>(Shape3(3, 6, 7), Layout::kContiguous, stream);
  const Shape<3> t = Shape3(3, 6, 12);
  TensorContainer<cpu, 3, float> init;
  auto out = MakeOutput<Device>(t, true, stream, &init);
  Tensor<Device, 3, float> o = out.view();
  // [a; b] along dimension 1, then next to c along dimension 2; a slice puts the halves back in order.
  o += concat<2>(concat<1>(a.dev, b.dev), c.dev);
  CheckAll(ToHost(o), [&](const Shape<3>& i) {
    double v;
    if (i[2] >= 5) {
      v = At(c.host, Shape3(i[0], i[1], i[2] - 5));
    } else {
      v = i[1] < 4 ? At(a.host, i) : At(b.host, Shape3(i[0], i[1] - 4, i[2]));
    }
    return At(init.view(), i) + v;
  });
  auto out2 = MakeOutput<Device>(Shape3(3, 4, 5), false, stream);
  Tensor<Device, 3, float> o2 = out2.view();
  o2 = concat<1>(slice<1>(a.dev, 2, 4), slice<1>(a.dev, 0, 2));
  CheckAll(ToHost(o2), [&](const Shape<3>& i) { return At(a.host, Shape3(i[0], (i[1] + 2) % 4, i[2])); }, 0.0);
}

// Tensors' concat and slice copy rows (expr/row_copy.h) in units as wide as every address, pitch and row
// length allows: element sizes 1, 2, 4 and 8, rows of odd and even lengths, and offsets that break the
// 16-byte alignment, each checked bit for bit.
namespace {
// Values in [-100, 100) (whole numbers for integer types: int8_t holds them) and outputs that start random,
// not poisoned: 12345 does not fit in one byte.
template <typename Device, int dim, typename DType>
Input<Device, dim, DType> RowInput(const Shape<dim>& s, Stream<Device>* stream) {
  auto in = MakeInput<Device, dim, DType>(s, RandLayout(), stream);
  FillRandom(in.host_all.view(), -100.0, 100.0);
  Copy(in.dev_all.view(), in.host_all.view(), stream);
  Sync(stream);
  return in;
}
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> RowOutput(const Shape<dim>& s, Stream<Device>* stream) {
  TensorContainer<cpu, dim, DType> init;
  return MakeOutput<Device, dim, DType>(s, RandInt(0, 1) == 1, stream, &init);
}

template <typename Device, typename DType>
void CheckRowCopies(Stream<Device>* stream) {
  for (const index_t cols : {index_t(1), index_t(3), index_t(8), index_t(21), index_t(64)}) {
    auto a = RowInput<Device, 3, DType>(Shape3(3, 5, cols), stream);
    auto b = RowInput<Device, 3, DType>(Shape3(3, 5, cols + 1), stream);
    INFO("cols " << cols << ", a " << LayoutName(a.layout) << ", b " << LayoutName(b.layout));
    auto out = RowOutput<Device, 3, DType>(Shape3(3, 5, 2 * cols + 1), stream);
    Tensor<Device, 3, DType> o = out.view();
    o = concat<2>(a.dev, b.dev);
    CheckAll(ToHost(o), [&](const Shape<3>& i) {
      return i[2] < cols ? At(a.host, i) : At(b.host, Shape3(i[0], i[1], i[2] - cols));
    }, 0.0);
    auto out1 = RowOutput<Device, 3, DType>(Shape3(3, 5, cols), stream);
    Tensor<Device, 3, DType> o1 = out1.view();
    o1 = slice<2>(b.dev, 1, cols + 1);
    CheckAll(ToHost(o1), [&](const Shape<3>& i) { return At(b.host, Shape3(i[0], i[1], i[2] + 1)); }, 0.0);
    auto out2 = RowOutput<Device, 3, DType>(Shape3(3, 3, cols), stream);
    Tensor<Device, 3, DType> o2 = out2.view();
    o2 = slice<1>(a.dev, 1, 4);
    CheckAll(ToHost(o2), [&](const Shape<3>& i) { return At(a.host, Shape3(i[0], i[1] + 1, i[2])); }, 0.0);
    auto out3 = RowOutput<Device, 3, DType>(Shape3(6, 5, cols), stream);
    Tensor<Device, 3, DType> o3 = out3.view();
    o3 = concat<0>(a.dev, a.dev);
    CheckAll(ToHost(o3), [&](const Shape<3>& i) { return At(a.host, Shape3(i[0] % 3, i[1], i[2])); }, 0.0);
  }
}
}  // namespace

TE_DEVICE_TEST_CASE("concat and slice of tensors copy rows exactly in every element size", "[layout]") {
  CheckRowCopies<Device, int8_t>(stream);
  CheckRowCopies<Device, half_t>(stream);
  CheckRowCopies<Device, float>(stream);
  CheckRowCopies<Device, double>(stream);
}

// ---- composition and edges --------------------------------------------------------------------------------
TE_DEVICE_TEST_CASE("layout expressions compose: swapaxis(concat) * 2 - slice, transpose(reshape) + broadcast", "[layout]") {
  auto a = MakeInput<Device, 3>(Shape3(3, 4, 5), Layout::kPadded, stream);
  auto b = MakeInput<Device, 3>(Shape3(3, 2, 5), Layout::kContiguous, stream);
  auto c = MakeInput<Device, 3>(Shape3(5, 6, 7), Layout::kRowsOfPadded, stream);
  const Shape<3> t = Shape3(5, 6, 3);
  auto out = MakeOutput<Device>(t, true, stream);
  Tensor<Device, 3, float> o = out.view();
  o = swapaxis<0, 2>(concat<1>(a.dev, b.dev)) * 2.0f - slice<2>(c.dev, 2, 5);
  CheckAll(ToHost(o), [&](const Shape<3>& i) {  // i = (k, j, n) reads concat (n, j, k)
    const double cat = i[1] < 4 ? At(a.host, Shape3(i[2], i[1], i[0])) : At(b.host, Shape3(i[2], i[1] - 4, i[0]));
    return cat * 2.0 - At(c.host, Shape3(i[0], i[1], i[2] + 2));
  });

  auto x = MakeInput<Device, 2>(Shape2(12, 35), Layout::kPadded, stream);
  auto v = MakeInput<Device, 1>(Shape1(4), Layout::kContiguous, stream);
  const Shape<3> u = Shape3(7, 4, 15);  // transpose of (15, 4, 7) with axes (2, 1, 0)
  auto out2 = MakeOutput<Device>(u, false, stream);
  Tensor<Device, 3, float> o2 = out2.view();
  o2 = transpose(reshape(x.dev, Shape3(15, 4, 7)), Shape3(2, 1, 0)) + broadcast<1>(v.dev, u);
  CheckAll(ToHost(o2), [&](const Shape<3>& i) {
    const index_t flat = Ravel(Shape3(i[2], i[1], i[0]), Shape3(15, 4, 7));
    return At(x.host, Unravel(flat, Shape2(12, 35))) + At(v.host, Shape1(i[1]));
  });
}

TE_DEVICE_TEST_CASE("layout expressions on size-0 shapes evaluate nothing and do not fail", "[layout]") {
  auto a = MakeInput<Device, 2>(Shape2(3, 4), Layout::kPadded, stream);
  auto z = MakeInput<Device, 3>(Shape3(2, 0, 5), Layout::kContiguous, stream);
  auto o1 = MakeOutput<Device>(Shape2(0, 10), false, stream);
  Tensor<Device, 2, float> v1 = o1.view();
  v1 = reshape(z.dev, Shape2(0, 10));
  auto o2 = MakeOutput<Device>(Shape3(5, 0, 2), false, stream);
  Tensor<Device, 3, float> v2 = o2.view();
  v2 = transpose(z.dev, Shape3(2, 1, 0));
  v2 += swapaxis<0, 2>(z.dev);
  auto o3 = MakeOutput<Device>(Shape2(3, 0), false, stream);
  Tensor<Device, 2, float> v3 = o3.view();
  v3 = slice<1>(a.dev, 2, 2);
  auto o4 = MakeOutput<Device>(Shape3(4, 0, 5), false, stream);
  Tensor<Device, 3, float> v4 = o4.view();
  v4 = concat<0>(z.dev, z.dev);
  CHECK(concat<1>(z.dev, z.dev).shape() == Shape3(2, 0, 5));
  CHECK(slice<0>(a.dev, 0, 0).shape() == Shape2(0, 4));
  Sync(stream);
}

TE_DEVICE_TEST_CASE("layout errors name the operation, the shapes and the bad value", "[layout]") {
  auto a = MakeInput<Device, 3>(Shape3(2, 3, 4), Layout::kContiguous, stream);
  auto b = MakeInput<Device, 3>(Shape3(2, 5, 3), Layout::kContiguous, stream);
  REQUIRE_THROWS_AS(reshape(a.dev, Shape2(5, 5)), tensorexpr::Error);
  REQUIRE_THROWS_WITH(reshape(a.dev, Shape2(5, 5)),
                      Contains("reshape") && Contains("(2,3,4)") && Contains("(5,5)") && Contains("24") &&
                          Contains("25"));
  REQUIRE_THROWS_AS(transpose(a.dev, Shape3(0, 0, 2)), tensorexpr::Error);
  REQUIRE_THROWS_WITH(transpose(a.dev, Shape3(0, 0, 2)),
                      Contains("transpose") && Contains("(0,0,2)") && Contains("(2,3,4)") && Contains("permutation"));
  REQUIRE_THROWS_WITH(transpose(a.dev, Shape3(0, 1, 3)), Contains("(0,1,3)") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH(transpose(a.dev, Shape3(-1, 1, 2)), Contains("(-1,1,2)"));
  REQUIRE_THROWS_AS(slice<1>(a.dev, 1, 4), tensorexpr::Error);
  REQUIRE_THROWS_WITH(slice<1>(a.dev, 1, 4),
                      Contains("slice<1>") && Contains("[1, 4)") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH(slice<2>(a.dev, 3, 2), Contains("[3, 2)") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH(slice<0>(a.dev, -1, 1), Contains("[-1, 1)") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH(slice<1>(a.dev, 0, 2, 0), Contains("slice<1>") && Contains("step 0") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH(slice<2>(a.dev, 4, 0, -1), Contains("from 4 down to 0") && Contains("-1 <= end <= begin < 4"));
  REQUIRE_THROWS_WITH(slice<2>(a.dev, 1, -2, -1), Contains("down to -2"));
  REQUIRE_THROWS_AS(concat<1>(a.dev, b.dev), tensorexpr::Error);
  REQUIRE_THROWS_WITH(concat<1>(a.dev, b.dev), Contains("concat<1>") && Contains("(2,3,4)") && Contains("(2,5,3)"));
  REQUIRE_THROWS_WITH(concat<0>(a.dev, b.dev), Contains("concat<0>") && Contains("(2,3,4)") && Contains("(2,5,3)"));
  // Errors of the source surface when the node is built.
  REQUIRE_THROWS_WITH(slice<0>(a.dev + b.dev, 0, 1), Contains("(2,3,4)") && Contains("(2,5,3)"));
  // A correct expression assigned to a tensor of another shape: the assignment names both shapes.
  auto out = MakeOutput<Device>(Shape3(4, 3, 2), false, stream);
  Tensor<Device, 3, float> o = out.view();
  REQUIRE_THROWS_WITH((o = swapaxis<1, 2>(a.dev)), Contains("(4,3,2)") && Contains("(2,4,3)"));
}
