// softmax_test.cc — the Softmax and LogSoftmax operators (ops/softmax.h) against a float64 reference on fresh
// random inputs: ranks 1 to 5, every axis (negative too), every dtype, padded rows, every req, in place;
// large inputs stay finite; backward by central differences in double; errors name the bad axis or shapes.
// The ONNX oracle's cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"
#include <tensorexpr/ops/softmax.h>

namespace {
using namespace te_test;

// Calls row(at, K) for every softmax along `axis` of `shape`: at(k) is the flat index of its k-th element.
template <typename Row>
void ForEachSoftmax(const std::vector<index_t>& shape, int axis, Row row) {
  index_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const index_t K = shape[size_t(axis)];
  for (index_t o = 0; o < outer; ++o)
    for (index_t in = 0; in < inner; ++in) row([&](index_t k) { return size_t((o * K + k) * inner + in); }, K);
}

// Softmax (or log-softmax) of x, of shape `shape`, along `axis` (0 <= axis < rank), in double.
Vec RefSoftmax(const Vec& x, const std::vector<index_t>& shape, int axis, bool log) {
  Vec y(x.size());
  ForEachSoftmax(shape, axis, [&](auto at, index_t K) {
    double m = -INFINITY, s = 0;
    for (index_t k = 0; k < K; ++k) m = std::max(m, x[at(k)]);
    for (index_t k = 0; k < K; ++k) s += std::exp(x[at(k)] - m);
    for (index_t k = 0; k < K; ++k) y[at(k)] = log ? x[at(k)] - m - std::log(s) : std::exp(x[at(k)] - m) / s;
  });
  return y;
}
// The backward in double, from the Jacobian: dx_i = sum_j dy_j d y_j / d x_i.
Vec RefSoftmaxGrad(const Vec& x, const Vec& dy, const std::vector<index_t>& shape, int axis, bool log) {
  const Vec p = RefSoftmax(x, shape, axis, false);
  Vec dx(x.size());
  ForEachSoftmax(shape, axis, [&](auto at, index_t K) {
    for (index_t i = 0; i < K; ++i) {
      double g = 0;
      for (index_t j = 0; j < K; ++j) g += dy[at(j)] * (log ? (i == j) - p[at(i)] : p[at(j)] * ((i == j) - p[at(i)]));
      dx[at(i)] = g;
    }
  });
  return dx;
}

template <int dim>
std::vector<index_t> Dims(const Shape<dim>& s) {
  return std::vector<index_t>(s.shape_, s.shape_ + dim);
}

template <typename Device, int dim, typename DType>
void RunSoftmax(Stream<Device>* stream, bool log, const Shape<dim>& shape, int axis, bool padded, OpReqType req) {
  ops::SoftmaxParam p;
  p.axis = axis;
  const int a = axis < 0 ? axis + dim : axis;
  INFO((log ? "LogSoftmax" : "Softmax") << " shape " << shape << " axis " << axis << " padded " << padded << " req "
                                        << OpReqName(req) << " dtype " << DataType<DType>::name());
  auto xh = Uniform<dim, DType>(shape, -4, 4);
  auto dyh = Uniform<dim, DType>(shape);
  TensorContainer<cpu, dim, DType> yh(shape), dxh(shape);
  const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), req), dx0 = Prefill(dxh.view(), req);
  const Vec y = RefSoftmax(x, Dims(shape), a, log);
  auto xd = Dev<Device>(xh.view(), stream, padded);
  auto yd = Dev<Device>(yh.view(), stream, padded);
  if (log) ops::LogSoftmaxForward(p, xd.view(), req, yd.view());
  else ops::SoftmaxForward(p, xd.view(), req, yd.view());
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, y), 2 * Tol<DType>(), "forward");
  // Backward reads the forward output: hand it the exact one, rounded to DType.
  auto youtd = Dev<Device>(FromVec<dim, DType>(shape, y).view(), stream, padded);
  auto dyd = Dev<Device>(dyh.view(), stream, padded);
  auto dxd = Dev<Device>(dxh.view(), stream, padded);
  if (log) ops::LogSoftmaxBackward(p, dyd.view(), youtd.view(), req, dxd.view());
  else ops::SoftmaxBackward(p, dyd.view(), youtd.view(), req, dxd.view());
  CheckVec(ToHost(dxd.view()).view(), Expect(req, dx0, RefSoftmaxGrad(x, dy, Dims(shape), a, log)),
           8 * Tol<DType>(), "backward");
}

TE_DEVICE_TEST_CASE("Softmax and LogSoftmax match the float64 reference on every axis", "[ops][softmax]") {
  for (bool log : {false, true}) {
    for (OpReqType req : kAllReqs) RunSoftmax<Device, 2, float>(stream, log, Shape2(7, 33), -1, true, req);
    RunSoftmax<Device, 1, float>(stream, log, Shape1(19), 0, false, kWriteTo);
    RunSoftmax<Device, 2, double>(stream, log, Shape2(9, 5), 0, true, kWriteTo);
    RunSoftmax<Device, 3, double>(stream, log, Shape3(3, 6, 5), 1, true, kAddTo);
    RunSoftmax<Device, 3, float>(stream, log, Shape3(3, 6, 5), -3, false, kWriteTo);
    RunSoftmax<Device, 4, float>(stream, log, Shape4(2, 3, 4, 5), 1, true, kWriteTo);
    RunSoftmax<Device, 4, double>(stream, log, Shape4(2, 3, 4, 5), -2, false, kWriteTo);
    RunSoftmax<Device, 5, float>(stream, log, Shape5(2, 1, 3, 2, 4), 3, true, kAddTo);
    RunSoftmax<Device, 4, float>(stream, log, Shape4(2, 3, 2, 7), 3, true, kWriteTo);   // last axis, padded rows
    RunSoftmax<Device, 5, double>(stream, log, Shape5(3, 2, 4, 2, 3), 2, true, kWriteTo);
    RunSoftmax<Device, 5, double>(stream, log, Shape5(2, 3, 1, 2, 3), 0, false, kWriteTo);
    RunSoftmax<Device, 2, half_t>(stream, log, Shape2(5, 9), 1, true, kWriteTo);
    RunSoftmax<Device, 3, bf16_t>(stream, log, Shape3(2, 7, 3), 1, false, kAddTo);
    RunSoftmax<Device, 2, float>(stream, log, Shape2(4, 1), 1, false, kWriteTo);   // one class: 1 / 0
    RunSoftmax<Device, 2, float>(stream, log, Shape2(0, 6), 1, false, kWriteTo);   // empty
    RunSoftmax<Device, 3, float>(stream, log, Shape3(2, 0, 3), 0, false, kWriteTo);
  }
}

TE_DEVICE_TEST_CASE("Softmax and LogSoftmax stay finite on large inputs and work in place", "[ops][softmax]") {
  for (bool log : {false, true}) {
    // Values near +-1000: exp overflows and underflows unless the maximum is subtracted first.
    const Shape<2> shape = Shape2(3, 8);
    auto xh = Uniform<2, float>(shape, -5, 5);
    for (index_t i = 0; i < 8; ++i) xh[0][i] += 1000.0f, xh[1][i] -= 1000.0f;
    const Vec x = ToVec(xh.view()), y = RefSoftmax(x, {3, 8}, 1, log);
    auto buf = Dev<Device>(xh.view(), stream);
    ops::SoftmaxParam p;
    if (log) ops::LogSoftmaxForward(p, buf.view(), kWriteInplace, buf.view());
    else ops::SoftmaxForward(p, buf.view(), kWriteInplace, buf.view());
    INFO((log ? "LogSoftmax" : "Softmax"));
    // x - max is exact, so both outputs keep float's precision of numbers near 1, not near 1000.
    CheckVec(ToHost(buf.view()).view(), y, 1e-5, "in place");
  }
}

TE_DEVICE_TEST_CASE("Softmax and LogSoftmax gradients match finite differences in double", "[ops][softmax]") {
  for (bool log : {false, true}) {
    for (int axis : {0, 1, 2}) {
      const Shape<3> shape = Shape3(2, 3, 4);
      ops::SoftmaxParam p;
      p.axis = axis;
      auto forward = [&](const Vec& xv) {
        auto xd = Dev<Device>(FromVec<3, double>(shape, xv).view(), stream);
        TensorContainer<Device, 3, double> yd(shape);
        yd.set_stream(stream);
        if (log) ops::LogSoftmaxForward(p, xd.view(), kWriteTo, yd.view());
        else ops::SoftmaxForward(p, xd.view(), kWriteTo, yd.view());
        return ToVec(ToHost(yd.view()).view());
      };
      auto xh = Uniform<3, double>(shape, -2, 2);
      auto dyh = Uniform<3, double>(shape);
      const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
      // In place: the gradient overwrites dy.
      auto yd = Dev<Device>(FromVec<3, double>(shape, forward(x)).view(), stream);
      auto buf = Dev<Device>(dyh.view(), stream);
      if (log) ops::LogSoftmaxBackward(p, buf.view(), yd.view(), kWriteInplace, buf.view());
      else ops::SoftmaxBackward(p, buf.view(), yd.view(), kWriteInplace, buf.view());
      CheckFiniteDifferences(x, dy, forward, ToVec(ToHost(buf.view()).view()),
                             std::string(log ? "LogSoftmax" : "Softmax") + " axis " + std::to_string(axis));
    }
  }
}

TE_DEVICE_TEST_CASE("Softmax names a bad axis and mismatched shapes", "[ops][softmax][error]") {
  TensorContainer<Device, 3, float> a(Shape3(2, 3, 4)), b(Shape3(2, 4, 3));
  a.set_stream(stream);
  b.set_stream(stream);
  ops::SoftmaxParam p;
  p.axis = 3;
  RequireError([&] { ops::SoftmaxForward(p, a.view(), kWriteTo, a.view()); }, {"axis 3", "(2,3,4)", "-3 <= axis < 3"});
  p.axis = -4;
  RequireError([&] { ops::LogSoftmaxForward(p, a.view(), kWriteTo, a.view()); }, {"axis -4", "out of range"});
  p.axis = 1;
  RequireError([&] { ops::SoftmaxForward(p, a.view(), kWriteTo, b.view()); }, {"Softmax forward", "(2,3,4)", "(2,4,3)"});
  RequireError([&] { ops::LogSoftmaxBackward(p, a.view(), a.view(), kWriteTo, b.view()); },
               {"LogSoftmax backward", "input gradient", "(2,4,3)"});
  RequireError([&] { ops::SoftmaxBackward(p, b.view(), a.view(), kWriteTo, a.view()); },
               {"output gradient", "(2,4,3)"});
  RequireError([&] { ops::SoftmaxForward(p, a.view(), static_cast<OpReqType>(9), a.view()); }, {"unknown req 9"});
}

}  // namespace
