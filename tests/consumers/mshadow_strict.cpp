// Compiled by tests/consumers/check_warnings.sh with -Werror and every strict warning: <tensorexpr/mshadow.h>
// and the names it adds to tensorexpr's (its macros, logging, utils, mshadow's reduce_with_axis, TBlob).
#include <tensorexpr/mshadow.h>

namespace {
struct add_one {
  template <typename DType>
  MSHADOW_XINLINE static DType Map(DType a) {
    return a + DType(1);
  }
};
}  // namespace

int main() {
  using namespace mshadow;
  using namespace mshadow::expr;
  float data[6] = {0.5f, 2.0f, 1.0f, 3.0f, -1.0f, 0.0f};
  Tensor<cpu, 2> x(data, Shape2(2, 3));
  TensorContainer<cpu, 1> best(Shape1(2));
  best = reduce_with_axis<red::maximum, true>(F<add_one>(x), 1);
  CHECK_EQ(best[0], 1.0f) << "argmax of the first row";
  TBlob blob = x;
  utils::Check(blob.ndim() == 2, "a blob of %d dimensions", blob.ndim());
  Tensor<cpu, 3> three = blob.FlatTo3D<cpu, float>(1);
  TensorContainer<cpu, 2> y(x.shape_);
  y = F<add_one>(x) * 2.0f;
  int bytes = 0;
  MSHADOW_REAL_TYPE_SWITCH(default_type_flag, DType, { bytes = static_cast<int>(sizeof(DType)); });
  return static_cast<int>(three[0][0][0] + y[1][2]) + bytes;
}
