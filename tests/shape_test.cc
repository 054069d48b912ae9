// shape_test.cc — Shape<N>: construction, sizes, the (rows, last) 2-D view, slicing and printing.
// Shapes are plain host/device values, so these cases run on the host only.
#include "test_util.h"

#include <sstream>

using namespace tensorexpr;

namespace {
template <int n>
std::string Str(const Shape<n>& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Independent product of s[begin..end) for the property checks.
template <int n>
index_t NaiveProd(const Shape<n>& s, int begin, int end) {
  index_t p = 1;
  for (int i = begin; i < end; ++i) p *= s[i];
  return p;
}
}  // namespace

TEST_CASE("Shape1..Shape5 set every dimension in order", "[shape][cpu]") {
  const Shape<1> s1 = Shape1(7);
  const Shape<2> s2 = Shape2(7, 11);
  const Shape<3> s3 = Shape3(7, 11, 13);
  const Shape<4> s4 = Shape4(7, 11, 13, 17);
  const Shape<5> s5 = Shape5(7, 11, 13, 17, 19);
  const index_t want[5] = {7, 11, 13, 17, 19};
  for (int i = 0; i < 1; ++i) CHECK(s1[i] == want[i]);
  for (int i = 0; i < 2; ++i) CHECK(s2[i] == want[i]);
  for (int i = 0; i < 3; ++i) CHECK(s3[i] == want[i]);
  for (int i = 0; i < 4; ++i) CHECK(s4[i] == want[i]);
  for (int i = 0; i < 5; ++i) CHECK(s5[i] == want[i]);
  STATIC_REQUIRE(Shape<3>::kDimension == 3);
  STATIC_REQUIRE(Shape<3>::kSubdim == 2);
  STATIC_REQUIRE(Shape<0>::kSubdim == 0);
  // A default shape is all zeros (it is an aggregate with a zero initialiser).
  const Shape<4> z;
  for (int i = 0; i < 4; ++i) CHECK(z[i] == 0);
  // Writable through operator[].
  Shape<2> w = Shape2(1, 2);
  w[1] = 9;
  CHECK(w == Shape2(1, 9));
}

TEST_CASE("Shape::Size and ProdShape", "[shape][cpu]") {
  CHECK(Shape1(5).Size() == 5);
  CHECK(Shape3(2, 3, 4).Size() == 24);
  CHECK(Shape5(2, 3, 4, 5, 6).Size() == 720);
  CHECK(Shape3(2, 0, 4).Size() == 0);  // a zero dimension empties the tensor
  CHECK(Shape<0>().Size() == 1);       // a scalar has one element
  // Sizes are 64-bit: 2^20 * 2^20 * 2^3 does not fit 32 bits.
  CHECK(Shape3(1 << 20, 1 << 20, 8).Size() == (index_t(1) << 43));

  const Shape<4> s = Shape4(2, 3, 4, 5);
  CHECK(s.ProdShape(0, 4) == 120);
  CHECK(s.ProdShape(1, 3) == 12);
  CHECK(s.ProdShape(3, 4) == 5);
  CHECK(s.ProdShape(2, 2) == 1);  // empty range
  CHECK(s.ProdShape(0, 0) == 1);
}

TEST_CASE("Shape::FlatTo2D keeps the last dimension and folds the rest", "[shape][cpu]") {
  CHECK(Shape1(5).FlatTo2D() == Shape2(1, 5));
  CHECK(Shape2(3, 5).FlatTo2D() == Shape2(3, 5));
  CHECK(Shape3(2, 3, 4).FlatTo2D() == Shape2(6, 4));
  CHECK(Shape5(2, 3, 4, 5, 6).FlatTo2D() == Shape2(120, 6));
  CHECK(Shape3(2, 0, 4).FlatTo2D() == Shape2(0, 4));
  CHECK(Shape3(2, 3, 0).FlatTo2D() == Shape2(6, 0));
  CHECK(Shape<0>().FlatTo2D() == Shape2(1, 1));
}

TEST_CASE("Shape::Slice and SubShape", "[shape][cpu]") {
  const Shape<5> s = Shape5(2, 3, 4, 5, 6);
  CHECK(s.Slice<0, 5>() == s);
  CHECK(s.Slice<1, 3>() == Shape2(3, 4));
  CHECK(s.Slice<2, 5>() == Shape3(4, 5, 6));
  CHECK(s.Slice<4, 5>() == Shape1(6));
  STATIC_REQUIRE(std::is_same<decltype(s.Slice<1, 3>()), Shape<2>>::value);
  STATIC_REQUIRE(std::is_same<decltype(s.Slice<3, 3>()), Shape<0>>::value);
  CHECK(s.Slice<3, 3>().Size() == 1);

  CHECK(s.SubShape() == Shape4(3, 4, 5, 6));
  CHECK(Shape2(8, 9).SubShape() == Shape1(9));
  STATIC_REQUIRE(std::is_same<decltype(Shape1(4).SubShape()), Shape<0>>::value);
}

TEST_CASE("Shape equality compares every dimension", "[shape][cpu]") {
  CHECK(Shape3(1, 2, 3) == Shape3(1, 2, 3));
  CHECK(Shape3(1, 2, 3) != Shape3(1, 2, 4));
  CHECK(Shape3(1, 2, 3) != Shape3(0, 2, 3));
  CHECK_FALSE(Shape2(4, 5) != Shape2(4, 5));
  CHECK(Shape<0>() == Shape<0>());
}

TEST_CASE("Shape printing", "[shape][cpu]") {
  CHECK(Str(Shape1(5)) == "(5,)");  // one dimension prints as a one-tuple, like Python
  CHECK(Str(Shape2(2, 3)) == "(2,3)");
  CHECK(Str(Shape3(2, 3, 4)) == "(2,3,4)");
  CHECK(Str(Shape4(1, 0, 7, 9)) == "(1,0,7,9)");
  CHECK(Str(Shape5(1, 2, 3, 4, 5)) == "(1,2,3,4,5)");
  CHECK(Str(Shape<0>()) == "()");
  CHECK(Str(Shape2(index_t(1) << 40, 3)) == "(1099511627776,3)");  // 64-bit extents print in full
  // Messages are built with the same operator (tensorexpr::Message).
  CHECK(Message("shape ", Shape2(4, 6)) == "shape (4,6)");
}

TEST_CASE("Shape invariants on random shapes", "[shape][cpu]") {
  std::uniform_int_distribution<int> extent(0, 9);
  for (int trial = 0; trial < 200; ++trial) {
    Shape<4> s;
    for (int i = 0; i < 4; ++i) s[i] = extent(te_test::Rng());
    INFO("shape " << s);
    CHECK(s.Size() == NaiveProd(s, 0, 4));
    for (int b = 0; b <= 4; ++b)
      for (int e = b; e <= 4; ++e) CHECK(s.ProdShape(b, e) == NaiveProd(s, b, e));
    const Shape<2> f = s.FlatTo2D();
    CHECK(f[0] == NaiveProd(s, 0, 3));
    CHECK(f[1] == s[3]);
    CHECK(f.Size() == s.Size());
    CHECK(s.SubShape().Size() * s[0] == s.Size());
    CHECK(s.Slice<0, 2>().Size() * s.Slice<2, 4>().Size() == s.Size());
  }
}
