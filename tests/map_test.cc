// map_test.cc — elementwise expressions (expr/map.h, op.h, assign.h and the backend map loop) against
// float64 references: operators with tensors, expressions and scalars, every built-in functor, user
// functors, scalar<T>, tcast<T>, .T(), the savers, Assign(out, req, e), aliasing, operands held by value,
// strided operands and destinations, odd and empty sizes, every dtype, thread counts and shape errors.
#include "test_util.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace tensorexpr;
using namespace tensorexpr::expr;
using te_test::AsDouble;
using te_test::CheckAll;
using te_test::Tol;

namespace {

// ---- operands with a known layout -------------------------------------------------------------------
enum class Layout { kContiguous, kPadded, kSliced };
const Layout kLayouts[] = {Layout::kContiguous, Layout::kPadded, Layout::kSliced};
const char* LayoutName(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : l == Layout::kPadded ? "padded" : "sliced";
}
// Mixes the layouts of the operands of one expression.
Layout Next(Layout l, int k = 1) { return kLayouts[(static_cast<int>(l) + k) % 3]; }

constexpr double kPoison = 12345.0;
template <typename DType>
double PoisonAs() {
  return AsDouble(static_cast<DType>(static_cast<float>(kPoison)));
}

// A device tensor with a host copy of its values. Its memory (`store`) is padded for kPadded and
// kSliced, and for kSliced the view is rows [1, 1 + rows) of a taller store. Every element of the store
// outside the view holds the poison value, so a write outside the view shows.
template <typename Device, int dim, typename DType>
struct Operand {
  TensorContainer<cpu, dim, DType> host;
  TensorContainer<Device, dim, DType> store;
  Tensor<Device, dim, DType> view;

  // Random values in [lo, hi) (integers are floored), or the poison value everywhere when poison_view.
  Operand(const Shape<dim>& shape, Layout layout, Stream<Device>* s, double lo = -1.0, double hi = 1.0,
          bool poison_view = false)
      : host(shape), store(layout != Layout::kContiguous) {
    if (poison_view) {
      te_test::Poison(host.view(), kPoison);
    } else {
      te_test::FillRandom(host.view(), lo, hi);
    }
    store.set_stream(s);
    Shape<dim> outer = shape;
    if (layout == Layout::kSliced) outer[0] += 3;
    store.Resize(outer);
    const index_t total = store.MSize();
    if (total > 0) {
      TensorContainer<cpu, 1, DType> poison(Shape1(total));
      te_test::Poison(poison.view(), kPoison);
      Copy(Tensor<Device, 1, DType>(store.dptr_, Shape1(total), total, s), poison.view(), s);
    }
    view = layout == Layout::kSliced ? store.view().Slice(1, 1 + shape[0]) : store.view();
    Copy(view, host.view(), s);
    te_test::Sync(s);
  }
  double at(const Shape<dim>& i) const { return te_test::At(host.view(), i); }
};

template <typename Device, int dim, typename DType>
Operand<Device, dim, DType> Output(const Shape<dim>& shape, Layout layout, Stream<Device>* s) {
  return Operand<Device, dim, DType>(shape, layout, s, 0, 0, /*poison_view=*/true);
}

// Counts elements of the store outside the view that no longer hold the poison value.
template <typename Device, int dim, typename DType>
index_t WrittenOutsideView(const Operand<Device, dim, DType>& o) {
  const index_t total = o.store.MSize();
  if (total == 0) return 0;
  const Tensor<Device, 1, DType> all(o.store.dptr_, Shape1(total), total, o.store.stream_);
  const TensorContainer<cpu, 1, DType> h = te_test::ToHost(all);
  const index_t stride = o.view.stride_, width = o.view.shape_[dim - 1];
  const index_t offset = o.view.dptr_ - o.store.dptr_;
  const index_t rows = o.view.shape_.FlatTo2D()[0];
  index_t bad = 0;
  for (index_t p = 0; p < total; ++p) {
    const index_t rel = p - offset;
    const bool inside = rel >= 0 && rel / stride < rows && rel % stride < width;
    if (!inside && AsDouble(h.dptr_[p]) != PoisonAs<DType>()) ++bad;
  }
  return bad;
}

// Checks the destination's view against ref(idx) and that nothing outside the view was written.
template <typename Device, int dim, typename DType, typename Ref>
void CheckResult(const Operand<Device, dim, DType>& out, Ref ref, double tol, const std::string& what) {
  te_test::Sync(out.view.stream_);
  CheckAll(te_test::ToHost(out.view).view(), ref, tol, what.c_str());
  INFO(what);
  CHECK(WrittenOutsideView(out) == 0);
}

// Each node of an expression rounds to its dtype, so a chain of a few nodes in half / bf16 carries a few
// roundings of its intermediate values.
template <typename DType>
double ChainTol() {
  return is_low_precision<DType>::value ? 4 * Tol<DType>() : Tol<DType>();
}

// Division as the dtype does it: integers truncate towards zero.
template <typename DType>
double Div(double a, double b) {
  return std::is_integral<DType>::value ? std::trunc(a / b) : a / b;
}

// ---- dtype lists --------------------------------------------------------------------------------------
template <typename T>
struct Tag {
  using type = T;
};
template <typename... Ts, typename F>
void ForEachType(F f) {
  (f(Tag<Ts>()), ...);
}
#define TE_ALL_DTYPES float, double, half_t, bf16_t, int32_t
#define TE_REAL_DTYPES float, double, half_t, bf16_t

// Value ranges per dtype: integers need a wider range to be more than {-1, 0}; divisors stay away from 0.
template <typename DType>
struct Range {
  static constexpr bool kInt = std::is_integral<DType>::value;
  static constexpr double lo = kInt ? -100 : -2, hi = kInt ? 100 : 2;           // any sign
  static constexpr double div_lo = kInt ? 1 : 0.5, div_hi = kInt ? 20 : 2;     // divisors
  static DType Scalar() { return static_cast<DType>(kInt ? 3.0f : 1.75f); }  // exact in every dtype
};

const index_t kWidths[] = {1, 3, 17, 1000, 4097, 0};
Shape<2> ShapeFor(index_t width) { return Shape2(width >= 1000 ? 2 : 3, width); }

// ---- user functors --------------------------------------------------------------------------------------
// A templated Map: computes in the dtype's compute type like the built-ins.
struct scaled_diff_square {
  template <typename DType>
  TE_XINLINE static DType Map(DType a_, DType b_) {
    using C = compute_t<DType>;
    const C d = C(a_) - C(b_);
    return static_cast<DType>(C(0.5) * d * d);
  }
};
// A plain float Map: half tensors convert to and from float around it.
struct soft_sign {
  TE_XINLINE static float Map(float a) { return a / (1.0f + (a < 0 ? -a : a)); }
};

// Overwrites a stretch of stack so that anything still pointing into dead stack frames reads garbage.
__attribute__((noinline)) void ClobberStack() {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = static_cast<unsigned char>(0xA5 ^ i);
}

// Builds an expression from copies that die when the function returns: valid only if held by value.
template <typename T>
__attribute__((noinline)) auto ScaledSum(T a, T b) {
  T local_a = a, local_b = b;
  return local_a + 2.0f * local_b;
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

// ================================ operators =============================================================

TE_DEVICE_TEST_CASE("+ - * / and unary minus between tensors, expressions and scalars", "[map]") {
  ForEachType<TE_ALL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    using R = Range<DType>;
    const DType s = R::Scalar();
    const double sv = AsDouble(s);
    for (index_t width : kWidths) {
      for (Layout layout : kLayouts) {
        const Shape<2> shape = ShapeFor(width);
        Operand<Device, 2, DType> a(shape, layout, stream, R::lo, R::hi);
        Operand<Device, 2, DType> b(shape, Next(layout), stream, R::div_lo, R::div_hi);
        const std::string where = std::string(DataType<DType>::name()) + " " + Message(shape) + " " +
                                  LayoutName(layout) + ": ";
        auto run = [&](const char* what, auto make, auto ref, double tol) {
          Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Next(layout, 2), stream);
          Tensor<Device, 2, DType> o = out.view;
          o = make(a.view, b.view);
          CheckResult(out, [&](const Shape<2>& i) { return ref(a.at(i), b.at(i)); }, tol, where + what);
        };
        const double t = Tol<DType>(), ct = ChainTol<DType>();
        run("a + b", [](auto x, auto y) { return x + y; }, [](double x, double y) { return x + y; }, t);
        run("a - b", [](auto x, auto y) { return x - y; }, [](double x, double y) { return x - y; }, t);
        run("a * b", [](auto x, auto y) { return x * y; }, [](double x, double y) { return x * y; }, t);
        run("a / b", [](auto x, auto y) { return x / y; }, [](double x, double y) { return Div<DType>(x, y); }, t);
        run("a + s", [&](auto x, auto) { return x + s; }, [&](double x, double) { return x + sv; }, t);
        run("s + a", [&](auto x, auto) { return s + x; }, [&](double x, double) { return sv + x; }, t);
        run("a - s", [&](auto x, auto) { return x - s; }, [&](double x, double) { return x - sv; }, t);
        run("s - a", [&](auto x, auto) { return s - x; }, [&](double x, double) { return sv - x; }, t);
        run("a * s", [&](auto x, auto) { return x * s; }, [&](double x, double) { return x * sv; }, t);
        run("s * a", [&](auto x, auto) { return s * x; }, [&](double x, double) { return sv * x; }, t);
        run("a / s", [&](auto x, auto) { return x / s; }, [&](double x, double) { return Div<DType>(x, sv); }, t);
        run("s / b", [&](auto, auto y) { return s / y; }, [&](double, double y) { return Div<DType>(sv, y); }, t);
        run("-a", [](auto x, auto) { return -x; }, [](double x, double) { return -x; }, t);
        run("-(a * b) + a", [](auto x, auto y) { return -(x * y) + x; },
            [](double x, double y) { return -(x * y) + x; }, ct);
        run("(a + b) * s - a / b", [&](auto x, auto y) { return (x + y) * s - x / y; },
            [&](double x, double y) { return (x + y) * sv - Div<DType>(x, y); }, ct);
        run("a * b + a * s / b", [&](auto x, auto y) { return x * y + x * s / y; },
            [&](double x, double y) { return x * y + Div<DType>(x * sv, y); }, ct);
        // A plain number of another type converts to the tensor's dtype.
        run("a * 2 + 1.0", [](auto x, auto) { return x * 2 + 1.0; }, [](double x, double) { return x * 2 + 1; }, ct);
      }
    }
  });
}

// ================================ built-in functors ======================================================

namespace {
template <typename OP, typename Device, typename DType, typename Ref>
void CheckUnaryFunctor(Stream<Device>* stream, double lo, double hi, Ref ref) {
  for (const Shape<2> shape : {Shape2(3, 17), Shape2(2, 1000), Shape2(1, 1)}) {
    for (Layout layout : kLayouts) {
      Operand<Device, 2, DType> a(shape, layout, stream, lo, hi);
      Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Next(layout), stream);
      Tensor<Device, 2, DType> o = out.view;
      o = F<OP>(a.view);
      CheckResult(out, [&](const Shape<2>& i) { return ref(a.at(i)); }, Tol<DType>(),
                  Message(OP::name(), " ", DataType<DType>::name(), " ", shape, " ", LayoutName(layout)));
    }
  }
}
template <typename OP, typename Device, typename DType, typename Ref>
void CheckBinaryFunctor(Stream<Device>* stream, double lo, double hi, double blo, double bhi, Ref ref) {
  for (const Shape<2> shape : {Shape2(3, 17), Shape2(2, 1000), Shape2(1, 1)}) {
    for (Layout layout : kLayouts) {
      Operand<Device, 2, DType> a(shape, layout, stream, lo, hi);
      Operand<Device, 2, DType> b(shape, Next(layout), stream, blo, bhi);
      Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Next(layout, 2), stream);
      Tensor<Device, 2, DType> o = out.view;
      o = F<OP>(a.view, b.view);
      CheckResult(out, [&](const Shape<2>& i) { return ref(a.at(i), b.at(i)); }, Tol<DType>(),
                  Message(OP::name(), " ", DataType<DType>::name(), " ", shape, " ", LayoutName(layout)));
    }
  }
}
}  // namespace

TE_DEVICE_TEST_CASE("F<op> for every functor in op.h matches float64", "[map]") {
  ForEachType<TE_REAL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    auto unary = [&](auto op, double lo, double hi, auto ref) {
      CheckUnaryFunctor<decltype(op), Device, DType>(stream, lo, hi, ref);
    };
    auto binary = [&](auto op, double lo, double hi, double blo, double bhi, auto ref) {
      CheckBinaryFunctor<decltype(op), Device, DType>(stream, lo, hi, blo, bhi, ref);
    };
    unary(op::identity(), -3, 3, [](double x) { return x; });
    unary(op::negation(), -3, 3, [](double x) { return -x; });
    unary(op::relu(), -3, 3, [](double x) { return x > 0 ? x : 0.0; });
    unary(op::relu_grad(), -3, 3, [](double x) { return x > 0 ? 1.0 : 0.0; });
    unary(op::sigmoid(), -8, 8, [](double x) { return 1 / (1 + std::exp(-x)); });
    unary(op::sigmoid_grad(), 0, 1, [](double y) { return y * (1 - y); });
    unary(op::tanh(), -4, 4, [](double x) { return std::tanh(x); });
    unary(op::tanh_grad(), -1, 1, [](double y) { return 1 - y * y; });
    unary(op::softrelu(), -30, 30, [](double x) { return std::log1p(std::exp(x)); });  // both sides of 20
    unary(op::softrelu_grad(), 0.01, 6, [](double y) { return 1 - std::exp(-y); });    // y = softrelu(x) > 0
    unary(op::exp(), -4, 4, [](double x) { return std::exp(x); });
    unary(op::log(), 0.05, 8, [](double x) { return std::log(x); });
    unary(op::sqrt(), 0, 8, [](double x) { return std::sqrt(x); });
    unary(op::rsqrt(), 0.05, 8, [](double x) { return 1 / std::sqrt(x); });
    unary(op::square(), -3, 3, [](double x) { return x * x; });
    unary(op::abs(), -3, 3, [](double x) { return std::fabs(x); });
    unary(op::sign(), -3, 3, [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; });
    binary(op::plus(), -3, 3, -3, 3, [](double x, double y) { return x + y; });
    binary(op::minus(), -3, 3, -3, 3, [](double x, double y) { return x - y; });
    binary(op::mul(), -3, 3, -3, 3, [](double x, double y) { return x * y; });
    binary(op::div(), -3, 3, 0.5, 2, [](double x, double y) { return x / y; });
    binary(op::right(), -3, 3, -3, 3, [](double, double y) { return y; });
    binary(op::maximum(), -3, 3, -3, 3, [](double x, double y) { return std::max(x, y); });
    binary(op::minimum(), -3, 3, -3, 3, [](double x, double y) { return std::min(x, y); });
    binary(op::power(), 0.5, 2, -2, 2, [](double x, double y) { return std::pow(x, y); });
    binary(op::clip(), -3, 3, 0.5, 2, [](double x, double b) { return std::min(std::max(x, -b), b); });
  });
}

TE_DEVICE_TEST_CASE("F<op> on int32 for the functors that make sense on integers", "[map]") {
  using DType = int32_t;
  auto unary = [&](auto op, auto ref) { CheckUnaryFunctor<decltype(op), Device, DType>(stream, -20, 20, ref); };
  auto binary = [&](auto op, double blo, double bhi, auto ref) {
    CheckBinaryFunctor<decltype(op), Device, DType>(stream, -20, 20, blo, bhi, ref);
  };
  unary(op::identity(), [](double x) { return x; });
  unary(op::negation(), [](double x) { return -x; });
  unary(op::relu(), [](double x) { return x > 0 ? x : 0.0; });
  unary(op::relu_grad(), [](double x) { return x > 0 ? 1.0 : 0.0; });
  unary(op::square(), [](double x) { return x * x; });
  unary(op::abs(), [](double x) { return std::fabs(x); });
  unary(op::sign(), [](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; });
  binary(op::plus(), -20, 20, [](double x, double y) { return x + y; });
  binary(op::minus(), -20, 20, [](double x, double y) { return x - y; });
  binary(op::mul(), -20, 20, [](double x, double y) { return x * y; });
  binary(op::div(), 1, 7, [](double x, double y) { return std::trunc(x / y); });
  binary(op::right(), -20, 20, [](double, double y) { return y; });
  binary(op::maximum(), -20, 20, [](double x, double y) { return std::max(x, y); });
  binary(op::minimum(), -20, 20, [](double x, double y) { return std::min(x, y); });
  binary(op::clip(), 1, 10, [](double x, double b) { return std::min(std::max(x, -b), b); });
}

// The edges of the integer types, where arithmetic through double (or C++'s signed overflow) goes wrong:
// +, -, *, negation and abs wrap modulo 2^bits; comparisons are exact beyond 2^53; functions evaluated in
// double saturate into the type (NaN gives 0). Checked against values computed here in unsigned arithmetic.
TE_DEVICE_TEST_CASE("integer maps wrap, compare exactly at 64 bits and saturate", "[map][hostile]") {
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max(), kMin64 = std::numeric_limits<int64_t>::min();
  constexpr int64_t k2p53 = int64_t(1) << 53;
  const std::vector<int64_t> av = {kMax64, kMin64, k2p53 + 1, -(k2p53 + 1), kMax64, 3};
  const std::vector<int64_t> bv = {1, -1, k2p53, -k2p53, kMax64, -7};
  TensorContainer<cpu, 1, int64_t> ah(Shape1(6)), bh(Shape1(6));
  for (index_t i = 0; i < 6; ++i) ah[i] = av[i], bh[i] = bv[i];
  auto a = te_test::ToDevice<Device>(ah.view(), stream), b = te_test::ToDevice<Device>(bh.view(), stream);
  TensorContainer<Device, 1, int64_t> out(Shape1(6));
  out.set_stream(stream);
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  auto check = [&](const char* what, auto ref) {
    auto got = te_test::ToHost(out.view());
    for (index_t i = 0; i < 6; ++i) {
      INFO(what << " at " << i << ": a " << av[i] << ", b " << bv[i]);
      CHECK(got[i] == ref(av[i], bv[i]));
    }
  };
  out = a.view() + b.view();
  check("a + b", [&](int64_t x, int64_t y) { return wrap(uint64_t(x) + uint64_t(y)); });
  out = a.view() - b.view();
  check("a - b", [&](int64_t x, int64_t y) { return wrap(uint64_t(x) - uint64_t(y)); });
  out = a.view() * b.view();
  check("a * b", [&](int64_t x, int64_t y) { return wrap(uint64_t(x) * uint64_t(y)); });
  out = -a.view();
  check("-a", [&](int64_t x, int64_t) { return wrap(0 - uint64_t(x)); });
  out = F<op::abs>(a.view());
  check("abs(a)", [&](int64_t x, int64_t) { return x < 0 ? wrap(0 - uint64_t(x)) : x; });
  out = F<op::maximum>(a.view(), b.view());
  check("maximum(a, b)", [](int64_t x, int64_t y) { return std::max(x, y); });
  out = F<op::minimum>(a.view(), b.view());
  check("minimum(a, b)", [](int64_t x, int64_t y) { return std::min(x, y); });
  out = F<op::square>(b.view());
  check("square(b)", [&](int64_t, int64_t y) { return wrap(uint64_t(y) * uint64_t(y)); });

  // Through double: exp overflows to +inf (saturates to the highest value), log of a negative is NaN (0).
  TensorContainer<cpu, 1, int32_t> ch(Shape1(4));
  ch[0] = 100, ch[1] = -5, ch[2] = 0, ch[3] = 2;
  auto c = te_test::ToDevice<Device>(ch.view(), stream);
  TensorContainer<Device, 1, int32_t> r(Shape1(4));
  r.set_stream(stream);
  r = F<op::exp>(c.view());
  auto e = te_test::ToHost(r.view());
  CHECK(e[0] == std::numeric_limits<int32_t>::max());
  CHECK(e[1] == 0);  // exp(-5) = 0.0067, truncated
  CHECK(e[2] == 1);
  CHECK(e[3] == 7);  // exp(2) = 7.39
  r = F<op::log>(c.view());
  auto l = te_test::ToHost(r.view());
  CHECK(l[1] == 0);                                      // NaN
  CHECK(l[2] == std::numeric_limits<int32_t>::lowest());  // -inf
  r = F<op::power>(c.view(), scalar<int32_t>(20));
  auto pw = te_test::ToHost(r.view());
  CHECK(pw[0] == std::numeric_limits<int32_t>::max());
  CHECK(pw[3] == 1 << 20);

  // uint16 products are computed in unsigned int, never in int (65535 * 65535 overflows int).
  TensorContainer<cpu, 1, uint16_t> uh(Shape1(1), 65535);
  auto u = te_test::ToDevice<Device>(uh.view(), stream);
  TensorContainer<Device, 1, uint16_t> uo(Shape1(1));
  uo.set_stream(stream);
  uo = u.view() * u.view();
  CHECK(te_test::ToHost(uo.view())[0] == 1);  // 65535^2 = 2^32 - 2^17 + 1: 1 modulo 2^16

  // Integer sums accumulate in int64 and wrap there.
  TensorContainer<Device, 1, int64_t> s1(Shape1(1));
  s1.set_stream(stream);
  TensorContainer<cpu, 1, int64_t> mh(Shape1(3), kMax64);
  auto m = te_test::ToDevice<Device>(mh.view(), stream);
  s1 = sumall_except_dim<0>(reshape(m.view(), Shape2(1, 3)));
  CHECK(te_test::ToHost(s1.view())[0] == wrap(3 * uint64_t(kMax64)));
}

TE_DEVICE_TEST_CASE("F<op> with a scalar on either side", "[map]") {
  const Shape<2> shape = Shape2(3, 17);
  Operand<Device, 2, float> a(shape, Layout::kPadded, stream, -3, 3);
  Operand<Device, 2, float> out = Output<Device, 2, float>(shape, Layout::kSliced, stream);
  Tensor<Device, 2, float> o = out.view;
  o = F<op::maximum>(a.view, 0.5f);
  CheckResult(out, [&](const Shape<2>& i) { return std::max(a.at(i), 0.5); }, 1e-6, "maximum(a, 0.5)");
  o = F<op::power>(2.0f, a.view);
  CheckResult(out, [&](const Shape<2>& i) { return std::pow(2.0, a.at(i)); }, 1e-5, "power(2, a)");
  o = F<op::relu>(a.view - 1.0f) * F<op::sigmoid>(a.view);
  CheckResult(out, [&](const Shape<2>& i) { return std::max(a.at(i) - 1, 0.0) / (1 + std::exp(-a.at(i))); },
              1e-5, "relu(a - 1) * sigmoid(a)");
}

// ================================ user functors ==========================================================

TE_DEVICE_TEST_CASE("user functors: a templated Map and a plain float Map", "[map]") {
  ForEachType<TE_REAL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    for (index_t width : {1, 17, 1000}) {
      for (Layout layout : kLayouts) {
        const Shape<2> shape = ShapeFor(width);
        Operand<Device, 2, DType> a(shape, layout, stream, -3, 3), b(shape, Next(layout), stream, -3, 3);
        Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Next(layout, 2), stream);
        Tensor<Device, 2, DType> o = out.view;
        o = F<scaled_diff_square>(a.view, b.view);
        CheckResult(out, [&](const Shape<2>& i) { return 0.5 * (a.at(i) - b.at(i)) * (a.at(i) - b.at(i)); },
                    Tol<DType>(), Message("scaled_diff_square ", DataType<DType>::name(), " ", LayoutName(layout)));
        o += F<scaled_diff_square>(a.view, DType(1.0f));
        CheckResult(out,
                    [&](const Shape<2>& i) {
                      const double d = a.at(i) - b.at(i), e = a.at(i) - 1;
                      return 0.5 * d * d + 0.5 * e * e;
                    },
                    ChainTol<DType>(), "+= scaled_diff_square(a, 1)");
      }
    }
  });
  // The float-only functor serves float tensors directly and half tensors through float.
  auto plain = [&](auto tag) {
    using DType = typename decltype(tag)::type;
    const Shape<2> shape = Shape2(4, 33);
    Operand<Device, 2, DType> a(shape, Layout::kSliced, stream, -5, 5);
    Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Layout::kPadded, stream);
    Tensor<Device, 2, DType> o = out.view;
    o = F<soft_sign>(a.view) * DType(2.0f);
    CheckResult(out, [&](const Shape<2>& i) { return 2 * a.at(i) / (1 + std::fabs(a.at(i))); }, ChainTol<DType>(),
                Message("soft_sign ", DataType<DType>::name()));
  };
  plain(Tag<float>());
  plain(Tag<half_t>());
}

// ================================ scalar<T>, tcast<T> ===================================================

TE_DEVICE_TEST_CASE("scalar<T>(v) fits any shape", "[map]") {
  STATIC_REQUIRE(ScalarExp<float>::kDim == 0);
  STATIC_REQUIRE(std::is_same<ScalarExp<float>::device_type, AnyDevice>::value);
  ForEachType<TE_ALL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    for (Layout layout : kLayouts) {
      const Shape<3> shape = Shape3(2, 3, 17);
      Operand<Device, 3, DType> a(shape, layout, stream, -10, 10);
      Operand<Device, 3, DType> out = Output<Device, 3, DType>(shape, Next(layout), stream);
      Tensor<Device, 3, DType> o = out.view;
      o = scalar<DType>(DType(5));  // a scalar alone fills the destination
      CheckResult(out, [](const Shape<3>&) { return 5.0; }, 0.0, "o = scalar(5)");
      o = a.view * scalar<DType>(DType(2)) + scalar<DType>(DType(1));
      CheckResult(out, [&](const Shape<3>& i) { return a.at(i) * 2 + 1; }, ChainTol<DType>(), "a * 2 + 1");
      o -= scalar<DType>(DType(3)) - a.view;
      CheckResult(out, [&](const Shape<3>& i) { return a.at(i) * 2 + 1 - (3 - a.at(i)); }, ChainTol<DType>(),
                  "-= 3 - a");
    }
  });
  // A container assigned a scalar keeps its shape.
  TensorContainer<Device, 2, float> c(Shape2(2, 5));
  c.set_stream(stream);
  c = scalar<float>(4.5f);
  CHECK(c.shape_ == Shape2(2, 5));
  CheckAll(te_test::ToHost(c).view(), [](const Shape<2>&) { return 4.5; }, 0.0);
}

namespace {
// The value a conversion to Dst gives, in double (integers truncate towards zero).
template <typename Dst>
double Converted(double v) {
  if (std::is_integral<Dst>::value) return std::trunc(v);
  if (std::is_same<Dst, float>::value) return double(float(v));
  return v;  // double; half / bf16 are compared within their tolerance
}
}  // namespace

TE_DEVICE_TEST_CASE("tcast<T>(e) between float, double, half, bf16 and int32", "[map]") {
  ForEachType<TE_ALL_DTYPES>([&](auto src_tag) {
    using Src = typename decltype(src_tag)::type;
    ForEachType<TE_ALL_DTYPES>([&](auto dst_tag) {
      using Dst = typename decltype(dst_tag)::type;
      for (Layout layout : kLayouts) {
        const Shape<2> shape = Shape2(3, 129);
        Operand<Device, 2, Src> a(shape, layout, stream, -100, 100);
        Operand<Device, 2, Dst> out = Output<Device, 2, Dst>(shape, Next(layout), stream);
        Tensor<Device, 2, Dst> o = out.view;
        o = tcast<Dst>(a.view);
        const double tol = std::is_integral<Dst>::value ? 0.0 : Tol<Dst>();
        CheckResult(out, [&](const Shape<2>& i) { return Converted<Dst>(a.at(i)); }, tol,
                    Message("tcast<", DataType<Dst>::name(), ">(", DataType<Src>::name(), ") ", LayoutName(layout)));
      }
    });
  });
  // Inside an expression: float math on half storage, and back.
  const Shape<2> shape = Shape2(5, 31);
  Operand<Device, 2, half_t> h(shape, Layout::kPadded, stream, -4, 4);
  Operand<Device, 2, float> f(shape, Layout::kSliced, stream, -4, 4);
  Operand<Device, 2, half_t> out = Output<Device, 2, half_t>(shape, Layout::kContiguous, stream);
  Tensor<Device, 2, half_t> o = out.view;
  o = tcast<half_t>(F<op::exp>(tcast<float>(h.view)) - f.view * 0.5f);
  CheckResult(out, [&](const Shape<2>& i) { return std::exp(h.at(i)) - f.at(i) * 0.5; }, Tol<half_t>(),
              "tcast<half>(exp(tcast<float>(h)) - f * 0.5)");
}

// ================================ .T() ==================================================================

TE_DEVICE_TEST_CASE(".T() evaluates element by element", "[map]") {
  ForEachType<float, half_t, int32_t>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    using R = Range<DType>;
    const index_t dims[][2] = {{1, 1}, {3, 17}, {17, 3}, {1000, 3}, {3, 1000}, {0, 5}, {1, 4097}};
    for (const auto& d : dims) {
      for (Layout layout : kLayouts) {
        const Shape<2> in_shape = Shape2(d[0], d[1]), out_shape = Shape2(d[1], d[0]);
        Operand<Device, 2, DType> a(in_shape, layout, stream, R::lo, R::hi);
        Operand<Device, 2, DType> b(out_shape, Next(layout), stream, R::lo, R::hi);
        Operand<Device, 2, DType> out = Output<Device, 2, DType>(out_shape, Next(layout, 2), stream);
        const std::string where = Message(DataType<DType>::name(), " ", in_shape, " ", LayoutName(layout), ": ");
        CHECK(a.view.T().shape() == out_shape);
        STATIC_REQUIRE(std::is_same<typename std::decay<decltype(a.view.T().T())>::type,
                                    Tensor<Device, 2, DType>>::value);  // transposing twice is the original
        Tensor<Device, 2, DType> o = out.view;
        o = a.view.T();
        CheckResult(out, [&](const Shape<2>& i) { return a.at(Shape2(i[1], i[0])); }, 0.0, where + "a.T()");
        o = a.view.T() * DType(2) + b.view;
        CheckResult(out, [&](const Shape<2>& i) { return a.at(Shape2(i[1], i[0])) * 2 + b.at(i); },
                    ChainTol<DType>(), where + "a.T() * 2 + b");
        o -= (b.view - a.view.T()).T().T();
        CheckResult(out, [&](const Shape<2>& i) { return a.at(Shape2(i[1], i[0])) * 3; }, ChainTol<DType>(),
                    where + "-= (b - a.T()).T().T()");
      }
    }
  });
}

// ================================ savers and Assign =====================================================

namespace {
template <int dim>
index_t FlatIndex(const Shape<dim>& shape, const Shape<dim>& i) {
  index_t flat = 0;
  for (int d = 0; d < dim; ++d) flat = flat * shape[d] + i[d];
  return flat;
}

// Every saver in turn on one destination, tracking the expected values in double.
template <typename Device, typename DType, int dim>
void CheckSavers(const Shape<dim>& shape, Layout layout, Stream<Device>* stream) {
  using R = Range<DType>;
  const DType s = R::Scalar();
  const double sv = AsDouble(s);
  Operand<Device, dim, DType> a(shape, layout, stream, R::lo, R::hi);
  Operand<Device, dim, DType> b(shape, Next(layout), stream, R::div_lo, R::div_hi);
  Operand<Device, dim, DType> out(shape, Next(layout, 2), stream, R::lo, R::hi);
  const std::string where = Message(DataType<DType>::name(), " ", shape, " ", LayoutName(layout), ": ");
  Tensor<Device, dim, DType> o = out.view;
  std::vector<double> expect(static_cast<size_t>(shape.Size()));
  te_test::ForEachIndex(shape, [&](const Shape<dim>& i) { expect[size_t(FlatIndex(shape, i))] = out.at(i); });
  // A value stored in DType (each node of an expression stores its value before the next one uses it).
  auto Rd = [](double v) { return std::is_integral<DType>::value ? v : AsDouble(static_cast<DType>(v)); };
  // Applies `step` to the expected values, then checks them against the destination.
  auto check = [&](const char* what, auto step) {
    te_test::ForEachIndex(shape, [&](const Shape<dim>& i) {
      double& e = expect[size_t(FlatIndex(shape, i))];
      e = step(e, a.at(i), b.at(i));
      e = Rd(e);  // stored in DType
    });
    CheckResult(out, [&](const Shape<dim>& i) { return expect[size_t(FlatIndex(shape, i))]; }, Tol<DType>(),
                where + what);
  };
  o += a.view * b.view;
  check("+= a * b", [&](double e, double x, double y) { return e + Rd(x * y); });
  o -= a.view;
  check("-= a", [](double e, double x, double) { return e - x; });
  o *= b.view;
  check("*= b", [](double e, double, double y) { return e * y; });
  o /= b.view + s;
  check("/= b + s", [&](double e, double, double y) { return Div<DType>(e, Rd(y + sv)); });
  o = a.view - b.view;
  check("= a - b", [](double, double x, double y) { return x - y; });
  o += s;
  check("+= s", [&](double e, double, double) { return e + sv; });
  o -= s;
  check("-= s", [&](double e, double, double) { return e - sv; });
  o *= s;
  check("*= s", [&](double e, double, double) { return e * sv; });
  o /= s;
  check("/= s", [&](double e, double, double) { return Div<DType>(e, sv); });
  o = s;
  check("= s", [&](double, double, double) { return sv; });
}
}  // namespace

TE_DEVICE_TEST_CASE("savers = += -= *= /= with expressions and scalars", "[map]") {
  ForEachType<TE_ALL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    for (index_t width : kWidths) {
      for (Layout layout : kLayouts) {
        CheckSavers<Device, DType>(Shape1(width), layout, stream);
        CheckSavers<Device, DType>(Shape3(2, 2, width), layout, stream);
      }
    }
  });
}

TE_DEVICE_TEST_CASE("Assign(out, req, e) for every OpReqType", "[map]") {
  ForEachType<float, half_t, int32_t>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    using R = Range<DType>;
    for (Layout layout : kLayouts) {
      const Shape<2> shape = Shape2(3, 1000);
      Operand<Device, 2, DType> a(shape, layout, stream, R::lo, R::hi), b(shape, Next(layout), stream, R::lo, R::hi);
      const std::string where = Message(DataType<DType>::name(), " ", LayoutName(layout), ": ");

      // kNullOp: the poisoned output stays poisoned, inside the view and out.
      Operand<Device, 2, DType> out = Output<Device, 2, DType>(shape, Next(layout, 2), stream);
      Assign(out.view, kNullOp, a.view + b.view);
      CheckResult(out, [](const Shape<2>&) { return PoisonAs<DType>(); }, 0.0, where + "kNullOp");

      Assign(out.view, kWriteTo, a.view + b.view);
      CheckResult(out, [&](const Shape<2>& i) { return a.at(i) + b.at(i); }, Tol<DType>(), where + "kWriteTo");

      Assign(out.view, kAddTo, a.view * DType(2));
      CheckResult(out, [&](const Shape<2>& i) { return a.at(i) + b.at(i) + 2 * a.at(i); }, ChainTol<DType>(),
                  where + "kAddTo");

      // kWriteInplace: the output is also the input.
      Operand<Device, 2, DType> c(shape, layout, stream, R::lo, R::hi);
      Assign(c.view, kWriteInplace, c.view * DType(2) - b.view);
      CheckResult(c, [&](const Shape<2>& i) { return 2 * c.at(i) - b.at(i); }, ChainTol<DType>(),
                  where + "kWriteInplace");
    }
  });
  TensorContainer<Device, 1, float> x(Shape1(4), 1.0f);
  REQUIRE_THROWS_AS(Assign(x, static_cast<OpReqType>(9), x * 2.0f), Error);
  CHECK_THAT(ErrorOf([&] { Assign(x, static_cast<OpReqType>(9), x * 2.0f); }), Catch::Contains("OpReqType"));
}

TE_DEVICE_TEST_CASE("an output that aliases an elementwise input: a = a + b", "[map]") {
  ForEachType<TE_ALL_DTYPES>([&](auto tag) {
    using DType = typename decltype(tag)::type;
    using R = Range<DType>;
    for (index_t width : {1, 17, 4097}) {
      for (Layout layout : kLayouts) {
        const Shape<2> shape = ShapeFor(width);
        Operand<Device, 2, DType> a(shape, layout, stream, R::lo, R::hi), b(shape, Next(layout), stream, R::lo, R::hi);
        const std::string where = Message(DataType<DType>::name(), " ", shape, " ", LayoutName(layout), ": ");
        Tensor<Device, 2, DType> av = a.view;
        av = av + b.view;
        CheckResult(a, [&](const Shape<2>& i) { return a.at(i) + b.at(i); }, Tol<DType>(), where + "a = a + b");
        av += av;
        CheckResult(a, [&](const Shape<2>& i) { return 2 * (a.at(i) + b.at(i)); }, ChainTol<DType>(), where + "a += a");
        Tensor<Device, 2, DType> bv = b.view;
        bv = bv * bv - av;
        CheckResult(b, [&](const Shape<2>& i) { return b.at(i) * b.at(i) - 2 * (a.at(i) + b.at(i)); },
                    ChainTol<DType>(), where + "b = b * b - a");
      }
    }
  });
}

// ================================ operands by value =====================================================

TE_DEVICE_TEST_CASE("expressions hold their operands by value", "[map]") {
  const Shape<2> shape = Shape2(7, 129);
  Operand<Device, 2, float> a(shape, Layout::kPadded, stream), b(shape, Layout::kSliced, stream);
  Operand<Device, 2, float> out = Output<Device, 2, float>(shape, Layout::kContiguous, stream);
  Tensor<Device, 2, float> o = out.view;

  auto e = a.view + 2.0f * b.view;  // `2.0f * b.view` is a temporary of this statement
  using E = decltype(e);
  STATIC_REQUIRE(std::is_same<decltype(E::lhs_), Tensor<Device, 2, float>>::value);
  STATIC_REQUIRE(!std::is_reference<decltype(E::rhs_)>::value);
  STATIC_REQUIRE(std::is_same<decltype(E::rhs_.rhs_), Tensor<Device, 2, float>>::value);
  ClobberStack();
  o = e;
  CheckResult(out, [&](const Shape<2>& i) { return a.at(i) + 2 * b.at(i); }, 1e-6, "auto e = a + 2 * b; o = e");
  o += e * e;  // and it can be used again
  CheckResult(out, [&](const Shape<2>& i) {
    const double v = a.at(i) + 2 * b.at(i);
    return v + v * v;
  }, 1e-5, "o += e * e");

  // Built inside a function from copies that are gone when it returns.
  auto g = ScaledSum(a.view, b.view);
  ClobberStack();
  o = g - a.view;
  CheckResult(out, [&](const Shape<2>& i) { return 2 * b.at(i); }, 1e-6, "ScaledSum(a, b) - a");
}

// ================================ threads ==============================================================

TEST_CASE("SetNumThreads(1) and the default give identical results", "[map][cpu]") {
  const int before = GetNumThreads();
  REQUIRE(before >= 1);
  // Large enough for the parallel path (more than kSerialCutoff elements), flat and row loops.
  for (bool pad : {false, true}) {
    INFO((pad ? "padded" : "contiguous"));
    const Shape<2> shape = Shape2(17, 4097);
    TensorContainer<cpu, 2, float> a(shape, pad), b(shape, pad);
    te_test::FillRandom(a.view(), -3, 3);
    te_test::FillRandom(b.view(), -3, 3);
    auto run = [&](int threads) {
      SetNumThreads(threads);
      CHECK(GetNumThreads() == threads);
      TensorContainer<cpu, 2, float> out(shape, pad);
      te_test::Poison(out.view());
      out = F<op::sigmoid>(a) * b + a / (F<op::abs>(b) + 1.0f);
      out += a.T().T() * 0.25f;
      return out;
    };
    const TensorContainer<cpu, 2, float> one = run(1), dflt = run(before), three = run(3), many = run(16);
    CheckAll(one.view(), [&](const Shape<2>& i) {
      const double x = te_test::At(a.view(), i), y = te_test::At(b.view(), i);
      return y / (1 + std::exp(-x)) + x / (std::fabs(y) + 1) + 0.25 * x;
    });
    for (const auto* other : {&dflt, &three, &many}) {
      bool same = true;
      for (index_t r = 0; r < shape[0]; ++r)
        same = same && std::memcmp(one[r].dptr_, (*other)[r].dptr_, sizeof(float) * size_t(shape[1])) == 0;
      CHECK(same);
    }
  }
  SetNumThreads(before);
  REQUIRE_THROWS_AS(SetNumThreads(0), Error);
  CHECK_THAT(ErrorOf([] { SetNumThreads(-2); }), Catch::Contains("-2"));
  CHECK(GetNumThreads() == before);
}

// Fewer rows than threads are cut into column chunks (cpu/map.h): one, two and three long padded rows (the
// row loop, not the flat one), = and += (an element evaluated twice, or never, shows in the sum), row
// lengths that are not whole chunks or lines, and an output past the caches (streamed stores), at 1, 3
// and 8 threads with the same bits.
TEST_CASE("few long rows are threaded over column chunks, each element once", "[map][cpu]") {
  const int before = GetNumThreads();
  for (const Shape<2> shape : {Shape2(1, 300007), Shape2(2, 65541), Shape2(3, 12289), Shape2(1, (9 << 20) + 3)}) {
    INFO("shape " << shape);
    TensorContainer<cpu, 2, float> a(shape, true), b(shape, true);
    te_test::FillRandom(a.view(), -3, 3);
    te_test::FillRandom(b.view(), -3, 3);
    auto run = [&](int threads) {
      SetNumThreads(threads);
      TensorContainer<cpu, 2, float> out(shape, true);
      out = a * 2.0f + b;
      out += a;
      return out;
    };
    const TensorContainer<cpu, 2, float> one = run(1), three = run(3), eight = run(8);
    CheckAll(eight.view(), [&](const Shape<2>& i) { return 3 * te_test::At(a.view(), i) + te_test::At(b.view(), i); });
    for (const auto* other : {&one, &three}) {
      bool same = true;
      for (index_t r = 0; r < shape[0]; ++r)
        same = same && std::memcmp(eight[r].dptr_, (*other)[r].dptr_, sizeof(float) * size_t(shape[1])) == 0;
      CHECK(same);
    }
  }
  SetNumThreads(before);
}

// ================================ errors ===============================================================

TE_DEVICE_TEST_CASE("shape mismatches throw an Error naming both shapes and the operation", "[map]") {
  Operand<Device, 2, float> a(Shape2(3, 4), Layout::kContiguous, stream), b(Shape2(4, 3), Layout::kPadded, stream);
  Operand<Device, 2, float> out = Output<Device, 2, float>(Shape2(3, 4), Layout::kSliced, stream);
  Tensor<Device, 2, float> o = out.view;

  std::string msg = ErrorOf([&] { o = a.view + b.view; });
  CHECK_THAT(msg, Catch::Contains("(3,4)") && Catch::Contains("(4,3)") && Catch::Contains("plus"));
  msg = ErrorOf([&] { o = F<op::maximum>(a.view * 2.0f, b.view); });
  CHECK_THAT(msg, Catch::Contains("(3,4)") && Catch::Contains("(4,3)") && Catch::Contains("maximum"));
  msg = ErrorOf([&] { o += F<scaled_diff_square>(a.view, b.view); });
  CHECK_THAT(msg, Catch::Contains("(3,4)") && Catch::Contains("(4,3)") && Catch::Contains("user functor"));
  msg = ErrorOf([&] { o = a.view - b.view.T().T(); });
  CHECK_THAT(msg, Catch::Contains("minus"));
  // The destination against the expression.
  msg = ErrorOf([&] { o = b.view * 2.0f; });
  CHECK_THAT(msg, Catch::Contains("(3,4)") && Catch::Contains("(4,3)") && Catch::Contains("assignment"));
  msg = ErrorOf([&] { o += b.view; });
  CHECK_THAT(msg, Catch::Contains("+="));
  msg = ErrorOf([&] { Assign(o, kAddTo, b.view * 1.0f); });
  CHECK_THAT(msg, Catch::Contains("(3,4)") && Catch::Contains("(4,3)"));
  REQUIRE_THROWS_AS(o = a.view.T(), Error);
  // Nothing was written by any of the failed assignments.
  CheckResult(out, [](const Shape<2>&) { return kPoison; }, 0.0, "untouched after errors");
  // A container resizing to a mismatched expression fails the same way.
  TensorContainer<Device, 2, float> c;
  c.set_stream(stream);
  REQUIRE_THROWS_AS(c = a.view * b.view, Error);
}
