// tensor_test.cc — Tensor views (indexing, Slice, FlatTo2D, strides), TensorContainer (padding, deep copy,
// Resize), NewTensor / FreeSpace / Copy, empty tensors, streams, and a CPU tensor past 2^31 elements.
#include "test_util.h"

#include <cstdint>
#include <algorithm>
#include <utility>
#include <vector>

using namespace tensorexpr;
using te_test::At;
using te_test::CheckAll;
using te_test::FillRandom;
using te_test::Poison;

namespace {
template <typename T>
bool Aligned(const T* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}
template <typename E>
std::string ErrorOf(E&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no Error thrown)";
}
}  // namespace

// ================================ views ================================================================

TEST_CASE("Tensor views: shape, stride, operator[] and FlatTo2D", "[tensor][cpu]") {
  std::vector<float> buf(2 * 3 * 8);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);

  const Tensor<cpu, 3, float> t(buf.data(), Shape3(2, 3, 5));
  CHECK(t.shape_ == Shape3(2, 3, 5));
  CHECK(t.stride_ == 5);
  CHECK(t.stream_ == nullptr);
  CHECK(t.size(0) == 2);
  CHECK(t.size(2) == 5);
  CHECK(t.CheckContiguous());
  CHECK(t.MSize() == 30);
  CHECK(t[1].dptr_ == buf.data() + 15);
  CHECK(t[1].shape_ == Shape2(3, 5));
  CHECK(t[1][2].dptr_ == buf.data() + 25);
  CHECK(t[1][2][4] == 29.0f);
  // A 1-D tensor indexes to a writable element reference.
  STATIC_REQUIRE(std::is_same<decltype(t[0][0][0]), float&>::value);
  t[0][1][3] = -1.0f;
  CHECK(buf[8] == -1.0f);

  // The same memory with rows padded to 8 elements.
  const Tensor<cpu, 3, float> p(buf.data(), Shape3(2, 3, 5), 8, nullptr);
  CHECK_FALSE(p.CheckContiguous());
  CHECK(p.MSize() == 48);
  CHECK(p[1].dptr_ == buf.data() + 24);
  CHECK(p[1].stride_ == 8);
  CHECK(p[1][2].dptr_ == buf.data() + 40);
  CHECK(p[1][2][4] == 44.0f);
  const Tensor<cpu, 2, float> f = p.FlatTo2D();
  CHECK(f.shape_ == Shape2(6, 5));
  CHECK(f.stride_ == 8);
  CHECK(f.dptr_ == buf.data());
  CHECK(f[5][4] == 44.0f);
  const Tensor<cpu, 1, float> flat = t.FlatTo1D();
  CHECK(flat.shape_ == Shape1(30));
  CHECK(flat[29] == 29.0f);

  // Copying a Tensor copies the view, not the data.
  Tensor<cpu, 3, float> v = t;
  CHECK(v.dptr_ == t.dptr_);
  v[1][1][1] = 123.0f;
  CHECK(t[1][1][1] == 123.0f);
  // Default and shape-only views own nothing.
  const Tensor<cpu, 2, double> d;
  CHECK(d.dptr_ == nullptr);
  const Tensor<cpu, 2, double> s(Shape2(4, 9));
  CHECK(s.dptr_ == nullptr);
  CHECK(s.stride_ == 9);

  // Element references work for the 16-bit types too (they are classes, so a by-value return would
  // silently drop the write).
  std::vector<half_t> hb(4, half_t(0.0f));
  Tensor<cpu, 1, half_t> h(hb.data(), Shape1(4));
  h[2] = half_t(2.5f);
  CHECK(float(hb[2]) == 2.5f);
}

TEST_CASE("Tensor::Slice takes rows of the first dimension and checks its range", "[tensor][cpu]") {
  std::vector<int32_t> buf(4 * 3 * 8);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = int32_t(i);
  const Tensor<cpu, 3, int32_t> t(buf.data(), Shape3(4, 3, 5), 8, nullptr);
  const Tensor<cpu, 3, int32_t> s = t.Slice(1, 3);
  CHECK(s.shape_ == Shape3(2, 3, 5));
  CHECK(s.stride_ == 8);
  CHECK(s.dptr_ == buf.data() + 24);
  CHECK(s[1][2][4] == t[2][2][4]);
  CHECK(s.MSize() == 48);
  CHECK(t.Slice(4, 4).shape_ == Shape3(0, 3, 5));  // empty slices are fine
  CHECK(t.Slice(0, 0).shape_[0] == 0);

  const Tensor<cpu, 1, int32_t> line(buf.data(), Shape1(10));
  const Tensor<cpu, 1, int32_t> mid = line.Slice(3, 7);
  CHECK(mid.shape_ == Shape1(4));
  CHECK(mid.dptr_ == buf.data() + 3);
  CHECK(mid[0] == 3);
  CHECK(mid[3] == 6);

  const Tensor<cpu, 2, int32_t> m(buf.data(), Shape2(6, 5), 7, nullptr);
  CHECK(m.Slice(2, 5).dptr_ == buf.data() + 14);
  CHECK(m.Slice(2, 5)[2][1] == m[4][1]);

  REQUIRE_THROWS_AS(t.Slice(2, 1), Error);
  REQUIRE_THROWS_AS(t.Slice(-1, 2), Error);
  REQUIRE_THROWS_AS(t.Slice(0, 5), Error);
  REQUIRE_THROWS_AS(line.Slice(9, 11), Error);
  const std::string msg = ErrorOf([&] { (void)t.Slice(3, 9); });
  CHECK_THAT(msg, Catch::Contains("Slice(3, 9)"));
  CHECK_THAT(msg, Catch::Contains("(4,3,5)"));
}

// ================================ containers ===========================================================

TEST_CASE("pad = true: rows are padded to 64 bytes, CheckContiguous and MSize see it", "[tensor][cpu]") {
  TensorContainer<cpu, 2, float> a(Shape2(3, 5), true);
  CHECK(a.stride_ == 16);
  CHECK_FALSE(a.CheckContiguous());
  CHECK(a.MSize() == 48);
  CHECK(Aligned(a.dptr_, 64));
  for (index_t r = 0; r < 3; ++r) CHECK(Aligned(a[r].dptr_, 64));
  CHECK(a.Slice(1, 3).MSize() == 32);

  TensorContainer<cpu, 2, float> exact(Shape2(3, 16), true);  // already a multiple of 64 bytes
  CHECK(exact.stride_ == 16);
  CHECK(exact.CheckContiguous());
  TensorContainer<cpu, 2, float> unpadded(Shape2(3, 5), false);
  CHECK(unpadded.stride_ == 5);
  CHECK(unpadded.CheckContiguous());

  CHECK(TensorContainer<cpu, 2, double>(Shape2(2, 5), true).stride_ == 8);
  CHECK(TensorContainer<cpu, 2, half_t>(Shape2(2, 5), true).stride_ == 32);
  CHECK(TensorContainer<cpu, 2, uint8_t>(Shape2(2, 5), true).stride_ == 64);
  CHECK(TensorContainer<cpu, 2, uint8_t>(Shape2(2, 65), true).stride_ == 128);
  CHECK(PaddedStride<float>(0, true) == 0);
  CHECK(PaddedStride<float>(17, false) == 17);

  TensorContainer<cpu, 3, float> c(Shape3(2, 3, 5), true);
  CHECK(c.MSize() == 96);
  CHECK(c[1].stride_ == 16);
  CHECK(c[1].dptr_ == c.dptr_ + 48);
  CHECK(c.FlatTo2D().shape_ == Shape2(6, 5));

  TensorContainer<cpu, 2, float> empty(Shape2(4, 0), true);
  CHECK(empty.stride_ == 0);
  CHECK(empty.MSize() == 0);

  // Initial value: every element, whatever the padding.
  TensorContainer<cpu, 2, float> filled(Shape2(3, 5), 2.5f, true);
  CheckAll(filled.view(), [](const Shape<2>&) { return 2.5; });
}

TEST_CASE("host tensors of 4 MB or more start on 2 MB boundaries (huge pages), smaller ones on 64 bytes", "[tensor][cpu]") {
  const auto offset = [](const void* p, uintptr_t align) { return reinterpret_cast<uintptr_t>(p) % align; };
  TensorContainer<cpu, 2, float> large(Shape2(1024, 1024 + 3), 1.5f);  // a little over 4 MB
  CHECK(offset(large.dptr_, uintptr_t(2) << 20) == 0);
  CheckAll(large.view(), [](const Shape<2>&) { return 1.5; });  // usable to its last element
  TensorContainer<cpu, 1, double> small(Shape1(1000), 2.0);
  CHECK(offset(small.dptr_, 64) == 0);
  Tensor<cpu, 1, float> host(Shape1(index_t(3) << 20));
  AllocHost<cpu>(&host);
  CHECK(offset(host.dptr_, uintptr_t(2) << 20) == 0);
  host.dptr_[host.shape_[0] - 1] = 1.0f;
  FreeHost<cpu>(&host);
}

TEST_CASE("TensorContainer copies deep, moves cheaply and reuses memory on Resize", "[tensor][cpu]") {
  TensorContainer<cpu, 2, float> a(Shape2(4, 7), true);
  FillRandom(a.view());
  const TensorContainer<cpu, 2, float> snapshot(a);
  CHECK(snapshot.dptr_ != a.dptr_);
  CHECK(snapshot.shape_ == a.shape_);
  CHECK(snapshot.stride_ == a.stride_);  // padding is kept
  a += 1.0f;
  CheckAll(snapshot.view(), [&](const Shape<2>& i) { return At(a.view(), i) - 1.0; }, 1e-6);

  TensorContainer<cpu, 2, float> b(Shape2(1, 1));
  b = a;  // copy assignment resizes and copies
  CHECK(b.shape_ == a.shape_);
  CHECK(b.dptr_ != a.dptr_);
  CheckAll(b.view(), [&](const Shape<2>& i) { return At(a.view(), i); }, 0.0);
  const float* before = b.dptr_;
  b = *&b;  // self-assignment changes nothing
  CHECK(b.dptr_ == before);

  float* const owned = a.dptr_;
  TensorContainer<cpu, 2, float> moved(std::move(a));
  CHECK(moved.dptr_ == owned);
  CHECK(a.dptr_ == nullptr);  // NOLINT: the moved-from container is empty
  TensorContainer<cpu, 2, float> target(Shape2(2, 2), 1.0f);
  target = std::move(moved);
  CHECK(target.dptr_ == owned);
  CHECK(target.shape_ == Shape2(4, 7));

  // Shrinking (or returning within the capacity) keeps the allocation.
  TensorContainer<cpu, 2, float> r(Shape2(8, 10));
  float* const mem = r.dptr_;
  r.Resize(Shape2(2, 10));
  CHECK(r.dptr_ == mem);
  CHECK(r.shape_ == Shape2(2, 10));
  r.Resize(Shape2(5, 16));
  CHECK(r.dptr_ == mem);
  r.Resize(Shape2(8, 10));
  CHECK(r.dptr_ == mem);
  r.Resize(Shape2(3, 7), -4.0f);
  CHECK(r.dptr_ == mem);
  CHECK(r.stride_ == 7);
  CheckAll(r.view(), [](const Shape<2>&) { return -4.0; });
  // Growing reallocates and the new memory is usable.
  r.Resize(Shape2(100, 100), 3.0f);
  CHECK(r.shape_ == Shape2(100, 100));
  CheckAll(r.view(), [](const Shape<2>&) { return 3.0; });

  // Assigning an expression resizes to its shape.
  TensorContainer<cpu, 2, float> x(Shape2(3, 4)), y;
  FillRandom(x.view());
  y = x * 2.0f;
  CHECK(y.shape_ == Shape2(3, 4));
  CheckAll(y.view(), [&](const Shape<2>& i) { return 2 * At(x.view(), i); });
}

TE_DEVICE_TEST_CASE("TensorContainer deep copy and Resize on the device", "[tensor]") {
  TensorContainer<cpu, 2, float> h(Shape2(5, 33));
  FillRandom(h.view());
  TensorContainer<Device, 2, float> d = te_test::ToDevice<Device>(h.view(), stream);
  const TensorContainer<Device, 2, float> copy(d);
  CHECK(copy.dptr_ != d.dptr_);
  d *= 3.0f;
  te_test::Sync(stream);
  CheckAll(te_test::ToHost(copy).view(), [&](const Shape<2>& i) { return At(h.view(), i); }, 0.0);
  CheckAll(te_test::ToHost(d).view(), [&](const Shape<2>& i) { return 3 * At(h.view(), i); });

  TensorContainer<Device, 2, float> assigned;
  assigned = d;
  CHECK(assigned.dptr_ != d.dptr_);
  CheckAll(te_test::ToHost(assigned).view(), [&](const Shape<2>& i) { return 3 * At(h.view(), i); });

  auto* const mem = d.dptr_;
  d.Resize(Shape2(2, 33), 7.0f);
  CHECK(d.dptr_ == mem);
  CheckAll(te_test::ToHost(d).view(), [](const Shape<2>&) { return 7.0; });
}

// ================================ NewTensor, FreeSpace, Copy ===========================================

TE_DEVICE_TEST_CASE("NewTensor fills every element; FreeSpace releases", "[tensor]") {
  Tensor<Device, 3, float> t = NewTensor<Device>(Shape3(2, 3, 5), 1.5f, true, stream);
  CHECK(t.shape_ == Shape3(2, 3, 5));
  CHECK(t.stride_ == 16);
  CHECK(t.stream_ == stream);
  CHECK(Aligned(t.dptr_, 64));
  CheckAll(te_test::ToHost(t).view(), [](const Shape<3>&) { return 1.5; }, 0.0);
  FreeSpace(&t);
  CHECK(t.dptr_ == nullptr);

  Tensor<Device, 2, half_t> u = NewTensor<Device>(Shape2(3, 7), half_t(-2.0f), false, stream);
  CHECK(u.CheckContiguous());
  CheckAll(te_test::ToHost(u).view(), [](const Shape<2>&) { return -2.0; }, 0.0);
  FreeSpace(&u);

  Tensor<Device, 2, float> none = NewTensor<Device>(Shape2(0, 3), 0.0f, false, stream);
  CHECK(none.shape_.Size() == 0);
  FreeSpace(&none);
}

TE_DEVICE_TEST_CASE("Copy between padded, sliced and contiguous layouts", "[tensor]") {
  for (index_t width : {1, 3, 17, 1000}) {
    INFO("width " << width);
    TensorContainer<cpu, 2, double> src(Shape2(6, width), true);
    FillRandom(src.view());
    // host (padded) -> device (contiguous)
    TensorContainer<Device, 2, double> d1;
    d1.set_stream(stream);
    d1.Resize(Shape2(6, width));
    Copy(d1.view(), src.view(), stream);
    // device -> device, into rows 2..4 of a padded tensor (a strided destination)
    TensorContainer<Device, 2, double> d2(Shape2(9, width), true);
    d2.set_stream(stream);
    d2 = 77.0;
    Copy(d2.view().Slice(2, 8), d1.view(), stream);
    // device (sliced, padded) -> host (sliced, padded)
    TensorContainer<cpu, 2, double> back(Shape2(8, width), true);
    Poison(back.view());
    Copy(back.view().Slice(1, 7), d2.view().Slice(2, 8), stream);
    te_test::Sync(stream);
    CheckAll(back.view().Slice(1, 7), [&](const Shape<2>& i) { return At(src.view(), i); }, 0.0);
    // Rows outside the slice and the padding were not written.
    for (index_t i : {index_t(0), back.MSize() - 1}) CHECK(back.dptr_[i] == 12345.0);
    for (index_t x = width; x < back.stride_; ++x) CHECK(back[3].dptr_[x] == 12345.0);
    CheckAll(te_test::ToHost(d2).view().Slice(0, 2), [](const Shape<2>&) { return 77.0; }, 0.0);
  }
}

TE_DEVICE_TEST_CASE("Copy with mismatched shapes throws an Error naming both shapes", "[tensor]") {
  TensorContainer<Device, 2, float> a(Shape2(2, 3)), b(Shape2(3, 2));
  a.set_stream(stream);
  b.set_stream(stream);
  const std::string msg = ErrorOf([&] { Copy(a.view(), b.view(), stream); });
  CHECK_THAT(msg, Catch::Contains("Copy"));
  CHECK_THAT(msg, Catch::Contains("(2,3)"));
  CHECK_THAT(msg, Catch::Contains("(3,2)"));
  TensorContainer<cpu, 2, float> h(Shape2(3, 3));
  REQUIRE_THROWS_AS(Copy(a.view(), h.view(), stream), Error);
}

// ================================ empty tensors ========================================================

TEST_CASE("empty tensors assign without touching memory", "[tensor][cpu]") {
  // A view with a zero dimension over a poisoned buffer: nothing may be written.
  std::vector<float> buf(64, 12345.0f);
  Tensor<cpu, 2, float> rows0(buf.data(), Shape2(0, 4));
  Tensor<cpu, 2, float> cols0(buf.data(), Shape2(3, 0), 8, nullptr);
  Tensor<cpu, 3, float> mid0(buf.data(), Shape3(2, 0, 4));
  rows0 = 1.0f;
  cols0 = 1.0f;
  rows0 += rows0 * 2.0f + rows0;
  cols0 /= cols0 - 3.0f;
  mid0 = mid0 * mid0;
  Assign(cols0, kAddTo, cols0 * 5.0f);
  Copy(cols0, cols0);
  for (float v : buf) REQUIRE(v == 12345.0f);
  // And with a null pointer: any access would crash.
  Tensor<cpu, 2, float> null_view(nullptr, Shape2(0, 1000));
  null_view = 2.0f;
  null_view *= null_view + 1.0f;
  SUCCEED("no element of an empty tensor was accessed");
}

TE_DEVICE_TEST_CASE("empty containers on the device", "[tensor]") {
  for (const Shape<2> s : {Shape2(0, 5), Shape2(7, 0), Shape2(0, 0)}) {
    INFO("shape " << s);
    TensorContainer<Device, 2, float> x(s, true), y(s), z;
    x.set_stream(stream);
    y.set_stream(stream);
    z.set_stream(stream);
    CHECK(x.MSize() == 0);
    x = 1.0f;
    y = x * 3.0f - x;
    z = x + y;  // resizes to the empty shape
    CHECK(z.shape_ == s);
    y += z;
    const TensorContainer<Device, 2, float> copy(y);
    CHECK(copy.shape_ == s);
    const TensorContainer<cpu, 2, float> back = te_test::ToHost(z);
    CHECK(back.shape_ == s);
  }
}

// ================================ streams ==============================================================

TEST_CASE("CPU streams: NewStream, Wait, DeleteStream", "[tensor][cpu]") {
  InitTensorEngine<cpu>();
  Stream<cpu>* s = NewStream<cpu>();
  REQUIRE(s != nullptr);
  Stream<cpu>* s2 = NewStream<cpu>(false, false, 0);
  CHECK(s2 != s);
  TensorContainer<cpu, 1, float> a(Shape1(100), 2.0f);
  a.set_stream(s);
  CHECK(a.stream_ == s);
  a = a * a;
  s->Wait();  // CPU work has already run
  CHECK(s->CheckIdle());
  CHECK(a[99] == 4.0f);
  DeleteStream(s2);
  DeleteStream(s);
  ShutdownTensorEngine<cpu>();
}

TE_DEVICE_TEST_CASE("work queued on a stream is complete after Wait", "[tensor]") {
  Stream<Device>* s = NewStream<Device>();
  REQUIRE(s != nullptr);
  {
    TensorContainer<cpu, 2, float> h(Shape2(64, 129));
    FillRandom(h.view());
    TensorContainer<Device, 2, float> d = te_test::ToDevice<Device>(h.view(), s);
    CHECK(d.stream_ == s);
    for (int k = 0; k < 10; ++k) d += 1.0f;
    d = d * 0.5f;
    s->Wait();
    CHECK(s->CheckIdle());
    CheckAll(te_test::ToHost(d).view(), [&](const Shape<2>& i) { return (At(h.view(), i) + 10) * 0.5; });
  }  // containers release their memory before the stream goes
  DeleteStream(s);
}

// ================================ 64-bit indexing ======================================================

TEST_CASE("a CPU tensor of more than 2^31 elements is indexed with 64 bits", "[tensor][cpu][large]") {
  const index_t n = (index_t(1) << 31) + 37;
  TensorContainer<cpu, 1, uint8_t> t(Shape1(n));
  REQUIRE(t.shape_.Size() == n);
  t = expr::scalar<uint8_t>(3);
  const index_t probes[] = {0, 1, n / 2, (index_t(1) << 31) - 1, index_t(1) << 31, (index_t(1) << 31) + 1,
                            n - 2, n - 1};
  // Distinct values at the probes show that each one was read and written at its own address.
  for (index_t i : probes) t[i] = static_cast<uint8_t>(i % 97);
  t += 4;  // flat loop over every element
  // The row loop (a strided view): three short rows 2^30 + 7 elements apart, the last one past 2^31.
  const index_t stride = (index_t(1) << 30) + 7, width = 16;
  Tensor<cpu, 2, uint8_t> rows(t.dptr_, Shape2(3, width), stride, nullptr);
  REQUIRE_FALSE(rows.CheckContiguous());
  rows *= expr::scalar<uint8_t>(2);
  auto in_rows = [&](index_t i) { return i % stride < width && i / stride < 3; };
  auto expected = [&](index_t i) {
    const bool probe = std::find(std::begin(probes), std::end(probes), i) != std::end(probes);
    return (probe ? int(i % 97) + 4 : 7) * (in_rows(i) ? 2 : 1);
  };
  std::vector<index_t> where(std::begin(probes), std::end(probes));
  for (index_t y = 0; y < 3; ++y)
    for (index_t x : {index_t(0), width - 1, width}) where.push_back(y * stride + x);
  for (index_t i : where) {
    for (index_t k = std::max<index_t>(i - 1, 0); k <= std::min(i + 1, n - 1); ++k) {
      INFO("element " << k);
      CHECK(int(t[k]) == expected(k));
    }
  }
  CHECK(int(rows[2][width - 1]) == expected(2 * stride + width - 1));
}
