// reduce_axes_check.h — one reduction of expr/reduce_axes.h against a float64 reference on fresh random
// data: a random subset of the axes (negative ones too, any order, none = all), stored with `=` or `+=`.
// Shared by reduce_axes_test.cc (sum, mean) and reduce_extrema_test.cc (maximum, minimum): each reduction
// is a kernel of its own per rank, dtype and store, so the kinds are compiled in two units.
#pragma once
#include "ops_test_util.h"

namespace te_test {

enum class ReduceKind { kSum, kMax, kMin, kMean };

inline const char* ReduceKindName(ReduceKind k) {
  return k == ReduceKind::kSum ? "sum" : k == ReduceKind::kMax ? "maximum" : k == ReduceKind::kMin ? "minimum" : "mean";
}

// The reduction of x (shape s) over the axes marked in `reduce`, one value per output of shape `out`.
template <int dim>
Vec RefReduceAxes(const Tensor<cpu, dim, double>& x, const std::vector<bool>& reduce, const Shape<dim>& out,
                  ReduceKind k) {
  Vec acc(static_cast<size_t>(out.Size()), k == ReduceKind::kMax ? -INFINITY : k == ReduceKind::kMin ? INFINITY : 0.0);
  std::vector<index_t> count(acc.size(), 0);
  ForEachIndex(x.shape_, [&](const Shape<dim>& i) {
    Shape<dim> o = i;
    for (int d = 0; d < dim; ++d)
      if (reduce[size_t(d)]) o[d] = 0;
    const size_t f = size_t(Flat(out, o));
    const double v = At(x, i);
    if (k == ReduceKind::kMax) acc[f] = std::max(acc[f], v);
    else if (k == ReduceKind::kMin) acc[f] = std::min(acc[f], v);
    else acc[f] += v;
    ++count[f];
  });
  if (k == ReduceKind::kMean)
    for (size_t f = 0; f < acc.size(); ++f) acc[f] /= double(count[f]);
  return acc;
}

// o = e or o += e: a template parameter, so that the `+=` kernels are compiled only for the cases that
// test them.
template <bool add, typename Device, int dim, typename DType, typename E>
void StoreReduction(Tensor<Device, dim, DType> o, const E& e) {
  if constexpr (add) o += e;
  else o = e;
}

template <ReduceKind k, typename Device, int dim, typename DType, bool add = false>
void CheckReduceAxes(Stream<Device>* stream, const Shape<dim>& s) {
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
  INFO(ReduceKindName(k) << " over axes { " << axes_text.str() << "} of " << s << " dtype "
                         << DataType<DType>::name() << (add ? " +=" : " ="));
  auto xh = Uniform<dim, DType>(s, -2, 2);
  const auto x64 = FromVec<dim, double>(s, ToVec(xh.view()));
  auto xd = Dev<Device>(xh.view(), stream, true);
  TensorContainer<cpu, dim, DType> oh(out);
  const Vec before = Prefill(oh.view(), add ? kAddTo : kWriteTo);
  auto od = Dev<Device>(oh.view(), stream, true);
  if constexpr (k == ReduceKind::kSum) StoreReduction<add>(od.view(), expr::reduce_axes<red::sum>(xd.view(), axes));
  if constexpr (k == ReduceKind::kMax) StoreReduction<add>(od.view(), expr::reduce_axes<red::maximum>(xd.view(), axes));
  if constexpr (k == ReduceKind::kMin) StoreReduction<add>(od.view(), expr::reduce_axes<red::minimum>(xd.view(), axes));
  if constexpr (k == ReduceKind::kMean) StoreReduction<add>(od.view(), expr::mean(xd.view(), axes));
  // Sums of up to a few hundred terms of magnitude 2, rounded once to DType.
  const double tol = std::is_same<DType, double>::value ? 1e-12 : 4 * Tol<DType>() * (k == ReduceKind::kSum ? 50 : 1);
  CheckVec(ToHost(od.view()).view(), Expect(add ? kAddTo : kWriteTo, before, RefReduceAxes(x64.view(), reduce, out, k)),
           tol, "reduce_axes");
}

// Ranks 1 to 5 (padded sources), `=` and `+=` in a float and a double rank (the store is the same code for
// every rank), half and bf16; fresh random axes each time.
template <ReduceKind k, typename Device>
void CheckReduceAxesEveryRank(Stream<Device>* stream) {
  for (int rep = 0; rep < 4; ++rep) {
    CheckReduceAxes<k, Device, 1, float>(stream, Shape1(17));
    CheckReduceAxes<k, Device, 2, double>(stream, Shape2(5, 9));
    CheckReduceAxes<k, Device, 3, float>(stream, Shape3(3, 4, 7));
    CheckReduceAxes<k, Device, 4, double>(stream, Shape4(2, 3, 4, 5));
    CheckReduceAxes<k, Device, 5, float>(stream, Shape5(2, 3, 1, 4, 3));
    CheckReduceAxes<k, Device, 3, float, true>(stream, Shape3(4, 3, 5));
    CheckReduceAxes<k, Device, 4, double, true>(stream, Shape4(3, 2, 2, 5));
  }
  CheckReduceAxes<k, Device, 3, half_t>(stream, Shape3(2, 5, 3));
  CheckReduceAxes<k, Device, 3, bf16_t, true>(stream, Shape3(3, 2, 4));
}

}  // namespace te_test
