// examples/defop.cpp — defining your own elementwise operations.
//
// A functor is a struct with a static Map: one argument for F<OP>(a), two for F<OP>(a, b). Marked
// TE_XINLINE it runs on the host and, compiled by nvcc, inside CUDA kernels. Written as a template over
// the element type, one definition serves float, double, half_t and bf16_t; compute_t<DType> is the type
// to do the arithmetic in (float for the 16-bit types). Functors fuse with everything else in the
// expression: the whole right-hand side is still one loop.
#include <cmath>
#include <cstdio>
#include <tensorexpr/tensorexpr.h>

using namespace tensorexpr;
using namespace tensorexpr::expr;

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct gelu {
  static const char* name() { return "gelu"; }  // optional: error messages use it
  template <typename DType>
  TE_XINLINE static DType Map(DType x_) {
    using C = compute_t<DType>;
    const C x = static_cast<C>(x_);
    const C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
    return static_cast<DType>(C(0.5) * x * (C(1) + math::tanh(inner)));
  }
};

// Huber loss of a prediction against a target: quadratic near the target, linear beyond delta = 1.
struct huber {
  template <typename DType>
  TE_XINLINE static DType Map(DType pred, DType target) {
    using C = compute_t<DType>;
    const C d = static_cast<C>(pred) - static_cast<C>(target);
    const C a = d < C(0) ? -d : d;
    return static_cast<DType>(a <= C(1) ? C(0.5) * d * d : a - C(0.5));
  }
};

static double GeluRef(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 /* sqrt(2 / pi) */ * (x + 0.044715 * x * x * x))); }
static double HuberRef(double p, double t) {
  const double d = std::fabs(p - t);
  return d <= 1 ? 0.5 * d * d : d - 0.5;
}

// The same functors on any dtype; returns the largest difference from the double-precision reference.
template <typename DType>
static double Run(const char* dtype_name) {
  const index_t n = 9;
  TensorContainer<cpu, 1, DType> x(Shape1(n)), target(Shape1(n)), act(Shape1(n)), loss(Shape1(n));
  for (index_t i = 0; i < n; ++i) {
    x[i] = static_cast<DType>(-2.0f + 0.5f * static_cast<float>(i));  // -2, -1.5, ..., 2
    target[i] = static_cast<DType>(0.25f);
  }
  act = F<gelu>(x);
  // Fused: scale, the user functor and a built-in one in a single pass.
  loss = F<huber>(act * static_cast<DType>(2.0f), target) + F<op::abs>(x) * static_cast<DType>(0.01f);

  std::printf("%s\n     x    gelu(x)   huber(2 gelu(x), 0.25) + 0.01|x|\n", dtype_name);
  double max_err = 0;
  for (index_t i = 0; i < n; ++i) {
    const double xv = static_cast<float>(x[i]);
    const double g = GeluRef(xv), l = HuberRef(2 * g, 0.25) + 0.01 * std::fabs(xv);
    std::printf("%6.2f %10.5f %14.5f\n", xv, static_cast<double>(static_cast<float>(act[i])),
                static_cast<double>(static_cast<float>(loss[i])));
    max_err = std::fmax(max_err, std::fabs(static_cast<float>(act[i]) - g) / std::fmax(1.0, std::fabs(g)));
    max_err = std::fmax(max_err, std::fabs(static_cast<float>(loss[i]) - l) / std::fmax(1.0, std::fabs(l)));
  }
  return max_err;
}

int main() {
  const double err32 = Run<float>("float");
  const double err16 = Run<half_t>("half_t (computes in float, stores 16 bits)");
  const bool ok = err32 < 1e-5 && err16 < 1e-2;
  std::printf("largest relative difference from the double reference: float %.1e, half %.1e -> %s\n", err32, err16,
              ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
