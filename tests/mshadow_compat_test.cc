// mshadow_compat_test.cc — mshadow client code compiled unchanged against <tensorexpr/mshadow.h>
// (issue 16): programs in the style of mshadow's guide, extensions declared by reopening namespace mshadow,
// the type switches, dmlc's CHECK / LOG macros (which throw Error), the reductions whose mshadow meaning
// differs from tensorexpr's, the synchronous Copy, and an MXNet-style operator that brings its own
// OpReqType and Assign. Every result is compared with a naive loop. [cpu][mshadow]
//
// Catch2's macros are prefixed (CATCH_CHECK, ...) in this file only, so that CHECK, CHECK_EQ and LOG are
// the mshadow ones under test.

// MXNet's names, declared before the include as an MXNet operator file has them: its own request enum at
// global scope, and Assign as a function-like macro (which tensorexpr's assign.h must survive).
enum OpReqType { kNullOp, kWriteTo, kWriteInplace, kAddTo };
#define Assign(out, req, exp)            \
  {                                      \
    switch (req) {                       \
      case kNullOp:                      \
        break;                           \
      case kWriteTo:                     \
      case kWriteInplace:                \
        (out) = (exp);                   \
        break;                           \
      case kAddTo:                       \
        (out) += (exp);                  \
        break;                           \
      default:                           \
        LOG(FATAL) << "not reached";     \
    }                                    \
  }

#include <tensorexpr/mshadow.h>
// The operator headers too: MXNet-style code includes them under its Assign macro as well.
#include <tensorexpr/ops/conv_epilogue.h>
#include <tensorexpr/ops/convolution.h>
#include "mshadow_conv_check.h"

#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

using namespace mshadow;
using namespace mshadow::expr;
using Catch::Contains;
using Catch::Equals;

// ---- extensions declared inside namespace mshadow, as mshadow users write them -----------------------
namespace mshadow {
namespace op {
// A functor next to the built-in ones: a * a + 1.
struct square_plus_one {
  template <typename DType>
  MSHADOW_XINLINE static DType Map(DType a) {
    return a * a + DType(1);
  }
};
}  // namespace op
namespace red {
// A reducer (tensorexpr's reducer interface: name, Init, Reduce): the sum of absolute values.
struct sum_abs {
  static const char* name() { return "sum_abs"; }
  template <typename A, typename DType = A>
  MSHADOW_XINLINE static A Init() {
    return A(0);
  }
  template <typename A>
  MSHADOW_XINLINE static void Reduce(A& acc, A v) {
    acc += v < A(0) ? -v : v;
  }
};
}  // namespace red
namespace expr {
// A user expression node (tensorexpr's node contract): the source shifted one place right along its last
// dimension, 0 entering at the left.
template <typename SrcExp, typename DType>
struct ShiftRightExp : public Exp<ShiftRightExp<SrcExp, DType>, DType, type::kChainer> {
  static constexpr int kDim = SrcExp::kDim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  SrcExp src_;
  explicit ShiftRightExp(const SrcExp& src) : src_(src) {}
  Shape<kDim> shape() const { return src_.shape(); }
  struct Plan {
    typename SrcExp::Plan src_;
    MSHADOW_XINLINE DType Eval(index_t y, index_t x) const { return x == 0 ? DType(0) : src_.Eval(y, x - 1); }
  };
  Plan plan() const { return Plan{src_.plan()}; }
};
template <typename SrcExp, typename DType, int etype>
inline ShiftRightExp<SrcExp, DType> shift_right(const Exp<SrcExp, DType, etype>& src) {
  return ShiftRightExp<SrcExp, DType>(src.self());
}
}  // namespace expr
// A client function inside namespace mshadow, written with its unqualified names.
template <typename xpu, typename DType>
inline void ShiftScaleAndSquare(Tensor<xpu, 2, DType> dst, const Tensor<xpu, 2, DType>& src, DType scale) {
  dst = expr::shift_right(src) * scale + expr::F<op::square_plus_one>(src);
}
}  // namespace mshadow

// ---- helpers ------------------------------------------------------------------------------------------
namespace {

bool Near(double a, double b, double tol = 1e-5) { return std::fabs(a - b) <= tol * (1.0 + std::fabs(b)); }

// Small integers as floats, so that maxima tie often (argmax must then give the first).
template <int dim>
void FillSmallIntegers(Tensor<cpu, dim, float> t, unsigned seed, int levels = 5) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-levels / 2, levels - levels / 2 - 1);
  Tensor<cpu, 2, float> f = t.FlatTo2D();
  for (index_t y = 0; y < f.size(0); ++y)
    for (index_t x = 0; x < f.size(1); ++x) f[y][x] = static_cast<float>(u(rng));
}

// Element of a 3-D tensor (any stride).
float At(const Tensor<cpu, 3, float>& t, index_t i, index_t j, index_t k) { return t[i][j][k]; }

// A guide-style functor: a non-template Map on float.
struct sigmoid {
  MSHADOW_XINLINE static float Map(float a) { return 1.0f / (1.0f + expf(-a)); }
};

// The guide's "one code for both CPU and GPU" functions.
template <typename xpu>
void UpdateSGD(Tensor<xpu, 2> weight, const Tensor<xpu, 2>& grad, float eta, float lambda) {
  weight -= eta * (grad + lambda * weight);
}
template <typename xpu>
void Backprop(Tensor<xpu, 2> gradin, const Tensor<xpu, 2>& gradout, const Tensor<xpu, 2>& netweight) {
  gradin = dot(gradout, netweight.T());
}

// A client template with mshadow's default dtype.
template <typename xpu, typename DType MSHADOW_DEFAULT_DTYPE>
struct Holder {
  using type = DType;
};

// The size of a run-time dtype, through the switch.
size_t SizeOfFlag(int flag) {
  size_t size = 0;
  MSHADOW_TYPE_SWITCH(flag, DType, { size = sizeof(DType); });
  return size;
}

// An MXNet-style operator body: ReLU under the request, through MXNet's own Assign macro and enum.
template <typename xpu>
void ReluForward(Tensor<xpu, 2> out, const Tensor<xpu, 2>& in, OpReqType req) {
  Assign(out, req, F<op::relu>(in));
}

}  // namespace

// ---- basic programs --------------------------------------------------------------------------------
CATCH_TEST_CASE("mshadow guide: tensors over existing memory, elementwise expressions", "[cpu][mshadow]") {
  InitTensorEngine<cpu>();
  float data[20];
  for (int i = 0; i < 20; ++i) data[i] = -7.0f;  // poison: the second half must stay
  Tensor<cpu, 3> ts(data, Shape3(2, 5, 2));
  Tensor<cpu, 2> mat = ts[0];
  Tensor<cpu, 2, float> mat2 = mat;  // a second handle on the same memory
  mat = 0.0f;
  mat[0][1] = 1.0f;
  mat[1][0] = 2.0f;
  mat += (mat + 10.0f) / 10.0f + 2.0f;
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 2; ++j) {
      const float v = (i == 0 && j == 1) ? 1.0f : (i == 1 && j == 0) ? 2.0f : 0.0f;
      CATCH_CHECK(Near(mat2[i][j], v + (v + 10.0f) / 10.0f + 2.0f));
    }
  for (int i = 10; i < 20; ++i) CATCH_CHECK(data[i] == -7.0f);

  // A padded view set up field by field (the whitebox layout): the padding cells stay untouched.
  float padded[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  Tensor<cpu, 2> pv;
  pv.dptr_ = padded;
  pv.shape_ = mshadow::Shape2(3, 2);
  pv.stride_ = 3;
  pv *= 2.0f;
  for (int r = 0; r < 3; ++r) {
    CATCH_CHECK(padded[3 * r] == 2.0f * (3 * r));
    CATCH_CHECK(padded[3 * r + 1] == 2.0f * (3 * r + 1));
    CATCH_CHECK(padded[3 * r + 2] == 3 * r + 2);
  }

  Tensor<cpu, 3> fresh = NewTensor<cpu>(Shape3(5, 3, 2), 0.5f);
  for (index_t i = 0; i < fresh.shape_.Size(); ++i) CATCH_CHECK(fresh.dptr_[i] == 0.5f);
  FreeSpace(&fresh);
  CATCH_CHECK(fresh.dptr_ == nullptr);
  ShutdownTensorEngine<cpu>();
}

CATCH_TEST_CASE("mshadow guide: user functor, SGD update and dot", "[cpu][mshadow]") {
  TensorContainer<cpu, 2> in(Shape2(3, 4)), out(Shape2(3, 4));
  FillSmallIntegers(in.view(), 1);
  out = F<sigmoid>(in * 2.0f) + 1.0f;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j) CATCH_CHECK(Near(out[i][j], 1.0f / (1.0f + std::exp(-2.0f * in[i][j])) + 1.0f));

  TensorContainer<cpu, 2> weight(Shape2(3, 4)), grad(Shape2(3, 4)), before(Shape2(3, 4));
  FillSmallIntegers(weight.view(), 2);
  FillSmallIntegers(grad.view(), 3);
  before = weight;
  UpdateSGD<cpu>(weight, grad, 0.1f, 0.01f);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 4; ++j)
      CATCH_CHECK(Near(weight[i][j], before[i][j] - 0.1f * (grad[i][j] + 0.01f * before[i][j])));

  TensorContainer<cpu, 2> gradout(Shape2(2, 4)), gradin(Shape2(2, 3));
  FillSmallIntegers(gradout.view(), 4);
  Backprop<cpu>(gradin, gradout, weight);
  for (index_t i = 0; i < 2; ++i)
    for (index_t k = 0; k < 3; ++k) {
      double ref = 0;
      for (index_t j = 0; j < 4; ++j) ref += double(gradout[i][j]) * weight[k][j];
      CATCH_CHECK(Near(gradin[i][k], ref, 1e-4));
    }
}

CATCH_TEST_CASE("mshadow: a functor, reducer and expression node declared by reopening namespace mshadow",
                "[cpu][mshadow]") {
  TensorContainer<cpu, 2> src(Shape2(3, 5)), dst(Shape2(3, 5));
  FillSmallIntegers(src.view(), 5);
  mshadow::ShiftScaleAndSquare(dst.view(), src.view(), 3.0f);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 5; ++j) {
      const float shifted = j == 0 ? 0.0f : src[i][j - 1];
      CATCH_CHECK(dst[i][j] == shifted * 3.0f + src[i][j] * src[i][j] + 1.0f);
    }

  TensorContainer<cpu, 1> per_row(Shape1(3));
  per_row = reduce_except_dim<0, mshadow::red::sum_abs>(src);
  for (index_t i = 0; i < 3; ++i) {
    float ref = 0;
    for (index_t j = 0; j < 5; ++j) ref += std::fabs(src[i][j]);
    CATCH_CHECK(per_row[i] == ref);
  }
  // The built-in functors and reducers are reachable through the reopened namespaces too.
  dst = F<mshadow::op::square_plus_one>(F<mshadow::op::relu>(src));
  CATCH_CHECK(dst[1][2] == std::max(src[1][2], 0.0f) * std::max(src[1][2], 0.0f) + 1.0f);
}

// ---- macros -----------------------------------------------------------------------------------------
CATCH_TEST_CASE("mshadow: type switches, default dtype, half_t", "[cpu][mshadow]") {
  CATCH_CHECK(SizeOfFlag(kFloat32) == 4);
  CATCH_CHECK(SizeOfFlag(kFloat64) == 8);
  CATCH_CHECK(SizeOfFlag(kFloat16) == 2);
  CATCH_CHECK(SizeOfFlag(kUint8) == 1);
  CATCH_CHECK(SizeOfFlag(kInt32) == 4);
  CATCH_CHECK_THROWS_AS(SizeOfFlag(99), Error);

  // The switch runs an expression in the flag's dtype.
  for (int flag : {int(kFloat32), int(kFloat64), int(kFloat16), int(kInt32)}) {
    double total = -1;
    MSHADOW_TYPE_SWITCH(flag, DType, {
      TensorContainer<cpu, 1, DType> a(Shape1(4), DType(3)), b(Shape1(4));
      b = a * DType(2) + DType(1);
      total = 0;
      for (index_t i = 0; i < 4; ++i) total += static_cast<double>(static_cast<float>(b[i]));
    });
    CATCH_CHECK(total == 28.0);
  }

  int real_flags_seen = 0;
  for (int flag : {int(kFloat32), int(kFloat64), int(kFloat16)}) {
    MSHADOW_REAL_TYPE_SWITCH(flag, DType, { real_flags_seen += std::is_floating_point<DType>::value ||
                                                                std::is_same<DType, mshadow::half::half_t>::value; });
  }
  CATCH_CHECK(real_flags_seen == 3);
  CATCH_CHECK_THROWS_AS([] { MSHADOW_REAL_TYPE_SWITCH(kInt32, DType, { (void)sizeof(DType); }); }(), Error);
  bool half_accumulates_in_float = false;
  MSHADOW_REAL_TYPE_SWITCH_EX(kFloat16, DType, DLargeType, {
    half_accumulates_in_float = std::is_same<DType, mshadow::half::half_t>::value && std::is_same<DLargeType, float>::value;
  });
  CATCH_CHECK(half_accumulates_in_float);

  CATCH_CHECK(std::is_same<Holder<cpu>::type, float>::value);
  CATCH_CHECK(std::is_same<default_real_t, float>::value);
  CATCH_CHECK(default_type_flag == kFloat32);
  // g++ compiles this file: no GPU backend, so code under `#if MSHADOW_USE_CUDA` stays out.
  CATCH_STATIC_REQUIRE(MSHADOW_USE_CUDA == 0);
  const mshadow::half::half_t h(1.5f);
  CATCH_CHECK(static_cast<float>(h + h) == 3.0f);
  CATCH_CHECK(static_cast<float>(mshadow::bfloat::bf16_t(2.0f)) == 2.0f);
}

CATCH_TEST_CASE("mshadow: CHECK, CHECK_xx and LOG(FATAL) throw Error with the message", "[cpu][mshadow]") {
  CATCH_CHECK_NOTHROW([] { CHECK(1 + 1 == 2) << "never"; }());
  CATCH_CHECK_THROWS_AS([] { CHECK(1 + 1 == 3) << "arithmetic"; }(), Error);
  CATCH_CHECK_THROWS_WITH([] { CHECK(1 + 1 == 3) << "arithmetic " << 42; }(),
                          Contains("Check failed: 1 + 1 == 3") && Contains("arithmetic 42"));
  CATCH_CHECK_THROWS_WITH([] { CHECK_EQ(2, 3) << "sizes"; }(), Contains("2 vs. 3") && Contains("sizes"));
  CATCH_CHECK_THROWS_WITH([] { CHECK_EQ(Shape2(2, 3), Shape2(3, 2)); }(), Contains("(2,3)"));
  CATCH_CHECK_THROWS_AS([] { CHECK_NE(1, 1); }(), Error);
  CATCH_CHECK_THROWS_AS([] { CHECK_LT(2, 1); }(), Error);
  CATCH_CHECK_THROWS_AS([] { CHECK_LE(2, 1); }(), Error);
  CATCH_CHECK_THROWS_AS([] { CHECK_GT(1, 2); }(), Error);
  CATCH_CHECK_THROWS_AS([] { CHECK_GE(1, 2); }(), Error);
  CATCH_CHECK_NOTHROW([] {
    CHECK_EQ(1, 1);
    CHECK_NE(1, 2);
    CHECK_LT(1, 2);
    CHECK_LE(2, 2);
    CHECK_GT(2, 1);
    CHECK_GE(2, 2);
  }());
  CATCH_CHECK_THROWS_WITH([] { LOG(FATAL) << "fatal " << 7; }(), Contains("fatal 7"));

  // Operands are evaluated once.
  int calls = 0;
  auto next = [&calls] { return ++calls; };
  CHECK_EQ(next(), 1);
  CATCH_CHECK(calls == 1);
  // A check as the body of an unbraced if leaves the else with its if.
  bool took_else = false;
  if (calls == 0)
    CHECK(false) << "unreachable";
  else
    took_else = true;
  CATCH_CHECK(took_else);

  // LOG(INFO) prints a line to stderr and does not throw.
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  LOG(INFO) << "hello " << 3;
  std::cerr.rdbuf(old);
  CATCH_CHECK(captured.str().find("hello 3\n") != std::string::npos);
  CATCH_CHECK(captured.str().find("[INFO]") != std::string::npos);
}

CATCH_TEST_CASE("mshadow: utils::Check, Assert and Error format their message and throw Error", "[cpu][mshadow]") {
  CATCH_CHECK_NOTHROW(utils::Check(true, "never %d", 1));
  CATCH_CHECK_NOTHROW(utils::Assert(true, "never %d", 1));
  CATCH_CHECK_THROWS_WITH(utils::Check(false, "key=%d does not exist in %s", 7, "the map"),
                          Equals("key=7 does not exist in the map"));
  CATCH_CHECK_THROWS_WITH(utils::Assert(1 > 2, "Queue.Pop on %u entries", 0u),
                          Equals("AssertError: Queue.Pop on 0 entries"));
  CATCH_CHECK_THROWS_WITH(utils::Error("unknown server type %s\n", "remote"), Equals("unknown server type remote\n"));
  // A message longer than mshadow's 4096-byte buffer arrives whole.
  const std::string long_name(5000, 'x');
  CATCH_CHECK_THROWS_WITH(utils::Error("%s!", long_name.c_str()), Equals(long_name + "!"));
}

// ---- reductions with mshadow's meaning ----------------------------------------------------------------
namespace {
// reduce_except_dim<dimkeep, Reducer> over a 3-D tensor against a loop; max selects red::maximum.
template <int dimkeep, typename Reducer>
void CheckReduceExceptDim(const Tensor<cpu, 3, float>& a, bool max) {
  TensorContainer<cpu, 1> got(Shape1(a.size(dimkeep)));
  got = reduce_except_dim<dimkeep, Reducer>(a);
  for (index_t c = 0; c < a.size(dimkeep); ++c) {
    double ref = max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (index_t i = 0; i < a.size(0); ++i)
      for (index_t j = 0; j < a.size(1); ++j)
        for (index_t k = 0; k < a.size(2); ++k) {
          const index_t idx[3] = {i, j, k};
          if (idx[dimkeep] != c) continue;
          ref = max ? std::max<double>(ref, At(a, i, j, k)) : ref + At(a, i, j, k);
        }
    CATCH_CHECK(Near(got[c], ref));
  }
}

// The first index along `axis` of the maximum (or minimum), by a loop.
float NaiveArgExtreme(const Tensor<cpu, 3, float>& a, int axis, index_t p, index_t q, bool max) {
  float best = 0;
  index_t best_k = 0;
  for (index_t k = 0; k < a.size(axis); ++k) {
    const float v = axis == 0 ? At(a, k, p, q) : axis == 1 ? At(a, p, k, q) : At(a, p, q, k);
    if (k == 0 || (max ? v > best : v < best)) best = v, best_k = k;
  }
  return static_cast<float>(best_k);
}

template <typename Reducer>
void CheckArgReduce(const Tensor<cpu, 3, float>& a, int axis, bool max) {
  const index_t n = a.size(axis == 0 ? 1 : 0), m = a.size(axis == 2 ? 1 : 2);
  TensorContainer<cpu, 2> got(Shape2(n, m));
  got = reduce_with_axis<Reducer, true>(a, axis);
  for (index_t p = 0; p < n; ++p)
    for (index_t q = 0; q < m; ++q) CATCH_CHECK(got[p][q] == NaiveArgExtreme(a, axis, p, q, max));
}
}  // namespace

CATCH_TEST_CASE("mshadow: reduce_except_dim<dimkeep, Reducer> in mshadow's argument order", "[cpu][mshadow]") {
  TensorContainer<cpu, 3> a(Shape3(3, 4, 5));
  FillSmallIntegers(a.view(), 6, 9);
  CheckReduceExceptDim<0, red::sum>(a, false);
  CheckReduceExceptDim<1, red::sum>(a, false);
  CheckReduceExceptDim<2, red::sum>(a, false);
  CheckReduceExceptDim<0, red::maximum>(a, true);
  CheckReduceExceptDim<1, red::maximum>(a, true);
  CheckReduceExceptDim<2, red::maximum>(a, true);
  // A padded source (rows of 5 in a stride of 8).
  std::vector<float> buffer(3 * 4 * 8, 1e6f);
  Tensor<cpu, 3> padded(buffer.data(), Shape3(3, 4, 5), 8, nullptr);
  padded = a * 1.0f;
  CheckReduceExceptDim<1, red::sum>(padded, false);
  CheckReduceExceptDim<2, red::maximum>(padded, true);
}

CATCH_TEST_CASE("mshadow: reduce_with_axis<Reducer, true> is the index the reducer settles on", "[cpu][mshadow]") {
  TensorContainer<cpu, 3> a(Shape3(3, 4, 5));
  FillSmallIntegers(a.view(), 7, 3);  // three levels: ties everywhere
  for (int axis = 0; axis < 3; ++axis) {
    CheckArgReduce<red::maximum>(a, axis, true);
    CheckArgReduce<red::minimum>(a, axis, false);
  }
  std::vector<float> buffer(3 * 4 * 7, -1e6f);
  Tensor<cpu, 3> padded(buffer.data(), Shape3(3, 4, 5), 7, nullptr);
  padded = a * 1.0f;
  for (int axis = 0; axis < 3; ++axis) CheckArgReduce<red::maximum>(padded, axis, true);

  // Composes: inside an expression, and over an expression (the first minimum of -a is a's first maximum).
  TensorContainer<cpu, 2> twice(Shape2(3, 4)), from_negated(Shape2(3, 4));
  twice = reduce_with_axis<red::maximum, true>(a, 2) * 2.0f + 1.0f;
  from_negated = reduce_with_axis<red::minimum, true>(F<op::negation>(a), 2);
  for (index_t p = 0; p < 3; ++p)
    for (index_t q = 0; q < 4; ++q) {
      CATCH_CHECK(twice[p][q] == NaiveArgExtreme(a, 2, p, q, true) * 2.0f + 1.0f);
      CATCH_CHECK(from_negated[p][q] == NaiveArgExtreme(a, 2, p, q, true));
    }

  // mask = false is the plain reduction, the axis removed.
  TensorContainer<cpu, 2> sums(Shape2(3, 5));
  sums = reduce_with_axis<red::sum, false>(a, 1);
  for (index_t i = 0; i < 3; ++i)
    for (index_t k = 0; k < 5; ++k) {
      float ref = 0;
      for (index_t j = 0; j < 4; ++j) ref += a[i][j][k];
      CATCH_CHECK(sums[i][k] == ref);
    }

  // A NaN wins, as in red::maximum: the first NaN's index.
  TensorContainer<cpu, 2> row(Shape2(1, 6));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[6] = {1, 5, nan, 7, nan, 2};
  for (int i = 0; i < 6; ++i) row[0][i] = values[i];
  TensorContainer<cpu, 1> where(Shape1(1));
  where = reduce_with_axis<red::maximum, true>(row, 1);
  CATCH_CHECK(where[0] == 2.0f);

  // half_t: the index in the element type.
  TensorContainer<cpu, 2, mshadow::half::half_t> h(Shape2(2, 3));
  const float hv[6] = {0.5f, 2.0f, 2.0f, -1.0f, -3.0f, 4.0f};
  for (int i = 0; i < 6; ++i) h.dptr_[i] = mshadow::half::half_t(hv[i]);
  TensorContainer<cpu, 1, mshadow::half::half_t> hidx(Shape1(2));
  hidx = reduce_with_axis<red::maximum, true>(h, 1);
  CATCH_CHECK(static_cast<float>(hidx[0]) == 1.0f);
  CATCH_CHECK(static_cast<float>(hidx[1]) == 2.0f);

  auto argmax = reduce_with_axis<red::maximum, true>;
  CATCH_CHECK_THROWS_WITH(argmax(a, 3), Contains("axis 3"));
}

// ---- Copy ---------------------------------------------------------------------------------------------
CATCH_TEST_CASE("mshadow: Copy without a stream, padded to contiguous", "[cpu][mshadow]") {
  std::vector<float> buffer(4 * 6, -2.0f);
  Tensor<cpu, 2> padded(buffer.data(), Shape2(4, 5), 6, nullptr);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j) padded[i][j] = float(i * 10 + j);
  TensorContainer<cpu, 2> dense(Shape2(4, 5));
  Copy(dense, padded);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 5; ++j) CATCH_CHECK(dense[i][j] == float(i * 10 + j));
  Stream<cpu>* stream = NewStream<cpu>();
  TensorContainer<cpu, 2> again(Shape2(4, 5));
  mshadow::Copy(again, dense, stream);
  CATCH_CHECK(again[3][4] == 34.0f);
  DeleteStream(stream);
  TensorContainer<cpu, 2> wrong(Shape2(5, 4));
  CATCH_CHECK_THROWS_AS(Copy(wrong, dense), Error);
}

// ---- MXNet-style code with its own OpReqType and Assign ------------------------------------------------
CATCH_TEST_CASE("mshadow: MXNet-style operator with its own OpReqType and Assign macro", "[cpu][mshadow]") {
  // The unqualified names are MXNet's (the global enum), not tensorexpr's.
  CATCH_CHECK(std::is_same<decltype(kAddTo), ::OpReqType>::value);
  TensorContainer<cpu, 2> in(Shape2(2, 3)), out(Shape2(2, 3));
  FillSmallIntegers(in.view(), 8);
  auto relu = [](float v) { return v > 0 ? v : 0.0f; };

  out = 5.0f;
  ReluForward<cpu>(out, in, kNullOp);
  for (index_t i = 0; i < 6; ++i) CATCH_CHECK(out.dptr_[i] == 5.0f);
  ReluForward<cpu>(out, in, kWriteTo);
  for (index_t i = 0; i < 6; ++i) CATCH_CHECK(out.dptr_[i] == relu(in.dptr_[i]));
  ReluForward<cpu>(out, in, kAddTo);
  for (index_t i = 0; i < 6; ++i) CATCH_CHECK(out.dptr_[i] == 2.0f * relu(in.dptr_[i]));
  CATCH_CHECK_THROWS_WITH(ReluForward<cpu>(out, in, static_cast<OpReqType>(9)), Contains("not reached"));

  // tensorexpr's own Assign is still there under the macro (a parenthesised name is not expanded).
  (::tensorexpr::Assign)(out.view(), ::tensorexpr::kAddTo, in * 2.0f);
  for (index_t i = 0; i < 6; ++i) CATCH_CHECK(out.dptr_[i] == 2.0f * relu(in.dptr_[i]) + 2.0f * in.dptr_[i]);
}

// ---- an MXNet-style convolution operator from a shared -inl.h (issue 16, item 7) -------------------------
// The same file is instantiated for the GPU in tests/gpu/mshadow_compat_test.cu.
CATCH_TEST_CASE("mshadow: MXNet-style convolution operator (-inl.h shared with the .cu) matches a naive convolution",
                "[cpu][mshadow]") {
  mxnet_style::ConvParam p;
  p.kernel_y = 3, p.kernel_x = 2, p.stride_y = 2, p.stride_x = 1, p.dilate_y = 1, p.dilate_x = 2;
  p.pad_y = 1, p.pad_x = 1, p.num_filter = 6, p.num_group = 2;
  for (auto req : {mxnet_style::kWriteTo, mxnet_style::kAddTo, mxnet_style::kNullOp, mxnet_style::kWriteInplace}) {
    CATCH_INFO("req " << int(req));
    const auto e = mshadow_conv_check::RunConvCase<cpu>(p, 3, 4, 7, 6, req, std::random_device{}());
    CATCH_CHECK(e.out < 1e-5);
    CATCH_CHECK(e.grad_data < 1e-5);
    CATCH_CHECK(e.grad_weight < 1e-5);
    CATCH_CHECK(e.grad_bias < 1e-5);
  }
  // A plain 1 x 1 convolution, one group, no padding.
  mxnet_style::ConvParam q;
  q.kernel_y = 1, q.kernel_x = 1, q.num_filter = 3;
  const auto e = mshadow_conv_check::RunConvCase<cpu>(q, 2, 5, 4, 4, mxnet_style::kWriteTo, 7);
  CATCH_CHECK(std::max({e.out, e.grad_data, e.grad_weight, e.grad_bias}) < 1e-5);
}

// ---- a two-layer network with Softmax, as the guide's neural net writes it ------------------------------
namespace {
template <typename xpu>
struct TwoLayerNet {
  TensorContainer<xpu, 2, float> w1, w2, hidden, out, grad_hidden, g_w1, g_w2;
  TensorContainer<xpu, 1, float> b1, b2, g_b1, g_b2;
  // One step of SGD on a batch; returns nothing, leaves the softmax output in `out`.
  void Step(const Tensor<xpu, 2, float>& x, const Tensor<xpu, 1, float>& label, float eta) {
    const index_t batch = x.size(0);
    hidden.Resize(Shape2(batch, w1.size(1)));
    out.Resize(Shape2(batch, w2.size(1)));
    hidden = dot(x, w1);
    hidden += repmat(b1, batch);
    hidden = F<sigmoid>(hidden);
    out = dot(hidden, w2);
    out += repmat(b2, batch);
    Softmax(out, out);
    // Cross-entropy gradient, averaged over the batch.
    TensorContainer<xpu, 2, float> grad(out.shape_);
    SoftmaxGrad(grad, out, label);
    grad *= 1.0f / batch;
    g_w2.Resize(w2.shape_);
    g_b2.Resize(b2.shape_);
    g_w2 = dot(hidden.T(), grad);
    g_b2 = sum_rows(grad);
    grad_hidden.Resize(hidden.shape_);
    grad_hidden = dot(grad, w2.T());
    grad_hidden = grad_hidden * hidden * (1.0f - hidden);
    g_w1.Resize(w1.shape_);
    g_b1.Resize(b1.shape_);
    g_w1 = dot(x.T(), grad_hidden);
    g_b1 = sum_rows(grad_hidden);
    w1 -= eta * g_w1;
    w2 -= eta * g_w2;
    b1 -= eta * g_b1;
    b2 -= eta * g_b2;
  }
};
}  // namespace

CATCH_TEST_CASE("mshadow: a two-layer network with Softmax trains one step as naive float64 loops do",
                "[cpu][mshadow]") {
  const index_t B = 6, I = 5, H = 4, O = 3;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  TwoLayerNet<cpu> net;
  net.w1.Resize(Shape2(I, H));
  net.w2.Resize(Shape2(H, O));
  net.b1.Resize(Shape1(H));
  net.b2.Resize(Shape1(O));
  TensorContainer<cpu, 2, float> x(Shape2(B, I));
  TensorContainer<cpu, 1, float> label(Shape1(B));
  for (Tensor<cpu, 2, float> t : {net.w1.view(), net.w2.view(), x.view()})
    for (index_t i = 0; i < t.size(0); ++i)
      for (index_t j = 0; j < t.size(1); ++j) t[i][j] = u(rng);
  for (index_t j = 0; j < H; ++j) net.b1[j] = u(rng);
  for (index_t j = 0; j < O; ++j) net.b2[j] = u(rng);
  for (index_t b = 0; b < B; ++b) label[b] = float(b % O);
  // The reference, in double, from the same starting weights.
  std::vector<std::vector<double>> w1(I, std::vector<double>(H)), w2(H, std::vector<double>(O));
  std::vector<double> b1(H), b2(O);
  for (index_t i = 0; i < I; ++i)
    for (index_t j = 0; j < H; ++j) w1[i][j] = net.w1[i][j];
  for (index_t i = 0; i < H; ++i)
    for (index_t j = 0; j < O; ++j) w2[i][j] = net.w2[i][j];
  for (index_t j = 0; j < H; ++j) b1[j] = net.b1[j];
  for (index_t j = 0; j < O; ++j) b2[j] = net.b2[j];
  const float eta = 0.5f;
  net.Step(x, label, eta);

  std::vector<std::vector<double>> h(B, std::vector<double>(H)), p(B, std::vector<double>(O)), gh = h, g = p;
  for (index_t b = 0; b < B; ++b) {
    for (index_t j = 0; j < H; ++j) {
      double s = b1[j];
      for (index_t i = 0; i < I; ++i) s += x[b][i] * w1[i][j];
      h[b][j] = 1.0 / (1.0 + std::exp(-s));
    }
    double m = -1e300, z = 0;
    for (index_t k = 0; k < O; ++k) {
      double s = b2[k];
      for (index_t j = 0; j < H; ++j) s += h[b][j] * w2[j][k];
      p[b][k] = s;
      m = std::max(m, s);
    }
    for (index_t k = 0; k < O; ++k) z += std::exp(p[b][k] - m);
    for (index_t k = 0; k < O; ++k) {
      p[b][k] = std::exp(p[b][k] - m) / z;
      g[b][k] = (p[b][k] - (k == index_t(label[b]) ? 1.0 : 0.0)) / B;
      CATCH_CHECK(Near(net.out[b][k], p[b][k]));
    }
    for (index_t j = 0; j < H; ++j) {
      double s = 0;
      for (index_t k = 0; k < O; ++k) s += g[b][k] * w2[j][k];
      gh[b][j] = s * h[b][j] * (1 - h[b][j]);
    }
  }
  for (index_t j = 0; j < H; ++j)
    for (index_t k = 0; k < O; ++k) {
      double s = 0;
      for (index_t b = 0; b < B; ++b) s += h[b][j] * g[b][k];
      CATCH_CHECK(Near(net.w2[j][k], w2[j][k] - eta * s));
    }
  for (index_t i = 0; i < I; ++i)
    for (index_t j = 0; j < H; ++j) {
      double s = 0;
      for (index_t b = 0; b < B; ++b) s += x[b][i] * gh[b][j];
      CATCH_CHECK(Near(net.w1[i][j], w1[i][j] - eta * s));
    }
  for (index_t k = 0; k < O; ++k) {
    double s = 0;
    for (index_t b = 0; b < B; ++b) s += g[b][k];
    CATCH_CHECK(Near(net.b2[k], b2[k] - eta * s));
  }
  for (index_t j = 0; j < H; ++j) {
    double s = 0;
    for (index_t b = 0; b < B; ++b) s += gh[b][j];
    CATCH_CHECK(Near(net.b1[j], b1[j] - eta * s));
  }
}

// ---- a reducer written to mshadow's interface, declared by reopening namespace mshadow -----------------
namespace mshadow {
namespace red {
// mshadow's reducer interface: SetInitValue and Reduce on volatile references. The smallest absolute value.
struct min_abs {
  template <typename DType>
  MSHADOW_XINLINE static void SetInitValue(DType& v) {
    v = DType(1e30f);
  }
  template <typename DType>
  MSHADOW_XINLINE static void Reduce(volatile DType& dst, volatile DType src) {
    const DType a = src < DType(0) ? DType(-src) : DType(src);
    if (a < dst) dst = a;
  }
};
}  // namespace red
}  // namespace mshadow

CATCH_TEST_CASE("mshadow: a reducer with mshadow's interface in reductions, MapReduceKeep*, pool and chpool",
                "[cpu][mshadow]") {
  TensorContainer<cpu, 4, float> x(Shape4(2, 3, 4, 4));
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (index_t i = 0; i < x.MSize(); ++i) x.dptr_[i] = u(rng);
  auto at = [&](index_t n, index_t c, index_t h, index_t w) { return std::fabs(double(x[n][c][h][w])); };
  TensorContainer<cpu, 1, float> per_c(Shape1(3)), per_w(Shape1(4));
  per_c = reduce_except_dim<1, red::min_abs>(x);
  MapReduceKeepHighDim<sv::saveto, red::min_abs, 1>(&per_c, x * 1.0f, 2.0f);
  MapReduceKeepLowest<sv::saveto, red::min_abs>(&per_w, x, 1.0f);
  for (index_t c = 0; c < 3; ++c) {
    double m = 1e30;
    for (index_t n = 0; n < 2; ++n)
      for (index_t h = 0; h < 4; ++h)
        for (index_t w = 0; w < 4; ++w) m = std::min(m, at(n, c, h, w));
    CATCH_CHECK(Near(per_c[c], 2 * m));
  }
  for (index_t w = 0; w < 4; ++w) {
    double m = 1e30;
    for (index_t n = 0; n < 2; ++n)
      for (index_t c = 0; c < 3; ++c)
        for (index_t h = 0; h < 4; ++h) m = std::min(m, at(n, c, h, w));
    CATCH_CHECK(Near(per_w[w], m));
  }
  TensorContainer<cpu, 4, float> pooled(Shape4(2, 3, 2, 2)), chp(x.shape_);
  pooled = pool<red::min_abs>(x, 2, 2, 2);
  chp = chpool<red::min_abs>(x, 3);
  for (index_t n = 0; n < 2; ++n)
    for (index_t c = 0; c < 3; ++c)
      for (index_t h = 0; h < 4; ++h)
        for (index_t w = 0; w < 4; ++w) {
          double m = 1e30;
          for (index_t cc = std::max<index_t>(0, c - 1); cc <= std::min<index_t>(2, c + 1); ++cc) m = std::min(m, at(n, cc, h, w));
          CATCH_CHECK(Near(chp[n][c][h][w], m));
          if (h % 2 == 0 && w % 2 == 0) {
            const double pm = std::min({at(n, c, h, w), at(n, c, h + 1, w), at(n, c, h, w + 1), at(n, c, h + 1, w + 1)});
            CATCH_CHECK(Near(pooled[n][c][h / 2][w / 2], pm));
          }
        }
}
