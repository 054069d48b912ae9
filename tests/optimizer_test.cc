// optimizer_test.cc — the one-pass Adam and RMSProp updates (ops/adaptive_update.h) against the update
// written out in double over several steps (clipping, weight decay, rescaling, every dtype, padded rows,
// in place and to another output, every req), and clipping by the global norm (ops/clip_global_norm.h)
// over gradients of several shapes, above and below the threshold; errors name the bad values.
#include "ops_test_util.h"
#include <tensorexpr/ops/adaptive_update.h>
#include <tensorexpr/ops/clip_global_norm.h>

namespace {
using namespace te_test;

double RefGrad(double grad, double w, double rescale, double clip, double wd) {
  double g = grad * rescale;
  if (clip >= 0) g = std::min(std::max(g, -clip), clip);
  return g + wd * w;
}

// Three steps of Adam (adam = true) or RMSProp on the same tensors, each checked against double.
template <typename Device, typename DType>
void RunAdaptive(Stream<Device>* stream, bool adam, const Shape<2>& shape, bool padded, OpReqType req, bool clip) {
  ops::AdamParam pa;
  ops::RMSPropParam pr;
  pa.lr = pr.lr = 0.05;
  pa.wd = pr.wd = 0.01;
  pa.rescale_grad = pr.rescale_grad = 0.5;
  pa.clip_gradient = pr.clip_gradient = clip ? 0.3 : -1.0;
  pa.epsilon = pr.epsilon = 1e-3;  // large enough to matter in half
  INFO((adam ? "adam" : "rmsprop") << " shape " << shape << " padded " << padded << " req " << OpReqName(req)
                                   << " clip " << clip << " dtype " << DataType<DType>::name());
  auto wh = Uniform<2, DType>(shape), mh = Uniform<2, DType>(shape, -0.1, 0.1), vh = Uniform<2, DType>(shape, 0, 0.1);
  auto wd = Dev<Device>(wh.view(), stream, padded), md = Dev<Device>(mh.view(), stream, padded);
  auto vd = Dev<Device>(vh.view(), stream, padded);
  Vec w = ToVec(wh.view()), m = ToVec(mh.view()), v = ToVec(vh.view());
  // kWriteInplace updates the weight itself; the other reqs write (or add) into a separate output.
  TensorContainer<cpu, 2, DType> oh(shape);
  const Vec o0 = Prefill(oh.view(), req);
  auto od = Dev<Device>(oh.view(), stream, padded);
  const bool inplace = req == kWriteInplace;
  const int steps = inplace ? 3 : 1;  // a separate output does not feed the next step
  Vec out;
  for (int step = 0; step < steps; ++step) {
    auto gh = Uniform<2, DType>(shape, -2, 2);
    const Vec g = ToVec(gh.view());
    auto gd = Dev<Device>(gh.view(), stream, padded);
    const Tensor<Device, 2, DType> target = inplace ? wd.view() : od.view();
    if (adam) ops::AdamUpdate(pa, wd.view(), gd.view(), md.view(), vd.view(), req, target);
    else ops::RMSPropUpdate(pr, wd.view(), gd.view(), vd.view(), req, target);
    out.assign(w.size(), 0.0);
    for (size_t i = 0; i < w.size(); ++i) {
      const double gi = RefGrad(g[i], w[i], 0.5, clip ? 0.3 : -1.0, 0.01);
      if (adam) {
        m[i] = 0.9 * m[i] + 0.1 * gi;
        v[i] = 0.999 * v[i] + 0.001 * gi * gi;
        out[i] = w[i] - 0.05 * m[i] / (std::sqrt(v[i]) + 1e-3);
      } else {
        v[i] = 0.95 * v[i] + 0.05 * gi * gi;
        out[i] = w[i] - 0.05 * gi / std::sqrt(v[i] + 1e-3);
      }
    }
    if (inplace) w = out;
    // Half and bf16 round the state every step: compare the weight and the state as stored.
    if (req != kNullOp) {
      if (adam) CheckVec(ToHost(md.view()).view(), m, 4 * Tol<DType>(), "mean");
      CheckVec(ToHost(vd.view()).view(), v, 4 * Tol<DType>(), adam ? "var" : "n");
      m = ToVec(ToHost(md.view()).view());
      v = ToVec(ToHost(vd.view()).view());
    }
  }
  if (inplace) CheckVec(ToHost(wd.view()).view(), w, 4 * Tol<DType>(), "weight");
  else CheckVec(ToHost(od.view()).view(), Expect(req, o0, out), 4 * Tol<DType>(), "output");
  if (req == kNullOp) {
    CheckVec(ToHost(md.view()).view(), ToVec(mh.view()), 0, "mean untouched by kNullOp");
    CheckVec(ToHost(vd.view()).view(), ToVec(vh.view()), 0, "state untouched by kNullOp");
  }
}

TE_DEVICE_TEST_CASE("Adam and RMSProp match the update written out in double", "[ops][optimizer]") {
  for (bool adam : {true, false}) {
    for (OpReqType req : kAllReqs) RunAdaptive<Device, float>(stream, adam, Shape2(7, 19), true, req, req == kAddTo);
    RunAdaptive<Device, double>(stream, adam, Shape2(3, 40), false, kWriteInplace, true);
    RunAdaptive<Device, half_t>(stream, adam, Shape2(5, 9), true, kWriteInplace, false);
    RunAdaptive<Device, bf16_t>(stream, adam, Shape2(4, 6), false, kWriteInplace, true);
    RunAdaptive<Device, float>(stream, adam, Shape2(0, 6), false, kWriteInplace, false);
  }
}

TE_DEVICE_TEST_CASE("Adam and RMSProp take any rank and name bad parameters", "[ops][optimizer][error]") {
  TensorContainer<Device, 3, float> w(Shape3(2, 3, 4), 1.0f), g(Shape3(2, 3, 4), 1.0f), m(Shape3(2, 3, 4), 0.0f),
      v(Shape3(2, 3, 4), 0.0f), bad(Shape3(2, 4, 3));
  for (auto* t : {&w, &g, &m, &v, &bad}) t->set_stream(stream);
  ops::AdamParam p;
  ops::AdamUpdate(p, w.view(), g.view(), m.view(), v.view(), kWriteInplace, w.view());
  // First step from zero state, gradient 1: mean 0.1, var 0.001, step lr * 0.1 / (sqrt(0.001) + eps).
  CHECK(ToHost(w.view())[1][2][3] == Approx(1 - 0.001 * 0.1 / (std::sqrt(0.001) + 1e-8)).epsilon(1e-5));
  RequireError([&] { ops::AdamUpdate(p, w.view(), g.view(), bad.view(), v.view(), kWriteTo, w.view()); },
               {"adam_update", "mean shape (2,4,3)", "(2,3,4)"});
  p.beta1 = 1.5;
  RequireError([&] { ops::AdamUpdate(p, w.view(), g.view(), m.view(), v.view(), kWriteTo, w.view()); },
               {"adam_update", "1.5", "[0, 1]"});
  ops::RMSPropParam r;
  r.epsilon = -1;
  RequireError([&] { ops::RMSPropUpdate(r, w.view(), g.view(), v.view(), kWriteTo, w.view()); },
               {"rmsprop_update", "epsilon = -1"});
  r = ops::RMSPropParam();
  r.lr = NAN;
  RequireError([&] { ops::RMSPropUpdate(r, w.view(), g.view(), v.view(), kWriteTo, w.view()); },
               {"rmsprop_update", "lr = nan"});
  r = ops::RMSPropParam();
  RequireError([&] { ops::RMSPropUpdate(r, w.view(), bad.view(), v.view(), kWriteTo, w.view()); },
               {"gradient shape (2,4,3)"});
}

template <typename Device, typename DType>
void RunClipNorm(Stream<Device>* stream, double max_norm_factor, bool padded) {
  const Shape<2> shapes[] = {Shape2(3, 7), Shape2(1, 5), Shape2(0, 4), Shape2(6, 2)};
  std::vector<TensorContainer<cpu, 2, DType>> host;
  std::vector<TensorContainer<Device, 2, DType>> dev;
  std::vector<Tensor<Device, 2, DType>> views;
  double sq = 0;
  for (const Shape<2>& s : shapes) {
    host.push_back(Uniform<2, DType>(s, -2, 2));
    for (double x : ToVec(host.back().view())) sq += x * x;
    dev.push_back(Dev<Device>(host.back().view(), stream, padded));
  }
  for (auto& d : dev) views.push_back(d.view());
  const double norm = std::sqrt(sq), max_norm = norm * max_norm_factor;
  const double scale = std::min(1.0, max_norm / norm);
  INFO("clip_global_norm: norm " << norm << ", max_norm " << max_norm << ", dtype " << DataType<DType>::name());
  TensorContainer<Device, 1, DType> nd(Shape1(1));
  nd.set_stream(stream);
  ops::ClipByGlobalNorm(views, max_norm, nd.view());
  CheckVec(ToHost(nd.view()).view(), Vec{norm}, 2 * Tol<DType>(), "norm");
  for (size_t i = 0; i < dev.size(); ++i) {
    Vec want = ToVec(host[i].view());
    for (double& x : want) x *= scale;
    CheckVec(ToHost(dev[i].view()).view(), want, 4 * Tol<DType>(), "gradient " + std::to_string(i));
  }
}

TE_DEVICE_TEST_CASE("clip_global_norm scales every gradient by min(1, max_norm / norm)", "[ops][clip_global_norm]") {
  for (double factor : {0.25, 0.9, 1.5}) {  // clipped, just clipped, left alone
    RunClipNorm<Device, float>(stream, factor, true);
    RunClipNorm<Device, double>(stream, factor, false);
    RunClipNorm<Device, half_t>(stream, factor, true);
    RunClipNorm<Device, bf16_t>(stream, factor, false);
  }
  // No gradient at all (or all zero): the norm is 0 and nothing changes.
  TensorContainer<Device, 1, float> nd(Shape1(1));
  nd.set_stream(stream);
  TensorContainer<Device, 2, float> z(Shape2(2, 3), 0.0f);
  z.set_stream(stream);
  ops::ClipByGlobalNorm<Device, float>({z.view()}, 1.0, nd.view());
  CHECK(ToHost(nd.view())[0] == 0.0f);
  CHECK(ToHost(z.view())[1][2] == 0.0f);
  RequireError([&] { ops::ClipByGlobalNorm<Device, float>({z.view()}, 0.0, nd.view()); },
               {"clip_global_norm", "max_norm = 0"});
  TensorContainer<Device, 1, float> n2(Shape1(2));
  RequireError([&] { ops::ClipByGlobalNorm<Device, float>({z.view()}, 1.0, n2.view()); }, {"norm shape (2,)"});
}

}  // namespace
