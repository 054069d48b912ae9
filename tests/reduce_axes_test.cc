// reduce_axes_test.cc — reduce_axes<sum / maximum / minimum> and mean over several axes (expr/reduce_axes.h)
// against a float64 reference on fresh random data: ranks 1 to 5, every subset of axes (negative ones
// too, any order, none = all), padded sources, `=` and `+=`, inside a larger expression, half / bf16, and
// the errors for bad axes. The ONNX oracle's ReduceMean cases are in onnx_oracle_test.cc.
#include "ops_test_util.h"

namespace {
using namespace te_test;

enum class Kind { kSum, kMax, kMin, kMean };
const char* KindName(Kind k) {
  return k == Kind::kSum ? "sum" : k == Kind::kMax ? "maximum" : k == Kind::kMin ? "minimum" : "mean";
}

// The reduction of x (shape s) over the axes marked in `reduce`, one value per output of shape `out`.
template <int dim>
Vec RefReduceAxes(const Tensor<cpu, dim, double>& x, const std::vector<bool>& reduce, const Shape<dim>& out, Kind k) {
  Vec acc(static_cast<size_t>(out.Size()), k == Kind::kMax ? -INFINITY : k == Kind::kMin ? INFINITY : 0.0);
  std::vector<index_t> count(acc.size(), 0);
  ForEachIndex(x.shape_, [&](const Shape<dim>& i) {
    Shape<dim> o = i;
    for (int d = 0; d < dim; ++d)
      if (reduce[size_t(d)]) o[d] = 0;
    const size_t f = size_t(Flat(out, o));
    const double v = At(x, i);
    if (k == Kind::kMax) acc[f] = std::max(acc[f], v);
    else if (k == Kind::kMin) acc[f] = std::min(acc[f], v);
    else acc[f] += v;
    ++count[f];
  });
  if (k == Kind::kMean)
    for (size_t f = 0; f < acc.size(); ++f) acc[f] /= double(count[f]);
  return acc;
}

// `=` or `+=`: a template parameter, so that the `+=` kernels are compiled only for the cases that test them
// (every reduction is a kernel of its own per rank, dtype and store: 36 instantiations instead of 56).
template <bool add, typename Device, int dim, typename DType, typename E>
void Store(Tensor<Device, dim, DType> o, const E& e) {
  if constexpr (add) o += e;
  else o = e;
}

template <typename Device, int dim, typename DType, bool add = false>
void RunReduceAxes(Stream<Device>* stream, const Shape<dim>& s, Kind k) {
  // A random subset of the axes, each written as itself or counted from the end, in random order.
  std::vector<int> axes;
  std::vector<bool> reduce(dim, false);
  for (int d = 0; d < dim; ++d)
    if (Rng()() % 2) axes.push_back(Rng()() % 2 ? d : d - dim), reduce[size_t(d)] = true;
  std::shuffle(axes.begin(), axes.end(), Rng());
  if (axes.empty()) reduce.assign(dim, true);  // no axes: all of them
  Shape<dim> out = s;
  for (int d = 0; d < dim; ++d)
    if (reduce[size_t(d)]) out[d] = 1;
  std::ostringstream axes_text;
  for (int a : axes) axes_text << a << " ";
  INFO(KindName(k) << " over axes { " << axes_text.str() << "} of " << s << " dtype " << DataType<DType>::name()
                   << (add ? " +=" : " ="));
  auto xh = Uniform<dim, DType>(s, -2, 2);
  const auto x64 = FromVec<dim, double>(s, ToVec(xh.view()));
  auto xd = Dev<Device>(xh.view(), stream, true);
  TensorContainer<cpu, dim, DType> oh(out);
  const Vec before = Prefill(oh.view(), add ? kAddTo : kWriteTo);
  auto od = Dev<Device>(oh.view(), stream, true);
  switch (k) {
    case Kind::kSum: Store<add>(od.view(), expr::reduce_axes<red::sum>(xd.view(), axes)); break;
    case Kind::kMax: Store<add>(od.view(), expr::reduce_axes<red::maximum>(xd.view(), axes)); break;
    case Kind::kMin: Store<add>(od.view(), expr::reduce_axes<red::minimum>(xd.view(), axes)); break;
    case Kind::kMean: Store<add>(od.view(), expr::mean(xd.view(), axes)); break;
  }
  // Sums of up to a few hundred terms of magnitude 2, rounded once to DType.
  const double tol = std::is_same<DType, double>::value ? 1e-12 : 4 * Tol<DType>() * (k == Kind::kSum ? 50 : 1);
  CheckVec(ToHost(od.view()).view(), Expect(add ? kAddTo : kWriteTo, before, RefReduceAxes(x64.view(), reduce, out, k)),
           tol, "reduce_axes");
}

TE_DEVICE_TEST_CASE("reduce_axes and mean over any subset of axes match the float64 reference", "[reduce][reduce_axes]") {
  for (Kind k : {Kind::kSum, Kind::kMax, Kind::kMin, Kind::kMean}) {
    for (int rep = 0; rep < 4; ++rep) {  // fresh random axes each time
      RunReduceAxes<Device, 1, float>(stream, Shape1(17), k);
      RunReduceAxes<Device, 2, double>(stream, Shape2(5, 9), k);
      RunReduceAxes<Device, 3, float>(stream, Shape3(3, 4, 7), k);
      RunReduceAxes<Device, 4, double>(stream, Shape4(2, 3, 4, 5), k);
      RunReduceAxes<Device, 5, float>(stream, Shape5(2, 3, 1, 4, 3), k);
      // `+=` in a float and a double rank (the store is the same code for every rank).
      RunReduceAxes<Device, 3, float, true>(stream, Shape3(4, 3, 5), k);
      RunReduceAxes<Device, 4, double, true>(stream, Shape4(3, 2, 2, 5), k);
    }
    RunReduceAxes<Device, 3, half_t>(stream, Shape3(2, 5, 3), k);
    RunReduceAxes<Device, 3, bf16_t, true>(stream, Shape3(3, 2, 4), k);
  }
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
