// mshadow_tensor_h_test.cc — a program written for mshadow, its include line as mshadow had it: compat/ on
// the include path (what -Dmshadow_compat=true installs) makes "mshadow/tensor.h" <tensorexpr/mshadow.h>.
// In the style of mshadow's guide: views over existing memory, NewTensor / FreeSpace, a user functor,
// Softmax and a dot, each checked against a naive loop. [cpu][mshadow]
// Catch first: its CHECK then stands, and mshadow's logging macros define themselves only where free.
#include <catch2/catch.hpp>
#include <cmath>
#include "mshadow/tensor.h"

namespace {
struct add_half {
  template <typename DType>
  MSHADOW_XINLINE static DType Map(DType a) {
    return a + DType(0.5f);
  }
};
}  // namespace

TEST_CASE("mshadow: a guide-style program through #include \"mshadow/tensor.h\"", "[cpu][mshadow]") {
  using namespace mshadow;
  using namespace mshadow::expr;
  InitTensorEngine();
  float data[12];
  for (int i = 0; i < 12; ++i) data[i] = 0.25f * float(i) - 1.0f;
  Tensor<cpu, 2> x(data, Shape2(3, 4));
  Tensor<cpu, 2, float> p = NewTensor<cpu>(Shape2(3, 4), 0.0f);
  Tensor<cpu, 2, float> g = NewTensor<cpu>(Shape2(3, 3), 0.0f);
  p = F<add_half>(x) * 2.0f;
  Softmax(p, p);
  g = dot(p, x.T());
  for (index_t i = 0; i < 3; ++i) {
    double z = 0;
    for (index_t j = 0; j < 4; ++j) z += std::exp(2.0 * (data[i * 4 + j] + 0.5));
    for (index_t k = 0; k < 3; ++k) {
      double s = 0;
      for (index_t j = 0; j < 4; ++j) s += std::exp(2.0 * (data[i * 4 + j] + 0.5)) / z * data[k * 4 + j];
      CHECK(g[i][k] == Approx(s).epsilon(1e-5));
    }
  }
  FreeSpace(&p);
  FreeSpace(&g);
  ShutdownTensorEngine();
}
