// philox_test.cc — the Philox4x32-10 block function (Random123's known answers; cuRAND's curand4() as the
// oracle in the GPU build), PhiloxRandom<Device> (which words each element takes, the offset from call to
// call, seeds and sequences, [a, b) and the moments in every real dtype, padded rows, thread counts,
// errors; the GPU's numbers against the CPU's in the GPU build), and DropoutForward with a PhiloxRandom.
// Seeds are fixed, so every number here is deterministic; tolerances are six standard errors.
#include "ops_test_util.h"
#include <tensorexpr/philox.h>
#include <tensorexpr/random_philox.h>
#include <tensorexpr/ops/dropout.h>
#if defined(__CUDACC__)
#include <curand_kernel.h>
#include <tensorexpr/cuda/random_philox.cuh>
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

// Kernels sit in a named namespace: nvcc's launch stubs cannot name a kernel inside an anonymous one.
namespace philox_test_kernels {
using namespace tensorexpr;
#if defined(__CUDACC__)
// Philox4x32_10 of n (counter, key) pairs in device code: counters[4i..4i+3], keys[2i..2i+1] -> out[4i..].
__global__ void PhiloxOnDeviceKernel(const uint32_t* counters, const uint32_t* keys, uint32_t* out, int n) {
  for (int i = 0; i < n; ++i) {
    const PhiloxWords c{{counters[4 * i], counters[4 * i + 1], counters[4 * i + 2], counters[4 * i + 3]}};
    const PhiloxWords r = Philox4x32_10(c, keys[2 * i], keys[2 * i + 1]);
    for (int j = 0; j < 4; ++j) out[4 * i + j] = r.w[j];
  }
}
// cuRAND's own generator: curand_init(seed, subsequence, offset), then `calls` curand4() (4 words each).
__global__ void Curand4Kernel(unsigned long long seed, unsigned long long subsequence, unsigned long long offset,
                              int calls, uint32_t* out) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, subsequence, offset, &state);
  for (int c = 0; c < calls; ++c) {
    const uint4 r = curand4(&state);
    out[4 * c] = r.x, out[4 * c + 1] = r.y, out[4 * c + 2] = r.z, out[4 * c + 3] = r.w;
  }
}
#endif
}  // namespace philox_test_kernels

namespace {
using namespace te_test;
using namespace philox_test_kernels;

// Word k of subsequence `sequence` under `seed`: word k % 4 of block k / 4 (cuRAND's stream of words).
uint32_t Word(uint64_t seed, uint64_t sequence, uint64_t k) { return PhiloxBlock(seed, sequence, k / 4).w[k % 4]; }
// The exact uniforms of random_philox.h: (word >> 8) * 2^-24, and a 53-bit double from two words.
float FloatUnit(uint32_t w) { return static_cast<float>(w >> 8) * (1.0f / 16777216.0f); }
double DoubleUnit(uint32_t high, uint32_t low) {
  return static_cast<double>(((static_cast<uint64_t>(high) << 32) | low) >> 11) * (1.0 / 9007199254740992.0);
}

// A (rows, cols) view with rows `stride` apart over a buffer poisoned everywhere, padding included.
template <typename Device, typename DType>
struct PaddedView {
  TensorContainer<Device, 1, DType> buffer;
  Tensor<Device, 2, DType> view;
  PaddedView(const Shape<2>& shape, index_t stride, Stream<Device>* stream, DType poison) {
    buffer.set_stream(stream);
    buffer.Resize(Shape1(shape[0] * stride));
    buffer = poison;
    view = Tensor<Device, 2, DType>(buffer.dptr_, shape, stride, stream);
  }
  // The view's values in row-major order; requires the padding to still hold `poison`.
  Vec Values(DType poison) const {
    const Vec all = ToVec(ToHost(buffer.view()).view());
    Vec v;
    const index_t stride = view.stride_;
    for (index_t r = 0; r < view.shape_[0]; ++r) {
      for (index_t c = 0; c < stride; ++c) {
        const double x = all[static_cast<size_t>(r * stride + c)];
        if (c < view.shape_[1]) {
          v.push_back(x);
        } else if (x != AsDouble(poison)) {
          FAIL("padding overwritten at row " << r << ", column " << c << ": " << x);
        }
      }
    }
    return v;
  }
};

// The values of a device tensor in row-major order.
template <typename Device, int dim, typename DType>
Vec Values(const Tensor<Device, dim, DType>& t) {
  return ToVec(ToHost(t).view());
}

// ================================ which words each element takes =========================================

TE_DEVICE_TEST_CASE("PhiloxRandom: element i takes word i of the call's blocks, padding untouched", "[philox]") {
  const uint64_t seed = 0x0123456789abcdefull, sequence = 3;
  PhiloxRandom<Device> rnd(seed, sequence, stream);
  rnd.set_offset(1000);
  const Shape<2> shape = Shape2(37, 53);  // 1961 elements: the last block half used
  const float fpoison = 77.0f;
  PaddedView<Device, float> f(shape, 59, stream, fpoison);
  rnd.SampleUniform(f.view, 0.0f, 1.0f);
  const Vec fv = f.Values(fpoison);
  CHECK(rnd.offset() == 1000u + (1961u + 3u) / 4u);
  size_t bad = 0;
  for (size_t i = 0; i < fv.size(); ++i) bad += fv[i] != FloatUnit(Word(seed, sequence, 4 * 1000 + i));
  CHECK(bad == 0);

  // A general range: a + (b - a) * u, each operation rounded in float (the GPU's too: no fused FMA).
  rnd.Seed(seed, sequence);
  CHECK(rnd.offset() == 0u);
  rnd.SampleUniform(f.view, -1.5f, 2.25f);
  const Vec gv = f.Values(fpoison);
  bad = 0;
  for (size_t i = 0; i < gv.size(); ++i) {
    const float expected = -1.5f + 3.75f * FloatUnit(Word(seed, sequence, i));
    bad += gv[i] != double(expected);
  }
  CHECK(bad == 0);

  // double: two words per element, so two elements per block.
  const double dpoison = -3.0;
  PaddedView<Device, double> d(Shape2(9, 11), 16, stream, dpoison);
  const uint64_t before = rnd.offset();
  rnd.SampleUniform(d.view, 0.0, 1.0);
  const Vec dv = d.Values(dpoison);
  CHECK(rnd.offset() == before + 50u);  // 99 elements: 50 blocks
  bad = 0;
  for (size_t i = 0; i < dv.size(); ++i) {
    const uint64_t k = 4 * before + 2 * i;
    bad += dv[i] != DoubleUnit(Word(seed, sequence, k), Word(seed, sequence, k + 1));
  }
  CHECK(bad == 0);

  // half_t / bf16_t: one word each, the float uniform rounded once.
  PaddedView<Device, half_t> h(Shape2(5, 7), 8, stream, half_t(9.0f));
  PaddedView<Device, bf16_t> b(Shape2(5, 7), 9, stream, bf16_t(9.0f));
  const uint64_t at_h = rnd.offset();
  rnd.SampleUniform(h.view, 2.0f, 4.0f);
  const uint64_t at_b = rnd.offset();
  CHECK(at_b == at_h + 9u);
  rnd.SampleUniform(b.view, 2.0f, 4.0f);
  const Vec hv = h.Values(half_t(9.0f)), bv = b.Values(bf16_t(9.0f));
  for (size_t i = 0; i < hv.size(); ++i) {
    const float uh = 2.0f + 2.0f * FloatUnit(Word(seed, sequence, 4 * at_h + i));
    const float ub = 2.0f + 2.0f * FloatUnit(Word(seed, sequence, 4 * at_b + i));
    // Rounding up onto b gives the value below b instead.
    const double eh = AsDouble(half_t(uh)) < 4.0 ? AsDouble(half_t(uh)) : 4.0 - 1.0 / 512;
    const double eb = AsDouble(bf16_t(ub)) < 4.0 ? AsDouble(bf16_t(ub)) : 4.0 - 1.0 / 64;
    CHECK(hv[i] == eh);
    CHECK(bv[i] == eb);
  }
}

// ================================ the offset from call to call ===========================================

TE_DEVICE_TEST_CASE("PhiloxRandom: calls continue where the last one stopped, at a whole block", "[philox]") {
  PhiloxRandom<Device> one(42, 0, stream), two(42, 0, stream);
  TensorContainer<Device, 1, float> all(Shape1(48)), first(Shape1(24)), second(Shape1(24));
  for (auto* t : {&all, &first, &second}) t->set_stream(stream);
  // 24 elements are 6 whole blocks: two calls of 24 are one call of 48.
  one.SampleUniform(all.view(), 0.0f, 1.0f);
  two.SampleUniform(first.view(), 0.0f, 1.0f);
  two.SampleUniform(second.view(), 0.0f, 1.0f);
  const Vec av = Values(all.view()), fv = Values(first.view()), sv = Values(second.view());
  for (size_t i = 0; i < 24; ++i) {
    CHECK(fv[i] == av[i]);
    CHECK(sv[i] == av[24 + i]);
  }
  CHECK(one.offset() == 12u);
  CHECK(two.offset() == 12u);
  // 6 elements use 2 blocks (8 words): the second call starts at element 8 of one call.
  TensorContainer<Device, 1, float> six(Shape1(6));
  six.set_stream(stream);
  two.Seed(42);
  two.SampleUniform(six.view(), 0.0f, 1.0f);
  const Vec s1 = Values(six.view());
  two.SampleUniform(six.view(), 0.0f, 1.0f);
  const Vec s2 = Values(six.view());
  CHECK(two.offset() == 4u);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(s1[i] == av[i]);
    CHECK(s2[i] == av[8 + i]);
  }
  // set_offset(k) starts at block k: element 4k of the long call.
  two.set_offset(3);
  two.SampleUniform(six.view(), 0.0f, 1.0f);
  const Vec s3 = Values(six.view());
  for (size_t i = 0; i < 6; ++i) CHECK(s3[i] == av[12 + i]);
  // Gaussians advance alike (four floats per block, two doubles).
  TensorContainer<Device, 1, double> d(Shape1(5));
  d.set_stream(stream);
  two.Seed(42);
  two.SampleGaussian(six.view(), 0.0f, 1.0f);
  CHECK(two.offset() == 2u);
  two.SampleGaussian(d.view(), 0.0, 1.0);
  CHECK(two.offset() == 5u);
}

TE_DEVICE_TEST_CASE("PhiloxRandom: the same seed and sequence give the same numbers, others others",
                    "[philox]") {
  auto draw = [&](PhiloxRandom<Device>& r) {
    TensorContainer<Device, 2, float> t(Shape2(8, 16));
    t.set_stream(stream);
    r.SampleUniform(t.view(), 0.0f, 1.0f);
    return Values(t.view());
  };
  auto same_positions = [](const Vec& a, const Vec& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] == b[i];
    return n;
  };
  PhiloxRandom<Device> a(7, 0, stream), same(7, 0, stream), other_seed(8, 0, stream), other_sequence(7, 1, stream);
  const Vec base = draw(a);
  CHECK(a.GetSeed() == 7u);
  CHECK(other_sequence.sequence() == 1u);
  CHECK(same_positions(base, draw(same)) == base.size());
  CHECK(same_positions(base, draw(other_seed)) <= 1);  // 128 values of 2^24: a coincidence is rare
  CHECK(same_positions(base, draw(other_sequence)) <= 1);
  CHECK(same_positions(base, draw(a)) <= 1);  // the next call: fresh numbers
  other_seed.Seed(7);
  CHECK(same_positions(base, draw(other_seed)) == base.size());
  // Sequence s is the blocks 2^64 s + offset: a carry out of the offset runs into the sequence.
  PhiloxRandom<Device> carry(7, 0, stream);
  carry.set_offset(~uint64_t(0));
  TensorContainer<Device, 1, float> t(Shape1(8));
  t.set_stream(stream);
  carry.SampleUniform(t.view(), 0.0f, 1.0f);
  const Vec cv = Values(t.view());
  for (uint64_t i = 0; i < 4; ++i) CHECK(cv[i] == FloatUnit(PhiloxBlock(7, 0, ~uint64_t(0)).w[i]));
  for (uint64_t i = 0; i < 4; ++i) CHECK(cv[4 + i] == FloatUnit(PhiloxBlock(7, 1, 0).w[i]));
  CHECK(carry.offset() == 1u);
}

// ================================ distributions ===========================================================

// The next representable value above v (v finite and positive).
template <typename DType>
DType NextUp(DType v) {
  if constexpr (std::is_floating_point<DType>::value) {
    return std::nextafter(v, std::numeric_limits<DType>::infinity());
  } else {
    return DType::FromBits(static_cast<uint16_t>(v.bits_ + 1u));
  }
}

// SampleUniform: [a, b) with the uniform's mean and second moment, padding untouched; a range three
// values wide never gives b and gives each value below it; a == b gives a.
template <typename Device, typename DType>
void CheckPhiloxUniform(Stream<Device>* stream) {
  INFO(DataType<DType>::name());
  using Real = compute_t<DType>;
  PhiloxRandom<Device> rnd(2024, 0, stream);
  const DType poison = DType(99.0f);
  PaddedView<Device, DType> t(Shape2(301, 333), 340, stream, poison);
  rnd.SampleUniform(t.view, Real(-5), Real(5));
  CheckUniformDraws(t.Values(poison), -5, 5);

  const DType lo = DType(1.0f), hi = NextUp(NextUp(NextUp(lo)));
  TensorContainer<Device, 1, DType> narrow(Shape1(20001));
  narrow.set_stream(stream);
  rnd.SampleUniform(narrow.view(), static_cast<Real>(lo), static_cast<Real>(hi));
  std::set<double> seen;
  for (double x : Values(narrow.view())) {
    REQUIRE(x >= AsDouble(lo));
    REQUIRE(x < AsDouble(hi));
    seen.insert(x);
  }
  CHECK(seen.size() == 3);
  rnd.SampleUniform(narrow.view(), Real(2), Real(2));
  for (double x : Values(narrow.view())) REQUIRE(x == 2.0);
}

TE_DEVICE_TEST_CASE("PhiloxRandom: SampleUniform lies in [a, b) with the uniform's moments, every real dtype",
                    "[philox]") {
  CheckPhiloxUniform<Device, float>(stream);
  CheckPhiloxUniform<Device, double>(stream);
  CheckPhiloxUniform<Device, half_t>(stream);
  CheckPhiloxUniform<Device, bf16_t>(stream);
}

// SampleGaussian: the first three moments of N(m, s^2), odd sizes and padded rows; sigma = 0 gives mu.
template <typename Device, typename DType>
void CheckPhiloxGaussian(Stream<Device>* stream) {
  INFO(DataType<DType>::name());
  using Real = compute_t<DType>;
  PhiloxRandom<Device> rnd(11, 2, stream);
  const DType poison = DType(1234.0f);
  const double m = 0.4, s = 0.6;
  for (const Shape<2>& shape : {Shape2(333, 333), Shape2(1, 7), Shape2(256, 255)}) {
    PaddedView<Device, DType> t(shape, shape[1] + 3, stream, poison);
    rnd.SampleGaussian(t.view, Real(m), Real(s));
    const Vec v = t.Values(poison);
    if (v.size() >= 100) CheckNormalDraws(v, m, s);  // a tiny odd tensor: written, padding kept
  }
  TensorContainer<Device, 1, DType> t(Shape1(9));
  t.set_stream(stream);
  rnd.SampleGaussian(t.view(), Real(m), Real(0));
  for (double x : Values(t.view())) REQUIRE(x == AsDouble(DType(Real(m))));
}

TE_DEVICE_TEST_CASE("PhiloxRandom: SampleGaussian's moments in every real dtype, odd sizes included", "[philox]") {
  CheckPhiloxGaussian<Device, float>(stream);
  CheckPhiloxGaussian<Device, double>(stream);
  CheckPhiloxGaussian<Device, half_t>(stream);
  CheckPhiloxGaussian<Device, bf16_t>(stream);
}

// ================================ errors ===================================================================

TE_DEVICE_TEST_CASE("PhiloxRandom: bad bounds, a negative sigma and a tensor without memory throw Error",
                    "[philox]") {
  const std::string name = std::string("PhiloxRandom<") + Device::name() + ">";
  PhiloxRandom<Device> rnd(1, 0, stream);
  TensorContainer<Device, 2, float> f(Shape2(3, 4));
  TensorContainer<Device, 2, half_t> h(Shape2(3, 4));
  RequireError([&] { rnd.SampleUniform(f.view(), 1.0f, 0.5f); },
               {name + "::SampleUniform", "[1, 0.5)", "a > b", "(3,4)"});
  RequireError([&] { rnd.SampleUniform(f.view(), std::nanf(""), 1.0f); }, {"SampleUniform", "NaN"});
  RequireError([&] { rnd.SampleUniform(f.view(), 0.0f, std::numeric_limits<float>::infinity()); },
               {"SampleUniform", "not finite"});
  RequireError([&] { rnd.SampleUniform(h.view(), 0.0f, 70000.0f); }, {"SampleUniform", "[0, 70000)", "float16"});
  RequireError([&] { rnd.SampleGaussian(f.view(), 0.0f, -1.0f); },
               {name + "::SampleGaussian", "sigma = -1", ">= 0", "(3,4)"});
  const Tensor<Device, 2, float> no_memory(nullptr, Shape2(3, 4), stream);
  RequireError([&] { rnd.SampleUniform(no_memory, 0.0f, 1.0f); }, {name + "::SampleUniform", "(3,4)", "null"});
  RequireError([&] { rnd.SampleGaussian(no_memory, 0.0f, 1.0f); }, {name + "::SampleGaussian", "null"});
  // Nothing drawn, nothing used: the offset has not moved. An empty tensor needs no memory.
  rnd.SampleUniform(Tensor<Device, 2, float>(nullptr, Shape2(0, 4), stream), 0.0f, 1.0f);
  CHECK(rnd.offset() == 0u);
}

// ================================ dropout ==================================================================

// DropoutForward with a PhiloxRandom: the mask is 0 or 1 / (1 - p), exactly the threshold of the uniforms a
// twin generator's SampleUniform gives a compute_t<DType> tensor; the kept fraction within six standard
// errors; out = x * mask and backward dy * mask exactly. Rank 3 with padded rows.
template <typename Device, typename DType>
void CheckPhiloxDropout(Stream<Device>* stream, double p_drop) {
  INFO("dtype " << DataType<DType>::name() << ", p = " << p_drop);
  using A = compute_t<DType>;
  const Shape<3> shape = Shape3(5, 61, 347);
  ops::DropoutParam p;
  p.p = p_drop;
  PhiloxRandom<Device> rnd(1234, 5, stream), twin(1234, 5, stream);
  rnd.set_offset(17);
  twin.set_offset(17);
  const auto x = Uniform<3, DType>(shape, 0.5, 2.0), dy = Uniform<3, DType>(shape);
  const auto dx = Dev(x.view(), stream, true), ddy = Dev(dy.view(), stream, true);
  TensorContainer<Device, 3, DType> out(true), mask(true), grad(true);
  for (auto* t : {&out, &mask, &grad}) {
    t->set_stream(stream);
    t->Resize(shape);
  }
  ops::DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  TensorContainer<Device, 3, A> u(shape);
  u.set_stream(stream);
  twin.SampleUniform(u.view(), A(0), A(1));
  CHECK(rnd.offset() == twin.offset());
  const Vec xv = ToVec(x.view()), dyv = ToVec(dy.view()), uv = Values(u.view());
  const Vec ov = Values(out.view()), mv = Values(mask.view());
  const A keep = A(1.0 - p_drop);
  const double scale = AsDouble(DType(A(1) / keep));
  size_t kept = 0, bad_mask = 0, bad_out = 0;
  for (size_t i = 0; i < mv.size(); ++i) {
    kept += mv[i] != 0;
    bad_mask += mv[i] != (A(uv[i]) < keep ? scale : 0.0);
    bad_out += ov[i] != AsDouble(DType(A(xv[i]) * A(mv[i])));
  }
  CHECK(bad_mask == 0);
  CHECK(bad_out == 0);
  const double n = double(mv.size()), q = double(keep);
  CheckMean(double(kept) / n, q, std::sqrt(q * (1 - q)), n, "kept fraction");
  ops::DropoutBackward(p, ddy.view(), mask.view(), kWriteTo, grad.view());
  const Vec gv = Values(grad.view());
  size_t bad_grad = 0;
  for (size_t i = 0; i < gv.size(); ++i) bad_grad += gv[i] != AsDouble(DType(A(dyv[i]) * A(mv[i])));
  CHECK(bad_grad == 0);
  // The next call draws another mask.
  ops::DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(mask.view()) != mv);
}

TE_DEVICE_TEST_CASE("Dropout with PhiloxRandom: the mask is the thresholded uniforms, kept fraction, backward",
                    "[philox][dropout]") {
  CheckPhiloxDropout<Device, float>(stream, 0.3);
  CheckPhiloxDropout<Device, double>(stream, 0.5);
  CheckPhiloxDropout<Device, half_t>(stream, 0.1);
  CheckPhiloxDropout<Device, bf16_t>(stream, 0.7);
}

TE_DEVICE_TEST_CASE("Dropout with PhiloxRandom: p = 0 keeps all, p = 1 drops all, errors", "[philox][dropout]") {
  PhiloxRandom<Device> rnd(5, 0, stream);
  const auto x = Uniform<2, float>(Shape2(3, 17), 0.5, 2.0);
  const auto dx = Dev(x.view(), stream);
  TensorContainer<Device, 2, float> out(Shape2(3, 17)), mask(Shape2(3, 17));
  out.set_stream(stream);
  mask.set_stream(stream);
  ops::DropoutParam p;
  p.p = 0;
  ops::DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(out.view()) == ToVec(x.view()));
  p.p = 1;
  ops::DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view());
  for (double v : Values(out.view())) REQUIRE(v == 0.0);
  CHECK(rnd.offset() == 0u);  // nothing drawn
  p.p = 1.5;
  RequireError([&] { ops::DropoutForward(p, true, &rnd, dx.view(), kWriteTo, out.view(), mask.view()); },
               {"p = 1.5"});
  p.p = 0.5;
  PhiloxRandom<Device>* none = nullptr;
  RequireError([&] { ops::DropoutForward(p, true, none, dx.view(), kWriteTo, out.view(), mask.view()); },
               {"random generator", "(3,17)"});
  // Inference needs no generator.
  ops::DropoutForward(p, false, none, dx.view(), kWriteTo, out.view(), mask.view());
  CHECK(Values(out.view()) == ToVec(x.view()));
}

#if !defined(__CUDACC__)
// ================================ host-only checks =========================================================

// Random123's tests/kat_vectors, the three "philox4x32 10" lines: counter (4 words), key (2 words), result.
struct KnownAnswer {
  PhiloxWords counter;
  uint32_t key[2];
  PhiloxWords result;
};
const KnownAnswer kKnownAnswers[] = {
    {{{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u}}, {0x00000000u, 0x00000000u},
     {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
    {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, {0xffffffffu, 0xffffffffu},
     {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
    {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {0xa4093822u, 0x299f31d0u},
     {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
};

TEST_CASE("Philox4x32_10 gives Random123's known answers; PhiloxBlock is cuRAND's layout", "[cpu][philox]") {
  for (const KnownAnswer& k : kKnownAnswers) {
    const PhiloxWords r = Philox4x32_10(k.counter, k.key[0], k.key[1]);
    for (int j = 0; j < 4; ++j) CHECK(r.w[j] == k.result.w[j]);
    // The same block by (seed, subsequence, block): key = seed, counter = block + 2^64 subsequence.
    const uint64_t seed = (uint64_t(k.key[1]) << 32) | k.key[0];
    const uint64_t block = (uint64_t(k.counter.w[1]) << 32) | k.counter.w[0];
    const uint64_t subsequence = (uint64_t(k.counter.w[3]) << 32) | k.counter.w[2];
    const PhiloxWords b = PhiloxBlock(seed, subsequence, block);
    for (int j = 0; j < 4; ++j) CHECK(b.w[j] == k.result.w[j]);
  }
}

// The highest OpenMP thread that ran a block since the last reset, through Generate's sampler interface.
int highest_thread = -1;
struct ThreadRecordingUnits {
  static constexpr int kPerBlock = 4;
  void operator()(const PhiloxWords& block, float* out) const {
#ifdef _OPENMP
    const int t = omp_get_thread_num();
#pragma omp critical(philox_test_highest_thread)
    highest_thread = std::max(highest_thread, t);
#endif
    for (int j = 0; j < 4; ++j) out[j] = FloatUnit(block.w[j]);
  }
};

TEST_CASE("PhiloxRandom<cpu>: the numbers do not depend on the thread count; a stream's budget holds",
          "[cpu][philox]") {
  const int before = GetNumThreads();
  const Shape<2> shape = Shape2(517, 1031);  // far above the serial cutoff
  auto draw = [&](int threads, Stream<cpu>* stream) {
    SetNumThreads(threads);
    PhiloxRandom<cpu> rnd(99, 4, stream);
    TensorContainer<cpu, 2, float> u(shape), z(shape);
    TensorContainer<cpu, 2, double> d(shape);
    rnd.SampleUniform(u.view(), -2.0f, 3.0f);
    rnd.SampleGaussian(z.view(), 1.0f, 2.0f);
    rnd.SampleGaussian(d.view(), 0.0, 1.0);
    highest_thread = -1;
    rnd.Generate(u.view(), ThreadRecordingUnits());
    std::vector<Vec> v{ToVec(u.view()), ToVec(z.view()), ToVec(d.view())};
    return std::make_pair(v, highest_thread);
  };
  const auto one = draw(1, nullptr), two = draw(2, nullptr);
  CHECK(one.second == 0);
#ifdef _OPENMP
  CHECK(two.second == 1);  // the blocks were shared out
#endif
  for (size_t k = 0; k < one.first.size(); ++k) CHECK(one.first[k] == two.first[k]);
  // A stream with a budget of one thread keeps the loop on one thread; the numbers are the same.
  Stream<cpu> narrow;
  narrow.set_num_threads(1);
  const auto budget = draw(2, &narrow);
  CHECK(budget.second == 0);
  for (size_t k = 0; k < one.first.size(); ++k) CHECK(budget.first[k] == one.first[k]);
  SetNumThreads(before);
}
#else
// ================================ GPU against cuRAND and the CPU ===========================================

TEST_CASE("Philox4x32_10 in device code gives Random123's known answers", "[gpu][philox]") {
  TE_REQUIRE_GPU();
  const uint32_t counters[12] = {0, 0, 0, 0, ~0u, ~0u, ~0u, ~0u, 0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  const uint32_t keys[6] = {0, 0, ~0u, ~0u, 0xa4093822u, 0x299f31d0u};
  const uint32_t expected[12] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u, 0x408f276du, 0x41c83b0eu,
                                 0xa20bc7c6u, 0x6d5451fdu, 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
  TensorContainer<gpu, 1, uint32_t> c(Shape1(12)), k(Shape1(6)), out(Shape1(12));
  Copy(c.view(), Tensor<cpu, 1, uint32_t>(const_cast<uint32_t*>(counters), Shape1(12)));
  Copy(k.view(), Tensor<cpu, 1, uint32_t>(const_cast<uint32_t*>(keys), Shape1(6)));
  Sync<gpu>(nullptr);
  PhiloxOnDeviceKernel<<<1, 1, 0, cudaStreamPerThread>>>(c.dptr_, k.dptr_, out.dptr_, 3);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const TensorContainer<cpu, 1, uint32_t> h = ToHost(out.view());
  for (int i = 0; i < 12; ++i) CHECK(h.dptr_[i] == expected[i]);
}

// The independent oracle: cuRAND's curand4() after curand_init(seed, subsequence, offset) gives words
// offset, offset + 1, ... of the subsequence, which PhiloxBlock computes (offsets not a multiple of 4
// included: curand4 then straddles two blocks).
TEST_CASE("PhiloxBlock equals cuRAND's curand4 after curand_init(seed, subsequence, offset)", "[gpu][philox]") {
  TE_REQUIRE_GPU();
  const uint64_t seeds[] = {0, 42, 0x0123456789abcdefull, ~uint64_t(0)};
  const uint64_t subsequences[] = {0, 1, 12345, uint64_t(1) << 40};
  const uint64_t offsets[] = {0, 4, 7, 1000, (uint64_t(1) << 34) + 2};
  const int calls = 3;
  TensorContainer<gpu, 1, uint32_t> out(Shape1(4 * calls));
  for (uint64_t seed : seeds)
    for (uint64_t subsequence : subsequences)
      for (uint64_t offset : offsets) {
        INFO("seed " << seed << ", subsequence " << subsequence << ", offset " << offset);
        Curand4Kernel<<<1, 1, 0, cudaStreamPerThread>>>(seed, subsequence, offset, calls, out.dptr_);
        REQUIRE(cudaGetLastError() == cudaSuccess);
        const TensorContainer<cpu, 1, uint32_t> h = ToHost(out.view());
        for (int i = 0; i < 4 * calls; ++i) CHECK(h.dptr_[i] == Word(seed, subsequence, offset + uint64_t(i)));
      }
}

// The same generator state on both devices: the GPU's uniforms equal the CPU's bit for bit (every dtype,
// padded rows), its normals to a few ulps, its dropout masks bit for bit.
template <typename DType>
void CheckGpuEqualsCpu(Stream<gpu>* stream) {
  INFO(DataType<DType>::name());
  using Real = compute_t<DType>;
  PhiloxRandom<gpu> g(31337, 9, stream);
  PhiloxRandom<cpu> c(31337, 9);
  g.set_offset(5);
  c.set_offset(5);
  const Shape<2> shape = Shape2(129, 257);
  const DType poison = DType(3.0f);
  PaddedView<gpu, DType> gu(shape, 260, stream, poison);
  TensorContainer<cpu, 2, DType> cu(shape);
  g.SampleUniform(gu.view, Real(-3), Real(7));
  c.SampleUniform(cu.view(), Real(-3), Real(7));
  CHECK(gu.Values(poison) == ToVec(cu.view()));
  g.SampleGaussian(gu.view, Real(1), Real(2));
  c.SampleGaussian(cu.view(), Real(1), Real(2));
  CHECK(g.offset() == c.offset());
  const Vec gz = gu.Values(poison), cz = ToVec(cu.view());
  // Box-Muller through each device's log / sin / cos: a few ulps of compute_t (then rounded to DType).
  const double ulp = std::is_same<Real, double>::value ? 0x1p-52 : 0x1p-23;
  const double rounding = std::is_same<DType, half_t>::value ? 0x1p-10 : std::is_same<DType, bf16_t>::value ? 0x1p-7 : 0;
  size_t far = 0;
  for (size_t i = 0; i < gz.size(); ++i) far += std::fabs(gz[i] - cz[i]) > (16 * ulp + rounding) * std::max(1.0, std::fabs(cz[i]));
  CHECK(far == 0);
  // Dropout: the same mask.
  ops::DropoutParam p;
  p.p = 0.4;
  const auto x = Uniform<2, DType>(shape, 0.5, 2.0);
  const auto gx = Dev(x.view(), stream, true);
  TensorContainer<gpu, 2, DType> gout(true), gmask(true);
  for (auto* t : {&gout, &gmask}) {
    t->set_stream(stream);
    t->Resize(shape);
  }
  TensorContainer<cpu, 2, DType> cout_(shape), cmask(shape);
  ops::DropoutForward(p, true, &g, gx.view(), kWriteTo, gout.view(), gmask.view());
  ops::DropoutForward(p, true, &c, x.view(), kWriteTo, cout_.view(), cmask.view());
  CHECK(Values(gmask.view()) == ToVec(cmask.view()));
  CHECK(Values(gout.view()) == ToVec(cout_.view()));
}

TEST_CASE("PhiloxRandom<gpu> gives PhiloxRandom<cpu>'s numbers", "[gpu][philox]") {
  TE_REQUIRE_GPU();
  Stream<gpu> stream;
  CheckGpuEqualsCpu<float>(&stream);
  CheckGpuEqualsCpu<double>(&stream);
  CheckGpuEqualsCpu<half_t>(&stream);
  CheckGpuEqualsCpu<bf16_t>(&stream);
  CheckGpuEqualsCpu<float>(nullptr);  // the per-thread default stream
}
#endif

}  // namespace
