// A program that uses an installed tensorexpr the way a new project would: the core, an operator from
// the library, and the version macros. Built by tests/consumers/check.sh with pkg-config (C++17 and
// C++20) and with CMake.
#include <cstdio>
#include <tensorexpr/ops/activation.h>
#include <tensorexpr/tensorexpr.h>

int main() {
  using namespace tensorexpr;
  TensorContainer<cpu, 2, float> x(Shape2(2, 3), -1.0f), y(Shape2(2, 3));
  x[1] = 2.0f;
  ops::ActivationParam p;
  p.act_type = ops::ActType::kReLU;
  ops::ActivationForward(p, x.view(), kWriteTo, y.view());
  y += 1.0f;
  std::printf("tensorexpr %s: y[0][0] = %g, y[1][2] = %g\n", TENSOREXPR_VERSION_STRING, y[0][0], y[1][2]);
  return y[0][0] == 1.0f && y[1][2] == 3.0f ? 0 : 1;
}
