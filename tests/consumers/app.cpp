// A program that uses an installed tensorexpr the way a new project would: the core, a convolution from
// the operator library, and the version macros. Built by tests/consumers/check.sh with pkg-config (C++17
// and C++20), with CMake, and as a Meson subproject's parent.
#include <cstdio>
#include <tensorexpr/ops/convolution.h>
#include <tensorexpr/tensorexpr.h>

int main() {
  using namespace tensorexpr;
  using namespace tensorexpr::ops;
  // A 3x3 convolution with one pixel of padding over ones, weights 0.5 and bias 1: an inner pixel sums
  // 4 channels x 9 taps x 0.5, a corner only 4 taps.
  ConvolutionParam p;
  p.kernel = {3, 3};
  p.pad = {1, 1};
  p.num_filter = 8;
  TensorContainer<cpu, 4, float> x(Shape4(2, 4, 9, 9), 1.0f), y(Shape4(2, 8, 9, 9));
  TensorContainer<cpu, 4, float> w(Shape4(8, 4, 3, 3), 0.5f);
  TensorContainer<cpu, 1, float> b(Shape1(8), 1.0f);
  ConvolutionForward(p, x, w, b, kWriteTo, y);
  y += 1.0f;  // and an expression
  std::printf("tensorexpr %s: inner pixel %g, corner %g\n", TENSOREXPR_VERSION_STRING, y[1][7][4][4], y[0][0][0][0]);
  return y[1][7][4][4] == 4 * 9 * 0.5f + 2 && y[0][0][0][0] == 4 * 4 * 0.5f + 2 ? 0 : 1;
}
