// test_util.h — shared test helpers: fresh random inputs, host/device round trips, float64 comparison,
// and TE_DEVICE_TEST_CASE, which writes one test body for both devices.
//
//   TE_DEVICE_TEST_CASE("broadcast<1> matches the reference", "[broadcast]") {
//     // `Device` is cpu or gpu here; `stream` is a Stream<Device>* (nullptr on cpu).
//   }
// In the CPU test binary this registers a case tagged [cpu]; when the same file is compiled by nvcc
// (tests/gpu/*.cu include the .cc files) it registers the case tagged [gpu] instead, which skips with a
// message when no GPU is present.
#pragma once
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace te_test {
using namespace tensorexpr;

// A fresh seed per process, printed so that a failure can be replayed with TE_TEST_SEED=<seed>.
inline uint64_t Seed() {
  static uint64_t seed = [] {
    const char* env = std::getenv("TE_TEST_SEED");
    uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    std::fprintf(stderr, "tensorexpr tests: random seed %llu (replay with TE_TEST_SEED)\n",
                 static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}
inline std::mt19937_64& Rng() {
  static std::mt19937_64 rng(Seed());
  return rng;
}

// Calls f(std::integral_constant<int, k>) for k = 0 .. n-1: loops over template arguments.
template <typename F, int... ks>
void StaticForImpl(F&& f, std::integer_sequence<int, ks...>) {
  (f(std::integral_constant<int, ks>()), ...);
}
template <int n, typename F>
void StaticFor(F&& f) {
  StaticForImpl(f, std::make_integer_sequence<int, n>());
}

// Fills a host tensor (any stride) with uniform values in [lo, hi), never all zero.
template <int dim, typename DType>
void FillRandom(Tensor<cpu, dim, DType> t, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor<cpu, 2, DType> f = t.FlatTo2D();
  for (index_t y = 0; y < f.shape_[0]; ++y)
    for (index_t x = 0; x < f.shape_[1]; ++x) {
      double v = u(Rng());
      if (std::is_integral<DType>::value) v = std::floor(v);
      f.dptr_[y * f.stride_ + x] = static_cast<DType>(static_cast<float>(v));
    }
}

// Fills every element a view spans, padding included, with a poison value.
template <int dim, typename DType>
void Poison(Tensor<cpu, dim, DType> t, double value = 12345.0) {
  for (index_t i = 0; i < t.MSize(); ++i) t.dptr_[i] = static_cast<DType>(static_cast<float>(value));
}

template <typename DType>
double AsDouble(DType v) {
  if constexpr (std::is_same<DType, double>::value || std::is_integral<DType>::value) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

// Element of a host tensor by its multi-index as double.
template <int dim, typename DType>
double At(const Tensor<cpu, dim, DType>& t, const Shape<dim>& idx) {
  index_t row = 0;
  for (int i = 0; i + 1 < dim; ++i) row = row * t.shape_[i] + idx[i];
  return AsDouble(t.dptr_[row * t.stride_ + idx[dim - 1]]);
}

// Calls f(idx) for every multi-index of `shape`, last dimension fastest.
template <int dim, typename F>
void ForEachIndex(const Shape<dim>& shape, F f) {
  if (shape.Size() == 0) return;
  Shape<dim> idx;
  for (int i = 0; i < dim; ++i) idx[i] = 0;
  while (true) {
    f(idx);
    int d = dim - 1;
    while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

// Relative tolerance by dtype.
template <typename DType> double Tol() { return 1e-5; }
template <> inline double Tol<double>() { return 1e-12; }
template <> inline double Tol<half_t>() { return 1e-2; }
template <> inline double Tol<bf16_t>() { return 2e-2; }

// Checks every element of `got` against ref(idx) within rtol (relative to max(1, |ref|)).
template <int dim, typename DType, typename Ref>
void CheckAll(const Tensor<cpu, dim, DType>& got, Ref ref, double rtol = Tol<DType>(), const char* what = "") {
  index_t bad = 0;
  std::string first;
  ForEachIndex(got.shape_, [&](const Shape<dim>& idx) {
    const double g = At(got, idx), r = ref(idx);
    const double err = std::fabs(g - r);
    if (!(err <= rtol * std::max(1.0, std::fabs(r)))) {
      if (bad++ == 0) {
        std::ostringstream os;
        os << what << " first mismatch at " << idx << ": got " << g << ", expected " << r;
        first = os.str();
      }
    }
  });
  INFO(first);
  INFO("mismatches: " << bad << " of " << got.shape_.Size() << " (shape " << got.shape_ << ")");
  CHECK(bad == 0);
}

// ---- moving data between the host and the device under test ---------------------------------------
template <typename Device>
inline void Sync(Stream<Device>* s) {
#if defined(__CUDACC__)
  if constexpr (std::is_same<Device, gpu>::value) {
    StreamOrDefault(s)->Wait();
    return;
  }
#endif
  (void)s;
}

// A device copy of a host tensor (same stride layout as a fresh allocation).
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> ToDevice(const Tensor<cpu, dim, DType>& h, Stream<Device>* s = nullptr) {
  TensorContainer<Device, dim, DType> d;
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}
template <typename Device, int dim, typename DType>
TensorContainer<cpu, dim, DType> ToHost(const Tensor<Device, dim, DType>& d) {
  TensorContainer<cpu, dim, DType> h(d.shape_);
  Sync(d.stream_);
  Copy(h.view(), d, d.stream_);
  Sync(d.stream_);
  return h;
}

// Forces the 64-bit-index GPU kernels while alive (nothing on the CPU).
struct Index64Scope {
  explicit Index64Scope(bool on) { Set(on); }
  ~Index64Scope() { Set(false); }
  static void Set(bool on) {
#if defined(__CUDACC__)
    cuda::SetForce64BitIndex(on);
#else
    (void)on;
#endif
  }
};
// The index widths to try: the GPU has two kernel sets, the CPU one loop.
template <typename Device>
std::vector<bool> Index64Modes() {
  if (std::is_same<Device, cpu>::value) return {false};
  return {false, true};
}

// Requires that `f` throws tensorexpr::Error whose message contains every one of `parts`: messages must
// name what is wrong.
template <typename F>
void RequireError(F f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const tensorexpr::Error& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    for (const std::string& part : parts) CHECK(msg.find(part) != std::string::npos);
    return;
  }
  FAIL("no tensorexpr::Error thrown; expected one mentioning " << parts[0]);
}

// |observed - expected| within six standard errors of the mean of n draws of standard deviation sd.
inline void CheckMean(double observed, double expected, double sd, double n, const char* what) {
  INFO(what << ": observed " << observed << ", expected " << expected);
  CHECK(std::fabs(observed - expected) <= 6.0 * sd / std::sqrt(n));
}
// Draws uniform on [lo, hi): all inside, their mean and second moment within six standard errors.
inline void CheckUniformDraws(const std::vector<double>& v, double lo, double hi) {
  double s1 = 0, s2 = 0, smallest = hi, largest = lo;
  for (double x : v) s1 += x, s2 += x * x, smallest = std::min(smallest, x), largest = std::max(largest, x);
  CHECK(smallest >= lo);
  CHECK(largest < hi);
  const double n = double(v.size()), m2 = (lo * lo + lo * hi + hi * hi) / 3;
  const double m4 = (std::pow(hi, 5) - std::pow(lo, 5)) / (5 * (hi - lo));
  CheckMean(s1 / n, (lo + hi) / 2, (hi - lo) / std::sqrt(12.0), n, "uniform mean");
  CheckMean(s2 / n, m2, std::sqrt(m4 - m2 * m2), n, "uniform second moment");
}
// Draws of N(m, s^2): the first three moments of (x - m) / s within six standard errors.
inline void CheckNormalDraws(const std::vector<double>& v, double m, double s) {
  double s1 = 0, s2 = 0, s3 = 0;
  for (double x : v) {
    const double d = (x - m) / s;
    s1 += d, s2 += d * d, s3 += d * d * d;
  }
  const double n = double(v.size());
  CheckMean(s1 / n, 0, 1, n, "normal mean");
  CheckMean(s2 / n, 1, std::sqrt(2.0), n, "normal second moment");
  CheckMean(s3 / n, 0, std::sqrt(15.0), n, "normal third moment");
}

inline bool HaveGPU() {
#if defined(__CUDACC__)
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

}  // namespace te_test

// Ends a [gpu] case early, with a warning that says why, where no CUDA GPU is present.
#define TE_REQUIRE_GPU()                                                   \
  do {                                                                     \
    if (!::te_test::HaveGPU()) {                                           \
      WARN("skipped: no CUDA GPU present (cudaGetDeviceCount found none)"); \
      return;                                                              \
    }                                                                      \
  } while (0)

#define TE_TEST_CAT2_(a, b) a##b
#define TE_TEST_CAT_(a, b) TE_TEST_CAT2_(a, b)

#if defined(__CUDACC__)
#define TE_DEVICE_TEST_CASE_IMPL_(fn, name, tags)                                                  \
  template <typename Device> static void fn(::tensorexpr::Stream<Device>* stream);                 \
  TEST_CASE(name " (gpu)", tags "[gpu]") {                                                         \
    TE_REQUIRE_GPU();                                                                              \
    fn<::tensorexpr::gpu>(nullptr);                                                                \
  }                                                                                                \
  template <typename Device> static void fn(::tensorexpr::Stream<Device>* stream)
#else
#define TE_DEVICE_TEST_CASE_IMPL_(fn, name, tags)                                                  \
  template <typename Device> static void fn(::tensorexpr::Stream<Device>* stream);                 \
  TEST_CASE(name " (cpu)", tags "[cpu]") { fn<::tensorexpr::cpu>(nullptr); }                       \
  template <typename Device> static void fn(::tensorexpr::Stream<Device>* stream)
#endif
#define TE_DEVICE_TEST_CASE(name, tags) TE_DEVICE_TEST_CASE_IMPL_(TE_TEST_CAT_(te_device_case_, __LINE__), name, tags)
