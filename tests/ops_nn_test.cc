// ops_nn_test.cc — the network operators of ops/: Activation, FullyConnected, SoftmaxOutput and Pooling,
// each against a naive float64 reference on fresh random inputs (every dtype, padded-row views, odd
// sizes), every req (kAddTo onto random prefill, kNullOp leaving poison), finite-difference gradient
// checks in double, and the errors bad shapes and parameters raise.
#include "ops_test_util.h"
#include <tensorexpr/ops/activation.h>
#include <tensorexpr/ops/fully_connected.h>
#include <tensorexpr/ops/softmax_output.h>
#include <tensorexpr/ops/pooling.h>

namespace {
using namespace te_test;

// ---- Activation ---------------------------------------------------------------------------------------
using ops::ActType;
const ActType kActs[] = {ActType::kReLU, ActType::kSigmoid, ActType::kTanh, ActType::kSoftReLU};

double RefAct(ActType t, double x) {
  switch (t) {
    case ActType::kReLU: return x > 0 ? x : 0;
    case ActType::kSigmoid: return 1 / (1 + std::exp(-x));
    case ActType::kTanh: return std::tanh(x);
    case ActType::kSoftReLU: return std::log1p(std::exp(x));
  }
  return 0;
}
double RefActGrad(ActType t, double x) {  // from the input, independently of the library's output form
  switch (t) {
    case ActType::kReLU: return x > 0 ? 1 : 0;
    case ActType::kSigmoid: return RefAct(ActType::kSigmoid, x) * (1 - RefAct(ActType::kSigmoid, x));
    case ActType::kTanh: return 1 - std::tanh(x) * std::tanh(x);
    case ActType::kSoftReLU: return 1 / (1 + std::exp(-x));
  }
  return 0;
}

template <typename Device, typename DType>
void RunActivation(Stream<Device>* stream, ActType t, Shape<2> shape, bool padded, OpReqType req) {
  ops::ActivationParam p;
  p.act_type = t;
  auto xh = Uniform<2, DType>(shape, -3, 3);
  auto dyh = Uniform<2, DType>(shape);
  TensorContainer<cpu, 2, DType> yh(shape), dxh(shape);
  const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), req), dx0 = Prefill(dxh.view(), req);
  Vec y(x.size()), dx(x.size()), yexact(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = RefAct(t, x[i]);
    dx[i] = dy[i] * RefActGrad(t, x[i]);
  }
  auto xd = Dev<Device>(xh.view(), stream, padded);
  auto dyd = Dev<Device>(dyh.view(), stream, padded);
  auto yd = Dev<Device>(yh.view(), stream, padded);
  auto dxd = Dev<Device>(dxh.view(), stream, padded);
  INFO("act " << ops::ActTypeName(t) << " shape " << shape << " padded " << padded << " req " << OpReqName(req)
              << " dtype " << DataType<DType>::name());
  ops::ActivationForward(p, xd.view(), req, yd.view());
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, y), 2 * Tol<DType>(), "forward");
  // Backward reads the output: give it the exact forward result, rounded to DType.
  TensorContainer<cpu, 2, DType> youth(shape);
  ForEachIndex(shape, [&](const Shape<2>& i) { youth[i[0]][i[1]] = DType(static_cast<float>(y[Flat(shape, i)])); });
  if constexpr (std::is_same<DType, double>::value)
    ForEachIndex(shape, [&](const Shape<2>& i) { youth[i[0]][i[1]] = y[Flat(shape, i)]; });
  auto youtd = Dev<Device>(youth.view(), stream, padded);
  ops::ActivationBackward(p, dyd.view(), youtd.view(), req, dxd.view());
  CheckVec(ToHost(dxd.view()).view(), Expect(req, dx0, dx), 4 * Tol<DType>(), "backward");
}

TE_DEVICE_TEST_CASE("Activation forward and backward match the float64 reference", "[ops_nn][activation]") {
  for (ActType t : kActs) {
    for (OpReqType req : kAllReqs) RunActivation<Device, float>(stream, t, Shape2(17, 33), true, req);
    RunActivation<Device, double>(stream, t, Shape2(3, 1000), false, kWriteTo);
    RunActivation<Device, double>(stream, t, Shape2(1, 1), false, kAddTo);
    RunActivation<Device, half_t>(stream, t, Shape2(5, 7), true, kWriteTo);
    RunActivation<Device, bf16_t>(stream, t, Shape2(5, 7), false, kAddTo);
    RunActivation<Device, float>(stream, t, Shape2(0, 7), false, kWriteTo);
  }
}

TE_DEVICE_TEST_CASE("Activation works in place and its gradient matches finite differences", "[ops_nn][activation]") {
  for (ActType t : kActs) {
    ops::ActivationParam p;
    p.act_type = t;
    const Shape<2> shape = Shape2(3, 5);
    auto xh = Uniform<2, double>(shape, -2, 2);
    auto dyh = Uniform<2, double>(shape);
    const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
    // In place: y overwrites x, then dx overwrites dy.
    auto buf = Dev<Device>(xh.view(), stream);
    ops::ActivationForward(p, buf.view(), kWriteInplace, buf.view());
    auto dyd = Dev<Device>(dyh.view(), stream);
    ops::ActivationBackward(p, dyd.view(), buf.view(), kWriteInplace, dyd.view());
    const Vec dx = ToVec(ToHost(dyd.view()).view());
    // d/dx_i of sum(dy * f(x)), by central differences on the library's own forward.
    for (size_t i = 0; i < x.size(); ++i) {
      const double h = 1e-6;
      auto f_at = [&](double xi) {
        TensorContainer<cpu, 2, double> xp(shape);
        Copy(xp.view(), xh.view());
        xp.dptr_[i] = xi;
        auto xd = Dev<Device>(xp.view(), stream);
        TensorContainer<Device, 2, double> yd(shape);
        yd.set_stream(stream);
        ops::ActivationForward(p, xd.view(), kWriteTo, yd.view());
        const Vec y = ToVec(ToHost(yd.view()).view());
        double l = 0;
        for (size_t j = 0; j < y.size(); ++j) l += dy[j] * y[j];
        return l;
      };
      const double fd = (f_at(x[i] + h) - f_at(x[i] - h)) / (2 * h);
      INFO("act " << ops::ActTypeName(t) << " element " << i << " x " << x[i]);
      CHECK(std::fabs(fd - dx[i]) <= 1e-6 * std::max(1.0, std::fabs(fd)));
    }
  }
}

TE_DEVICE_TEST_CASE("Activation rejects mismatched shapes", "[ops_nn][activation][error]") {
  ops::ActivationParam p;
  p.act_type = ActType::kTanh;
  TensorContainer<Device, 2, float> a(Shape2(3, 4)), b(Shape2(4, 3));
  a.set_stream(stream);
  b.set_stream(stream);
  RequireError([&] { ops::ActivationForward(p, a.view(), kWriteTo, b.view()); }, {"tanh", "(3,4)", "(4,3)"});
  RequireError([&] { ops::ActivationBackward(p, a.view(), a.view(), kWriteTo, b.view()); }, {"(3,4)", "(4,3)"});
}

// ---- FullyConnected -----------------------------------------------------------------------------------
struct FcReqs {
  OpReqType fwd = kWriteTo, data = kWriteTo, weight = kWriteTo, bias = kWriteTo;
};

// data of `dim` dimensions; padded rows only for 2-D data or without flatten (flattening N-D data needs it
// contiguous). Without flatten, the leading positions are the rows: the same (N, D) data in row-major order.
template <typename Device, typename DType, int dim>
void RunFc(Stream<Device>* stream, Shape<dim> xs, index_t K, bool bias, FcReqs r, bool padded, bool flatten = true) {
  ops::FullyConnectedParam p;
  p.num_hidden = K;
  p.no_bias = !bias;
  p.flatten = flatten;
  const auto shapes = ops::InferFullyConnectedShapes(p, xs);
  const index_t N = flatten ? xs[0] : xs.ProdShape(0, dim - 1), D = flatten ? xs.ProdShape(1, dim) : xs[dim - 1];
  REQUIRE(shapes.out == Shape2(N, K));
  REQUIRE(shapes.weight == Shape2(K, D));
  REQUIRE(shapes.bias == Shape1(bias ? K : 0));
  auto xh = Uniform<dim, DType>(xs);
  auto wh = Uniform<2, DType>(shapes.weight);
  auto bh = Uniform<1, DType>(Shape1(K));
  auto dyh = Uniform<2, DType>(shapes.out);
  TensorContainer<cpu, 2, DType> yh(shapes.out), dwh(shapes.weight);
  TensorContainer<cpu, dim, DType> dxh(xs);
  TensorContainer<cpu, 1, DType> dbh(Shape1(K));
  const Vec x = ToVec(xh.view()), w = ToVec(wh.view()), b = ToVec(bh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), r.fwd), dx0 = Prefill(dxh.view(), r.data), dw0 = Prefill(dwh.view(), r.weight),
            db0 = Prefill(dbh.view(), r.bias);
  Vec y(N * K, 0.0), dx(N * D, 0.0), dw(K * D, 0.0), db(K, 0.0);
  for (index_t n = 0; n < N; ++n)
    for (index_t k = 0; k < K; ++k) {
      double acc = bias ? b[k] : 0.0;
      for (index_t d = 0; d < D; ++d) {
        acc += x[n * D + d] * w[k * D + d];
        dx[n * D + d] += dy[n * K + k] * w[k * D + d];
        dw[k * D + d] += dy[n * K + k] * x[n * D + d];
      }
      y[n * K + k] = acc;
      db[k] += dy[n * K + k];
    }
  auto xd = Dev<Device>(xh.view(), stream, padded);
  auto dxd = Dev<Device>(dxh.view(), stream, padded);
  auto wd = Dev<Device>(wh.view(), stream);
  auto bd = Dev<Device>(bh.view(), stream);
  auto dyd = Dev<Device>(dyh.view(), stream);
  auto yd = Dev<Device>(yh.view(), stream, padded);
  auto dwd = Dev<Device>(dwh.view(), stream);
  auto dbd = Dev<Device>(dbh.view(), stream);
  ops::FullyConnectedForward(p, xd.view(), wd.view(), bd.view(), r.fwd, yd.view());
  ops::FullyConnectedBackward(p, dyd.view(), xd.view(), wd.view(), r.data, dxd.view(), r.weight, dwd.view(), r.bias,
                              dbd.view());
  INFO("data " << xs << " K " << K << " bias " << bias << " padded " << padded << " flatten " << flatten << " reqs "
               << OpReqName(r.fwd) << "/"
               << OpReqName(r.data) << "/" << OpReqName(r.weight) << "/" << OpReqName(r.bias) << " dtype "
               << DataType<DType>::name());
  auto tol = [](index_t terms) { return Tol<DType>() * std::max(1.0, std::sqrt(double(terms))); };
  CheckVec(ToHost(yd.view()).view(), Expect(r.fwd, y0, y), tol(D), "forward");
  CheckVec(ToHost(dxd.view()).view(), Expect(r.data, dx0, dx), tol(K), "data grad");
  CheckVec(ToHost(dwd.view()).view(), Expect(r.weight, dw0, dw), tol(N), "weight grad");
  CheckVec(ToHost(dbd.view()).view(), Expect(bias ? r.bias : kNullOp, db0, db), tol(N), "bias grad");
}

TE_DEVICE_TEST_CASE("FullyConnected matches the float64 reference", "[ops_nn][fully_connected]") {
  for (OpReqType req : kAllReqs) {
    FcReqs r{req, req, req, req};
    RunFc<Device, float, 2>(stream, Shape2(17, 33), 13, true, r, true);
    RunFc<Device, double, 4>(stream, Shape4(5, 3, 2, 7), 11, true, r, false);
  }
  // Mixed reqs: each output on its own.
  RunFc<Device, float, 2>(stream, Shape2(9, 20), 7, true, FcReqs{kAddTo, kNullOp, kWriteTo, kAddTo}, false);
  RunFc<Device, float, 3>(stream, Shape3(4, 5, 6), 3, true, FcReqs{kWriteTo, kAddTo, kNullOp, kNullOp}, false);
  RunFc<Device, float, 2>(stream, Shape2(9, 20), 7, false, FcReqs{kWriteTo, kWriteTo, kAddTo, kWriteTo}, true);
  // Odd sizes.
  RunFc<Device, double, 2>(stream, Shape2(1, 1), 1, true, FcReqs{}, false);
  RunFc<Device, float, 2>(stream, Shape2(3, 1000), 5, true, FcReqs{}, false);
  RunFc<Device, float, 2>(stream, Shape2(0, 6), 4, true, FcReqs{kWriteTo, kWriteTo, kWriteTo, kWriteTo}, false);
  RunFc<Device, half_t, 2>(stream, Shape2(6, 16), 8, true, FcReqs{}, false);
  RunFc<Device, bf16_t, 3>(stream, Shape3(6, 4, 4), 8, true, FcReqs{kAddTo, kAddTo, kAddTo, kAddTo}, false);
  // flatten = false: N-D data multiplied on its last axis, padded rows and all.
  RunFc<Device, float, 3>(stream, Shape3(4, 5, 6), 3, true, FcReqs{}, true, false);
  RunFc<Device, double, 4>(stream, Shape4(2, 3, 2, 7), 5, true, FcReqs{kAddTo, kWriteTo, kAddTo, kWriteTo}, true, false);
  RunFc<Device, float, 5>(stream, Shape5(2, 1, 3, 2, 4), 2, false, FcReqs{kWriteTo, kAddTo, kWriteTo, kNullOp}, false, false);
  RunFc<Device, half_t, 3>(stream, Shape3(3, 2, 16), 4, true, FcReqs{}, true, false);
  RunFc<Device, float, 2>(stream, Shape2(5, 9), 3, true, FcReqs{}, true, false);  // 2-D: the same either way
}

TE_DEVICE_TEST_CASE("FullyConnected gradients match finite differences", "[ops_nn][fully_connected]") {
  ops::FullyConnectedParam p;
  p.num_hidden = 3;
  const Shape<3> xs = Shape3(2, 2, 3);
  auto xh = Uniform<3, double>(xs);
  auto wh = Uniform<2, double>(Shape2(3, 6));
  auto bh = Uniform<1, double>(Shape1(3));
  auto dyh = Uniform<2, double>(Shape2(2, 3));
  const Vec dy = ToVec(dyh.view());
  // L = sum(dy * FC(x, W, b)) evaluated by the library's forward.
  auto loss = [&]() {
    auto xd = Dev<Device>(xh.view(), stream);
    auto wd = Dev<Device>(wh.view(), stream);
    auto bd = Dev<Device>(bh.view(), stream);
    TensorContainer<Device, 2, double> yd(Shape2(2, 3));
    yd.set_stream(stream);
    ops::FullyConnectedForward(p, xd.view(), wd.view(), bd.view(), kWriteTo, yd.view());
    const Vec y = ToVec(ToHost(yd.view()).view());
    double l = 0;
    for (size_t j = 0; j < y.size(); ++j) l += dy[j] * y[j];
    return l;
  };
  auto xd = Dev<Device>(xh.view(), stream);
  auto wd = Dev<Device>(wh.view(), stream);
  auto dyd = Dev<Device>(dyh.view(), stream);
  TensorContainer<Device, 3, double> dxd(xs);
  TensorContainer<Device, 2, double> dwd(Shape2(3, 6));
  TensorContainer<Device, 1, double> dbd(Shape1(3));
  dxd.set_stream(stream);
  dwd.set_stream(stream);
  dbd.set_stream(stream);
  ops::FullyConnectedBackward(p, dyd.view(), xd.view(), wd.view(), kWriteTo, dxd.view(), kWriteTo, dwd.view(), kWriteTo,
                              dbd.view());
  const Vec dx = ToVec(ToHost(dxd.view()).view()), dw = ToVec(ToHost(dwd.view()).view()),
            db = ToVec(ToHost(dbd.view()).view());
  auto check = [&](double* v, double analytic, const char* what) {
    const double h = 1e-6, keep = *v;
    *v = keep + h;
    const double lp = loss();
    *v = keep - h;
    const double lm = loss();
    *v = keep;
    const double fd = (lp - lm) / (2 * h);
    INFO(what << ": finite difference " << fd << " vs backward " << analytic);
    CHECK(std::fabs(fd - analytic) <= 1e-7 * std::max(1.0, std::fabs(fd)));
  };
  for (index_t i = 0; i < xs.Size(); ++i) check(xh.dptr_ + i, dx[i], "data");
  for (index_t i = 0; i < 18; ++i) check(wh.dptr_ + i, dw[i], "weight");
  for (index_t i = 0; i < 3; ++i) check(bh.dptr_ + i, db[i], "bias");
}

TE_DEVICE_TEST_CASE("FullyConnected names bad shapes and parameters", "[ops_nn][fully_connected][error]") {
  ops::FullyConnectedParam p;
  p.num_hidden = 4;
  TensorContainer<Device, 2, float> x(Shape2(3, 5)), w(Shape2(4, 6)), y(Shape2(3, 4)), wgood(Shape2(4, 5));
  TensorContainer<Device, 1, float> b(Shape1(4)), bbad(Shape1(3));
  for (auto* t : {&x, &w, &y, &wgood}) t->set_stream(stream);
  RequireError([&] { ops::FullyConnectedForward(p, x.view(), w.view(), b.view(), kWriteTo, y.view()); },
               {"weight", "(4,6)", "(4,5)"});
  RequireError([&] { ops::FullyConnectedForward(p, x.view(), wgood.view(), bbad.view(), kWriteTo, y.view()); },
               {"bias", "(3,)"});
  p.num_hidden = 0;
  RequireError([&] { ops::FullyConnectedForward(p, x.view(), wgood.view(), b.view(), kWriteTo, y.view()); },
               {"num_hidden = 0"});
  // N-D data with padded rows cannot be flattened.
  p.num_hidden = 4;
  TensorContainer<Device, 3, float> x3(true);
  x3.set_stream(stream);
  x3.Resize(Shape3(3, 1, 5));
  REQUIRE(!x3.CheckContiguous());
  RequireError([&] { ops::FullyConnectedForward(p, x3.view(), wgood.view(), b.view(), kWriteTo, y.view()); },
               {"contiguous", "(3,1,5)"});
}

// ---- SoftmaxOutput ------------------------------------------------------------------------------------
// Labels of type LType for N rows, K classes; returns them as integers too.
template <typename LType>
TensorContainer<cpu, 1, LType> RandomLabels(index_t N, index_t K, std::vector<index_t>* out) {
  TensorContainer<cpu, 1, LType> l(Shape1(N));
  std::uniform_int_distribution<index_t> u(0, K - 1);
  out->clear();
  for (index_t i = 0; i < N; ++i) {
    out->push_back(u(Rng()));
    l.dptr_[i] = static_cast<LType>(static_cast<float>(out->back()));
  }
  return l;
}

template <typename Device, typename DType, typename LType>
void RunSoftmax(Stream<Device>* stream, index_t N, index_t K, double offset, double spread, bool padded,
                OpReqType req_loss, OpReqType req_grad, double grad_scale, bool with_loss_grad) {
  ops::SoftmaxOutputParam p;
  p.grad_scale = grad_scale;
  auto xh = Uniform<2, DType>(Shape2(N, K), offset - spread, offset + spread);
  std::vector<index_t> lab;
  auto lh = RandomLabels<LType>(N, K, &lab);
  const Vec x = ToVec(xh.view());
  // Reference: stable softmax and mean cross-entropy in double.
  Vec prob(N * K), grad(N * K);
  double loss = 0;
  for (index_t n = 0; n < N; ++n) {
    double m = -INFINITY, s = 0;
    for (index_t k = 0; k < K; ++k) m = std::max(m, x[n * K + k]);
    for (index_t k = 0; k < K; ++k) s += std::exp(x[n * K + k] - m);
    for (index_t k = 0; k < K; ++k) prob[n * K + k] = std::exp(x[n * K + k] - m) / s;
    loss += m + std::log(s) - x[n * K + lab[n]];
  }
  if (N > 0) loss /= N;
  TensorContainer<cpu, 1, DType> lgh(Shape1(1));
  lgh.dptr_[0] = DType(1.75f);
  const double lg = with_loss_grad ? 1.75 : 1.0;
  for (index_t n = 0; n < N; ++n)
    for (index_t k = 0; k < K; ++k)
      grad[n * K + k] = (prob[n * K + k] - (k == lab[n] ? 1.0 : 0.0)) * grad_scale / N * lg;

  TensorContainer<cpu, 2, DType> ph(Shape2(N, K)), gh(Shape2(N, K));
  TensorContainer<cpu, 1, DType> lossh(Shape1(1));
  Poison(ph.view());
  const Vec loss0 = Prefill(lossh.view(), req_loss), g0 = Prefill(gh.view(), req_grad);
  auto xd = Dev<Device>(xh.view(), stream, padded);
  auto pd = Dev<Device>(ph.view(), stream, padded);
  auto gd = Dev<Device>(gh.view(), stream, padded);
  auto lossd = Dev<Device>(lossh.view(), stream);
  auto ld = Dev<Device>(lh.view(), stream);
  auto lgd = Dev<Device>(lgh.view(), stream);
  ops::SoftmaxOutputForward(p, xd.view(), ld.view(), kWriteTo, pd.view(), req_loss, lossd.view());
  if (with_loss_grad) {
    ops::SoftmaxOutputBackward(p, pd.view(), ld.view(), lgd.view(), req_grad, gd.view());
  } else {
    ops::SoftmaxOutputBackward(p, pd.view(), ld.view(), req_grad, gd.view());
  }
  INFO("N " << N << " K " << K << " offset " << offset << " spread " << spread << " padded " << padded << " reqs "
            << OpReqName(req_loss) << "/" << OpReqName(req_grad) << " dtype " << DataType<DType>::name()
            << " label " << typeid(LType).name());
  const double tol = Tol<DType>() * std::max(1.0, std::sqrt(double(K)));
  CheckVec(ToHost(pd.view()).view(), prob, tol, "prob");
  CheckVec(ToHost(lossd.view()).view(), Expect(req_loss, loss0, Vec{loss}), tol, "loss");
  CheckVec(ToHost(gd.view()).view(), Expect(req_grad, g0, grad), tol, "grad");
}

TE_DEVICE_TEST_CASE("SoftmaxOutput matches the float64 reference", "[ops_nn][softmax_output]") {
  for (OpReqType req : kAllReqs) {
    RunSoftmax<Device, float, float>(stream, 17, 10, 0, 3, true, req, req, 1.0, false);
    RunSoftmax<Device, double, int32_t>(stream, 5, 7, 0, 3, false, req, req, 0.5, true);
  }
  // Large logits: naive exp would overflow; and a wide spread whose small probabilities underflow.
  RunSoftmax<Device, float, int32_t>(stream, 9, 13, 500, 40, false, kWriteTo, kWriteTo, 1.0, false);
  RunSoftmax<Device, double, double>(stream, 4, 6, -800, 300, false, kWriteTo, kWriteTo, 1.0, false);
  // Odd sizes.
  RunSoftmax<Device, float, float>(stream, 1, 1, 0, 1, false, kWriteTo, kWriteTo, 1.0, false);
  RunSoftmax<Device, float, int32_t>(stream, 3, 1000, 0, 5, true, kAddTo, kAddTo, 2.0, true);
  RunSoftmax<Device, double, int32_t>(stream, 1000, 3, 0, 2, false, kWriteTo, kWriteTo, 1.0, false);
  RunSoftmax<Device, float, float>(stream, 0, 5, 0, 1, false, kWriteTo, kWriteTo, 1.0, false);
  RunSoftmax<Device, half_t, half_t>(stream, 6, 10, 0, 3, false, kWriteTo, kAddTo, 1.0, false);
  RunSoftmax<Device, bf16_t, int32_t>(stream, 6, 10, 0, 3, true, kAddTo, kWriteTo, 1.0, true);
}

TE_DEVICE_TEST_CASE("SoftmaxOutput works in place and its gradient matches finite differences",
                    "[ops_nn][softmax_output]") {
  ops::SoftmaxOutputParam p;
  const index_t N = 3, K = 4;
  auto xh = Uniform<2, double>(Shape2(N, K), -2, 2);
  std::vector<index_t> lab;
  auto lh = RandomLabels<int32_t>(N, K, &lab);
  auto ld = Dev<Device>(lh.view(), stream);
  auto loss_at = [&]() {
    auto xd = Dev<Device>(xh.view(), stream);
    TensorContainer<Device, 1, double> lossd(Shape1(1));
    lossd.set_stream(stream);
    // prob overwrites data in place.
    ops::SoftmaxOutputForward(p, xd.view(), ld.view(), kWriteInplace, xd.view(), kWriteTo, lossd.view());
    return ToVec(ToHost(lossd.view()).view())[0];
  };
  auto xd = Dev<Device>(xh.view(), stream);
  TensorContainer<Device, 1, double> lossd(Shape1(1));
  lossd.set_stream(stream);
  ops::SoftmaxOutputForward(p, xd.view(), ld.view(), kWriteInplace, xd.view(), kWriteTo, lossd.view());
  ops::SoftmaxOutputBackward(p, xd.view(), ld.view(), kWriteInplace, xd.view());  // the gradient over prob
  const Vec g = ToVec(ToHost(xd.view()).view());
  for (index_t i = 0; i < N * K; ++i) {
    const double h = 1e-6, keep = xh.dptr_[i];
    xh.dptr_[i] = keep + h;
    const double lp = loss_at();
    xh.dptr_[i] = keep - h;
    const double lm = loss_at();
    xh.dptr_[i] = keep;
    const double fd = (lp - lm) / (2 * h);
    INFO("element " << i << ": finite difference " << fd << " vs backward " << g[i]);
    CHECK(std::fabs(fd - g[i]) <= 1e-7);
  }
}

TE_DEVICE_TEST_CASE("SoftmaxOutput names bad shapes, labels and reqs", "[ops_nn][softmax_output][error]") {
  ops::SoftmaxOutputParam p;
  TensorContainer<Device, 2, float> x(Shape2(3, 4)), prob(Shape2(3, 4)), prob_bad(Shape2(3, 5));
  TensorContainer<Device, 1, float> loss(Shape1(1)), lab_short(Shape1(2));
  for (auto* t : {&x, &prob, &prob_bad}) t->set_stream(stream);
  loss.set_stream(stream);
  lab_short.set_stream(stream);
  RequireError([&] { ops::SoftmaxOutputForward(p, x.view(), lab_short.view(), kWriteTo, prob.view(), kWriteTo, loss.view()); },
               {"label", "(2,)", "(3,4)"});
  TensorContainer<cpu, 1, float> lab_h(Shape1(3));
  lab_h.dptr_[0] = 0;
  lab_h.dptr_[1] = 3;
  lab_h.dptr_[2] = 1;
  auto lab = Dev<Device>(lab_h.view(), stream);
  RequireError([&] { ops::SoftmaxOutputForward(p, x.view(), lab.view(), kWriteTo, prob_bad.view(), kWriteTo, loss.view()); },
               {"prob", "(3,5)", "(3,4)"});
  RequireError([&] { ops::SoftmaxOutputForward(p, x.view(), lab.view(), kAddTo, prob.view(), kWriteTo, loss.view()); },
               {"kAddTo"});
  // A bad label is an Error on both devices: the CPU checks before it writes anything; the GPU's kernels
  // record it and the stream's next Wait() throws it, once.
  auto fails_by_wait = [&](const std::function<void()>& run, std::vector<std::string> parts) {
    RequireError([&] { run(), WaitStream(stream); }, parts);
    WaitStream(stream);  // reported once: nothing left to throw
  };
  lab_h.dptr_[1] = 4;
  auto lab4 = Dev<Device>(lab_h.view(), stream);
  fails_by_wait([&] { ops::SoftmaxOutputForward(p, x.view(), lab4.view(), kWriteTo, prob.view(), kWriteTo, loss.view()); },
                {"SoftmaxOutput: label[1] = 4", "[0, 4)"});
  lab_h.dptr_[1] = 1.5f;
  auto lab15 = Dev<Device>(lab_h.view(), stream);
  fails_by_wait([&] { ops::SoftmaxOutputBackward(p, prob.view(), lab15.view(), kWriteTo, prob.view()); },
                {"label[1] = 1.5"});
  TensorContainer<cpu, 1, int32_t> ilab_h(Shape1(3), 0);
  ilab_h.dptr_[2] = std::numeric_limits<int32_t>::min();
  auto ilab = Dev<Device>(ilab_h.view(), stream);
  TensorContainer<Device, 1, float> loss_grad(Shape1(1), 1.f);
  loss_grad.set_stream(stream);
  fails_by_wait([&] { ops::SoftmaxOutputBackward(p, prob.view(), ilab.view(), loss_grad.view(), kAddTo, prob.view()); },
                {"label[2] = -2147483648", "[0, 4)"});
  // With good labels again, the same stream runs and waits cleanly.
  lab_h.dptr_[1] = 3;
  auto lab_ok = Dev<Device>(lab_h.view(), stream);
  ops::SoftmaxOutputForward(p, x.view(), lab_ok.view(), kWriteTo, prob.view(), kWriteTo, loss.view());
  WaitStream(stream);
}

// ---- Pooling ------------------------------------------------------------------------------------------
using ops::PoolType;
using ops::PoolingConvention;
using IVec = std::vector<index_t>;

struct PoolCase {
  IVec kernel, stride, pad, pad_end, dilate;
  ops::ConvPadding padding = ops::ConvPadding::kExplicit;
  PoolType type = PoolType::kMax;
  PoolingConvention conv = PoolingConvention::kValid;
  bool global = false, include_pad = true;
  PadMode pad_mode = PadMode::kConstant;
  std::optional<double> pad_value;
};

ops::PoolingParam ToParam(const PoolCase& c) {
  ops::PoolingParam p;
  p.kernel = c.kernel;
  p.stride = c.stride;
  p.pad = c.pad;
  p.pad_end = c.pad_end;
  p.dilate = c.dilate;
  p.padding = c.padding;
  p.pool_type = c.type;
  p.pooling_convention = c.conv;
  p.global_pool = c.global;
  p.count_include_pad = c.include_pad;
  p.pad_mode = c.pad_mode;
  p.pad_value = c.pad_value;
  return p;
}

// The float64 reference, written from the definition: every kernel tap of every window is classified as
// a real element, padding (inside the padded image) or beyond it (full convention's clipped windows).
struct RefPool {
  index_t planes = 1, in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  index_t pe[3] = {0, 0, 0}, d[3] = {1, 1, 1};  // padding after, dilation
  bool is_max = true, include_pad = true;
  // A border that is data: every tap reads the element RefPadIndex maps it to, or `value` on a constant
  // border, windows past the padding included.
  bool border_data = false;
  PadMode mode = PadMode::kConstant;
  double value = 0;
  // f(output flat index, input flat index, or -1 for padding that is no data, -2 for a constant border
  // that is), over taps inside the padded image (every tap when the border is data).
  template <typename F>
  void ForEachTap(F f) const {
    for (index_t n = 0; n < planes; ++n)
      for (index_t od = 0; od < out[0]; ++od)
        for (index_t oh = 0; oh < out[1]; ++oh)
          for (index_t ow = 0; ow < out[2]; ++ow) {
            const index_t o = ((n * out[0] + od) * out[1] + oh) * out[2] + ow;
            for (index_t a = 0; a < k[0]; ++a)
              for (index_t b = 0; b < k[1]; ++b)
                for (index_t c = 0; c < k[2]; ++c) {
                  const index_t z = od * s[0] - p[0] + a * d[0], y = oh * s[1] - p[1] + b * d[1],
                                x = ow * s[2] - p[2] + c * d[2];
                  if (border_data) {
                    const index_t mz = RefPadIndex(z, in[0], mode), my = RefPadIndex(y, in[1], mode),
                                  mx = RefPadIndex(x, in[2], mode);
                    f(o, mz < 0 || my < 0 || mx < 0 ? index_t(-2) : ((n * in[0] + mz) * in[1] + my) * in[2] + mx);
                    continue;
                  }
                  if (z >= in[0] + pe[0] || y >= in[1] + pe[1] || x >= in[2] + pe[2]) continue;
                  const bool real = z >= 0 && y >= 0 && x >= 0 && z < in[0] && y < in[1] && x < in[2];
                  f(o, real ? ((n * in[0] + z) * in[1] + y) * in[2] + x : index_t(-1));
                }
          }
  }
  // Max pooling's argmax: the first tap (row-major) holding the window's largest value.
  std::vector<int64_t> Argmax(const Vec& x) const {
    std::vector<int64_t> at(static_cast<size_t>(planes * out[0] * out[1] * out[2]), -1);
    ForEachTap([&](index_t o, index_t i) {
      if (i >= 0 && (at[size_t(o)] < 0 || x[size_t(i)] > x[size_t(at[size_t(o)])])) at[size_t(o)] = i;
    });
    return at;
  }
  void Run(const Vec& x, const Vec& dy, Vec* y, Vec* dx) const {
    const size_t nout = static_cast<size_t>(planes * out[0] * out[1] * out[2]);
    Vec acc(nout, is_max ? -INFINITY : 0.0), count(nout, 0.0);
    ForEachTap([&](index_t o, index_t i) {
      if (i == -1 && !include_pad) return;
      count[o] += 1;
      if (i == -1) return;
      const double v = i == -2 ? value : x[i];
      acc[o] = is_max ? std::max(acc[o], v) : acc[o] + v;
    });
    *y = acc;
    if (!is_max)
      for (size_t o = 0; o < nout; ++o) (*y)[o] = acc[o] / count[o];
    dx->assign(x.size(), 0.0);
    ForEachTap([&](index_t o, index_t i) {
      if (i < 0) return;
      if (is_max) {
        if (x[i] == (*y)[o]) (*dx)[i] += dy[o];  // every tie receives the gradient
      } else {
        (*dx)[i] += dy[o] / count[o];
      }
    });
  }
};

template <int dim>
RefPool MakeRefPool(const PoolCase& c, const Shape<dim>& xs, int nd) {
  RefPool r;
  r.is_max = c.type == PoolType::kMax;
  r.include_pad = c.include_pad;
  r.border_data = c.pad_mode != PadMode::kConstant || c.pad_value.has_value();
  r.mode = c.pad_mode;
  r.value = c.pad_value.value_or(0.0);
  for (int i = 0; i < dim - nd; ++i) r.planes *= xs[i];
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    const index_t in = xs[dim - nd + i];
    r.in[j] = in;
    r.k[j] = c.global ? in : c.kernel[i];
    r.s[j] = c.global || c.stride.empty() ? 1 : c.stride[i];
    r.d[j] = c.global || c.dilate.empty() ? 1 : c.dilate[i];
    r.p[j] = c.global || c.pad.empty() ? 0 : c.pad[i];
    r.pe[j] = c.global || c.pad_end.empty() ? r.p[j] : c.pad_end[i];
    const index_t extent = (r.k[j] - 1) * r.d[j] + 1;
    if (c.padding == ops::ConvPadding::kSameUpper || c.padding == ops::ConvPadding::kSameLower) {
      r.out[j] = (in + r.s[j] - 1) / r.s[j];
      const index_t total = std::max<index_t>(0, (r.out[j] - 1) * r.s[j] + extent - in);
      r.p[j] = c.padding == ops::ConvPadding::kSameUpper ? total / 2 : (total + 1) / 2;  // the odd one after / before
      r.pe[j] = total - r.p[j];
      continue;
    }
    if (c.padding == ops::ConvPadding::kValid) r.p[j] = r.pe[j] = 0;
    const index_t room = in + r.p[j] + r.pe[j] - extent;
    if (c.conv == PoolingConvention::kValid) {
      r.out[j] = room / r.s[j] + 1;
    } else {
      r.out[j] = (room + r.s[j] - 1) / r.s[j] + 1;
      if ((r.out[j] - 1) * r.s[j] >= in + r.p[j]) --r.out[j];
    }
  }
  return r;
}

template <typename Device, typename DType, int dim>
void RunPool(Stream<Device>* stream, const PoolCase& c, Shape<dim> xs, int nd, OpReqType req, bool padded) {
  const ops::PoolingParam p = ToParam(c);
  const RefPool r = MakeRefPool(c, xs, nd);
  Shape<dim> ys = xs;
  for (int i = 0; i < nd; ++i) ys[dim - nd + i] = r.out[3 - nd + i];
  REQUIRE(ops::InferPoolingShape(p, xs) == ys);
  // Integers over a range wide enough that a window's maximum is mostly unique.
  const bool integral = std::is_integral<DType>::value;
  auto xh = Uniform<dim, DType>(xs, integral ? (std::is_unsigned<DType>::value ? 0 : -100) : -1, integral ? 100 : 1);
  auto dyh = Uniform<dim, DType>(ys, integral ? (std::is_unsigned<DType>::value ? 0 : -5) : -1, integral ? 5 : 1);
  TensorContainer<cpu, dim, DType> yh(ys), dxh(xs);
  const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), req), dx0 = Prefill(dxh.view(), req);
  Vec y, dx;
  r.Run(x, dy, &y, &dx);
  auto xd = Dev<Device>(xh.view(), stream, padded);
  auto dxd = Dev<Device>(dxh.view(), stream, padded);
  auto yd = Dev<Device>(yh.view(), stream, padded);
  auto dyd = Dev<Device>(dyh.view(), stream, padded);
  INFO("data " << xs << " out " << ys << " kernel " << r.k[0] << "x" << r.k[1] << "x" << r.k[2] << " stride "
               << r.s[0] << "x" << r.s[1] << "x" << r.s[2] << " pad " << r.p[0] << "x" << r.p[1] << "x" << r.p[2]
               << " pad_end " << r.pe[0] << "x" << r.pe[1] << "x" << r.pe[2] << " dilate " << r.d[0] << "x" << r.d[1]
               << "x" << r.d[2] << " padding " << ops::ConvPaddingName(c.padding)
               << (c.type == PoolType::kMax ? " max" : " avg") << (c.include_pad ? "" : " exclude-pad")
               << (c.conv == PoolingConvention::kFull ? " full" : " valid") << (c.global ? " global" : "")
               << " req " << OpReqName(req) << " padded " << padded << " dtype " << DataType<DType>::name());
  ops::PoolingForward(p, xd.view(), req, yd.view());
  const double tol = 2 * Tol<DType>();
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, y), tol, "forward");
  if (c.type == PoolType::kMax && !r.border_data) {  // the same maximum with where it is
    const std::vector<int64_t> at = r.Argmax(x);
    TensorContainer<Device, dim, DType> y2(ys);
    TensorContainer<Device, dim, int64_t> idx(ys);
    y2.set_stream(stream);
    idx.set_stream(stream);
    ops::PoolingForwardWithIndices(p, xd.view(), kWriteTo, y2.view(), idx.view());
    CheckVec(ToHost(y2.view()).view(), y, tol, "forward with indices");
    CheckVec(ToHost(idx.view()).view(), Vec(at.begin(), at.end()), 0, "indices");
  }
  // Backward reads the forward output: give it the exact one (kNullOp / kAddTo leave yd elsewhere).
  TensorContainer<cpu, dim, DType> yexact(ys);
  ForEachIndex(ys, [&](const Shape<dim>& i) {
    yexact.dptr_[Flat(ys, i)] = static_cast<DType>(static_cast<float>(y[Flat(ys, i)]));
    if constexpr (std::is_same<DType, double>::value) yexact.dptr_[Flat(ys, i)] = y[Flat(ys, i)];
  });
  auto yed = Dev<Device>(yexact.view(), stream, padded);
  if (r.is_max && r.border_data && r.mode != PadMode::kConstant && req != kNullOp &&
      (r.p[0] + r.p[1] + r.p[2] > 0 || r.pe[0] + r.pe[1] + r.pe[2] > 0)) {
    // A window can hold an element and its copy in the border: max pooling's backward refuses it.
    RequireError([&] { ops::PoolingBackward(p, dyd.view(), xd.view(), yed.view(), req, dxd.view()); },
                 {"Pooling backward", "max pooling with pad_mode", PadModeName(r.mode)});
    return;
  }
  ops::PoolingBackward(p, dyd.view(), xd.view(), yed.view(), req, dxd.view());
  CheckVec(ToHost(dxd.view()).view(), Expect(req, dx0, dx), tol * 4, "backward");
}

PoolCase PC(IVec k, IVec s, IVec pad, PoolType t, PoolingConvention conv = PoolingConvention::kValid,
            bool include_pad = true) {
  PoolCase c;
  c.kernel = k;
  c.stride = s;
  c.pad = pad;
  c.type = t;
  c.conv = conv;
  c.include_pad = include_pad;
  return c;
}
const PoolType kPoolTypes[] = {PoolType::kMax, PoolType::kAvg};
const auto kValidConv = PoolingConvention::kValid;
const auto kFullConv = PoolingConvention::kFull;

TE_DEVICE_TEST_CASE("Pooling 2-D matches the float64 reference", "[ops_nn][pooling]") {
  for (PoolType t : kPoolTypes) {
    // The core pool / unpool path (no padding, valid convention), every req.
    for (OpReqType req : kAllReqs) RunPool<Device, float, 4>(stream, PC({2, 2}, {2, 2}, {}, t), Shape4(2, 3, 8, 9), 2, req, true);
    RunPool<Device, double, 4>(stream, PC({3, 2}, {1, 2}, {}, t), Shape4(2, 3, 7, 9), 2, kWriteTo, false);
    RunPool<Device, float, 3>(stream, PC({3, 3}, {2, 2}, {0, 0}, t), Shape3(5, 9, 17), 2, kAddTo, false);  // unbatched
    // The general path: padding and the full convention, every req.
    for (OpReqType req : kAllReqs) RunPool<Device, float, 4>(stream, PC({3, 3}, {2, 2}, {1, 1}, t), Shape4(2, 3, 7, 9), 2, req, true);
    RunPool<Device, double, 4>(stream, PC({3, 3}, {2, 2}, {1, 2}, t, kFullConv), Shape4(1, 2, 8, 10), 2, kWriteTo, false);
    RunPool<Device, double, 4>(stream, PC({3, 3}, {2, 2}, {}, t, kFullConv), Shape4(1, 2, 8, 10), 2, kWriteTo, false);
    RunPool<Device, double, 4>(stream, PC({3, 2}, {3, 1}, {2, 1}, t, kValidConv, false), Shape4(2, 2, 7, 5), 2, kAddTo, false);
    RunPool<Device, double, 4>(stream, PC({4, 4}, {3, 3}, {1, 1}, t, kFullConv, false), Shape4(1, 3, 9, 11), 2, kWriteTo, true);
    // Global pooling, and odd sizes.
    PoolCase g = PC({}, {}, {}, t);
    g.global = true;
    RunPool<Device, float, 4>(stream, g, Shape4(3, 5, 7, 6), 2, kWriteTo, true);
    PoolCase g2 = PC({9, 9}, {4}, {7}, t);  // global: the kernel's length says 2-D, its values are ignored
    g2.global = true;
    RunPool<Device, float, 3>(stream, g2, Shape3(4, 5, 6), 2, kAddTo, false);
    RunPool<Device, float, 4>(stream, PC({1, 1}, {}, {}, t), Shape4(1, 1, 1, 1), 2, kWriteTo, false);
    RunPool<Device, float, 4>(stream, PC({2, 2}, {2, 2}, {1, 1}, t), Shape4(1, 1, 1, 1), 2, kWriteTo, false);
    RunPool<Device, float, 4>(stream, PC({3, 3}, {1, 1}, {}, t), Shape4(0, 3, 5, 5), 2, kWriteTo, false);
    RunPool<Device, float, 4>(stream, PC({2, 2}, {2, 2}, {}, t), Shape4(1, 1, 3, 1000), 2, kWriteTo, false);
    // Low precision (bf16 has few levels: max ties are likely, and every tie receives the gradient).
    RunPool<Device, half_t, 4>(stream, PC({2, 2}, {2, 2}, {}, t), Shape4(2, 3, 6, 6), 2, kWriteTo, false);
    RunPool<Device, bf16_t, 4>(stream, PC({3, 3}, {2, 2}, {1, 1}, t), Shape4(2, 3, 7, 7), 2, kAddTo, false);
  }
}

TE_DEVICE_TEST_CASE("Pooling 1-D and 3-D match the float64 reference", "[ops_nn][pooling]") {
  for (PoolType t : kPoolTypes) {
    for (OpReqType req : kAllReqs) RunPool<Device, float, 3>(stream, PC({2}, {2}, {}, t), Shape3(2, 3, 11), 1, req, true);
    RunPool<Device, double, 3>(stream, PC({3}, {2}, {1}, t), Shape3(2, 3, 11), 1, kWriteTo, false);
    RunPool<Device, double, 3>(stream, PC({4}, {3}, {2}, t, kFullConv, false), Shape3(2, 2, 13), 1, kAddTo, true);
    PoolCase g = PC({}, {}, {}, t);
    g.global = true;
    RunPool<Device, float, 3>(stream, g, Shape3(3, 4, 17), 1, kWriteTo, false);
    for (OpReqType req : kAllReqs)
      RunPool<Device, float, 5>(stream, PC({2, 3, 3}, {2, 1, 2}, {1, 1, 0}, t), Shape5(1, 2, 5, 6, 7), 3, req, true);
    RunPool<Device, double, 5>(stream, PC({2, 2, 2}, {2, 2, 2}, {}, t, kFullConv), Shape5(2, 1, 5, 5, 3), 3, kWriteTo, false);
    // A depth of 1 with depth padding: two windows along the depth cover its one slice.
    RunPool<Device, double, 5>(stream, PC({2, 2, 2}, {1, 2, 2}, {1, 0, 1}, t, kValidConv, false), Shape5(2, 2, 1, 4, 5), 3,
                               kAddTo, false);
    // Tiling windows (kernel = stride, no padding) in 3-D: each input in at most one window.
    RunPool<Device, float, 5>(stream, PC({2, 2, 2}, {2, 2, 2}, {}, t), Shape5(1, 3, 4, 6, 5), 3, kWriteTo, true);
    RunPool<Device, double, 5>(stream, PC({3, 2, 3}, {2, 2, 1}, {1, 1, 1}, t, kValidConv, false), Shape5(1, 2, 4, 5, 6), 3,
                               kWriteTo, false);
    RunPool<Device, double, 5>(stream, g, Shape5(2, 3, 3, 4, 5), 3, kAddTo, false);
    RunPool<Device, half_t, 5>(stream, PC({2, 2, 2}, {1, 1, 1}, {1, 0, 1}, t), Shape5(1, 2, 3, 4, 5), 3, kWriteTo, false);
  }
}

// Max pooling of integers (the int8 / uint8 outputs take kAddTo: the poison other reqs prefill with does not fit
// them); average pooling of integers is an Error naming the dtype.
TE_DEVICE_TEST_CASE("Pooling max takes integer types", "[ops_nn][pooling]") {
  const PoolType kMax = PoolType::kMax;
  for (OpReqType req : kAllReqs)
    RunPool<Device, int32_t, 4>(stream, PC({3, 3}, {2, 2}, {1, 1}, kMax), Shape4(2, 3, 7, 9), 2, req, true);
  RunPool<Device, int64_t, 5>(stream, PC({2, 3, 2}, {1, 2, 2}, {1, 1, 0}, kMax, kFullConv), Shape5(1, 2, 4, 5, 6), 3,
                              kWriteTo, false);
  RunPool<Device, int8_t, 3>(stream, PC({3}, {2}, {1}, kMax), Shape3(2, 3, 11), 1, kAddTo, false);
  RunPool<Device, uint8_t, 4>(stream, PC({2, 2}, {2, 2}, {}, kMax), Shape4(2, 2, 6, 8), 2, kAddTo, true);
  PoolCase g = PC({}, {}, {}, kMax);
  g.global = true;
  RunPool<Device, int32_t, 4>(stream, g, Shape4(2, 3, 5, 4), 2, kWriteTo, false);
  TensorContainer<Device, 4, int32_t> x(Shape4(1, 2, 4, 4)), y(Shape4(1, 2, 2, 2));
  x.set_stream(stream);
  y.set_stream(stream);
  const ops::PoolingParam avg = ToParam(PC({2, 2}, {2, 2}, {}, PoolType::kAvg));
  RequireError([&] { ops::PoolingForward(avg, x.view(), kWriteTo, y.view()); },
               {"Pooling forward", "average pooling of int32 data", "max pooling only"});
  RequireError([&] { ops::PoolingBackward(avg, y.view(), x.view(), y.view(), kWriteTo, x.view()); },
               {"Pooling backward", "int32"});
}

// A case with padding after that differs from the padding before, dilation, or a padding mode.
PoolCase PCX(IVec k, IVec s, IVec pad, IVec pad_end, IVec dilate, PoolType t,
             ops::ConvPadding padding = ops::ConvPadding::kExplicit, PoolingConvention conv = kValidConv,
             bool include_pad = true) {
  PoolCase c = PC(k, s, pad, t, conv, include_pad);
  c.pad_end = pad_end;
  c.dilate = dilate;
  c.padding = padding;
  return c;
}

TE_DEVICE_TEST_CASE("Pooling with asymmetric padding, dilation, SAME_UPPER / SAME_LOWER and VALID", "[ops_nn][pooling]") {
  using ops::ConvPadding;
  for (PoolType t : kPoolTypes) {
    for (bool include_pad : {true, false}) {
      // Asymmetric padding, both conventions.
      for (OpReqType req : kAllReqs)
        RunPool<Device, float, 4>(stream, PCX({3, 3}, {2, 2}, {0, 2}, {2, 1}, {}, t, ConvPadding::kExplicit, kValidConv,
                                              include_pad), Shape4(2, 3, 7, 8), 2, req, true);
      RunPool<Device, double, 4>(stream, PCX({3, 2}, {2, 3}, {1, 0}, {0, 1}, {}, t, ConvPadding::kExplicit, kFullConv,
                                             include_pad), Shape4(1, 2, 8, 10), 2, kAddTo, false);
      // Dilation, with padding and both conventions; 1-D and 3-D too.
      RunPool<Device, double, 4>(stream, PCX({3, 2}, {1, 2}, {1, 1}, {2, 0}, {2, 3}, t, ConvPadding::kExplicit,
                                             kValidConv, include_pad), Shape4(2, 2, 9, 10), 2, kWriteTo, true);
      RunPool<Device, double, 4>(stream, PCX({2, 3}, {3, 2}, {1, 2}, {}, {3, 2}, t, ConvPadding::kExplicit, kFullConv,
                                             include_pad), Shape4(1, 3, 11, 9), 2, kAddTo, false);
      RunPool<Device, double, 3>(stream, PCX({3}, {2}, {2}, {1}, {2}, t, ConvPadding::kExplicit, kValidConv,
                                             include_pad), Shape3(2, 3, 13), 1, kWriteTo, false);
      RunPool<Device, float, 5>(stream, PCX({2, 2, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}, {2, 1, 2}, t,
                                            ConvPadding::kExplicit, kValidConv, include_pad), Shape5(1, 2, 5, 6, 5), 3,
                                kAddTo, true);
      // The padding modes: SAME (ceil(in / stride) windows, the odd padding after or before), VALID.
      for (ConvPadding m : {ConvPadding::kSameUpper, ConvPadding::kSameLower, ConvPadding::kValid}) {
        RunPool<Device, double, 4>(stream, PCX({3, 4}, {2, 3}, {}, {}, {}, t, m, kValidConv, include_pad),
                                   Shape4(2, 2, 8, 10), 2, kWriteTo, false);
        RunPool<Device, double, 3>(stream, PCX({2}, {1}, {}, {}, {3}, t, m, kFullConv, include_pad), Shape3(2, 2, 9), 1,
                                   kAddTo, true);
      }
    }
    RunPool<Device, half_t, 4>(stream, PCX({3, 3}, {2, 1}, {1, 0}, {0, 2}, {2, 2}, t), Shape4(1, 2, 9, 8), 2, kWriteTo,
                               false);
    RunPool<Device, bf16_t, 4>(stream, PCX({2, 2}, {2, 2}, {}, {}, {}, t, ops::ConvPadding::kSameLower), Shape4(1, 2, 7, 5),
                               2, kAddTo, false);
  }
  RunPool<Device, int32_t, 4>(stream, PCX({3, 3}, {2, 2}, {}, {}, {2, 1}, PoolType::kMax, ops::ConvPadding::kSameUpper),
                              Shape4(2, 2, 7, 6), 2, kWriteTo, false);
}

// Border modes (pad_mode, pad_value): the border is data the windows read, in every mode, both conventions
// (full: windows past the padding read the border further), SAME padding, dilation, 1-D to 3-D, integers.
TE_DEVICE_TEST_CASE("Pooling border modes: constant value, edge, reflect and wrap", "[ops_nn][pooling][border]") {
  using ops::ConvPadding;
  struct Border {
    PadMode mode;
    std::optional<double> value;
  };
  const Border borders[] = {{PadMode::kConstant, 0.5}, {PadMode::kConstant, 0.0}, {PadMode::kEdge, {}},
                            {PadMode::kReflect, {}}, {PadMode::kWrap, {}}};
  size_t i = 0;
  for (const Border& b : borders) {
    for (PoolType t : kPoolTypes) {
      auto with = [&](PoolCase c) {
        c.pad_mode = b.mode;
        c.pad_value = b.value;
        return c;
      };
      INFO("border " << PadModeName(b.mode) << (b.value ? " with a value" : ""));
      RunPool<Device, float, 4>(stream, with(PC({3, 3}, {2, 2}, {1, 1}, t)), Shape4(2, 3, 7, 8), 2, kAllReqs[i++ % 4],
                                true);
      RunPool<Device, double, 4>(stream, with(PCX({3, 2}, {2, 3}, {2, 0}, {0, 1}, {}, t, ConvPadding::kExplicit,
                                                  kFullConv)), Shape4(1, 2, 8, 10), 2, kAddTo, false);
      RunPool<Device, double, 4>(stream, with(PCX({3, 2}, {1, 2}, {1, 1}, {2, 0}, {2, 3}, t)), Shape4(2, 2, 9, 10), 2,
                                 kWriteTo, true);
      RunPool<Device, double, 3>(stream, with(PCX({4}, {3}, {}, {}, {}, t, ConvPadding::kSameLower)), Shape3(2, 3, 5),
                                 1, kWriteTo, false);
      RunPool<Device, double, 3>(stream, with(PC({4}, {1}, {3}, t)), Shape3(1, 2, 2), 1, kWriteTo, false);  // wider than the data
      RunPool<Device, float, 5>(stream, with(PCX({2, 2, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}, {}, t)),
                                Shape5(1, 2, 3, 6, 5), 3, kWriteInplace, false);
      RunPool<Device, half_t, 4>(stream, with(PC({2, 2}, {1, 1}, {1, 1}, t)), Shape4(1, 2, 5, 6), 2, kWriteTo, false);
    }
    PoolCase c = PC({3, 3}, {2, 2}, {1, 1}, PoolType::kMax);
    c.pad_mode = b.mode;
    c.pad_value = b.value ? std::optional<double>(-3.0) : std::nullopt;  // an integer value for integer data
    RunPool<Device, int32_t, 4>(stream, c, Shape4(1, 2, 6, 7), 2, kWriteTo, false);
    RunPool<Device, int8_t, 4>(stream, c, Shape4(1, 2, 5, 5), 2, kAddTo, false);
  }
}

// Channels last with a border: the same numbers as channels first on the same data.
TE_DEVICE_TEST_CASE("Pooling border modes channels last match channels first", "[ops_nn][pooling][border][layout]") {
  for (PadMode mode : {PadMode::kReflect, PadMode::kEdge, PadMode::kConstant}) {
    for (PoolType t : kPoolTypes) {
      if (t == PoolType::kMax && mode != PadMode::kConstant) continue;  // no gradient there (a refused case)
      ops::PoolingParam p = ToParam(PCX({3, 2}, {2, 1}, {2, 1}, {1, 0}, {}, t));
      p.pad_mode = mode;
      if (mode == PadMode::kConstant) p.pad_value = -0.5;
      const Shape<4> xs = Shape4(2, 3, 6, 5), ys = ops::InferPoolingShape(p, xs);
      auto xh = Uniform<4, float>(xs);
      auto dyh = Uniform<4, float>(ys);
      auto xd = Dev<Device>(xh.view(), stream, false), dyd = Dev<Device>(dyh.view(), stream, false);
      TensorContainer<Device, 4, float> yd(ys), dxd(xs);
      yd.set_stream(stream), dxd.set_stream(stream);
      ops::PoolingForward(p, xd.view(), kWriteTo, yd.view());
      ops::PoolingBackward(p, dyd.view(), xd.view(), yd.view(), kWriteTo, dxd.view());
      const auto y = ToHost(yd.view()), dx = ToHost(dxd.view());

      ops::PoolingParam q = p;
      q.layout = ops::Layout::kNHWC;
      auto xl = Dev<Device>(Permuted(xh.view(), true, true, true).view(), stream, true);
      auto dyl = Dev<Device>(Permuted(dyh.view(), true, true, true).view(), stream, false);
      const Shape<4> xls = xl.shape_, yls = ops::InferPoolingShape(q, xls);
      TensorContainer<Device, 4, float> yl(yls), dxl(xls);
      yl.set_stream(stream), dxl.set_stream(stream);
      ops::PoolingForward(q, xl.view(), kWriteTo, yl.view());
      ops::PoolingBackward(q, dyl.view(), xl.view(), yl.view(), kWriteTo, dxl.view());
      INFO("border " << PadModeName(mode) << (t == PoolType::kMax ? " max" : " avg"));
      CheckVec(Permuted(ToHost(yl.view()).view(), true, false, true).view(), ToVec(y.view()), 1e-6, "forward");
      CheckVec(Permuted(ToHost(dxl.view()).view(), true, false, true).view(), ToVec(dx.view()), 1e-5, "backward");
    }
  }
}

TE_DEVICE_TEST_CASE("Pooling names bad padding, dilation and modes", "[ops_nn][pooling][error]") {
  using ops::ConvPadding;
  auto infer = [](const PoolCase& c, Shape<4> xs = Shape4(1, 2, 5, 5)) {
    return [c, xs] { ops::InferPoolingShape(ToParam(c), xs); };
  };
  RequireError(infer(PCX({2, 2}, {}, {1, 0}, {2, 0}, {}, PoolType::kMax)), {"pad_end[0] = 2", "kernel[0] = 2"});
  RequireError(infer(PCX({2, 2}, {}, {}, {1}, {}, PoolType::kMax)), {"pad_end (1,)", "1 entries", "2 spatial"});
  RequireError(infer(PCX({2, 2}, {}, {}, {}, {0, 1}, PoolType::kMax)), {"dilate[0] = 0"});
  RequireError(infer(PCX({2, 2}, {}, {1, 1}, {}, {}, PoolType::kAvg, ConvPadding::kSameUpper)),
               {"padding mode SAME_UPPER", "leave pad (1,1)"});
  RequireError(infer(PCX({2, 2}, {}, {}, {}, {}, PoolType::kAvg, static_cast<ConvPadding>(6))), {"unknown padding mode 6"});
  RequireError(infer(PCX({3, 2}, {}, {}, {}, {3, 1}, PoolType::kMax)), {"kernel[0] = 3 with dilate 3 spans 7", "(1,2,5,5)"});
  // Dilated windows stepping over the image: kernel 2, dilation 3 and padding 2 over 1 element: taps -2 and 1.
  RequireError(infer(PCX({2, 2}, {}, {2, 0}, {}, {3, 1}, PoolType::kMax), Shape4(1, 1, 1, 4)),
               {"window 0 of spatial dimension 0", "holds no element"});
  // Borders: a value with another mode, an unknown mode, nothing to repeat, the indices, an integer's value.
  PoolCase c = PC({2, 2}, {}, {1, 1}, PoolType::kMax);
  c.pad_mode = PadMode::kWrap;
  c.pad_value = 1.0;
  RequireError(infer(c), {"Pooling", "pad_value 1", "constant", "wrap"});
  c.pad_value.reset();
  c.pad_mode = static_cast<PadMode>(5);
  RequireError(infer(c), {"Pooling", "unknown pad_mode 5"});
  c.pad_mode = PadMode::kReflect;
  RequireError(infer(c, Shape4(1, 2, 0, 5)), {"reflect padding of spatial dimension 0", "(1,2,0,5)"});
  TensorContainer<Device, 4, float> x(Shape4(1, 2, 4, 4), 1.0f), y(Shape4(1, 2, 5, 5));
  TensorContainer<Device, 4, int64_t> idx(Shape4(1, 2, 5, 5));
  x.set_stream(stream), y.set_stream(stream), idx.set_stream(stream);
  RequireError([&] { ops::PoolingForwardWithIndices(ToParam(c), x.view(), kWriteTo, y.view(), idx.view()); },
               {"with indices", "reflect", "border data"});
  TensorContainer<Device, 4, int32_t> xi(Shape4(1, 2, 4, 4), 1), yi(Shape4(1, 2, 5, 5));
  xi.set_stream(stream), yi.set_stream(stream);
  c.pad_mode = PadMode::kConstant;
  c.pad_value = 2.5;
  RequireError([&] { ops::PoolingForward(ToParam(c), xi.view(), kWriteTo, yi.view()); },
               {"Pooling", "pad_value 2.5", "int32"});
}

// d/dx of sum(dy * pool(x)) by central differences on the library's forward, against its backward.
template <typename Device, int dim>
void PoolFiniteDifferences(Stream<Device>* stream, const PoolCase& c, Shape<dim> xs) {
  const ops::PoolingParam p = ToParam(c);
  const Shape<dim> ys = ops::InferPoolingShape(p, xs);
  auto xh = Uniform<dim, double>(xs);
  auto dyh = Uniform<dim, double>(ys);
  const Vec dy = ToVec(dyh.view());
  auto forward = [&](TensorContainer<Device, dim, double>* yd) {
    auto xd = Dev<Device>(xh.view(), stream);
    ops::PoolingForward(p, xd.view(), kWriteTo, yd->view());
  };
  TensorContainer<Device, dim, double> yd(ys), dxd(xs);
  yd.set_stream(stream);
  dxd.set_stream(stream);
  forward(&yd);
  auto xd = Dev<Device>(xh.view(), stream);
  auto dyd = Dev<Device>(dyh.view(), stream);
  ops::PoolingBackward(p, dyd.view(), xd.view(), yd.view(), kWriteTo, dxd.view());
  const Vec dx = ToVec(ToHost(dxd.view()).view());
  for (index_t i = 0; i < xs.Size(); ++i) {
    const double h = 1e-7, keep = xh.dptr_[i];
    double l[2];
    for (int side = 0; side < 2; ++side) {
      xh.dptr_[i] = keep + (side ? -h : h);
      TensorContainer<Device, dim, double> yp(ys);
      yp.set_stream(stream);
      forward(&yp);
      const Vec y = ToVec(ToHost(yp.view()).view());
      l[side] = 0;
      for (size_t j = 0; j < y.size(); ++j) l[side] += dy[j] * y[j];
    }
    xh.dptr_[i] = keep;
    const double fd = (l[0] - l[1]) / (2 * h);
    INFO((c.type == PoolType::kMax ? "max" : "avg") << " data " << xs << " element " << i << ": finite difference "
                                                    << fd << " vs backward " << dx[i]);
    CHECK(std::fabs(fd - dx[i]) <= 1e-6 * std::max(1.0, std::fabs(fd)));
  }
}

TE_DEVICE_TEST_CASE("Pooling gradients match finite differences", "[ops_nn][pooling]") {
  for (PoolType t : kPoolTypes) {
    PoolFiniteDifferences<Device, 4>(stream, PC({2, 2}, {2, 2}, {}, t), Shape4(1, 2, 4, 5));
    PoolFiniteDifferences<Device, 4>(stream, PC({3, 3}, {2, 2}, {1, 1}, t, kFullConv, false), Shape4(1, 1, 5, 6));
    PoolFiniteDifferences<Device, 3>(stream, PC({3}, {2}, {1}, t), Shape3(1, 2, 7));
    PoolFiniteDifferences<Device, 5>(stream, PC({2, 2, 2}, {1, 2, 1}, {1, 0, 1}, t), Shape5(1, 1, 3, 4, 3));
    PoolFiniteDifferences<Device, 4>(stream, PCX({3, 2}, {2, 1}, {1, 0}, {0, 1}, {2, 2}, t), Shape4(1, 2, 7, 5));
    PoolFiniteDifferences<Device, 3>(stream, PCX({3}, {2}, {}, {}, {2}, t, ops::ConvPadding::kSameLower), Shape3(1, 1, 8));
  }
  // Borders that are data: average pooling in every mode (an element and its copies in one window each
  // count), max pooling on a constant border.
  for (PadMode mode : {PadMode::kEdge, PadMode::kReflect, PadMode::kWrap, PadMode::kConstant}) {
    PoolCase avg = PC({3, 3}, {1, 2}, {2, 1}, PoolType::kAvg, kFullConv);
    avg.pad_mode = mode;
    if (mode == PadMode::kConstant) avg.pad_value = 0.25;
    PoolFiniteDifferences<Device, 4>(stream, avg, Shape4(1, 2, 4, 5));
    PoolCase avg1 = PC({4}, {1}, {3}, PoolType::kAvg);
    avg1.pad_mode = mode;
    PoolFiniteDifferences<Device, 3>(stream, avg1, Shape3(1, 1, 2));
  }
  PoolCase max = PC({3, 3}, {2, 2}, {1, 1}, PoolType::kMax);
  max.pad_mode = PadMode::kConstant;
  max.pad_value = -0.5;
  PoolFiniteDifferences<Device, 4>(stream, max, Shape4(1, 2, 5, 6));
}

TE_DEVICE_TEST_CASE("Pooling names bad parameters and shapes", "[ops_nn][pooling][error]") {
  TensorContainer<Device, 4, float> x(Shape4(1, 2, 5, 5)), y(Shape4(1, 2, 2, 2)), ybad(Shape4(1, 2, 3, 3));
  for (auto* t : {&x, &y, &ybad}) t->set_stream(stream);
  auto fwd = [&](const PoolCase& c, TensorContainer<Device, 4, float>& out) {
    ops::PoolingForward(ToParam(c), x.view(), kWriteTo, out.view());
  };
  RequireError([&] { fwd(PC({2, 2}, {2, 2}, {2, 0}, PoolType::kMax), y); }, {"pad[0] = 2", "kernel[0] = 2"});
  RequireError([&] { fwd(PC({6, 2}, {}, {}, PoolType::kMax), y); }, {"kernel[0] = 6", "(1,2,5,5)"});
  RequireError([&] { fwd(PC({2, 2}, {0, 1}, {}, PoolType::kAvg), y); }, {"stride[0] = 0"});
  RequireError([&] { fwd(PC({2, 2, 2, 2}, {}, {}, PoolType::kAvg), y); }, {"kernel (2,2,2,2)"});
  RequireError([&] { fwd(PC({2, 2}, {1}, {}, PoolType::kAvg), y); }, {"stride (1,)", "2 spatial"});
  RequireError([&] { fwd(PC({2, 2}, {2, 2}, {}, PoolType::kMax), ybad); }, {"(1,2,3,3)", "(1,2,2,2)"});
  RequireError([&] { ops::PoolingBackward(ToParam(PC({2, 2}, {2, 2}, {}, PoolType::kMax)), y.view(), x.view(), y.view(),
                                          kWriteTo, y.view()); },
               {"input gradient shape (1,2,2,2)", "(1,2,5,5)"});
}

}  // namespace

// NaN propagates through max pooling (forward and the gradient's routing) and -inf is an ordinary value.
TE_DEVICE_TEST_CASE("Pooling max propagates NaN and keeps -inf", "[ops_nn][pooling][nan]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  TensorContainer<cpu, 4, float> xh(Shape4(1, 1, 2, 4));
  const float v[8] = {1, nan, -inf, -inf, 3, 2, -inf, -inf};
  for (index_t i = 0; i < 8; ++i) xh.dptr_[i] = v[i];
  TensorContainer<cpu, 4, float> gh(Shape4(1, 1, 1, 2), 1.0f);
  auto x = ToDevice(xh.view(), stream), g = ToDevice(gh.view(), stream);
  TensorContainer<Device, 4, float> y(Shape4(1, 1, 1, 2)), dx(xh.shape_);
  y.set_stream(stream);
  dx.set_stream(stream);
  const ops::PoolingParam p = ToParam(PC({2, 2}, {2, 2}, {}, PoolType::kMax));
  ops::PoolingForward(p, x.view(), kWriteTo, y.view());
  ops::PoolingBackward(p, g.view(), x.view(), y.view(), kWriteTo, dx.view());
  const auto yh = ToHost(y.view()), dxh = ToHost(dx.view());
  CHECK(std::isnan(yh.dptr_[0]));          // the window holding NaN
  CHECK(yh.dptr_[1] == -inf);              // a window of -inf is -inf, not -FLT_MAX
  CHECK(dxh.dptr_[1] == 1.0f);             // the NaN window's gradient goes to its NaN pixel
  CHECK(dxh.dptr_[0] == 0.0f);
  CHECK(dxh.dptr_[4] == 0.0f);
  // Where the maxima are: the NaN window points at its NaN, the all -inf window at its first element; ties
  // take the first.
  TensorContainer<cpu, 4, float> th(Shape4(1, 1, 2, 6));
  const float t[12] = {1, nan, -inf, -inf, 5, 5, nan, 3, -inf, -inf, 2, 5};
  for (index_t i = 0; i < 12; ++i) th.dptr_[i] = t[i];
  auto td = ToDevice(th.view(), stream);
  TensorContainer<Device, 4, float> ty(Shape4(1, 1, 1, 3));
  TensorContainer<Device, 4, int64_t> at(Shape4(1, 1, 1, 3));
  ty.set_stream(stream);
  at.set_stream(stream);
  ops::PoolingForwardWithIndices(p, td.view(), kWriteTo, ty.view(), at.view());
  const auto ath = ToHost(at.view());
  CHECK(ath.dptr_[0] == 1);  // 1, NaN / NaN, 3: the first NaN
  CHECK(ath.dptr_[1] == 2);  // -inf everywhere
  CHECK(ath.dptr_[2] == 4);  // 5, 5 / 2, 5: the first 5
}

TE_DEVICE_TEST_CASE("Pooling with indices names what it does not take", "[ops_nn][pooling][error]") {
  TensorContainer<Device, 4, float> x(Shape4(1, 2, 4, 4)), y(Shape4(1, 2, 2, 2));
  TensorContainer<Device, 4, int64_t> at(Shape4(1, 2, 2, 2)), at_bad(Shape4(1, 2, 3, 2));
  for (auto* t : {&x, &y}) t->set_stream(stream);
  ops::PoolingParam p = ToParam(PC({2, 2}, {2, 2}, {}, PoolType::kMax));
  RequireError([&] { ops::PoolingForwardWithIndices(p, x.view(), kWriteTo, y.view(), at_bad.view()); },
               {"indices shape (1,2,3,2)", "(1,2,2,2)"});
  p.pool_type = PoolType::kAvg;
  RequireError([&] { ops::PoolingForwardWithIndices(p, x.view(), kWriteTo, y.view(), at.view()); },
               {"max pooling", "average"});
  p.pool_type = PoolType::kMax;
  p.layout = ops::Layout::kNHWC;
  RequireError([&] { ops::PoolingForwardWithIndices(p, x.view(), kWriteTo, y.view(), at.view()); },
               {"channels-first data only"});
}

namespace {
// Pooling of channels-last data against the channels-first pooling of the same data (which the cases
// above check against the float64 reference): forward and backward, under kWriteTo and kAddTo.
template <typename Device, int dim>
void RunPoolChannelsLast(Stream<Device>* stream, const PoolCase& c, const Shape<dim>& cf_shape) {
  const int nd = static_cast<int>(c.kernel.size());
  const Shape<dim> to_last = ops::ChannelAxes<dim>(nd, false), to_first = ops::ChannelAxes<dim>(nd, true);
  ops::PoolingParam pf = ToParam(c), pl = ToParam(c);
  pl.layout = ops::Layout::kNHWC;
  const Shape<dim> ys = ops::InferPoolingShape(pf, cf_shape);
  const Shape<dim> xl_shape = ops::Permute(cf_shape, to_last), yl_shape = ops::Permute(ys, to_last);
  REQUIRE(ops::InferPoolingShape(pl, xl_shape) == yl_shape);
  TensorContainer<cpu, dim, float> xh(cf_shape), dyh(ys);
  FillRandom(xh.view());
  FillRandom(dyh.view());
  auto x = ToDevice(xh.view(), stream), dy = ToDevice(dyh.view(), stream);
  TensorContainer<Device, dim, float> y(ys), dx(cf_shape);
  y.set_stream(stream);
  dx.set_stream(stream);
  ops::PoolingForward(pf, x.view(), kWriteTo, y.view());
  ops::PoolingBackward(pf, dy.view(), x.view(), y.view(), kWriteTo, dx.view());
  // The same data channels last.
  TensorContainer<Device, dim, float> xl(xl_shape), dyl(yl_shape), yl(yl_shape), dxl(xl_shape);
  for (auto* t : {&xl, &dyl, &yl, &dxl}) t->set_stream(stream);
  xl = expr::transpose(x.view(), to_last);
  dyl = expr::transpose(dy.view(), to_last);
  for (OpReqType req : {kWriteTo, kAddTo}) {
    INFO(OpReqName(req));
    yl = 0.5f;
    dxl = 0.25f;
    ops::PoolingForward(pl, xl.view(), req, yl.view());
    ops::PoolingBackward(pl, dyl.view(), xl.view(), yl.view(), req == kAddTo ? kAddTo : kWriteTo, dxl.view());
    const float y_base = req == kAddTo ? 0.5f : 0.0f, dx_base = req == kAddTo ? 0.25f : 0.0f;
    TensorContainer<Device, dim, float> y_back(ys), dx_back(cf_shape);
    y_back.set_stream(stream);
    dx_back.set_stream(stream);
    y_back = expr::transpose(yl.view(), to_first);
    dx_back = expr::transpose(dxl.view(), to_first);
    const auto yw = ToHost(y.view()), yg = ToHost(y_back.view());
    CheckAll(yg.view(), [&](const Shape<dim>& i) { return y_base + At(yw.view(), i); }, 1e-5, "forward");
    if (req == kWriteTo) {  // kAddTo changed y itself, so its gradient routing is checked under kWriteTo only
      const auto dxw = ToHost(dx.view()), dxg = ToHost(dx_back.view());
      CheckAll(dxg.view(), [&](const Shape<dim>& i) { return dx_base + At(dxw.view(), i); }, 1e-5, "backward");
    }
  }
}
}  // namespace

TE_DEVICE_TEST_CASE("Pooling channels last matches channels first", "[ops_nn][pooling][layout]") {
  for (PoolType t : kPoolTypes) {
    INFO("type " << int(t));
    RunPoolChannelsLast<Device, 4>(stream, PC({3, 3}, {2, 2}, {1, 1}, t), Shape4(2, 5, 9, 8));
    RunPoolChannelsLast<Device, 4>(stream, PC({2, 2}, {2, 2}, {}, t), Shape4(2, 3, 8, 6));
    RunPoolChannelsLast<Device, 3>(stream, PC({3}, {2}, {1}, t, kFullConv), Shape3(2, 4, 11));
    RunPoolChannelsLast<Device, 5>(stream, PC({2, 3, 2}, {2, 1, 2}, {0, 1, 1}, t), Shape5(1, 3, 5, 6, 7));
  }
}
