// random_test.cc — Random<Device, DType> for integer and real DTypes (mshadow's last random.h): uniform
// integers on [lo, hi] with both bounds reached and even frequencies, uniform reals on [lo, hi) with the
// upper bound never reached even a few ulps above the lower, normals of odd counts in every real DType,
// seeds and sequence ids, GetRandInt's full range, the errors; and the bit generators PCGRandom32 /
// PCGRandom64 with UniformRealDistribution / GaussianDistribution, on the host and inside a kernel.
// Seeds are fixed, so every number here is deterministic; tolerances are six standard errors.
#include "test_util.h"
#include <tensorexpr/random.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/random.cuh>
#endif
#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

// The kernels and what they run sit in a named namespace: nvcc's launch stubs cannot name a kernel
// template inside an anonymous one.
namespace random_test_kernels {
using namespace tensorexpr;

// Draws `per_thread` uniform and normal values from each of `threads` generators; thread 0's generator is
// default-constructed (mshadow's test), thread t's is (seed 7, sequence t).
template <typename Device, typename Rng, typename DType>
struct DrawFromDistributions {
  TE_XINLINE static void Run(int thread, int per_thread, double* uniform, double* normal, DType lo, DType hi,
                             double* narrow) {
    Rng rng = thread == 0 ? Rng() : Rng(7u, static_cast<uint64_t>(thread));
    UniformRealDistribution<Device, Rng, DType> unit;
    GaussianDistribution<Device, Rng, DType> standard;
    UniformRealDistribution<Device, Rng, DType> between(lo, hi);
    for (int i = 0; i < per_thread; ++i) {
      uniform[i] = static_cast<double>(static_cast<compute_t<DType>>(unit(rng)));
      normal[i] = static_cast<double>(static_cast<compute_t<DType>>(standard(rng)));
      narrow[i] = static_cast<double>(static_cast<compute_t<DType>>(between(rng)));
    }
  }
};
#if defined(__CUDACC__)
template <typename Rng, typename DType>
__global__ void DrawFromDistributionsKernel(int per_thread, double* uniform, double* normal, DType lo, DType hi,
                                            double* narrow) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const size_t at = static_cast<size_t>(t) * static_cast<size_t>(per_thread);
  DrawFromDistributions<gpu, Rng, DType>::Run(t, per_thread, uniform + at, normal + at, lo, hi, narrow + at);
}
// The first n words of a generator, for comparison with the host's.
template <typename Rng>
__global__ void FirstWordsKernel(uint64_t seed, uint64_t sequence, uint64_t* out, int n) {
  Rng rng(seed, sequence);
  for (int i = 0; i < n; ++i) out[i] = rng();
}
#endif
}  // namespace random_test_kernels

namespace {
using namespace te_test;
using namespace random_test_kernels;

// The values of a device tensor in row-major order, as DType on the host.
template <typename Device, int dim, typename DType>
std::vector<DType> HostValues(const Tensor<Device, dim, DType>& t) {
  const TensorContainer<cpu, dim, DType> h = ToHost(t);
  const Tensor<cpu, 2, DType> f = h.view().FlatTo2D();
  std::vector<DType> v;
  v.reserve(static_cast<size_t>(t.shape_.Size()));
  for (index_t y = 0; y < f.shape_[0]; ++y)
    for (index_t x = 0; x < f.shape_[1]; ++x) v.push_back(f.dptr_[y * f.stride_ + x]);
  return v;
}

// A device tensor of `shape` with padded rows, every element and the padding poisoned with `poison`.
template <typename Device, typename DType>
TensorContainer<Device, 2, DType> PoisonedPadded(const Shape<2>& shape, Stream<Device>* stream, DType poison) {
  TensorContainer<Device, 2, DType> t(true);
  t.set_stream(stream);
  t.Resize(shape);
  TensorContainer<cpu, 2, DType> h(shape, true);
  REQUIRE(h.stride_ == t.stride_);
  for (index_t i = 0; i < h.MSize(); ++i) h.dptr_[i] = poison;
  Copy(Tensor<Device, 1, DType>(t.dptr_, Shape1(t.MSize()), stream),
       Tensor<cpu, 1, DType>(h.dptr_, Shape1(h.MSize())), stream);
  Sync(stream);
  return t;
}
// Requires the padding of every row of t to still hold `poison`.
template <typename Device, typename DType>
void RequirePaddingUntouched(const Tensor<Device, 2, DType>& t, DType poison) {
  TensorContainer<cpu, 1, DType> h(Shape1(t.MSize()));
  Sync(t.stream_);
  Copy(h.view(), Tensor<Device, 1, DType>(t.dptr_, Shape1(t.MSize()), t.stream_), t.stream_);
  Sync(t.stream_);
  for (index_t r = 0; r < t.shape_[0]; ++r)
    for (index_t c = t.shape_[1]; c < t.stride_; ++c) REQUIRE(h.dptr_[r * t.stride_ + c] == poison);
}

template <typename DType>
double ToDouble(DType v) {
  return static_cast<double>(static_cast<compute_t<DType>>(v));
}
// The representable value after v (v finite): std::nextafter, or one step of the 16-bit pattern.
template <typename DType>
DType NextUp(DType v) {
  if constexpr (std::is_floating_point<DType>::value) {
    return std::nextafter(v, std::numeric_limits<DType>::infinity());
  } else {
    const bool negative = (v.bits_ & 0x8000u) != 0;
    if (negative && (v.bits_ & 0x7fffu) == 0) return DType::FromBits(1);  // -0 -> smallest positive
    return DType::FromBits(static_cast<uint16_t>(negative ? v.bits_ - 1u : v.bits_ + 1u));
  }
}
template <typename DType>
DType StepsUp(DType v, int n) {
  for (int i = 0; i < n; ++i) v = NextUp(v);
  return v;
}

// ================================ integers =================================================================

// SampleUniform(&t, lo, hi) on an integer DType: every value of [lo, hi] appears with frequency 1 / count
// (six standard errors), none outside, the padding untouched.
template <typename Device, typename DType>
void CheckUniformIntegers(Stream<Device>* stream, DType lo, DType hi) {
  INFO("range [" << +lo << ", " << +hi << "] of a " << sizeof(DType) << "-byte " << (std::is_signed<DType>::value ? "signed" : "unsigned") << " type");
  const Shape<2> shape = Shape2(201, 499);  // odd sizes, padded rows
  const DType poison = static_cast<DType>(77);
  auto t = PoisonedPadded<Device, DType>(shape, stream, poison);
  Random<Device, DType> rnd(20240611);
  rnd.set_stream(stream);
  Tensor<Device, 2, DType> view = t.view();
  rnd.SampleUniform(&view, lo, hi);  // mshadow's pointer form
  const std::vector<DType> v = HostValues(t.view());
  std::map<DType, double> counts;
  for (DType x : v) {
    REQUIRE(lo <= x);
    REQUIRE(x <= hi);
    counts[x] += 1;
  }
  const double n = static_cast<double>(v.size());
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span < 32) {  // every value seen, at the expected frequency
    REQUIRE(counts.size() == span + 1);
    const double p = 1.0 / static_cast<double>(span + 1);
    for (const auto& kv : counts) CheckMean(kv.second / n, p, std::sqrt(p * (1 - p)), n, "frequency");
  } else {  // a wide range: its halves equally likely
    const long double mid = (static_cast<long double>(lo) + static_cast<long double>(hi)) / 2;
    double below = 0;
    for (DType x : v) below += static_cast<long double>(x) < mid;
    CheckMean(below / n, 0.5, 0.5, n, "share below the middle");
  }
  RequirePaddingUntouched(t.view(), poison);
}

TE_DEVICE_TEST_CASE("Random: integer SampleUniform covers the closed range [lo, hi] evenly", "[random]") {
  CheckUniformIntegers<Device, int16_t>(stream, 0, 9);
  CheckUniformIntegers<Device, int16_t>(stream, -5, 5);
  CheckUniformIntegers<Device, uint16_t>(stream, 3, 3);
  CheckUniformIntegers<Device, uint16_t>(stream, 65530, 65535);
  CheckUniformIntegers<Device, int32_t>(stream, -9, 0);
  CheckUniformIntegers<Device, int32_t>(stream, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  CheckUniformIntegers<Device, uint32_t>(stream, 4000000000u, 4000000006u);
  CheckUniformIntegers<Device, int64_t>(stream, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::min() + 2);
  CheckUniformIntegers<Device, int64_t>(stream, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  CheckUniformIntegers<Device, int64_t>(stream, -(int64_t(1) << 40), int64_t(1) << 40);
  CheckUniformIntegers<Device, uint64_t>(stream, ~uint64_t(0) - 4, ~uint64_t(0));
  CheckUniformIntegers<Device, uint64_t>(stream, 1, uint64_t(3) << 62);  // a 64-bit span with many rejections
  CheckUniformIntegers<Device, int8_t>(stream, -128, 127);
}

// The moments of mshadow's test: mean (lo + hi) / 2 and second moment ((hi - lo + 1)^2 - 1) / 12 + mean^2.
TE_DEVICE_TEST_CASE("Random: integer SampleUniform has the discrete uniform's moments", "[random]") {
  TensorContainer<Device, 1, int32_t> t(Shape1(300001));
  t.set_stream(stream);
  Random<Device, int32_t> rnd(9191);
  rnd.set_stream(stream);
  for (int32_t lo : {-7, 0, 3}) {
    const int32_t hi = lo + 9;
    rnd.SampleUniform(t.view(), lo, hi);
    double s1 = 0, s2 = 0;
    for (int32_t x : HostValues(t.view())) s1 += x, s2 += double(x) * x;
    const double n = double(t.shape_.Size()), mean = (lo + hi) / 2.0, var = (10.0 * 10.0 - 1) / 12;
    CheckMean(s1 / n, mean, std::sqrt(var), n, "mean");
    // The sample variance's standard error: sqrt((mu4 - var^2) / n); mu4 of the discrete uniform < 1.8 var^2.
    CheckMean(s2 / n - (s1 / n) * (s1 / n), var, std::sqrt(0.8) * var, n, "variance");
  }
}

// GetRandInt: every bit of any integer type random, from generators of any DType; padding untouched.
template <typename Device, typename GenType, typename IntType>
void CheckRandInt(Stream<Device>* stream) {
  INFO(sizeof(IntType) << "-byte " << (std::is_signed<IntType>::value ? "signed" : "unsigned")
                       << " integers from a generator of a " << sizeof(GenType) << "-byte type");
  const IntType poison = static_cast<IntType>(99);
  auto t = PoisonedPadded<Device, IntType>(Shape2(101, 199), stream, poison);
  Random<Device, GenType> rnd(5);
  rnd.set_stream(stream);
  rnd.GetRandInt(t.view());
  const std::vector<IntType> v = HostValues(t.view());
  const double n = double(v.size());
  using U = typename std::make_unsigned<IntType>::type;
  for (unsigned bit = 0; bit < 8 * sizeof(IntType); ++bit) {
    double ones = 0;
    for (IntType x : v) ones += (static_cast<U>(x) >> bit) & 1u;
    INFO("bit " << bit);
    CheckMean(ones / n, 0.5, 0.5, n, "share of ones");
  }
  size_t repeats = 0;  // consecutive equal values: about n / 2^bits
  for (size_t i = 1; i < v.size(); ++i) repeats += v[i] == v[i - 1];
  if (sizeof(IntType) >= 4) CHECK(repeats == 0);
  RequirePaddingUntouched(t.view(), poison);
}

TE_DEVICE_TEST_CASE("Random: GetRandInt fills any integer type's full range", "[random]") {
  CheckRandInt<Device, float, uint32_t>(stream);
  CheckRandInt<Device, float, int32_t>(stream);
  CheckRandInt<Device, float, uint64_t>(stream);
  CheckRandInt<Device, int16_t, int64_t>(stream);
  CheckRandInt<Device, int16_t, uint16_t>(stream);
  CheckRandInt<Device, double, int16_t>(stream);
  CheckRandInt<Device, half_t, uint8_t>(stream);
  CheckRandInt<Device, uint64_t, int8_t>(stream);
}

// ================================ reals ====================================================================

// SampleUniform on [lo, hi): hi never appears (the draws that round onto it are drawn again); with
// `every_value`, each representable value of [lo, hi) does (the naive enumeration by NextUp).
template <typename Device, typename DType>
void CheckNarrowUniform(Stream<Device>* stream, Random<Device, DType>* rnd, DType lo, DType hi, bool every_value) {
  INFO("[" << ToDouble(lo) << ", " << ToDouble(hi) << ") in " << DataType<DType>::name());
  TensorContainer<Device, 1, DType> t(Shape1(20001));
  t.set_stream(stream);
  rnd->SampleUniform(t.view(), static_cast<compute_t<DType>>(lo), static_cast<compute_t<DType>>(hi));
  std::map<double, double> counts;
  for (DType x : HostValues(t.view())) {
    REQUIRE(ToDouble(lo) <= ToDouble(x));
    REQUIRE(ToDouble(x) < ToDouble(hi));
    counts[ToDouble(x)] += 1;
  }
  if (!every_value) return;
  for (DType x = lo; ToDouble(x) < ToDouble(hi); x = NextUp(x)) CHECK(counts.count(ToDouble(x)) == 1);
}

template <typename Device, typename DType>
void CheckRealUniform(Stream<Device>* stream) {
  Random<Device, DType> rnd(9191);
  rnd.set_stream(stream);
  for (int steps : {1, 2, 3, 10, 19}) {
    const DType a = StepsUp(DType(1.0f), steps % 7), b = StepsUp(a, steps);
    CheckNarrowUniform(stream, &rnd, a, b, true);  // `steps` ulps above 1
    // Negative and close to 0, as in mshadow's test: [1 - b, 1 - a), many finer values inside.
    const DType lo = static_cast<DType>(1.0 - ToDouble(b)), hi = static_cast<DType>(1.0 - ToDouble(a));
    REQUIRE(ToDouble(lo) < ToDouble(hi));
    CheckNarrowUniform(stream, &rnd, lo, hi, false);
  }
  // A wide range: mean 0 and variance 100 / 12, lower bound reachable in principle, upper never.
  TensorContainer<Device, 2, DType> t(Shape2(301, 333));
  t.set_stream(stream);
  rnd.SampleUniform(&t, -5, 5);
  std::vector<double> wide;
  for (DType x : HostValues(t.view())) wide.push_back(ToDouble(x));
  CheckUniformDraws(wide, -5, 5);
  // Bounds that round to one DType value give it.
  rnd.SampleUniform(&t, 2.0f, 2.0f);
  for (DType x : HostValues(t.view())) REQUIRE(ToDouble(x) == 2.0);
}

TE_DEVICE_TEST_CASE("Random: real SampleUniform lies in [lo, hi), even a few ulps wide", "[random]") {
  CheckRealUniform<Device, float>(stream);
  CheckRealUniform<Device, double>(stream);
  CheckRealUniform<Device, half_t>(stream);
  CheckRealUniform<Device, bf16_t>(stream);
}

// SampleGaussian: the first three moments of N(m, s^2) for every real DType, odd counts and padded rows.
template <typename Device, typename DType>
void CheckGaussian(Stream<Device>* stream) {
  INFO(DataType<DType>::name());
  Random<Device, DType> rnd(0);
  rnd.set_stream(stream);
  for (const Shape<2>& shape : {Shape2(333, 333), Shape2(1, 7), Shape2(256, 256)}) {
    const DType poison = static_cast<DType>(1234.0f);
    auto t = PoisonedPadded<Device, DType>(shape, stream, poison);
    const double m = 0.4, s = 0.6;
    rnd.SampleGaussian(t.view(), compute_t<DType>(m), compute_t<DType>(s));
    std::vector<double> v;
    for (DType x : HostValues(t.view())) v.push_back(ToDouble(x));
    RequirePaddingUntouched(t.view(), poison);
    if (v.size() >= 100) CheckNormalDraws(v, m, s);  // a tiny odd tensor: written, padding kept
  }
}

TE_DEVICE_TEST_CASE("Random: SampleGaussian's moments in every real dtype, odd sizes included", "[random]") {
  CheckGaussian<Device, float>(stream);
  CheckGaussian<Device, double>(stream);
  CheckGaussian<Device, half_t>(stream);
  CheckGaussian<Device, bf16_t>(stream);
}

// ================================ seeds and sequences ======================================================

template <typename Device, typename DType>
std::vector<DType> Draw(Random<Device, DType>* rnd, Stream<Device>* stream) {
  TensorContainer<Device, 1, DType> t(Shape1(64));
  t.set_stream(stream);
  rnd->set_stream(stream);
  using Param = tensorexpr::detail::random_param_t<DType>;
  rnd->SampleUniform(t.view(), Param(0), Param(10000));
  return HostValues(t.view());
}
// How many positions two draws share a value at.
template <typename DType>
size_t SamePositions(const std::vector<DType>& a, const std::vector<DType>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += ToDouble(a[i]) == ToDouble(b[i]);
  return n;
}

template <typename Device, typename DType>
void CheckSeedsAndSequences(Stream<Device>* stream) {
  INFO(sizeof(DType) << "-byte " << (std::is_integral<DType>::value ? "integer" : "real") << " generator");
  Random<Device, DType> a(3), same(3), other_seed(4), sequence1(3, 1), sequence2(3, 2), sequence1_again(3, 1);
  const auto base = Draw(&a, stream);
  CHECK(a.GetSeed() == 3u);
  CHECK(sequence1.GetSeed() == 3u);
  CHECK(SamePositions(base, Draw(&same, stream)) == base.size());
  const auto s1 = Draw(&sequence1, stream);
  CHECK(SamePositions(s1, Draw(&sequence1_again, stream)) == s1.size());
  // Different seed or sequence: different numbers (a few coincidences among 10001 values are possible).
  CHECK(SamePositions(base, Draw(&other_seed, stream)) <= 2);
  CHECK(SamePositions(base, s1) <= 2);
  CHECK(SamePositions(s1, Draw(&sequence2, stream)) <= 2);
  // Seed(seed, sequence) restarts exactly as construction does; Seed(seed) is sequence 0.
  other_seed.Seed(3, 1);
  CHECK(SamePositions(s1, Draw(&other_seed, stream)) == s1.size());
  sequence2.Seed(3);
  CHECK(SamePositions(base, Draw(&sequence2, stream)) == base.size());
  Random<Device, DType> explicit_zero(3, 0);
  CHECK(SamePositions(base, Draw(&explicit_zero, stream)) == base.size());
}

TE_DEVICE_TEST_CASE("Random: the same seed and sequence id give the same numbers, others others", "[random]") {
  CheckSeedsAndSequences<Device, int16_t>(stream);
  CheckSeedsAndSequences<Device, uint32_t>(stream);
  CheckSeedsAndSequences<Device, int64_t>(stream);
  CheckSeedsAndSequences<Device, uint64_t>(stream);
  CheckSeedsAndSequences<Device, float>(stream);
  CheckSeedsAndSequences<Device, double>(stream);
  CheckSeedsAndSequences<Device, half_t>(stream);
}

// ================================ errors ===================================================================

TE_DEVICE_TEST_CASE("Random: bad bounds throw Error naming them", "[random]") {
  TensorContainer<Device, 2, float> f(Shape2(3, 4));
  TensorContainer<Device, 2, half_t> h(Shape2(3, 4));
  TensorContainer<Device, 2, int16_t> i(Shape2(3, 4));
  Random<Device, float> rf(1);
  Random<Device, half_t> rh(1);
  Random<Device, int16_t> ri(1);
  RequireError([&] { ri.SampleUniform(i.view(), int16_t(5), int16_t(4)); }, {"SampleUniform", "[5, 4]", "a > b", "(3,4)"});
  RequireError([&] { rf.SampleUniform(f.view(), 1.0f, 0.5f); }, {"SampleUniform", "[1, 0.5)", "a > b"});
  RequireError([&] { rf.SampleUniform(f.view(), std::nanf(""), 1.0f); }, {"SampleUniform", "NaN"});
  RequireError([&] { rf.SampleUniform(f.view(), -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()); },
               {"SampleUniform", "not finite in float32", "inf"});
  RequireError([&] { rf.SampleUniform(f.view(), 0.0f, std::numeric_limits<float>::infinity()); },
               {"SampleUniform", "not finite"});
  // 70000 is beyond half_t's range: the bound as half_t is inf.
  RequireError([&] { rh.SampleUniform(h.view(), 0.0f, 70000.0f); }, {"SampleUniform", "[0, 70000)", "float16"});
}

// ================================ bit generators and distributions ========================================

template <typename Device, typename Rng, typename DType>
void CheckDistributions(Stream<Device>* stream) {
  INFO(DataType<DType>::name() << " from a " << 8 * sizeof(typename Rng::result_type) << "-bit PCG");
  const int threads = 64, per_thread = 2000;
  const size_t n = size_t(threads) * per_thread;
  const DType lo = StepsUp(DType(1.0f), 3), hi = StepsUp(lo, 3);  // three values
  std::vector<double> uniform(n), normal(n), narrow(n);
  if constexpr (std::is_same<Device, cpu>::value) {
    for (int t = 0; t < threads; ++t) {
      const size_t at = size_t(t) * per_thread;
      DrawFromDistributions<cpu, Rng, DType>::Run(t, per_thread, &uniform[at], &normal[at], lo, hi, &narrow[at]);
    }
  } else {
#if defined(__CUDACC__)
    TensorContainer<gpu, 2, double> out(Shape2(3, index_t(n)));
    out.set_stream(stream);
    DrawFromDistributionsKernel<Rng, DType><<<threads / 32, 32, 0, Stream<gpu>::GetStream(stream)>>>(
        per_thread, out.dptr_, out.dptr_ + out.stride_, lo, hi, out.dptr_ + 2 * out.stride_);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const TensorContainer<cpu, 2, double> h = ToHost(out.view());
    for (size_t i = 0; i < n; ++i) {
      uniform[i] = h.dptr_[i];
      normal[i] = h.dptr_[h.stride_ + i];
      narrow[i] = h.dptr_[2 * h.stride_ + i];
    }
#endif
  }
  std::map<double, int> narrow_values;
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(narrow[i] >= ToDouble(lo));
    REQUIRE(narrow[i] < ToDouble(hi));
    ++narrow_values[narrow[i]];
  }
  CheckUniformDraws(uniform, 0, 1);
  CheckNormalDraws(normal, 0, 1);
  CHECK(narrow_values.size() == 3);
}

TE_DEVICE_TEST_CASE("UniformRealDistribution / GaussianDistribution over PCGRandom32 / 64", "[random]") {
  CheckDistributions<Device, PCGRandom32, float>(stream);
  CheckDistributions<Device, PCGRandom32, half_t>(stream);
  CheckDistributions<Device, PCGRandom64, double>(stream);
  CheckDistributions<Device, PCGRandom64, bf16_t>(stream);
  CheckDistributions<Device, PCGRandom32, double>(stream);  // 53-bit reals from two 32-bit words
}

#if defined(__CUDACC__)
// The device's PCG words are the host's (the same code, on both sides of the bus).
TEST_CASE("PCGRandom32 / PCGRandom64 give the same words in a kernel as on the host", "[gpu][random]") {
  TE_REQUIRE_GPU();
  TensorContainer<gpu, 1, uint64_t> out(Shape1(16));  // on the per-thread default stream, as the kernels
  FirstWordsKernel<PCGRandom32><<<1, 1, 0, cudaStreamPerThread>>>(42, 54, out.dptr_, 16);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const TensorContainer<cpu, 1, uint64_t> words32 = ToHost(out.view());
  PCGRandom32 r32(42, 54);
  for (int i = 0; i < 16; ++i) CHECK(words32.dptr_[i] == r32());
  FirstWordsKernel<PCGRandom64><<<1, 1, 0, cudaStreamPerThread>>>(42, 54, out.dptr_, 16);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const TensorContainer<cpu, 1, uint64_t> words64 = ToHost(out.view());
  PCGRandom64 r64(42, 54);
  for (int i = 0; i < 16; ++i) CHECK(words64.dptr_[i] == r64());
}
#else
// ================================ host-only checks of the building blocks =================================

TEST_CASE("PCGRandom32 gives the PCG reference's published words", "[cpu][random]") {
  // pcg32-demo of the PCG reference (pcg-c-basic): pcg32_srandom_r(&rng, 42u, 54u), then six words.
  PCGRandom32 rng(42u, 54u);
  const uint32_t expected[] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u, 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  for (uint32_t e : expected) CHECK(rng() == e);
}

TEST_CASE("PCGRandom64 is the PCG paper's RXS M XS 64/64 on the seeded LCG", "[cpu][random]") {
  // A naive transcription: seed as pcg32 does, then output rxs_m_xs(old state) per step.
  const uint64_t mul = 6364136223846793005ull, inc = (54ull << 1) | 1;
  uint64_t state = 0;
  state = state * mul + inc;
  state += 42;
  state = state * mul + inc;
  PCGRandom64 rng(42u, 54u);
  for (int i = 0; i < 8; ++i) {
    const uint64_t old = state;
    state = old * mul + inc;
    const unsigned shift = static_cast<unsigned>(old >> 59) + 5;
    const uint64_t word = ((old >> shift) ^ old) * 12605985483714917081ull;
    CHECK(rng() == ((word >> 43) ^ word));
  }
  // Distinct sequences of one seed, and distinct seeds of one sequence, differ.
  PCGRandom64 a(1, 1), b(1, 2), c(2, 1);
  const uint64_t wa = a();
  CHECK(wa != b());
  CHECK(wa != c());
}

TEST_CASE("random_bits: MulHigh64 and UniformOffset's rejection against naive references", "[cpu][random]") {
  std::mt19937_64 g(1);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = g(), b = i < 10 ? ~uint64_t(0) : g();
    __extension__ typedef unsigned __int128 U128;
    const U128 p = static_cast<U128>(a) * b;
    uint64_t low;
    const uint64_t high = tensorexpr::detail::MulHigh64(a, b, &low);
    REQUIRE(high == static_cast<uint64_t>(p >> 64));
    REQUIRE(low == static_cast<uint64_t>(p));
  }
  // A generator that replays given words.
  struct Replay {
    std::vector<uint32_t> words;
    size_t next = 0;
    uint32_t operator()() { return words.at(next++); }
    static constexpr uint32_t min() { return 0; }
    static constexpr uint32_t max() { return 0xffffffffu; }
  };
  // Three values: 2^32 mod 3 = 1 word value (0) is biased and drawn again; 2^32 - 1 maps to 2.
  Replay r{{0u, 0xffffffffu}};
  CHECK(tensorexpr::detail::UniformOffset(r, 2) == 2u);
  CHECK(r.next == 2);
  // The top of each third: word w gives floor(w * 3 / 2^32).
  Replay thirds{{0x55555555u, 0x55555556u, 0xaaaaaaabu}};
  CHECK(tensorexpr::detail::UniformOffset(thirds, 2) == 0u);
  CHECK(tensorexpr::detail::UniformOffset(thirds, 2) == 1u);
  CHECK(tensorexpr::detail::UniformOffset(thirds, 2) == 2u);
  // Spans of 2^32 - 1 and 2^64 - 1 are the words themselves.
  Replay words{{0x12345678u, 0x9abcdef0u, 0x0fedcba9u}};
  CHECK(tensorexpr::detail::UniformOffset(words, 0xffffffffull) == 0x12345678u);
  CHECK(tensorexpr::detail::UniformOffset(words, ~0ull) == 0x9abcdef00fedcba9ull);
}

// Sequence 0 of the CPU generator is mshadow's: std::mt19937 seeded with the seed, and the standard
// distributions, in row-major order.
TEST_CASE("Random<cpu>: sequence 0 gives std::mt19937's standard uniform and normal numbers", "[cpu][random]") {
  const uint64_t seed = 0x123456789ull;
  Random<cpu, float> rnd(seed);
  TensorContainer<cpu, 2, float> t(Shape2(7, 9));
  rnd.SampleUniform(t.view(), -1.0f, 3.0f);
  std::mt19937 ref(static_cast<uint32_t>(seed ^ (seed >> 32)));
  std::uniform_real_distribution<float> u(-1.0f, 3.0f);
  for (index_t i = 0; i < 63; ++i) REQUIRE(t.dptr_[i] == u(ref));
  Random<cpu, double> rd(seed, 0);
  TensorContainer<cpu, 1, double> d(Shape1(9));
  rd.SampleGaussian(d.view(), 1.0, 2.0);
  std::mt19937 ref_d(static_cast<uint32_t>(seed ^ (seed >> 32)));
  std::normal_distribution<double> z(1.0, 2.0);
  for (index_t i = 0; i < 9; ++i) REQUIRE(d.dptr_[i] == z(ref_d));
}

// mshadow's spellings of half_t's bits, which its random test uses.
TEST_CASE("half_t: half_ and Binary are mshadow's bits_ and FromBits", "[cpu][random]") {
  const half_t one = half_t::Binary(0x3c00u);
  CHECK(float(one) == 1.0f);
  CHECK(one.half_ == 0x3c00u);
  half_t h(2.0f);
  CHECK(h.half_ == h.bits_);
}
#endif

}  // namespace
