// dtype_test.cc — half_t and bf16_t against the IEEE rules (checked against references computed in double,
// with no bit tricks shared with the library), their arithmetic, the type traits and the type switches.
#include "test_util.h"

#include <cfloat>
#include <cstring>
#include <sstream>

using namespace tensorexpr;

namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::string Hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

// ---- binary16 reference -----------------------------------------------------------------------------
// The value of a binary16 bit pattern, from the definition: (-1)^s * 2^(e-15) * 1.m, or 2^-14 * 0.m.
double RefHalfValue(uint16_t b) {
  const int sign = b >> 15, e = (b >> 10) & 0x1f, m = b & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? std::nan("") : HUGE_VAL;
  else if (e == 0) v = std::ldexp(double(m), -24);
  else v = std::ldexp(double(1024 + m), e - 25);
  return sign ? -v : v;
}
bool IsHalfNaN(uint16_t b) { return ((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff) != 0; }

// The binary16 nearest to f, ties to even, overflow to infinity: the quantum of f's binade (2^(e-10),
// never below the subnormal quantum 2^-24) times nearbyint of f over it. Exact in double.
uint16_t RefHalfBits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (std::isinf(a)) return sign | 0x7c00;
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, std::max(e - 1, -14) - 10);
  const double v = std::nearbyint(a / quantum) * quantum;  // default rounding mode: half to even
  if (v >= 65536.0) return sign | 0x7c00;                 // past the largest finite half, 65504
  if (v < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(v / std::ldexp(1.0, -24));
  std::frexp(v, &e);
  const int exponent = e - 1;
  const int mant = static_cast<int>(v / std::ldexp(1.0, exponent - 10)) - 1024;
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | mant);
}

// ---- bfloat16 reference -----------------------------------------------------------------------------
// Same scheme with 8 significant bits and float's exponent range (subnormal quantum 2^-133).
uint16_t RefBf16Bits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (std::isinf(a)) return sign | 0x7f80;
  int e;
  std::frexp(a, &e);
  const double quantum = std::ldexp(1.0, std::max(e - 1, -126) - 7);
  const double v = std::nearbyint(a / quantum) * quantum;
  if (v >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  // v has at most 8 significant bits, so as a float its low 16 bits are zero.
  const uint32_t fb = Bits(static_cast<float>(v));
  if ((fb & 0xffffu) != 0) return 0xffff;  // cannot happen; shows up as a mismatch if the reference is wrong
  return sign | static_cast<uint16_t>(fb >> 16);
}
double RefBf16Value(uint16_t b) { return double(FromBits32(uint32_t(b) << 16)); }
bool IsBf16NaN(uint16_t b) { return ((b >> 7) & 0xff) == 0xff && (b & 0x7f) != 0; }

// Random floats: every bit pattern, and log-uniform magnitudes over [2^lo, 2^hi) with a random sign.
float RandomBitsFloat() { return FromBits32(static_cast<uint32_t>(te_test::Rng()())); }
float RandomLogFloat(int lo, int hi) {
  std::uniform_int_distribution<int> ex(lo, hi - 1);
  std::uniform_int_distribution<uint32_t> mant(0, (1u << 23) - 1);
  const float m = 1.0f + float(mant(te_test::Rng())) / float(1u << 23);
  const float v = std::ldexp(m, ex(te_test::Rng()));
  return (te_test::Rng()() & 1) ? -v : v;
}

}  // namespace

// ================================ half_t ==============================================================

TEST_CASE("half_t: every bit pattern converts to its IEEE value and back unchanged", "[dtype][cpu]") {
  index_t bad_value = 0, bad_round_trip = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = half_t::ToFloat(h);
    const double want = RefHalfValue(h);
    if (IsHalfNaN(h)) {
      // NaN stays NaN with its sign (the payload may be quietened).
      const uint16_t back = half_t::FromFloat(f);
      if (!std::isnan(f) || !IsHalfNaN(back) || (back & 0x8000) != (h & 0x8000)) {
        if (bad_round_trip++ < 5) UNSCOPED_INFO("NaN pattern " << Hex(h) << " came back as " << Hex(back));
      }
      continue;
    }
    if (!(double(f) == want) || std::signbit(f) != std::signbit(want)) {
      if (bad_value++ < 5) UNSCOPED_INFO("ToFloat(" << Hex(h) << ") = " << f << ", expected " << want);
    }
    const uint16_t back = half_t::FromFloat(f);
    if (back != h) {
      if (bad_round_trip++ < 5) UNSCOPED_INFO("round trip of " << Hex(h) << " gave " << Hex(back));
    }
  }
  CHECK(bad_value == 0);
  CHECK(bad_round_trip == 0);
  // Landmarks.
  CHECK(half_t::ToFloat(0x3c00) == 1.0f);
  CHECK(half_t::ToFloat(0x7bff) == 65504.0f);
  CHECK(half_t::ToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(half_t::ToFloat(0x0400) == std::ldexp(1.0f, -14));
  CHECK(std::isinf(half_t::ToFloat(0xfc00)));
}

TEST_CASE("half_t: float -> half rounds to nearest even (random floats vs a double reference)", "[dtype][cpu]") {
  index_t bad = 0, checked = 0;
  auto check = [&](float f) {
    if (std::isnan(f)) {
      const uint16_t got = half_t::FromFloat(f);
      if (!IsHalfNaN(got) || bool(got & 0x8000) != std::signbit(f)) {
        if (bad++ < 5) UNSCOPED_INFO("NaN " << Hex(Bits(f)) << " -> " << Hex(got));
      }
      return;
    }
    ++checked;
    const uint16_t got = half_t::FromFloat(f), want = RefHalfBits(f);
    if (got != want && bad++ < 5)
      UNSCOPED_INFO("FromFloat(" << f << " = " << Hex(Bits(f)) << ") = " << Hex(got) << ", expected " << Hex(want));
  };
  for (int i = 0; i < 300000; ++i) check(RandomBitsFloat());         // all ranges, NaN and inf included
  for (int i = 0; i < 300000; ++i) check(RandomLogFloat(-27, -13));   // subnormal halves and underflow
  for (int i = 0; i < 300000; ++i) check(RandomLogFloat(-14, 16));    // normal halves
  for (int i = 0; i < 100000; ++i) check(RandomLogFloat(15, 18));     // around the overflow threshold
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e30f, FLT_MIN, -FLT_TRUE_MIN,
                  std::ldexp(1.0f, -25), std::ldexp(1.0f, -25) * 1.0000001f, std::ldexp(3.0f, -26), HUGE_VALF,
                  -HUGE_VALF, std::nanf("")})
    check(f);
  INFO("checked " << checked << " finite/infinite floats");
  CHECK(bad == 0);
}

TEST_CASE("half_t: every halfway point rounds to the even neighbour", "[dtype][cpu]") {
  // Between each pair of adjacent finite halves (and past 65504, towards 65536), the midpoint is a
  // float; it must go to the neighbour with an even mantissa, and one float step either side to the
  // nearer one.
  index_t bad = 0;
  for (uint32_t b = 0; b <= 0x7bff; ++b) {
    const double lo = RefHalfValue(uint16_t(b));
    const double hi = b == 0x7bff ? 65536.0 : RefHalfValue(uint16_t(b + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    if (double(mid) != (lo + hi) / 2 && bad++ < 5) UNSCOPED_INFO("midpoint of " << Hex(b) << " is not a float");
    const uint16_t up = b == 0x7bff ? 0x7c00 : uint16_t(b + 1);
    const uint16_t even = (b & 1) ? up : uint16_t(b);
    for (int sgn = 0; sgn < 2; ++sgn) {
      const uint16_t s = sgn ? 0x8000 : 0;
      const float m = sgn ? -mid : mid;
      const float below = std::nextafter(m, 0.0f), above = std::nextafter(m, sgn ? -HUGE_VALF : HUGE_VALF);
      const uint16_t got_mid = half_t::FromFloat(m), got_below = half_t::FromFloat(below),
                     got_above = half_t::FromFloat(above);
      if (got_mid != (s | even) || got_below != (s | b) || got_above != (s | up)) {
        if (bad++ < 5)
          UNSCOPED_INFO("around the midpoint " << m << " of " << Hex(s | b) << ": got " << Hex(got_below) << " "
                                              << Hex(got_mid) << " " << Hex(got_above));
      }
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("half_t: constructors from integers and doubles round like floats", "[dtype][cpu]") {
  CHECK(float(half_t(3)) == 3.0f);
  CHECK(float(half_t(-2048)) == -2048.0f);
  CHECK(float(half_t(2049)) == 2048.0f);  // a tie: 2048 has the even mantissa
  CHECK(float(half_t(2051)) == 2052.0f);
  CHECK(std::isinf(float(half_t(int64_t(70000)))));
  CHECK(float(half_t(0.1)) == half_t::ToFloat(RefHalfBits(0.1f)));
  CHECK(half_t(1.5f).bits_ == 0x3e00);
  CHECK(half_t::FromBits(0x3e00).bits_ == 0x3e00);
  std::ostringstream os;
  os << half_t(1.5f) << " " << bf16_t(-2.0f);
  CHECK(os.str() == "1.5 -2");
}

// ================================ bf16_t ==============================================================

TEST_CASE("bf16_t: every bit pattern converts to float and back unchanged", "[dtype][cpu]") {
  index_t bad = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = bf16_t::ToFloat(h);
    const uint16_t back = bf16_t::FromFloat(f);
    const bool ok = IsBf16NaN(h) ? (std::isnan(f) && IsBf16NaN(back) && (back & 0x8000) == (h & 0x8000))
                                 : (back == h && Bits(f) == (uint32_t(h) << 16));
    if (!ok && bad++ < 5) UNSCOPED_INFO("pattern " << Hex(h) << " -> " << f << " -> " << Hex(back));
  }
  CHECK(bad == 0);
  CHECK(bf16_t::ToFloat(0x3f80) == 1.0f);
  CHECK(bf16_t::ToFloat(0xc000) == -2.0f);
}

TEST_CASE("bf16_t: float -> bf16 rounds to nearest even (random floats vs a double reference)", "[dtype][cpu]") {
  index_t bad = 0;
  auto check = [&](float f) {
    const uint16_t got = bf16_t::FromFloat(f);
    if (std::isnan(f)) {
      // Signalling NaNs too must stay NaN (plain truncation would turn some into infinity).
      if ((!IsBf16NaN(got) || bool(got & 0x8000) != std::signbit(f)) && bad++ < 5)
        UNSCOPED_INFO("NaN " << Hex(Bits(f)) << " -> " << Hex(got));
      return;
    }
    const uint16_t want = RefBf16Bits(f);
    if (got != want && bad++ < 5)
      UNSCOPED_INFO("FromFloat(" << f << " = " << Hex(Bits(f)) << ") = " << Hex(got) << ", expected " << Hex(want));
  };
  for (int i = 0; i < 400000; ++i) check(RandomBitsFloat());
  for (int i = 0; i < 200000; ++i) check(RandomLogFloat(-149, -125));  // float subnormals -> bf16 subnormals
  for (int i = 0; i < 200000; ++i) check(RandomLogFloat(-20, 20));
  for (int i = 0; i < 100000; ++i) check(RandomLogFloat(125, 128));    // overflow range
  for (float f : {0.0f, -0.0f, FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, FLT_MIN, HUGE_VALF, FromBits32(0x7f800001u),
                  FromBits32(0xff800001u), FromBits32(0x7fc00000u)})
    check(f);
  CHECK(bad == 0);
}

TEST_CASE("bf16_t: every halfway point rounds to the even neighbour", "[dtype][cpu]") {
  index_t bad = 0;
  for (uint32_t b = 0; b <= 0x7f7f; ++b) {
    const double lo = RefBf16Value(uint16_t(b));
    const double hi = b == 0x7f7f ? std::ldexp(1.0, 128) : RefBf16Value(uint16_t(b + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    const uint16_t up = uint16_t(b + 1);  // 0x7f80 is infinity
    const uint16_t even = (b & 1) ? up : uint16_t(b);
    const uint16_t got_mid = bf16_t::FromFloat(mid), got_below = bf16_t::FromFloat(std::nextafter(mid, 0.0f)),
                   got_above = bf16_t::FromFloat(std::nextafter(mid, HUGE_VALF));
    const uint16_t got_neg = bf16_t::FromFloat(-mid);
    if (double(mid) != (lo + hi) / 2 || got_mid != even || got_below != b || got_above != up ||
        got_neg != (0x8000 | even)) {
      if (bad++ < 5) UNSCOPED_INFO("around the midpoint " << mid << " of " << Hex(b));
    }
  }
  CHECK(bad == 0);
}

// ================================ arithmetic ==========================================================

TEMPLATE_TEST_CASE("low-precision arithmetic computes in float and rounds once", "[dtype][cpu]", half_t, bf16_t) {
  using T = TestType;
  STATIC_REQUIRE(std::is_same<decltype(T() + T()), T>::value);
  STATIC_REQUIRE(std::is_same<decltype(T() * 2.0f), float>::value);  // mixed with a number: that number's promotion
  STATIC_REQUIRE(std::is_same<decltype(2.0 / T()), double>::value);
  STATIC_REQUIRE(std::is_same<decltype(T() - 1), float>::value);
  STATIC_REQUIRE(sizeof(T) == 2);
  STATIC_REQUIRE(std::is_trivially_copyable<T>::value);
  STATIC_REQUIRE(is_low_precision<T>::value);
  STATIC_REQUIRE(!is_low_precision<float>::value);

  index_t bad = 0;
  for (int i = 0; i < 200000; ++i) {
    const T a = T(RandomLogFloat(-12, 12)), b = T(RandomLogFloat(-12, 12));
    const float fa = float(a), fb = float(b);
    const bool ok = (a + b).bits_ == T(fa + fb).bits_ && (a - b).bits_ == T(fa - fb).bits_ &&
                    (a * b).bits_ == T(fa * fb).bits_ && (a / b).bits_ == T(fa / fb).bits_;
    T c = a;
    c += b;
    T d = a;
    d *= b;
    T e = a;
    e -= b;
    T g = a;
    g /= b;
    const bool ok2 = c.bits_ == (a + b).bits_ && d.bits_ == (a * b).bits_ && e.bits_ == (a - b).bits_ &&
                     g.bits_ == (a / b).bits_;
    const bool ok3 = (a < b) == (fa < fb) && (a > b) == (fa > fb) && (a <= b) == (fa <= fb) &&
                     (a >= b) == (fa >= fb) && (a == b) == (fa == fb) && (a != b) == (fa != fb) &&
                     (a < 0.5f) == (fa < 0.5f) && (0.5f > a) == (0.5f > fa);
    if (!(ok && ok2 && ok3) && bad++ < 5) UNSCOPED_INFO("a = " << fa << ", b = " << fb);
  }
  CHECK(bad == 0);
  // Unary minus flips the sign bit only: -0 and NaN included.
  CHECK((-T(0.0f)).bits_ == 0x8000);
  CHECK((-T(1.5f)).bits_ == (T(1.5f).bits_ ^ 0x8000));
  const T nan = T(std::nanf(""));
  CHECK(std::isnan(float(nan)));
  CHECK(std::isnan(float(-nan)));
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
}

TEST_CASE("compute_t, accum_t and DataType", "[dtype][cpu]") {
  STATIC_REQUIRE(std::is_same<compute_t<half_t>, float>::value);
  STATIC_REQUIRE(std::is_same<compute_t<bf16_t>, float>::value);
  STATIC_REQUIRE(std::is_same<compute_t<float>, float>::value);
  STATIC_REQUIRE(std::is_same<compute_t<double>, double>::value);
  STATIC_REQUIRE(std::is_same<compute_t<int32_t>, double>::value);
  STATIC_REQUIRE(std::is_same<compute_t<int64_t>, double>::value);
  STATIC_REQUIRE(std::is_same<compute_t<uint8_t>, float>::value);
  STATIC_REQUIRE(std::is_same<accum_t<half_t>, float>::value);
  STATIC_REQUIRE(std::is_same<accum_t<bf16_t>, float>::value);
  STATIC_REQUIRE(std::is_same<accum_t<double>, double>::value);
  STATIC_REQUIRE(std::is_same<accum_t<int8_t>, int64_t>::value);
  STATIC_REQUIRE(std::is_same<accum_t<uint8_t>, int64_t>::value);
  STATIC_REQUIRE(std::is_same<accum_t<int32_t>, int64_t>::value);
  // mshadow's flag values, which serialised data and MXNet rely on.
  STATIC_REQUIRE(DataType<float>::kFlag == 0);
  STATIC_REQUIRE(DataType<double>::kFlag == 1);
  STATIC_REQUIRE(DataType<half_t>::kFlag == 2);
  STATIC_REQUIRE(DataType<uint8_t>::kFlag == 3);
  STATIC_REQUIRE(DataType<int32_t>::kFlag == 4);
  STATIC_REQUIRE(DataType<int8_t>::kFlag == 5);
  STATIC_REQUIRE(DataType<int64_t>::kFlag == 6);
  STATIC_REQUIRE(DataType<bf16_t>::kFlag == 12);
  CHECK(std::string(TypeFlagName(kBfloat16)) == "bfloat16");
  CHECK(std::string(TypeFlagName(42)) == "unknown");
}

namespace {
const int kAllFlags[] = {kFloat32, kFloat64, kFloat16, kBfloat16, kUint8, kInt8, kInt32, kInt64};
const int kRealFlags[] = {kFloat32, kFloat64, kFloat16, kBfloat16};
const int kIntFlags[] = {kUint8, kInt8, kInt32, kInt64};
const int kUnknownFlags[] = {-1, 7, 8, 11, 13, 99};
}  // namespace

TEST_CASE("TE_TYPE_SWITCH dispatches every flag to its type and rejects unknown flags", "[dtype][cpu]") {
  for (int flag : kAllFlags) {
    int seen = -1, calls = 0;
    size_t size = 0;
    std::string name;
    TE_TYPE_SWITCH(flag, DType, {
      seen = DataType<DType>::kFlag;
      size = sizeof(DType);
      name = DataType<DType>::name();
      ++calls;
    });
    INFO("flag " << flag);
    CHECK(calls == 1);
    CHECK(seen == flag);
    CHECK(name == TypeFlagName(flag));
    const size_t want_size = (flag == kFloat64 || flag == kInt64)   ? 8
                             : (flag == kFloat32 || flag == kInt32) ? 4
                             : (flag == kUint8 || flag == kInt8)    ? 1
                                                                    : 2;
    CHECK(size == want_size);
  }
  for (int flag : kUnknownFlags) {
    int calls = 0;
    INFO("flag " << flag);
    try {
      TE_TYPE_SWITCH(flag, DType, { calls += int(sizeof(DType)); });
      FAIL("TE_TYPE_SWITCH accepted an unknown flag");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("unknown type flag " + std::to_string(flag)));
    }
    CHECK(calls == 0);
  }
}

TEST_CASE("TE_REAL_TYPE_SWITCH dispatches the floating-point flags and rejects integers", "[dtype][cpu]") {
  for (int flag : kRealFlags) {
    int seen = -1;
    bool floating = false;
    TE_REAL_TYPE_SWITCH(flag, DType, {
      seen = DataType<DType>::kFlag;
      floating = std::is_floating_point<DType>::value || is_low_precision<DType>::value;
    });
    CHECK(seen == flag);
    CHECK(floating);
  }
  for (int flag : kIntFlags) {
    INFO("flag " << flag);
    int calls = 0;
    try {
      TE_REAL_TYPE_SWITCH(flag, DType, { calls += int(sizeof(DType)); });
      FAIL("TE_REAL_TYPE_SWITCH accepted an integer flag");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("not a floating-point type"));
      CHECK_THAT(e.what(), Catch::Contains(TypeFlagName(flag)));
    }
    CHECK(calls == 0);
  }
  REQUIRE_THROWS_AS([] { TE_REAL_TYPE_SWITCH(99, DType, { (void)sizeof(DType); }); }(), Error);
}

TE_DEVICE_TEST_CASE("TE_TYPE_SWITCH drives one computation per dtype", "[dtype]") {
  // The switch picks the element type at run time; the same expression then runs on the device.
  for (int flag : kAllFlags) {
    INFO("flag " << flag << " (" << TypeFlagName(flag) << ")");
    TE_TYPE_SWITCH(flag, DType, {
      TensorContainer<cpu, 2, DType> h(Shape2(3, 17));
      te_test::FillRandom(h.view(), 0.0, 20.0);  // non-negative: valid for uint8 too
      auto d = te_test::ToDevice<Device>(h.view(), stream);
      d = d * DType(2) + DType(1);
      const auto back = te_test::ToHost(d);
      te_test::CheckAll(back.view(), [&](const Shape<2>& i) { return te_test::At(h.view(), i) * 2 + 1; },
                        te_test::Tol<DType>());
    });
  }
}
