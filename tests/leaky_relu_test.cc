// leaky_relu_test.cc — the LeakyReLU operator (ops/leaky_relu.h: leaky, ELU, PReLU with one slope per channel
// or one for all) against a float64 reference on fresh random inputs: ranks 1 to 5, every dtype, padded
// rows (leaky, ELU), every req, in place; backward by central differences in double (data and gamma);
// errors name the bad shapes. The ONNX oracle's LeakyRelu / Elu / PRelu cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"
#include <tensorexpr/ops/leaky_relu.h>

namespace {
using namespace te_test;
using ops::LeakyReLUType;

double RefLeaky(LeakyReLUType t, double x, double slope) {
  if (x > 0) return x;
  return t == LeakyReLUType::kELU ? slope * std::expm1(x) : slope * x;
}
double RefLeakyGrad(LeakyReLUType t, double x, double slope) {
  if (x > 0) return 1;
  return t == LeakyReLUType::kELU ? slope * std::exp(x) : slope;
}
// The slope element x uses: gamma[channel] (dimension 1) for PReLU, else p.slope.
template <int dim>
double SlopeAt(const ops::LeakyReLUParam& p, const Vec& gamma, const Shape<dim>& idx) {
  if (p.act_type != LeakyReLUType::kPReLU) return p.slope;
  return gamma.size() == 1 ? gamma[0] : gamma[size_t(idx[1])];
}

template <typename Device, int dim, typename DType>
void RunLeakyReLU(Stream<Device>* stream, LeakyReLUType t, const Shape<dim>& shape, bool per_channel, bool padded,
                  OpReqType req) {
  ops::LeakyReLUParam p;
  p.act_type = t;
  p.slope = std::uniform_real_distribution<double>(0.05, 1.5)(Rng());
  const index_t slopes = t == LeakyReLUType::kPReLU && per_channel ? shape[1] : 1;
  INFO(ops::LeakyReLUTypeName(t) << " shape " << shape << " slopes " << slopes << " padded " << padded << " req "
                                 << OpReqName(req) << " dtype " << DataType<DType>::name());
  auto xh = Uniform<dim, DType>(shape, -3, 3);
  auto dyh = Uniform<dim, DType>(shape);
  auto gh = Uniform<1, DType>(Shape1(slopes), -0.5, 1.5);
  TensorContainer<cpu, dim, DType> yh(shape), dxh(shape);
  TensorContainer<cpu, 1, DType> dgh(Shape1(slopes));
  const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view()), gamma = ToVec(gh.view());
  const Vec y0 = Prefill(yh.view(), req), dx0 = Prefill(dxh.view(), req), dg0 = Prefill(dgh.view(), req);
  Vec y(x.size()), dx(x.size()), dg(size_t(slopes), 0.0);
  ForEachIndex(shape, [&](const Shape<dim>& i) {
    const size_t f = size_t(Flat(shape, i));
    const double a = SlopeAt(p, gamma, i);
    y[f] = RefLeaky(t, x[f], a);
    dx[f] = dy[f] * RefLeakyGrad(t, x[f], a);
    if (t == LeakyReLUType::kPReLU) dg[slopes == 1 ? 0 : size_t(i[1])] += dy[f] * std::min(x[f], 0.0);
  });
  auto xd = Dev<Device>(xh.view(), stream, padded), yd = Dev<Device>(yh.view(), stream, padded);
  auto dyd = Dev<Device>(dyh.view(), stream, padded), dxd = Dev<Device>(dxh.view(), stream, padded);
  auto gd = Dev<Device>(gh.view(), stream), dgd = Dev<Device>(dgh.view(), stream);
  ops::LeakyReLUForward(p, xd.view(), gd.view(), req, yd.view());
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, y), 2 * Tol<DType>(), "forward");
  ops::LeakyReLUBackward(p, dyd.view(), xd.view(), gd.view(), req, dxd.view(), req, dgd.view());
  CheckVec(ToHost(dxd.view()).view(), Expect(req, dx0, dx), 4 * Tol<DType>(), "backward (data)");
  if (t == LeakyReLUType::kPReLU)
    CheckVec(ToHost(dgd.view()).view(), Expect(req, dg0, dg), 40 * Tol<DType>(), "backward (gamma)");
}

const LeakyReLUType kTypes[] = {LeakyReLUType::kLeaky, LeakyReLUType::kELU, LeakyReLUType::kPReLU};

TE_DEVICE_TEST_CASE("LeakyReLU, ELU and PReLU match the float64 reference", "[ops][leaky_relu]") {
  for (LeakyReLUType t : kTypes) {
    const bool prelu = t == LeakyReLUType::kPReLU;  // PReLU takes contiguous data only
    for (OpReqType req : kAllReqs) RunLeakyReLU<Device, 2, float>(stream, t, Shape2(7, 13), true, !prelu, req);
    RunLeakyReLU<Device, 1, double>(stream, t, Shape1(11), false, false, kWriteTo);
    RunLeakyReLU<Device, 3, double>(stream, t, Shape3(3, 4, 5), true, !prelu, kAddTo);
    RunLeakyReLU<Device, 4, float>(stream, t, Shape4(2, 3, 4, 5), true, false, kWriteTo);
    RunLeakyReLU<Device, 4, float>(stream, t, Shape4(2, 3, 4, 5), false, false, kWriteTo);
    RunLeakyReLU<Device, 5, double>(stream, t, Shape5(2, 3, 2, 1, 3), true, false, kAddTo);
    RunLeakyReLU<Device, 4, half_t>(stream, t, Shape4(2, 3, 2, 5), true, false, kWriteTo);
    RunLeakyReLU<Device, 3, bf16_t>(stream, t, Shape3(2, 4, 3), true, false, kAddTo);
    RunLeakyReLU<Device, 3, float>(stream, t, Shape3(0, 4, 3), true, false, kWriteTo);
  }
}

TE_DEVICE_TEST_CASE("LeakyReLU gradients match finite differences in double, in place", "[ops][leaky_relu]") {
  for (LeakyReLUType t : kTypes) {
    ops::LeakyReLUParam p;
    p.act_type = t;
    p.slope = 0.3;
    const Shape<3> shape = Shape3(2, 3, 4);
    auto xh = Uniform<3, double>(shape, -2, 2);
    auto dyh = Uniform<3, double>(shape);
    auto gh = Uniform<1, double>(Shape1(3), 0.1, 0.9);
    const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view()), gamma = ToVec(gh.view());
    auto run = [&](const Vec& xv, const Vec& gv) {
      auto xd = Dev<Device>(FromVec<3, double>(shape, xv).view(), stream);
      auto gd = Dev<Device>(FromVec<1, double>(Shape1(3), gv).view(), stream);
      ops::LeakyReLUForward(p, xd.view(), gd.view(), kWriteInplace, xd.view());  // in place
      return ToVec(ToHost(xd.view()).view());
    };
    auto xd = Dev<Device>(xh.view(), stream);
    auto gd = Dev<Device>(gh.view(), stream);
    auto buf = Dev<Device>(dyh.view(), stream);
    TensorContainer<Device, 1, double> dg(Shape1(3));
    dg.set_stream(stream);
    ops::LeakyReLUBackward(p, buf.view(), xd.view(), gd.view(), kWriteInplace, buf.view(), kWriteTo, dg.view());
    const std::string name = ops::LeakyReLUTypeName(t);
    CheckFiniteDifferences(x, dy, [&](const Vec& xv) { return run(xv, gamma); }, ToVec(ToHost(buf.view()).view()),
                           name + " data");
    if (t == LeakyReLUType::kPReLU)
      CheckFiniteDifferences(gamma, dy, [&](const Vec& gv) { return run(x, gv); }, ToVec(ToHost(dg.view()).view()),
                             name + " gamma");
  }
}

TE_DEVICE_TEST_CASE("LeakyReLU names mismatched shapes, bad gamma and padded PReLU data", "[ops][leaky_relu][error]") {
  ops::LeakyReLUParam p;
  TensorContainer<Device, 3, float> a(Shape3(2, 3, 4)), b(Shape3(2, 4, 3));
  TensorContainer<Device, 2, float> padded(Shape2(3, 5), true);
  TensorContainer<Device, 1, float> g3(Shape1(3)), g2(Shape1(2)), none(Shape1(0));
  for (auto* t : {&a, &b}) t->set_stream(stream);
  RequireError([&] { ops::LeakyReLUForward(p, a.view(), none.view(), kWriteTo, b.view()); },
               {"LeakyReLU(leaky) forward", "(2,3,4)", "(2,4,3)"});
  RequireError([&] { ops::LeakyReLUBackward(p, a.view(), b.view(), none.view(), kWriteTo, a.view(), kNullOp, none.view()); },
               {"backward", "(2,4,3)"});
  p.act_type = LeakyReLUType::kPReLU;
  RequireError([&] { ops::LeakyReLUForward(p, a.view(), g2.view(), kWriteTo, a.view()); },
               {"LeakyReLU(prelu)", "gamma shape (2,)", "(2,3,4)"});
  if (padded.stride_ != padded.shape_[1]) {
    TensorContainer<Device, 1, float> g5(Shape1(5));
    RequireError([&] { ops::LeakyReLUForward(p, padded.view(), g5.view(), kWriteTo, padded.view()); },
                 {"padded rows", "contiguous"});
  }
  RequireError([&] { ops::LeakyReLUBackward(p, a.view(), a.view(), g3.view(), kWriteTo, a.view(), kWriteTo, g2.view()); },
               {"gamma gradient shape (2,)", "gamma shape (3,)"});
  RequireError([&] { ops::LeakyReLUForward(p, a.view(), g3.view(), static_cast<OpReqType>(7), a.view()); },
               {"unknown req 7"});
}

}  // namespace
