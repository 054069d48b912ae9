// lrn_test.cc — the LRN operator (ops/lrn.h) against a float64 reference written from the definition, on
// fresh random inputs: ranks 3 to 5, odd and even window sizes, windows wider than the channels, padded rows,
// every req, every dtype, in place; backward by central differences in double; errors name the bad
// parameter. The ONNX oracle's LRN cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"
#include <tensorexpr/ops/lrn.h>

namespace {
using namespace te_test;

// The reference forward and backward of LRN on row-major (N, C, inner) values.
struct RefLRN {
  Vec y, dx;
};
RefLRN RefLRNPasses(const ops::LRNParam& p, index_t N, index_t C, index_t inner, const Vec& x, const Vec& dy) {
  RefLRN r{Vec(x.size()), Vec(x.size(), 0.0)};
  const index_t before = (p.nsize - 1) / 2, after = p.nsize / 2;
  const double scale = p.alpha / double(p.nsize);
  auto at = [&](index_t n, index_t c, index_t i) { return size_t((n * C + c) * inner + i); };
  for (index_t n = 0; n < N; ++n)
    for (index_t i = 0; i < inner; ++i)
      for (index_t c = 0; c < C; ++c) {
        const index_t lo = std::max<index_t>(0, c - before), hi = std::min(C - 1, c + after);
        double sum = 0;
        for (index_t j = lo; j <= hi; ++j) sum += x[at(n, j, i)] * x[at(n, j, i)];
        const double norm = p.knorm + scale * sum, xc = x[at(n, c, i)], dyc = dy[at(n, c, i)];
        r.y[at(n, c, i)] = xc * std::pow(norm, -p.beta);
        // d y_c / d x_j = [j == c] norm^-beta - beta x_c norm^(-beta - 1) * scale * 2 x_j for j in the window.
        r.dx[at(n, c, i)] += dyc * std::pow(norm, -p.beta);
        for (index_t j = lo; j <= hi; ++j)
          r.dx[at(n, j, i)] -= dyc * p.beta * xc * std::pow(norm, -p.beta - 1) * scale * 2 * x[at(n, j, i)];
      }
  return r;
}

ops::LRNParam RandomLRNParam(index_t nsize) {
  ops::LRNParam p;
  p.nsize = nsize;
  p.alpha = std::uniform_real_distribution<double>(0.1, 2.0)(Rng());
  p.beta = std::uniform_real_distribution<double>(0.3, 1.2)(Rng());
  p.knorm = std::uniform_real_distribution<double>(0.5, 3.0)(Rng());
  return p;
}

template <typename Device, int dim, typename DType>
void RunLRN(Stream<Device>* stream, const Shape<dim>& shape, index_t nsize, bool padded, OpReqType req) {
  const ops::LRNParam p = RandomLRNParam(nsize);
  INFO("shape " << shape << " nsize " << nsize << " alpha " << p.alpha << " beta " << p.beta << " knorm " << p.knorm
                << " padded " << padded << " req " << OpReqName(req) << " dtype " << DataType<DType>::name());
  auto xh = Uniform<dim, DType>(shape, -2, 2);
  auto dyh = Uniform<dim, DType>(shape);
  TensorContainer<cpu, dim, DType> yh(shape), dxh(shape);
  const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
  const Vec y0 = Prefill(yh.view(), req), dx0 = Prefill(dxh.view(), req);
  const index_t inner = shape[0] * shape[1] == 0 ? 0 : shape.Size() / (shape[0] * shape[1]);
  const RefLRN ref = RefLRNPasses(p, shape[0], shape[1], inner, x, dy);
  auto xd = Dev<Device>(xh.view(), stream, padded), yd = Dev<Device>(yh.view(), stream, padded);
  auto dyd = Dev<Device>(dyh.view(), stream, padded), dxd = Dev<Device>(dxh.view(), stream, padded);
  ops::LRNForward(p, xd.view(), req, yd.view());
  CheckVec(ToHost(yd.view()).view(), Expect(req, y0, ref.y), 4 * Tol<DType>(), "forward");
  ops::LRNBackward(p, dyd.view(), xd.view(), req, dxd.view());
  CheckVec(ToHost(dxd.view()).view(), Expect(req, dx0, ref.dx), 8 * Tol<DType>(), "backward");
}

TE_DEVICE_TEST_CASE("LRN matches the float64 reference", "[ops][lrn]") {
  for (OpReqType req : kAllReqs) RunLRN<Device, 4, float>(stream, Shape4(2, 7, 3, 5), 5, true, req);
  for (index_t nsize : {1, 2, 3, 4, 9, 16}) {  // even sizes reach one channel further after; 9, 16 > C
    RunLRN<Device, 4, double>(stream, Shape4(2, 6, 3, 4), nsize, nsize % 2 == 0, kWriteTo);
    RunLRN<Device, 3, double>(stream, Shape3(3, 5, 7), nsize, false, kAddTo);
  }
  RunLRN<Device, 5, double>(stream, Shape5(2, 4, 2, 3, 3), 3, true, kWriteTo);
  RunLRN<Device, 5, float>(stream, Shape5(1, 9, 2, 1, 4), 4, false, kAddTo);
  RunLRN<Device, 4, half_t>(stream, Shape4(2, 5, 3, 4), 3, false, kWriteTo);
  RunLRN<Device, 4, bf16_t>(stream, Shape4(2, 5, 3, 4), 5, true, kAddTo);
  RunLRN<Device, 3, half_t>(stream, Shape3(2, 8, 5), 4, true, kAddTo);
  RunLRN<Device, 3, float>(stream, Shape3(1, 1, 6), 3, false, kWriteTo);  // one channel
  RunLRN<Device, 4, float>(stream, Shape4(0, 3, 2, 2), 3, false, kWriteTo);
}

TE_DEVICE_TEST_CASE("LRN gradients match finite differences in double, in place", "[ops][lrn]") {
  for (index_t nsize : {3, 4}) {
    const ops::LRNParam p = RandomLRNParam(nsize);
    const Shape<4> shape = Shape4(2, 5, 2, 3);
    auto xh = Uniform<4, double>(shape, -2, 2);
    auto dyh = Uniform<4, double>(shape);
    const Vec x = ToVec(xh.view()), dy = ToVec(dyh.view());
    auto forward = [&](const Vec& xv) {
      auto d = Dev<Device>(FromVec<4, double>(shape, xv).view(), stream);
      ops::LRNForward(p, d.view(), kWriteInplace, d.view());  // in place
      return ToVec(ToHost(d.view()).view());
    };
    auto xd = Dev<Device>(xh.view(), stream);
    auto buf = Dev<Device>(dyh.view(), stream);
    ops::LRNBackward(p, buf.view(), xd.view(), kWriteInplace, buf.view());  // dx over dy
    CheckFiniteDifferences(x, dy, forward, ToVec(ToHost(buf.view()).view()), "LRN nsize " + std::to_string(nsize));
    // dx over x, too: the data is read before the gradient is stored.
    auto xd2 = Dev<Device>(xh.view(), stream), dyd = Dev<Device>(dyh.view(), stream);
    ops::LRNBackward(p, dyd.view(), xd2.view(), kWriteInplace, xd2.view());
    CheckVec(ToHost(xd2.view()).view(), ToVec(ToHost(buf.view()).view()), 1e-14, "backward in place over the data");
  }
}

TE_DEVICE_TEST_CASE("LRN names bad parameters and mismatched shapes", "[ops][lrn][error]") {
  TensorContainer<Device, 4, float> a(Shape4(2, 3, 4, 4)), b(Shape4(2, 4, 3, 4));
  a.set_stream(stream);
  b.set_stream(stream);
  ops::LRNParam p;
  RequireError([&] { ops::LRNForward(p, a.view(), kWriteTo, a.view()); }, {"LRN", "nsize = 0", ">= 1"});
  p.nsize = 3;
  RequireError([&] { ops::LRNForward(p, a.view(), kWriteTo, b.view()); },
               {"LRN forward", "data shape (2,3,4,4)", "output shape (2,4,3,4)"});
  RequireError([&] { ops::LRNBackward(p, a.view(), a.view(), kWriteTo, b.view()); },
               {"LRN backward", "data gradient shape (2,4,3,4)"});
  RequireError([&] { ops::LRNBackward(p, b.view(), a.view(), kWriteTo, a.view()); }, {"output gradient shape (2,4,3,4)"});
  RequireError([&] { ops::LRNForward(p, a.view(), static_cast<OpReqType>(9), a.view()); }, {"LRN forward", "unknown OpReqType 9"});
  for (double bad : {-1.0, std::nan("")}) {
    ops::LRNParam q = p;
    q.alpha = bad;
    RequireError([&] { ops::LRNForward(q, a.view(), kWriteTo, a.view()); }, {"alpha", "finite and >= 0"});
  }
  ops::LRNParam q = p;
  q.beta = HUGE_VAL;
  RequireError([&] { ops::LRNForward(q, a.view(), kWriteTo, a.view()); }, {"beta = inf", "finite"});
  q = p;
  q.knorm = 0;
  RequireError([&] { ops::LRNForward(q, a.view(), kWriteTo, a.view()); }, {"knorm = 0", "> 0"});
  RequireError([] { ops::InferLRNShape(ops::LRNParam{3}, Shape2(4, 5)); }, {"data shape (4,5)", "(N, C, spatial...)"});
}

}  // namespace
