// examples/basic.cpp — a first tour: tensors and views, lazy expressions, a matrix product and a
// broadcast, put together as one dense layer  y = relu(x · Wᵀ + b)  on a small batch.
// It prints what it computes and checks every number against a plain loop; the exit code says whether
// they agree.
//
//   meson setup build && ninja -C build examples/basic && build/examples/basic
#include <cmath>
#include <cstdio>
#include <tensorexpr/tensorexpr.h>

using namespace tensorexpr;
using namespace tensorexpr::expr;  // F<>, scalar<>, tcast<>, dot, broadcast, ...

template <typename T>
static void Print(const char* name, const T& t) {
  std::printf("%s %s:\n", name, Message(t.shape_).c_str());
  for (index_t i = 0; i < t.size(0); ++i) {
    std::printf("  ");
    for (index_t j = 0; j < t.size(1); ++j) std::printf("%8.3f", static_cast<double>(t[i][j]));
    std::printf("\n");
  }
}

int main() {
  const index_t batch = 4, in = 3, out = 5;

  // ---- tensors: a TensorContainer owns memory; a Tensor is a view into it --------------------------
  TensorContainer<cpu, 2, float> x(Shape2(batch, in)), w(Shape2(out, in));
  TensorContainer<cpu, 1, float> b(Shape1(out));
  for (index_t i = 0; i < batch; ++i)
    for (index_t j = 0; j < in; ++j) x[i][j] = 0.5f * static_cast<float>(i) - 0.25f * static_cast<float>(j);
  for (index_t o = 0; o < out; ++o) {
    for (index_t j = 0; j < in; ++j) w[o][j] = std::sin(static_cast<float>(1 + o * in + j));
    b[o] = 0.1f * static_cast<float>(o) - 0.2f;
  }
  Tensor<cpu, 2, float> first_two = x.Slice(0, 2);  // rows 0 and 1, no copy
  first_two *= 2.0f;                                  // ... so this scales x's first two rows in place
  Print("x (first two rows doubled through a view)", x);

  // ---- expressions are lazy; assignment runs them in one fused pass --------------------------------
  auto centered = x - scalar<float>(0.5f);  // nothing computed yet (operands are held by value)
  TensorContainer<cpu, 2, float> z(Shape2(batch, in));
  z = centered * centered + 1.0f;  // one loop: z = (x - 0.5)^2 + 1
  Print("z = (x - 0.5)^2 + 1", z);

  // ---- a dense layer: dot (one BLAS call) and broadcast (no copy of b) -----------------------------
  TensorContainer<cpu, 2, float> y(Shape2(batch, out));
  y = dot(x, w.T());                   // (batch, in) x (in, out); .T() is a BLAS flag, not a copy
  y += broadcast<1>(b, y.shape_);      // b along dimension 1, the same for every row
  y = F<op::relu>(y);
  Print("y = relu(x . W^T + b)", y);

  // ---- check against plain loops -----------------------------------------------------------------
  double max_err = 0;
  for (index_t i = 0; i < batch; ++i) {
    for (index_t j = 0; j < in; ++j) {
      const double xv = x[i][j];
      max_err = std::fmax(max_err, std::fabs(z[i][j] - ((xv - 0.5) * (xv - 0.5) + 1)));
    }
    for (index_t o = 0; o < out; ++o) {
      double acc = b[o];
      for (index_t j = 0; j < in; ++j) acc += static_cast<double>(x[i][j]) * w[o][j];
      max_err = std::fmax(max_err, std::fabs(y[i][o] - std::fmax(acc, 0.0)));
    }
  }
  const bool ok = max_err < 1e-5;
  std::printf("largest difference from the plain loops: %.2e -> %s\n", max_err, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
