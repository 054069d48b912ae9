// reduce_axes_test.cc — reduce_axes<sum> and mean over several axes (expr/reduce_axes.h) against a float64
// reference on fresh random data (reduce_axes_check.h: ranks 1 to 5, every subset of axes, padded sources,
// `=` and `+=`, half / bf16), mean inside a larger expression, and the errors for bad axes. Maximum and
// minimum: reduce_extrema_test.cc. The ONNX oracle's ReduceMean cases are in onnx_oracle_test.cc.
#include "reduce_axes_check.h"

namespace {
using namespace te_test;

TE_DEVICE_TEST_CASE("reduce_axes<sum> and mean over any subset of axes match the float64 reference", "[reduce][reduce_axes]") {
  CheckReduceAxesEveryRank<ReduceKind::kSum>(stream);
  CheckReduceAxesEveryRank<ReduceKind::kMean>(stream);
}

TE_DEVICE_TEST_CASE("mean composes inside expressions; an empty mean is NaN", "[reduce][reduce_axes]") {
  auto xh = Uniform<3, double>(Shape3(2, 3, 4));
  auto xd = Dev<Device>(xh.view(), stream);
  TensorContainer<Device, 3, double> centred(xd.shape_);
  centred.set_stream(stream);
  // x minus its mean over (N, W), per channel: a broadcast of the (1, 3, 1) result.
  centred = xd.view() - expr::broadcast_keepdim(expr::broadcast_keepdim(expr::mean(xd.view(), {0, 2}), 0, 2), 2, 4);
  const auto got = ToHost(centred.view());
  for (index_t c = 0; c < 3; ++c) {
    double m = 0;
    for (index_t n = 0; n < 2; ++n)
      for (index_t w = 0; w < 4; ++w) m += xh[n][c][w] / 8;
    for (index_t n = 0; n < 2; ++n)
      for (index_t w = 0; w < 4; ++w) CHECK(got[n][c][w] == Approx(xh[n][c][w] - m).margin(1e-12));
  }
  TensorContainer<Device, 2, float> empty(Shape2(0, 3)), m(Shape2(1, 3));
  empty.set_stream(stream);
  m.set_stream(stream);
  m = expr::mean(empty.view(), {0});
  const auto mh = ToHost(m.view());
  CHECK(std::isnan(mh[0][1]));
}

TE_DEVICE_TEST_CASE("reduce_axes names out-of-range and repeated axes", "[reduce][reduce_axes][error]") {
  TensorContainer<Device, 3, float> x(Shape3(2, 3, 4));
  x.set_stream(stream);
  RequireError([&] { (void)expr::mean(x.view(), {3}); }, {"mean", "axis 3", "(2,3,4)", "-3 <= axis < 3"});
  RequireError([&] { (void)expr::reduce_axes<red::maximum>(x.view(), {0, -4}); },
               {"reduce_axes<maximum>", "axis -4"});
  RequireError([&] { (void)expr::reduce_axes<red::sum>(x.view(), {1, -2}); }, {"axis -2 is given twice", "(2,3,4)"});
}

}  // namespace
