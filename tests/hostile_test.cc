// hostile_test.cc — inputs a careless or hostile caller passes to the public API (issue "Hostile input").
// Each must give a tensorexpr::Error whose message names the bad value, or a correct result: never a crash,
// undefined behaviour or a silently wrong answer. One section per class: checked extent arithmetic, no
// exception escaping a parallel region, views without memory, integer division by a zero scalar, NaN and
// infinities in max / min, silent wrong results (FlatTo1D of padded rows, overlapping Copy), and
// messages that name the wrong thing (or a rounded number).
#include "test_util.h"
#include <tensorexpr/random.h>
#include <tensorexpr/ops/init.h>
#include <tensorexpr/ops/softmax_output.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

using namespace tensorexpr;
using namespace tensorexpr::expr;
using Catch::Contains;

// The expression throws a tensorexpr::Error, and its message contains `text` (the bad value, the operation).
#define CHECK_ERROR(expr, text)                          \
  do {                                                   \
    CHECK_THROWS_AS(expr, ::tensorexpr::Error);          \
    CHECK_THROWS_WITH(expr, Contains(text));             \
  } while (0)

namespace {
constexpr index_t kMax = std::numeric_limits<index_t>::max();
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A contiguous host tensor holding `values`.
TensorContainer<cpu, 1, float> Vec(const std::vector<float>& values) {
  TensorContainer<cpu, 1, float> t(Shape1(static_cast<index_t>(values.size())));
  for (size_t i = 0; i < values.size(); ++i) t.dptr_[i] = values[i];
  return t;
}
template <typename Exp>
float Scalar(const Exp& e) {
  TensorContainer<cpu, 1, float> out(Shape1(1));
  out = e;
  return out[0];
}
}  // namespace

// ---- 1. checked extent arithmetic -------------------------------------------------------------------------

TEST_CASE("hostile: allocations whose byte count overflows throw instead of wrapping", "[cpu][hostile]") {
  // 2^62 floats are 2^64 bytes: the count used to wrap to 0 and the fill segfaulted.
  CHECK_ERROR((TensorContainer<cpu, 1, float>(Shape1(index_t(1) << 62), 1.f)), "4611686018427387904");
  CHECK_ERROR((TensorContainer<cpu, 1, float>(Shape1(index_t(1) << 62), 1.f)), "AllocSpace<cpu>");
  // The element count itself overflows: 2^40 * 2^40.
  CHECK_ERROR((TensorContainer<cpu, 2, float>(Shape2(index_t(1) << 40, index_t(1) << 40))),
              "(1099511627776,1099511627776) overflows");
  // Padding the rows is what overflows: 2^59 rows of 1 float padded to 16.
  CHECK_ERROR((TensorContainer<cpu, 2, float>(Shape2(index_t(1) << 59, 1), true)), "576460752303423488");
  CHECK_ERROR((NewTensor<cpu>(Shape2(index_t(1) << 62, 2), 0.f)), "AllocSpace<cpu>");
  // A container that already holds memory does not reuse it for a shape whose size wraps to a small number.
  TensorContainer<cpu, 2, float> small(Shape2(4, 4), 0.f);
  CHECK_ERROR(small.Resize(Shape2((index_t(1) << 62) + 1, 4)), "4611686018427387905");
  CHECK(small.shape_ == Shape2(4, 4));
}

TEST_CASE("hostile: negative extents are rejected where memory is allocated", "[cpu][hostile]") {
  CHECK_ERROR((TensorContainer<cpu, 2, float>(Shape2(-1, 3))), "negative extent -1");
  // (-2) * (-3) = 6 used to look like a valid size.
  CHECK_ERROR((TensorContainer<cpu, 2, float>(Shape2(-2, -3), 0.f)), "negative extent -2");
  CHECK_ERROR((NewTensor<cpu>(Shape3(4, -5, 2), 0.f)), "negative extent -5");
  TensorContainer<cpu, 2, float> c(Shape2(2, 2), 0.f);
  CHECK_ERROR(c.Resize(Shape2(3, -7)), "negative extent -7 in dimension 1");
}

TEST_CASE("hostile: reshape compares real sizes, not wrapped ones", "[cpu][hostile]") {
  TensorContainer<cpu, 1, float> a(Shape1(16), 1.f);
  // (2^62 + 4) * 4 = 2^64 + 16 wraps to 16.
  CHECK_ERROR(reshape(a.view(), Shape2((index_t(1) << 62) + 4, 4)), "4611686018427387908");
  CHECK_ERROR(reshape(a.view(), Shape2(-4, -4)), "negative extent -4");
  CHECK_ERROR(reshape(a.view(), Shape2(4, 5)), "(4,5) (20 elements)");
  TensorContainer<cpu, 2, float> b(Shape2(4, 4));
  b = reshape(a.view(), Shape2(4, 4));
  CHECK(b[3][3] == 1.f);
}

TEST_CASE("hostile: crop and pad ranges cannot wrap", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(2, 5, 6), 1.f);
  // start + extent used to wrap past the check.
  CHECK_ERROR(crop(img.view(), Shape2(2, 2), kMax, 0), "at (9223372036854775807,0)");
  CHECK_ERROR(crop(img.view(), Shape2(2, kMax), 1, 1), "window (2,9223372036854775807)");
  CHECK_ERROR(crop(img.view(), Shape2(-1, 2), 0, 0), "window (-1,2)");
  CHECK(crop(img.view(), Shape2(5, 6), 0, 0).shape() == Shape3(2, 5, 6));

  CHECK_ERROR(pad(img.view(), kMax, 0, 0, 0), "5 + 9223372036854775807 overflows");
  CHECK_ERROR(pad(img.view(), 0, 0, 1, kMax), "pad (extent + begin + end)");
  // Each extent fits, their product does not.
  CHECK_ERROR(pad(img.view(), index_t(1) << 40, index_t(1) << 40), "pad: the number of elements of shape");
  CHECK_ERROR(pad(img.view(), -3, 1), "the padding of dimension 1 must be non-negative, got begin -3 and end -3");
}

TEST_CASE("hostile: unpack_patch2col / pack_col2patch reject parameters whose products overflow", "[cpu][hostile]") {
  TensorContainer<cpu, 4, float> img(Shape4(1, 2, 5, 5), 1.f);
  // dilate (k - 1) + 1 and H + 2 pad overflow.
  CHECK_ERROR(unpack_patch2col(img.view(), 3, 3, 1, 1, index_t(1) << 62, 1, 0, 0), "4611686018427387904 * 2 overflows");
  CHECK_ERROR(unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 1, 0, index_t(1) << 62),
              "unpack_patch2col (padded image extent): 2 * 4611686018427387904");
  CHECK_ERROR(unpack_patch2col(img.view(), 3, 3, 1, 1, 1, 1, kMax / 2, 0), "unpack_patch2col (padded image extent)");
  // Every extent fits, the column matrix's size does not: oh = ow = 2^32 + 5.
  CHECK_ERROR(unpack_patch2col(img.view(), 1, 1, 1, 1, 1, 1, index_t(1) << 31, index_t(1) << 31),
              "column matrix");
  // An image with a negative extent (a view the caller built by hand).
  std::vector<float> mem(64, 1.f);
  Tensor<cpu, 3, float> bad(mem.data(), Shape3(2, -4, 8));
  CHECK_ERROR(unpack_patch2col(bad, 1, 1, 1), "negative extent -4");

  TensorContainer<cpu, 2, float> col(Shape2(18, 9), 1.f);
  CHECK_ERROR(pack_col2patch(col.view(), Shape3(2, 5, 5), 3, 3, 1, 1, 1, index_t(1) << 62, 0, 0),
              "pack_col2patch (dilated kernel extent)");
  CHECK_ERROR(pack_col2patch(col.view(), Shape3(2, -5, 5), 3, 3, 1), "negative extent -5");
}

TEST_CASE("hostile: a stride past the image gives the one window it covers", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(2, 4, 5));
  te_test::FillRandom(img.view());
  // With pad 1 the padded image is 6x7 and a 3x3 kernel has one window at any stride >= 4 (rows) / 5 (columns).
  TensorContainer<cpu, 2, float> huge(Shape2(18, 1)), plain(Shape2(18, 1));
  huge = unpack_patch2col(img.view(), 3, 3, kMax, kMax, 1, 1, 1, 1);
  plain = unpack_patch2col(img.view(), 3, 3, 6, 7, 1, 1, 1, 1);
  for (index_t r = 0; r < 18; ++r) CHECK(huge[r][0] == plain[r][0]);
  TensorContainer<cpu, 3, float> back(Shape3(2, 4, 5)), back_plain(Shape3(2, 4, 5));
  back = pack_col2patch(huge.view(), Shape3(2, 4, 5), 3, 3, kMax, kMax, 1, 1, 1, 1);
  back_plain = pack_col2patch(plain.view(), Shape3(2, 4, 5), 3, 3, 6, 7, 1, 1, 1, 1);
  for (index_t i = 0; i < back.shape_.Size(); ++i) CHECK(back.dptr_[i] == back_plain.dptr_[i]);
}

TEST_CASE("hostile: patch2col / col2patch with padding and stride near 2^63 compute in range", "[cpu][hostile]") {
  // Padding of about 2^62 on each side and a stride of about 2^63: valid (one window per axis, reading only
  // padding), but "pad + stride" overflows.
  const index_t big_pad = (index_t(1) << 62) - 8, big_stride = kMax - 10;
  TensorContainer<cpu, 3, float> img(Shape3(2, 5, 5));
  te_test::FillRandom(img.view());
  TensorContainer<cpu, 2, float> col(Shape2(2, 1), 7.f);
  col = unpack_patch2col(img.view(), 1, 1, big_stride, big_stride, 1, 1, big_pad, big_pad);
  CHECK(col[0][0] == 0.f);
  CHECK(col[1][0] == 0.f);
  col = 1.f;
  TensorContainer<cpu, 3, float> back(Shape3(2, 5, 5), 7.f);
  back = pack_col2patch(col.view(), Shape3(2, 5, 5), 1, 1, big_stride, big_stride, 1, 1, big_pad, big_pad);
  for (index_t i = 0; i < back.shape_.Size(); ++i) CHECK(back.dptr_[i] == 0.f);
  TensorContainer<cpu, 3, float> plan(Shape3(2, 5, 5), 7.f);  // the per-element plan (the GPU's path)
  plan = pack_col2patch(col.view(), Shape3(2, 5, 5), 1, 1, big_stride, big_stride, 1, 1, big_pad, big_pad) * 1.f;
  for (index_t i = 0; i < plan.shape_.Size(); ++i) CHECK(plan.dptr_[i] == 0.f);
}

TEST_CASE("hostile: pool rejects a pooled size whose windows would start past the image", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(1, 6, 6), 1.f);
  // (out - 1) * stride used to wrap to a small number.
  CHECK_ERROR(pool<red::maximum>(img.view(), Shape2(3, 1), 2, 2, index_t(1) << 62, 1),
              "stride 4611686018427387904x1");
  CHECK(pool<red::maximum>(img.view(), Shape2(1, 1), 2, 2, index_t(1) << 62, 1).shape() == Shape3(1, 1, 1));
}

// ---- 2. no exception escapes a parallel region ----------------------------------------------------------

TEST_CASE("hostile: an exception thrown inside ParallelFor is rethrown on the calling thread", "[cpu][hostile]") {
  const int before = GetNumThreads();
  SetNumThreads(4);
  const index_t n = index_t(1) << 20;  // far above kSerialCutoff: a parallel region
  const auto throwing = [n](index_t bad) {
    ParallelFor(n, 1, [bad](index_t begin, index_t end) {
      if (begin <= bad && bad < end) Fail("ParallelFor body: bad item ", bad);
    });
  };
  CHECK_ERROR(throwing(12345), "bad item 12345");
  CHECK_ERROR(throwing(n - 1), "bad item 1048575");
  // Other exception types come through unchanged.
  CHECK_THROWS_AS(ParallelFor(n, 1, [](index_t, index_t) { throw std::out_of_range("not an Error"); }),
                  std::out_of_range);
  // The loop works normally afterwards, every item exactly once.
  std::vector<int> seen(static_cast<size_t>(n), 0);
  ParallelFor(n, 1, [&](index_t begin, index_t end) {
    for (index_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
  });
  index_t once = 0;
  for (int s : seen) once += s == 1;
  CHECK(once == n);
  SetNumThreads(before);
}

// ---- 3. views without memory ------------------------------------------------------------------------------

TEST_CASE("hostile: a moved-from TensorContainer is empty", "[cpu][hostile]") {
  TensorContainer<cpu, 2, float> a(Shape2(3, 4), 1.f);
  TensorContainer<cpu, 2, float> b(std::move(a));
  CHECK(a.shape_ == Shape2(0, 0));  // NOLINT: checking the moved-from state is the point
  CHECK(a.dptr_ == nullptr);
  CHECK(b.shape_ == Shape2(3, 4));
  a = 2.f;  // no elements: nothing to write, no crash
  CHECK_ERROR(a.view() = b.view() * 2.f, "destination (0,0) vs expression (3,4)");
  TensorContainer<cpu, 2, float> c(Shape2(1, 1), 0.f);
  c = std::move(b);
  CHECK(b.shape_ == Shape2(0, 0));  // NOLINT
  CHECK(c[2][3] == 1.f);
  a = c.view() + 1.f;  // a moved-from container is usable again once given a shape
  CHECK(a[2][3] == 2.f);
}

TEST_CASE("hostile: assigning to or reading from a view without memory throws", "[cpu][hostile]") {
  Tensor<cpu, 2, float> nomem(Shape2(2, 3));  // a shape, no dptr_
  CHECK_ERROR(nomem = 1.f, "assigning to a tensor: the tensor of shape (2,3) has no memory");
  TensorContainer<cpu, 2, float> dst(Shape2(2, 3), 0.f);
  CHECK_ERROR(dst = nomem * 2.f, "reading a tensor: the tensor of shape (2,3) has no memory");
  CHECK_ERROR(Copy(dst.view(), nomem), "Copy source: the tensor of shape (2,3)");
  CHECK_ERROR(Copy(nomem, dst.view()), "Copy destination");
  TensorContainer<cpu, 1, float> total(Shape1(1));
  CHECK_ERROR(total = sumall(nomem), "has no memory");
  // A view over real memory whose extents are negative: (-2) * (-3) = 6 elements it does not have.
  std::vector<float> mem(6, 0.f);
  Tensor<cpu, 2, float> negative(mem.data(), Shape2(-2, -3));
  CHECK_ERROR(negative = 1.f, "negative extent -2");
  // Without elements, no memory is needed.
  Tensor<cpu, 2, float> empty(Shape2(0, 3));
  empty = 1.f;
  TensorContainer<cpu, 1, float> none(Shape1(0));
  none = sumall_except_dim<0>(empty);
}

// ---- 4. integer division by a zero scalar ---------------------------------------------------------------

TEST_CASE("hostile: integer division by a zero scalar throws before any element is computed", "[cpu][hostile]") {
  TensorContainer<cpu, 2, int32_t> a(Shape2(3, 4), 7);
  TensorContainer<cpu, 2, int32_t> out(Shape2(3, 4), 0);
  CHECK_ERROR(out = a.view() / scalar<int32_t>(0), "op::div: integer division by zero (the int32 scalar divisor is 0)");
  CHECK_ERROR(out = a.view() / 0, "integer division by zero");
  CHECK_ERROR(out = F<op::div>(a.view(), 0), "scalar divisor is 0");
  CHECK_ERROR(out /= 0, "/=: integer division by zero");
  CHECK_ERROR(out /= scalar<int32_t>(0), "/=: integer division by zero");
  TensorContainer<cpu, 1, int8_t> small(Shape1(5), int8_t(9));
  CHECK_ERROR(small /= int8_t(0), "the int8 scalar divisor is 0");
  // Non-zero divisors and floating-point zero still work.
  out = a.view() / 2;
  CHECK(out[2][3] == 3);
  out = a.view();
  out /= -7;
  CHECK(out[0][0] == -1);
  TensorContainer<cpu, 1, float> f(Shape1(2), 1.f);
  f = f.view() / 0.f;
  CHECK(std::isinf(f[0]));
}

TEST_CASE("hostile: integer division by a zero tensor element or INT_MIN / -1 has a defined result", "[cpu][hostile]") {
  // Zero elements give 0, INT_MIN / -1 wraps to INT_MIN (op.h, math::IntDiv): no signal, no UB, for
  // F<op::div> / operator/ and for /=, in every integer type; floats are untouched.
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  TensorContainer<cpu, 1, int32_t> a(Shape1(5)), b(Shape1(5)), out(Shape1(5), 99);
  const int32_t av[] = {7, kMin32, -9, 5, kMin32}, bv[] = {0, -1, 2, -1, 1};
  for (int i = 0; i < 5; ++i) a[i] = av[i], b[i] = bv[i];
  out = a.view() / b.view();
  const int32_t want[] = {0, kMin32, -4, -5, kMin32};
  for (int i = 0; i < 5; ++i) CHECK(out[i] == want[i]);
  out = a.view();
  out /= b.view();
  for (int i = 0; i < 5; ++i) CHECK(out[i] == want[i]);

  TensorContainer<cpu, 1, int8_t> c(Shape1(2)), d(Shape1(2));
  c[0] = -128, c[1] = 100, d[0] = -1, d[1] = 0;
  c /= d.view();
  CHECK(c[0] == -128);
  CHECK(c[1] == 0);

  // int64 divides in int64: the quotient is exact beyond 2^53 (through double it would round).
  TensorContainer<cpu, 1, int64_t> e(Shape1(2)), g(Shape1(2)), q(Shape1(2));
  e[0] = (int64_t(1) << 62) + 1, e[1] = std::numeric_limits<int64_t>::min();
  g[0] = 1, g[1] = -1;
  q = F<op::div>(e.view(), g.view());
  CHECK(q[0] == (int64_t(1) << 62) + 1);
  CHECK(q[1] == std::numeric_limits<int64_t>::min());

  TensorContainer<cpu, 1, float> f(Shape1(2), -1.f), z(Shape1(2), 0.f);
  f = f.view() / z.view();
  CHECK(f[0] == -kInf);
}

// ---- 5. NaN and infinities in max / min -----------------------------------------------------------------

TEST_CASE("hostile: maxall and minall propagate NaN wherever it lies", "[cpu][hostile]") {
  CHECK(std::isnan(Scalar(maxall(Vec({1.f, kNaN, 2.f}).view()))));
  CHECK(std::isnan(Scalar(minall(Vec({1.f, kNaN, 2.f}).view()))));
  CHECK(std::isnan(Scalar(maxall(Vec({kNaN, 1.f}).view()))));
  CHECK(std::isnan(Scalar(maxall(Vec({1.f, kNaN}).view()))));
  // Long enough for the vector lanes and the chunked (multi-task) path; NaN at the start, inside, at the end.
  const index_t n = 100003;
  for (index_t at : {index_t(0), index_t(7), index_t(50001), n - 1}) {
    TensorContainer<cpu, 1, float> v(Shape1(n));
    te_test::FillRandom(v.view());
    v[at] = kNaN;
    INFO("NaN at " << at);
    CHECK(std::isnan(Scalar(maxall(v.view()))));
    CHECK(std::isnan(Scalar(minall(v.view()))));
    CHECK(std::isnan(Scalar(maxall(v.view()) * 1.f)));  // the plan's sequential loop
  }
}

TEST_CASE("hostile: infinities are ordinary values and empty reductions give -inf / +inf", "[cpu][hostile]") {
  CHECK(Scalar(maxall(Vec({-kInf, -kInf}).view())) == -kInf);  // was -FLT_MAX
  CHECK(Scalar(minall(Vec({kInf, kInf}).view())) == kInf);
  CHECK(Scalar(maxall(Vec({-kInf, 3.f, kInf}).view())) == kInf);
  CHECK(Scalar(minall(Vec({-kInf, 3.f, kInf}).view())) == -kInf);
  TensorContainer<cpu, 1, float> empty(Shape1(0));
  CHECK(Scalar(maxall(empty.view())) == -kInf);
  CHECK(Scalar(minall(empty.view())) == kInf);
  // Integers: the element type's own range (the int64 accumulator's lowest value would wrap).
  TensorContainer<cpu, 1, int32_t> ei(Shape1(0)), ri(Shape1(1));
  ri = maxall(ei.view());
  CHECK(ri[0] == std::numeric_limits<int32_t>::lowest());
  ri = minall(ei.view());
  CHECK(ri[0] == std::numeric_limits<int32_t>::max());
  TensorContainer<cpu, 1, uint8_t> eu(Shape1(0)), ru(Shape1(1));
  ru = minall(eu.view());
  CHECK(ru[0] == 255);
  // Empty reduced axis, several outputs.
  TensorContainer<cpu, 2, float> rows(Shape2(0, 3));
  TensorContainer<cpu, 1, float> out(Shape1(3));
  out = reduce_with_axis<red::maximum>(rows.view(), 0);
  for (index_t i = 0; i < 3; ++i) CHECK(out[i] == -kInf);
}

TEST_CASE("hostile: reduce_with_axis<maximum / minimum> propagates NaN to its output only", "[cpu][hostile]") {
  TensorContainer<cpu, 2, float> a(Shape2(5, 7));
  te_test::FillRandom(a.view());
  a[2][3] = kNaN;
  a[4][0] = -kInf;
  TensorContainer<cpu, 1, float> cols(Shape1(7)), rows(Shape1(5));
  cols = reduce_with_axis<red::maximum>(a.view(), 0);  // reduce-middle form
  for (index_t x = 0; x < 7; ++x) CHECK(std::isnan(cols[x]) == (x == 3));
  rows = reduce_with_axis<red::minimum>(a.view(), 1);  // keep-middle form
  for (index_t y = 0; y < 5; ++y) CHECK(std::isnan(rows[y]) == (y == 2));
  CHECK(rows[4] == -kInf);
}

TEST_CASE("hostile: op::maximum / op::minimum propagate NaN from either side", "[cpu][hostile]") {
  TensorContainer<cpu, 1, float> a = Vec({kNaN, 1.f, -kInf, 2.f});
  TensorContainer<cpu, 1, float> b = Vec({1.f, kNaN, 1.f, 2.f});
  TensorContainer<cpu, 1, float> mx(Shape1(4)), mn(Shape1(4));
  mx = F<op::maximum>(a.view(), b.view());
  mn = F<op::minimum>(a.view(), b.view());
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 1.f);
  CHECK(mx[3] == 2.f);
  CHECK(std::isnan(mn[0]));
  CHECK(std::isnan(mn[1]));
  CHECK(mn[2] == -kInf);
}

TEST_CASE("hostile: max pooling propagates NaN and keeps -inf", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(2, 4, 4));
  te_test::FillRandom(img.view());
  img[0][1][1] = kNaN;                       // in window (0, 0) of plane 0
  for (index_t i = 0; i < 16; ++i) img[1].dptr_[i] = -kInf;  // plane 1: all -inf
  TensorContainer<cpu, 3, float> out(Shape3(2, 2, 2));
  out = pool<red::maximum>(img.view(), 2, 2, 2, 2);
  CHECK(std::isnan(out[0][0][0]));
  CHECK(!std::isnan(out[0][0][1]));
  CHECK(!std::isnan(out[0][1][1]));
  for (index_t i = 0; i < 4; ++i) CHECK(out[1].dptr_[i] == -kInf);  // was -FLT_MAX
  out = pool<red::minimum>(img.view(), 2, 2, 2, 2);
  CHECK(std::isnan(out[0][0][0]));
}

TEST_CASE("hostile: unpool<maximum> passes a NaN window's gradient to its NaN pixel", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(1, 5, 5));
  te_test::FillRandom(img.view());
  img[0][2][2] = kNaN;
  // Tiling windows (2x2 stride 2: the direct CPU loop) and overlapping ones (3x3 stride 2: the plane buffer),
  // each also through the per-element plan (the GPU's path).
  for (index_t k : {index_t(2), index_t(3)}) {
    INFO("kernel " << k);
    TensorContainer<cpu, 3, float> pooled(Shape3(1, 2, 2)), grad(Shape3(1, 2, 2), 1.f);
    pooled = pool<red::maximum>(img.view(), k, k, 2, 2);
    REQUIRE(std::isnan(pooled[0][1][1]));
    TensorContainer<cpu, 3, float> back(Shape3(1, 5, 5)), back_plan(Shape3(1, 5, 5));
    back = unpool<red::maximum>(img.view(), pooled.view(), grad.view(), k, k, 2, 2);
    back_plan = unpool<red::maximum>(img.view(), pooled.view(), grad.view(), k, k, 2, 2) * 1.f;
    // The NaN pixel takes the gradient of every window over it (1 of the 2x2 ones, all 4 of the 3x3 ones);
    // the other pixels of those windows take nothing.
    const float windows_over_nan = k == 2 ? 1.f : 4.f;
    CHECK(back[0][2][2] == windows_over_nan);
    CHECK(back_plan[0][2][2] == windows_over_nan);
    CHECK(back[0][3][3] == 0.f);
    CHECK(back_plan[0][3][3] == 0.f);
  }
}

// ---- 6. silent wrong results --------------------------------------------------------------------------------

TEST_CASE("hostile: FlatTo1D of padded rows throws instead of ignoring the stride", "[cpu][hostile]") {
  TensorContainer<cpu, 2, float> padded(Shape2(3, 5), true);
  REQUIRE(padded.stride_ == 16);
  CHECK_ERROR(padded.FlatTo1D(), "has padded rows (row stride 16)");
  TensorContainer<cpu, 2, float> plain(Shape2(3, 5), 2.f);
  CHECK(plain.FlatTo1D().shape_ == Shape1(15));
  CHECK(padded.Slice(1, 2).FlatTo1D().shape_ == Shape1(5));  // one row: no gap
}

TEST_CASE("hostile: Copy between overlapping views of one buffer is correct", "[cpu][hostile]") {
  std::vector<float> buf(64);
  const auto reset = [&] {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  };
  // Contiguous, destination after the source and before it.
  reset();
  Copy(Tensor<cpu, 1, float>(buf.data() + 3, Shape1(20)), Tensor<cpu, 1, float>(buf.data(), Shape1(20)));
  for (index_t i = 0; i < 20; ++i) CHECK(buf[3 + i] == static_cast<float>(i));
  reset();
  Copy(Tensor<cpu, 1, float>(buf.data(), Shape1(20)), Tensor<cpu, 1, float>(buf.data() + 3, Shape1(20)));
  for (index_t i = 0; i < 20; ++i) CHECK(buf[i] == static_cast<float>(i + 3));
  // Strided views with different strides over the same rows.
  reset();
  const std::vector<float> before = buf;
  const Tensor<cpu, 2, float> src(buf.data(), Shape2(4, 5), 7, nullptr);
  const Tensor<cpu, 2, float> dst(buf.data() + 2, Shape2(4, 5), 9, nullptr);
  Copy(dst, src);
  for (index_t y = 0; y < 4; ++y)
    for (index_t x = 0; x < 5; ++x) CHECK(buf[2 + y * 9 + x] == before[y * 7 + x]);
  // A view copied onto itself is left as it is.
  reset();
  Copy(src, src);
  CHECK(buf == before);
}

TEST_CASE("hostile: im2col of an empty image with padding reads nothing", "[cpu][hostile]") {
  TensorContainer<cpu, 3, float> img(Shape3(1, 0, 0));
  REQUIRE(img.dptr_ == nullptr);
  TensorContainer<cpu, 2, float> col(Shape2(1, 4), 5.f);
  col = unpack_patch2col(img.view(), 1, 1, 1, 1, 1, 1, 1, 1);  // 2x2 windows of padding only
  for (index_t i = 0; i < 4; ++i) CHECK(col[0][i] == 0.f);
  TensorContainer<cpu, 3, float> back(Shape3(1, 0, 0));
  back = pack_col2patch(col.view(), Shape3(1, 0, 0), 1, 1, 1, 1, 1, 1, 1, 1);
  CHECK(back.shape_.Size() == 0);
}

// ---- unclear messages: the message names the bad value itself, exactly ------------------------------------
TEST_CASE("hostile: HeInit names a NaN or infinite negative_slope, not the sigma it would give", "[cpu][hostile]") {
  TensorContainer<cpu, 2, float> w(Shape2(4, 3), 0.f);
  Random<cpu, float> rnd(te_test::Seed());
  ops::HeParam p;
  p.negative_slope = kNaN;
  CHECK_ERROR(ops::HeInit(p, &rnd, w.view()), "HeInit: negative_slope = nan must be a finite number");
  p.negative_slope = -kInf;
  CHECK_ERROR(ops::HeInit(p, &rnd, w.view()), "HeInit: negative_slope = -inf must be a finite number");
  p.negative_slope = 0.25;  // a leaky slope is fine: sqrt(2 / ((1 + a^2) fan_in)), fan_in = 3
  CHECK(ops::HeInit(p, &rnd, w.view()) == Approx(std::sqrt(2.0 / (1.0625 * 3))));
}

TEST_CASE("hostile: an int32 label of INT_MIN is printed as the integer", "[cpu][hostile]") {
  TensorContainer<cpu, 2, float> data(Shape2(2, 3), 0.5f), prob(Shape2(2, 3), 0.f);
  TensorContainer<cpu, 1, float> loss(Shape1(1), 0.f);
  TensorContainer<cpu, 1, int32_t> label(Shape1(2), 1);
  label.view().dptr_[1] = std::numeric_limits<int32_t>::min();
  ops::SoftmaxOutputParam p;
  CHECK_ERROR(ops::SoftmaxOutputForward(p, data.view(), label.view(), kWriteTo, prob.view(), kWriteTo, loss.view()),
              "label[1] = -2147483648 is not a class index in [0, 3)");
  label.view().dptr_[1] = std::numeric_limits<int32_t>::max();
  CHECK_ERROR(ops::SoftmaxOutputForward(p, data.view(), label.view(), kWriteTo, prob.view(), kWriteTo, loss.view()),
              "label[1] = 2147483647 is not");
}

TEST_CASE("hostile: an OpReqType outside the enum is an Error naming its value", "[cpu][hostile]") {
  TensorContainer<cpu, 1, float> t(Shape1(4), 1.f);
  const OpReqType bad = static_cast<OpReqType>(7);  // defined: OpReqType has the fixed underlying type int
  CHECK_ERROR(Assign(t.view(), bad, expr::scalar<float>(2.f)), "Assign: unknown OpReqType 7");
  CHECK_ERROR(DecodeReq(bad, "MyOp"), "MyOp: unknown OpReqType 7");
  CHECK_ERROR(DecodeReq(static_cast<OpReqType>(-1), "MyOp"), "unknown OpReqType -1");
  CHECK(t.view().dptr_[0] == 1.f);  // nothing was written
}
