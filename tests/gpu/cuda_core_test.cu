// GPU-only cases for the CUDA core backend: streams (side streams included), memory, Copy between host and device (strided
// views included), out-of-memory errors, the three map routes (vector / flat / rows2d) with both index
// widths, half and bf16 maps, a tensor of more than 2^31 elements, and the engine calls.
#include <unistd.h>
#include <atomic>
#include <cstring>
#include <string>
#include "../test_util.h"

using namespace tensorexpr;
using namespace tensorexpr::expr;
using te_test::At;
using te_test::CheckAll;
using te_test::FillRandom;
using te_test::Poison;
using te_test::ToHost;

namespace {

// Turns the 64-bit-index kernels on for one scope (also when a REQUIRE throws out of it).
struct Force64Scope {
  explicit Force64Scope(bool on) { cuda::SetForce64BitIndex(on); }
  ~Force64Scope() { cuda::SetForce64BitIndex(false); }
};

// A stream made with NewStream and deleted at scope exit.
struct OwnedStream {
  Stream<gpu>* s = NewStream<gpu>(false);
  ~OwnedStream() { DeleteStream(s); }
};

// A device tensor with the layout a fresh allocation (pad or not) gets, holding a copy of `h`.
template <int dim, typename DType>
TensorContainer<gpu, dim, DType> Upload(const Tensor<cpu, dim, DType>& h, bool pad, Stream<gpu>* s) {
  TensorContainer<gpu, dim, DType> d(pad);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  StreamOrDefault(s)->Wait();
  return d;
}

template <int dim, typename DType>
TensorContainer<cpu, dim, DType> RandomHost(const Shape<dim>& shape, double lo = -1.0, double hi = 1.0) {
  TensorContainer<cpu, dim, DType> h(shape);
  FillRandom(h.view(), lo, hi);
  return h;
}

double Expr(double a, double b) { return a * b + 2.0 * std::sqrt(std::fabs(a)); }

// The five savers, by number, on the device and in the float64 reference.
const char* const kSaverNames[] = {"=", "+=", "-=", "*=", "/="};
template <typename T, typename E>
void ApplySaver(int which, T dst, const E& e) {
  switch (which) {
    case 0: dst = e; break;
    case 1: dst += e; break;
    case 2: dst -= e; break;
    case 3: dst *= e; break;
    default: dst /= e; break;
  }
}
double RefSaver(int which, double old, double v) {
  switch (which) {
    case 0: return v;
    case 1: return old + v;
    case 2: return old - v;
    case 3: return old * v;
    default: return old / v;
  }
}

// The message of the Error `f` throws ("" when it throws none).
template <typename F>
std::string ErrorMessage(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- memory -----------------------------------------------------------------------------------------

TEST_CASE("AllocSpace<gpu> pads rows, aligns the pointer and frees", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  for (index_t cols : {1, 3, 17, 1000, 1031}) {
    for (bool pad : {false, true}) {
      Tensor<gpu, 3, float> t(Shape3(2, 3, cols));
      t.stream_ = os.s;
      AllocSpace(&t, pad);
      INFO("cols " << cols << " pad " << pad);
      CHECK(t.stride_ == PaddedStride<float>(cols, pad));
      CHECK(t.stride_ >= cols);
      if (pad) CHECK((t.stride_ * sizeof(float)) % kPadAlign == 0);
      CHECK(reinterpret_cast<uintptr_t>(t.dptr_) % 256 == 0);
      // The memory is usable: write it whole (padding included) and read it back.
      Tensor<gpu, 1, float> whole(t.dptr_, Shape1(t.MSize()), os.s);
      whole = 0.5f;
      TensorContainer<cpu, 1, float> back(Shape1(t.MSize()));
      Copy(back.view(), whole, os.s);
      os.s->Wait();
      CheckAll(back.view(), [](const Shape<1>&) { return 0.5; });
      FreeSpace(&t);
      CHECK(t.dptr_ == nullptr);
    }
  }
  // Size 0 allocates nothing and frees nothing.
  Tensor<gpu, 2, float> empty(Shape2(0, 5));
  AllocSpace(&empty, true);
  CHECK(empty.dptr_ == nullptr);
  FreeSpace(&empty);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("AllocSpace<gpu> out of memory throws an Error naming the bytes and the shape", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  // One GiB more than the whole GPU holds, as rows of 1024 floats.
  const index_t rows = static_cast<index_t>((total_b + (size_t(1) << 30)) / 4096);
  Tensor<gpu, 2, float> t(Shape2(rows, 1024));
  const std::string msg = ErrorMessage([&] { AllocSpace(&t, false); });
  INFO(msg);
  REQUIRE(!msg.empty());
  CHECK(msg.find("AllocSpace<gpu>") != std::string::npos);
  CHECK(msg.find("out of GPU memory") != std::string::npos);
  CHECK(msg.find(std::to_string(rows * 4096) + " bytes") != std::string::npos);
  CHECK(msg.find("(" + std::to_string(rows) + ",1024)") != std::string::npos);
  CHECK(t.dptr_ == nullptr);
  // The failure leaves no error behind: the next allocation and kernel work.
  CHECK(cudaGetLastError() == cudaSuccess);
  TensorContainer<gpu, 1, float> ok(Shape1(1000), 2.0f);
  auto back = ToHost(ok.view());
  CheckAll(back.view(), [](const Shape<1>&) { return 2.0; });

  // A shape whose byte count overflows is rejected before asking CUDA.
  Tensor<gpu, 3, float> huge(Shape3(index_t(1) << 40, index_t(1) << 40, 16));
  REQUIRE_THROWS_AS(AllocSpace(&huge, false), Error);
  CHECK(ErrorMessage([&] { AllocSpace(&huge, false); }).find("(1099511627776,1099511627776,16)") != std::string::npos);
}

// ---- Copy -------------------------------------------------------------------------------------------

TEST_CASE("Copy round trips through the GPU keep values and leave padding alone", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  for (Stream<gpu>* s : {static_cast<Stream<gpu>*>(nullptr), os.s}) {
    for (Shape<3> shape : {Shape3(1, 1, 1), Shape3(1, 3, 17), Shape3(2, 3, 33), Shape3(4, 17, 1003)}) {
      for (bool pad_dev1 : {false, true}) {
        for (bool pad_dev2 : {false, true}) {
          INFO("shape " << shape << " pads " << pad_dev1 << pad_dev2 << (s ? " own stream" : " default stream"));
          TensorContainer<cpu, 3, float> src(shape, true);  // padded host rows: a strided source
          FillRandom(src.view());
          TensorContainer<gpu, 3, float> d1(pad_dev1), d2(pad_dev2);
          d1.set_stream(s);
          d2.set_stream(s);
          d1.Resize(shape);
          d2.Resize(shape);
          Copy(d1.view(), src.view(), s);  // gpu <- cpu
          Copy(d2.view(), d1.view(), s);   // gpu <- gpu, between layouts
          TensorContainer<cpu, 3, float> dst(shape, true);
          Poison(dst.view());
          Copy(dst.view(), d2.view(), s);  // cpu <- gpu: complete only after the wait
          StreamOrDefault(s)->Wait();
          CheckAll(dst.view(), [&](const Shape<3>& i) { return At(src.view(), i); });
          // The padding of the host destination still holds the poison.
          index_t poisoned = 0, pad_elems = 0;
          const auto flat = dst.FlatTo2D();
          for (index_t y = 0; y < flat.shape_[0]; ++y)
            for (index_t x = flat.shape_[1]; x < flat.stride_; ++x, ++pad_elems)
              poisoned += flat.dptr_[y * flat.stride_ + x] == 12345.0f;
          CHECK(poisoned == pad_elems);
        }
      }
    }
  }
}

TEST_CASE("Copy of a Slice of a padded tensor moves only the sliced rows", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  auto src = RandomHost<2, float>(Shape2(7, 19));
  auto dev = Upload(src.view(), true, os.s);
  TensorContainer<gpu, 2, float> part(Shape2(3, 19), true);
  part.set_stream(os.s);
  Copy(part.view(), dev.Slice(2, 5));  // no stream argument: the destination's stream
  auto back = ToHost(part.view());
  CheckAll(back.view(), [&](const Shape<2>& i) { return At(src.view(), Shape2(i[0] + 2, i[1])); });

  // Into a slice of a host tensor: rows outside the slice keep their poison.
  TensorContainer<cpu, 2, float> host(Shape2(7, 19), true);
  Poison(host.view());
  Copy(host.Slice(4, 7), part.view(), os.s);
  os.s->Wait();
  for (index_t y = 0; y < 7; ++y)
    for (index_t x = 0; x < 19; ++x) {
      const double want = y >= 4 ? At(src.view(), Shape2(y - 2, x)) : 12345.0;
      if (At(host.view(), Shape2(y, x)) != want) FAIL("row " << y << " col " << x << " wrong");
    }
}

TEST_CASE("Copy with mismatched shapes throws an Error naming both shapes", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  TensorContainer<cpu, 2, float> h(Shape2(3, 4), 1.0f);
  TensorContainer<gpu, 2, float> d(Shape2(4, 3), 1.0f);
  TensorContainer<gpu, 2, float> d2(Shape2(3, 4), 1.0f);
  REQUIRE_THROWS_AS(Copy(d.view(), h.view()), Error);
  REQUIRE_THROWS_AS(Copy(h.view(), d.view()), Error);
  REQUIRE_THROWS_AS(Copy(d.view(), d2.view()), Error);
  for (const std::string& msg : {ErrorMessage([&] { Copy(d.view(), h.view()); }),
                                 ErrorMessage([&] { Copy(h.view(), d.view()); }),
                                 ErrorMessage([&] { Copy(d.view(), d2.view()); })}) {
    INFO(msg);
    CHECK(msg.find("Copy") != std::string::npos);
    CHECK(msg.find("(3,4)") != std::string::npos);
    CHECK(msg.find("(4,3)") != std::string::npos);
  }
}

// ---- map routes -------------------------------------------------------------------------------------

// dst <saver> a * b + 2 * sqrt(|a|) over a dst / operand layout that forces one route, checked against
// float64 for every saver, with both index widths.
TEST_CASE("Map routes: vector, flat, rows vector and rows2d agree with float64 for every saver and index width",
          "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  Stream<gpu>* s = os.s;
  enum Layout { kAligned, kDstOffset, kOperandOffset, kPaddedDst, kTransposed };
  const char* const layout_names[] = {"aligned", "dst offset", "operand offset", "padded dst", "transposed operand"};
  for (index_t cols : {1, 3, 17, 1000, 4099}) {
    const index_t rows = 3;
    const Shape<2> shape = Shape2(rows, cols);
    auto ha = RandomHost<2, float>(shape), hb = RandomHost<2, float>(shape);
    auto hbt = RandomHost<2, float>(Shape2(cols, rows));  // b's transpose, for the non-flat case
    auto a = Upload(ha.view(), false, s), b = Upload(hb.view(), false, s), bt = Upload(hbt.view(), true, s);
    // Buffers one element longer than needed, for views that start one element in (misaligned).
    TensorContainer<gpu, 1, float> a_buf(Shape1(rows * cols + 1)), dst_buf(Shape1(rows * cols + 1));
    a_buf.set_stream(s);
    dst_buf.set_stream(s);
    const Tensor<gpu, 2, float> a_off(a_buf.dptr_ + 1, shape, s);
    Copy(a_off, ha.view(), s);

    for (int layout = kAligned; layout <= kTransposed; ++layout) {
      for (int saver = 0; saver < 5; ++saver) {
        for (bool force64 : {false, true}) {
          Force64Scope scope(force64);
          INFO("cols " << cols << ", " << layout_names[layout] << ", saver " << kSaverNames[saver]
                       << (force64 ? ", 64-bit index" : ", 32-bit index"));
          // The destination's starting values (random: the compound savers read them).
          auto h_old = RandomHost<2, float>(shape, 0.5, 2.0);
          TensorContainer<gpu, 2, float> dst_own(layout == kPaddedDst);
          dst_own.set_stream(s);
          dst_own.Resize(shape);
          const Tensor<gpu, 2, float> dst =
              layout == kDstOffset ? Tensor<gpu, 2, float>(dst_buf.dptr_ + 1, shape, s) : dst_own.view();
          Copy(dst, h_old.view(), s);

          cuda::MapRoute route{};
          if (layout == kTransposed) {
            const auto e = a * bt.T() + 2.0f * F<op::sqrt>(F<op::abs>(a));
            route = cuda::ChooseMapRoute(dst, e);
            ApplySaver(saver, dst, e);
          } else {
            const Tensor<gpu, 2, float> aa = layout == kOperandOffset ? a_off : a.view();
            const auto e = aa * b + 2.0f * F<op::sqrt>(F<op::abs>(aa));
            route = cuda::ChooseMapRoute(dst, e);
            ApplySaver(saver, dst, e);
          }
          // Padded or non-elementwise: rows, four floats per thread when every row is whole aligned vectors.
          const bool row_vectors = cols % 4 == 0 && dst.stride_ % 4 == 0 && dst.aligned_for(4);
          const cuda::MapPath want = layout == kAligned ? cuda::MapPath::kVector
                                     : (layout == kDstOffset || layout == kOperandOffset) ? cuda::MapPath::kFlat
                                     : row_vectors ? cuda::MapPath::kRowsVector
                                                   : cuda::MapPath::kRows2D;
          // A padded last dimension of 16k floats has no padding, so it is not a strided case.
          if (layout == kPaddedDst) REQUIRE(dst.stride_ != cols);
          CHECK(cuda::MapPathName(route.path) == std::string(cuda::MapPathName(want)));
          CHECK(route.index32 == !force64);
          if (route.path == cuda::MapPath::kVector || route.path == cuda::MapPath::kRowsVector) CHECK(route.lanes == 4);

          auto got = ToHost(dst);
          CheckAll(got.view(), [&](const Shape<2>& i) {
            const double av = At(ha.view(), i);
            const double bv = layout == kTransposed ? At(hbt.view(), Shape2(i[1], i[0])) : At(hb.view(), i);
            return RefSaver(saver, At(h_old.view(), i), Expr(av, bv));
          });
        }
      }
    }
  }
}

TEST_CASE("Map over higher-dimensional, padded, size-1 and size-0 tensors", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  for (Shape<4> shape : {Shape4(1, 1, 1, 1), Shape4(2, 3, 5, 7), Shape4(3, 1, 4, 129)}) {
    for (bool pad : {false, true}) {
      INFO("shape " << shape << " pad " << pad);
      auto ha = RandomHost<4, float>(shape);
      auto a = Upload(ha.view(), pad, os.s);
      TensorContainer<gpu, 4, float> c(pad);
      c.set_stream(os.s);
      c.Resize(shape);
      TensorContainer<cpu, 4, float> poison(shape, pad);
      Poison(poison.view());
      Copy(c.view(), poison.view(), os.s);
      c = F<op::exp>(a) - 1.5f;
      auto got = ToHost(c.view());
      CheckAll(got.view(), [&](const Shape<4>& i) { return std::exp(At(ha.view(), i)) - 1.5; });
    }
  }
  // Size 0 in any dimension: nothing to launch, no error.
  TensorContainer<gpu, 2, float> z1(Shape2(0, 7)), z2(Shape2(0, 7)), z3(Shape2(5, 0));
  z1 = z2 * 3.0f;
  z3 += 1.0f;
  CHECK(cudaGetLastError() == cudaSuccess);
}

// ---- half and bf16 ----------------------------------------------------------------------------------

template <typename DType>
void CheckLowPrecisionMaps(Stream<gpu>* s) {
  const double tol = te_test::Tol<DType>();
  for (index_t cols : {1, 7, 17, 1000, 4101}) {
    const Shape<2> shape = Shape2(3, cols);
    auto ha = RandomHost<2, DType>(shape), hb = RandomHost<2, DType>(shape);
    for (bool pad : {false, true}) {
      INFO(DataType<DType>::name() << " cols " << cols << " pad " << pad);
      auto a = Upload(ha.view(), pad, s), b = Upload(hb.view(), pad, s);
      TensorContainer<gpu, 2, DType> c(pad);
      c.set_stream(s);
      c.Resize(shape);
      const auto e = a * b + DType(2.0f) * F<op::sqrt>(F<op::abs>(a));
      const cuda::MapRoute route = cuda::ChooseMapRoute(c.view(), e);
      const bool rows = pad && c.stride_ != cols, row_vectors = cols % 8 == 0 && c.stride_ % 8 == 0;
      CHECK(route.path == (!rows ? cuda::MapPath::kVector : row_vectors ? cuda::MapPath::kRowsVector : cuda::MapPath::kRows2D));
      if (route.path != cuda::MapPath::kRows2D) CHECK(route.lanes == 8);
      c = e;
      auto got = ToHost(c.view());
      CheckAll(got.view(), [&](const Shape<2>& i) { return Expr(At(ha.view(), i), At(hb.view(), i)); }, tol);

      // Accumulating in the low-precision type: c += a.
      c += a;
      auto got2 = ToHost(c.view());
      CheckAll(got2.view(), [&](const Shape<2>& i) { return Expr(At(ha.view(), i), At(hb.view(), i)) + At(ha.view(), i); },
               2 * tol);

      // Conversions both ways: float -> DType (8 lanes read as 32 bytes of float) and DType -> float.
      auto hf = RandomHost<2, float>(shape, -100.0, 100.0);
      auto f = Upload(hf.view(), pad, s);
      c = tcast<DType>(f);
      auto got3 = ToHost(c.view());
      CheckAll(got3.view(), [&](const Shape<2>& i) { return At(hf.view(), i); }, tol);
      TensorContainer<gpu, 2, float> back(pad);
      back.set_stream(s);
      back.Resize(shape);
      back = tcast<float>(c) * 0.5f;
      auto got4 = ToHost(back.view());
      // Exactly half of what the DType tensor holds.
      CheckAll(got4.view(), [&](const Shape<2>& i) { return 0.5 * At(got3.view(), i); }, 1e-7);
    }
  }
}

TEST_CASE("Maps in half_t and bf16_t, and conversions from and to float", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream os;
  CheckLowPrecisionMaps<half_t>(os.s);
  CheckLowPrecisionMaps<bf16_t>(os.s);
}

TEST_CASE("Map over double, int32 and uint8 uses their own vector widths", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  auto hd = RandomHost<1, double>(Shape1(1001));
  auto d = Upload(hd.view(), false, nullptr);
  TensorContainer<gpu, 1, double> dd(Shape1(1001));
  CHECK(cuda::ChooseMapRoute(dd.view(), d * 3.0).lanes == 2);
  dd = d * 3.0 + 1.0;
  auto gd = ToHost(dd.view());
  CheckAll(gd.view(), [&](const Shape<1>& i) { return At(hd.view(), i) * 3.0 + 1.0; }, 1e-12);

  auto hi = RandomHost<1, int32_t>(Shape1(1003), -1000, 1000);
  auto iv = Upload(hi.view(), false, nullptr);
  TensorContainer<gpu, 1, int32_t> ii(Shape1(1003));
  CHECK(cuda::ChooseMapRoute(ii.view(), iv * 2).lanes == 4);
  ii = iv * 2 - 7;
  auto gi = ToHost(ii.view());
  CheckAll(gi.view(), [&](const Shape<1>& i) { return At(hi.view(), i) * 2.0 - 7.0; }, 0.0);

  auto hu = RandomHost<1, uint8_t>(Shape1(1037), 0, 120);
  auto u = Upload(hu.view(), false, nullptr);
  TensorContainer<gpu, 1, uint8_t> uu(Shape1(1037));
  CHECK(cuda::ChooseMapRoute(uu.view(), u + uint8_t(1)).lanes == 16);
  uu = u + u + uint8_t(3);
  auto gu = ToHost(uu.view());
  CheckAll(gu.view(), [&](const Shape<1>& i) { return 2.0 * At(hu.view(), i) + 3.0; }, 0.0);
}

// ---- more than 2^31 elements ------------------------------------------------------------------------

namespace {
uint8_t Pattern(index_t i) { return static_cast<uint8_t>(((static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 56) % 200); }

// Counts the elements of `h` that differ from want(i), in parallel.
template <typename Want>
index_t CountWrong(const TensorContainer<cpu, 1, uint8_t>& h, Want want) {
  std::atomic<index_t> wrong{0};
  ParallelFor(h.shape_[0], 4, [&](index_t begin, index_t end) {
    index_t w = 0;
    for (index_t i = begin; i < end; ++i) w += h.dptr_[i] != want(i);
    wrong += w;
  });
  return wrong.load();
}
}  // namespace

TEST_CASE("A uint8 tensor of more than 2^31 elements takes the 64-bit routes and is right", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  const index_t n = (index_t(1) << 31) + 4099;  // past int32, with a vector tail of 3
  ReleaseCachedResources<gpu>();  // memory the pool keeps from earlier cases counts as free here
  size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  const double host_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (free_b < static_cast<size_t>(2 * n + (index_t(256) << 20)) || host_bytes < 3.0 * n + 4e9) {
    WARN("skipped: needs " << 2 * n << " bytes of free GPU memory (have " << free_b << ") and " << 3 * n
                           << " bytes of host memory");
    return;
  }
  OwnedStream os;
  TensorContainer<cpu, 1, uint8_t> h(Shape1(n));
  ParallelFor(n, 4, [&](index_t begin, index_t end) {
    for (index_t i = begin; i < end; ++i) h.dptr_[i] = Pattern(i);
  });
  TensorContainer<gpu, 1, uint8_t> src, dst;
  src.set_stream(os.s);
  dst.set_stream(os.s);
  src.Resize(Shape1(n));
  dst.Resize(Shape1(n));
  Copy(src.view(), h.view(), os.s);

  // 1. Contiguous and aligned: the vector route, 64-bit.
  {
    const auto e = src + uint8_t(3);
    const cuda::MapRoute r = cuda::ChooseMapRoute(dst.view(), e);
    CHECK(r.path == cuda::MapPath::kVector);
    CHECK(!r.index32);
    dst = e;
    Copy(h.view(), dst.view(), os.s);
    os.s->Wait();
    CHECK(CountWrong(h, [](index_t i) { return uint8_t(Pattern(i) + 3); }) == 0);
  }
  // 2. Rows of 65535 in a stride of 65536 (under 2^31 elements, but the addresses pass 2^31): rows2d, 64-bit.
  const index_t cols = 65535, stride = 65536, rows = n / stride;
  {
    const Tensor<gpu, 2, uint8_t> s2(src.dptr_, Shape2(rows, cols), stride, os.s);
    Tensor<gpu, 2, uint8_t> d2(dst.dptr_, Shape2(rows, cols), stride, os.s);
    const auto e = s2 + uint8_t(5);
    const cuda::MapRoute r = cuda::ChooseMapRoute(d2, e);
    CHECK(r.path == cuda::MapPath::kRows2D);
    CHECK(!r.index32);
    d2 = e;
    Copy(h.view(), dst.view(), os.s);
    os.s->Wait();
    CHECK(CountWrong(h, [&](index_t i) {
            const bool written = i < rows * stride && i % stride < cols;
            return uint8_t(Pattern(i) + (written ? 5 : 3));
          }) == 0);
  }
  // 3. Contiguous, one element in (misaligned): the flat route, 64-bit; element 0 keeps its value.
  {
    const Tensor<gpu, 1, uint8_t> s1(src.dptr_ + 1, Shape1(n - 1), os.s);
    Tensor<gpu, 1, uint8_t> d1(dst.dptr_ + 1, Shape1(n - 1), os.s);
    const auto e = s1 + uint8_t(7);
    const cuda::MapRoute r = cuda::ChooseMapRoute(d1, e);
    CHECK(r.path == cuda::MapPath::kFlat);
    CHECK(!r.index32);
    d1 = e;
    Copy(h.view(), dst.view(), os.s);
    os.s->Wait();
    CHECK(CountWrong(h, [](index_t i) { return uint8_t(Pattern(i) + (i == 0 ? 5 : 7)); }) == 0);
  }
}

// ---- streams and the engine -------------------------------------------------------------------------

TEST_CASE("Work on two streams runs in order on each and independently of the other", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream s1, s2;
  TensorContainer<gpu, 2, float> x, y;
  x.set_stream(s1.s);
  y.set_stream(s2.s);
  x.Resize(Shape2(64, 1001), 0.0f);
  y.Resize(Shape2(64, 1001), 1.0f);
  for (int k = 0; k < 100; ++k) {
    x += 1.0f;  // each step depends on the one before on the same stream
    y *= 1.01f;
  }
  s1.s->Wait();
  s2.s->Wait();
  CHECK(s1.s->CheckIdle());
  CHECK(s2.s->CheckIdle());
  auto hx = ToHost(x.view());
  auto hy = ToHost(y.view());
  CheckAll(hx.view(), [](const Shape<2>&) { return 100.0; });
  CheckAll(hy.view(), [](const Shape<2>&) { return std::pow(1.01, 100); }, 1e-4);

  // A tensor without a stream runs on the per-thread default stream.
  TensorContainer<gpu, 1, float> z(Shape1(333), 4.0f);
  CHECK(z.stream_ == nullptr);
  z = F<op::sqrt>(z);
  auto hz = ToHost(z.view());
  CheckAll(hz.view(), [](const Shape<1>&) { return 2.0; });
  CHECK(Stream<gpu>::GetStream(nullptr) == cudaStreamPerThread);
  CHECK(DefaultStream()->blas_handle() != nullptr);
}

// A stream's side stream (Stream<gpu>::ForkSide): its work runs after what the stream queued before the
// fork and before what the stream queues after the join (64 MB maps, long enough that a missing order
// would show), with the stream's math modes as they are at each fork, a cuBLAS handle of its own, and its
// kernels' failed checks reported by the stream's Wait().
TEST_CASE("A stream's side stream runs between ForkSide and JoinSide, with the stream's modes and fault record",
          "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  OwnedStream owner;
  Stream<gpu>* s = owner.s;
  CHECK(s->side() == nullptr);
  const index_t n = index_t(1) << 24;
  TensorContainer<gpu, 1, float> a, b;
  a.set_stream(s);
  b.set_stream(s);
  a.Resize(Shape1(n), 0.0f);
  b.Resize(Shape1(n), 0.0f);
  double want = 0;
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 10; ++k) a += 1.0f;
    Stream<gpu>* side = s->ForkSide();
    REQUIRE(side != nullptr);
    CHECK(side == s->side());
    CHECK(side->stream() != s->stream());
    Tensor<gpu, 1, float> a_side(a.dptr_, a.shape_, side), b_side(b.dptr_, b.shape_, side);
    b_side = a_side * 2.0f;  // reads a after the ten additions
    for (int k = 0; k < 10; ++k) b_side += 1.0f;
    s->JoinSide();
    a = b * 1.0f;  // on the stream: after the side's last addition
    want = 2 * (want + 10) + 10;
  }
  s->Wait();
  auto ha = ToHost(a.view());
  CheckAll(ha.view(), [&](const Shape<1>&) { return want; });

  // Math modes follow the stream at each fork; the cuBLAS handles are two.
  s->set_tf32(true);
  Stream<gpu>* side = s->ForkSide();
  CHECK(side->tf32());
  CHECK(!side->tf32x3());
  CHECK(side->blas_handle() != s->blas_handle());
  s->JoinSide();
  s->set_tf32(false);
  s->set_tf32x3(true);
  CHECK(s->ForkSide() == side);
  CHECK(!side->tf32());
  CHECK(side->tf32x3());
  s->JoinSide();
  s->set_tf32x3(false);

  // A label out of range, checked by a kernel on the side, is reported once by the stream's Wait().
  TensorContainer<cpu, 1, float> labels_host(Shape1(3));
  labels_host[0] = 1, labels_host[1] = 7, labels_host[2] = 0;
  TensorContainer<gpu, 1, float> labels = Upload(labels_host.view(), false, s);
  TensorContainer<gpu, 2, float> hot;
  hot.set_stream(s);
  hot.Resize(Shape2(3, 4));
  Stream<gpu>* forked = s->ForkSide();
  const Tensor<gpu, 1, float> labels_side(labels.dptr_, labels.shape_, forked);
  Tensor<gpu, 2, float> hot_side(hot.dptr_, hot.shape_, hot.stride_, forked);
  hot_side = OneHotEncodeExp<float, Tensor<gpu, 1, float>>(labels_side, 4, FaultRecord(forked));
  s->JoinSide();
  const std::string msg = ErrorMessage([&] { s->Wait(); });
  INFO(msg);
  CHECK(msg.find("label[1] = 7 is not a class index in [0, 4)") != std::string::npos);
  CHECK(ErrorMessage([&] { s->Wait(); }).empty());

  // Released, the side goes with its workspace; the next fork makes another.
  get_space_typed<gpu, 1, float>(Shape1(1000), forked);
  CHECK(WorkspaceBytesHeld(s) >= 4000);
  ReleaseWorkspace(s);
  CHECK(WorkspaceBytesHeld(s) == 0);
  s->ReleaseSide();
  CHECK(s->side() == nullptr);
  REQUIRE(s->ForkSide() != nullptr);
  s->JoinSide();
  s->Wait();
}

// Chunked reductions finish in whichever block arrives last, counted in the stream's arrival counters
// (cuda/reduce.cuh): every reduction must leave the counters at zero for the next, on each stream, and two
// streams must not share them. Integer-valued data keep every sum exact, so any miscount shows.
TEST_CASE("Chunked reductions queued back to back on several streams are each right", "[gpu][cuda_core][reduce]") {
  TE_REQUIRE_GPU();
  OwnedStream s1, s2;
  Stream<gpu>* streams[3] = {s1.s, s2.s, nullptr};  // nullptr: the per-thread default stream
  const index_t n = index_t(1) << 21;               // long enough to be cut into chunks
  TensorContainer<cpu, 1, float> h(Shape1(n));
  for (index_t i = 0; i < n; ++i) h[i] = float(i % 7) - 3.0f;  // sums to (n / 7 whole cycles: 0) + the tail
  double want_all = 0, want_rows[4] = {0, 0, 0, 0};
  for (index_t i = 0; i < n; ++i) want_all += h[i], want_rows[i % 4] += h[i];
  TensorContainer<gpu, 1, float> x[3], total[3];
  TensorContainer<gpu, 1, float> rows[3];
  for (int k = 0; k < 3; ++k) {
    for (auto* t : {&x[k], &total[k], &rows[k]}) t->set_stream(streams[k]);
    x[k].Resize(Shape1(n));
    Copy(x[k].view(), h.view(), streams[k]);
    total[k].Resize(Shape1(1), 0.0f);
    rows[k].Resize(Shape1(4), 0.0f);
  }
  const int repeats = 25;
  for (int r = 0; r < repeats; ++r) {
    for (int k = 0; k < 3; ++k) {
      const Tensor<gpu, 2, float> tall(x[k].dptr_, Shape2(n / 4, 4), streams[k]);  // outputs along rows
      total[k] += sumall(x[k].view());
      rows[k] += sum_rows(tall);
    }
  }
  for (int k = 0; k < 3; ++k) {
    WaitStream(streams[k]);
    auto ht = ToHost(total[k].view());
    auto hr = ToHost(rows[k].view());
    INFO("stream " << k);
    CHECK(ht[0] == float(repeats * want_all));
    for (int c = 0; c < 4; ++c) CHECK(hr[c] == float(repeats * want_rows[c]));
  }
}

TEST_CASE("InitTensorEngine, ReleaseCachedResources and ShutdownTensorEngine leave the GPU usable",
          "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  const std::string msg = ErrorMessage([&] { InitTensorEngine<gpu>(count); });
  INFO(msg);
  CHECK(msg.find("InitTensorEngine<gpu>(" + std::to_string(count) + ")") != std::string::npos);
  InitTensorEngine<gpu>(0);

  cudaMemPool_t pool;
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
  const size_t big = size_t(256) << 20;
  {
    TensorContainer<gpu, 1, float> t(Shape1(static_cast<index_t>(big / sizeof(float))), 1.0f);
  }  // freed to the pool, which keeps it
  StreamOrDefault(nullptr)->Wait();
  uint64_t reserved = 0;
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess);
  CHECK(reserved >= big);
  ReleaseCachedResources<gpu>();
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess);
  CHECK(reserved < big);

  ShutdownTensorEngine<gpu>();
  // Still usable afterwards, cuBLAS handle included (made again on demand).
  TensorContainer<gpu, 1, float> u(Shape1(100), 3.0f);
  u += 1.0f;
  auto hu = ToHost(u.view());
  CheckAll(hu.view(), [](const Shape<1>&) { return 4.0; });
  CHECK(DefaultStream()->blas_handle() != nullptr);
}

// A container keeps a share of its CUDA stream (FreeQueue<gpu>): destroying it after DeleteStream, with
// work still queued, or after ShutdownTensorEngine frees its memory on that stream, without touching the
// deleted Stream object (compute-sanitizer and ASan would see a use after free).
TEST_CASE("TensorContainer<gpu> may outlive its stream and the engine", "[gpu][cuda_core]") {
  TE_REQUIRE_GPU();
  cudaMemPool_t pool;
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess);
  const index_t n = index_t(64) << 20;  // 256 MB: large enough that a free that never happened shows
  uint64_t used_before = 0, used_after = 0;
  StreamOrDefault(nullptr)->Wait();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_before) == cudaSuccess);
  {
    Stream<gpu>* s = NewStream<gpu>();
    TensorContainer<gpu, 1, float> a, moved;
    a.set_stream(s);
    a.Resize(Shape1(n), 1.0f);
    for (int i = 0; i < 8; ++i) a += 1.0f;  // queued, perhaps still running when the stream goes
    moved.set_stream(s);
    moved.Resize(Shape1(1000), 2.0f);
    TensorContainer<gpu, 1, float> from_move(std::move(moved));
    DeleteStream(s);
    // a, from_move (and the empty `moved`) are destroyed here, after their stream.
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used_after) == cudaSuccess);
  CHECK(used_after <= used_before);  // every byte went back to the pool
  CHECK(cudaGetLastError() == cudaSuccess);

  {
    Stream<gpu>* s = NewStream<gpu>();
    TensorContainer<gpu, 2, float> b;
    b.set_stream(s);
    b.Resize(Shape2(300, 301), 5.0f);
    auto hb = ToHost(b.view());
    CheckAll(hb.view(), [](const Shape<2>&) { return 5.0; });
    ShutdownTensorEngine<gpu>();
    DeleteStream(s);
  }  // b is freed after both
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
  // The engine and new streams work afterwards.
  InitTensorEngine<gpu>(0);
  TensorContainer<gpu, 1, float> c(Shape1(10), 1.0f);
  c *= 3.0f;
  auto hc = ToHost(c.view());
  CheckAll(hc.view(), [](const Shape<1>&) { return 3.0; });
}
