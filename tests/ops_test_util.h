// ops_test_util.h — helpers the operator tests share (test_util.h has the general ones): values of a host
// tensor as doubles, comparison with a float64 reference, device copies with padded rows, output prefill
// per req and what the output must hold after it, channels moved last and back, and the central-difference
// gradient check.
#pragma once
#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>
#include "test_util.h"

namespace te_test {

using Vec = std::vector<double>;

template <int dim, typename DType>
double AtX(const Tensor<cpu, dim, DType>& t, const Shape<dim>& idx) {  // exact for double
  index_t row = 0;
  for (int i = 0; i + 1 < dim; ++i) row = row * t.shape_[i] + idx[i];
  return AsDouble(t.dptr_[row * t.stride_ + idx[dim - 1]]);
}
// The values of a host tensor in row-major order.
template <int dim, typename DType>
Vec ToVec(const Tensor<cpu, dim, DType>& t) {
  Vec v;
  ForEachIndex(t.shape_, [&](const Shape<dim>& idx) { v.push_back(AtX(t, idx)); });
  return v;
}
// The source index output index i reads along an extent n, the slow way; -1 for the constant border.
inline index_t RefPadIndex(index_t i, index_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return std::min(std::max<index_t>(i, 0), n - 1);
    case PadMode::kReflect:
      if (n == 1) return 0;
      while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // one bounce off an edge at a time
      return i;
    case PadMode::kWrap:
      while (i < 0) i += n;
      while (i >= n) i -= n;
      return i;
  }
  return -1;
}

template <int dim>
index_t Flat(const Shape<dim>& shape, const Shape<dim>& idx) {
  index_t f = 0;
  for (int i = 0; i < dim; ++i) f = f * shape[i] + idx[i];
  return f;
}
// Every element of `got` (row-major order) within rtol * max(1, |want|).
template <int dim, typename DType>
void CheckVec(const Tensor<cpu, dim, DType>& got, const Vec& want, double rtol, const std::string& what) {
  REQUIRE(static_cast<size_t>(got.shape_.Size()) == want.size());
  index_t bad = 0;
  std::string first;
  ForEachIndex(got.shape_, [&](const Shape<dim>& idx) {
    const double g = AtX(got, idx), r = want[Flat(got.shape_, idx)];
    if (!(std::fabs(g - r) <= rtol * std::max(1.0, std::fabs(r)))) {
      if (bad++ == 0) {
        std::ostringstream os;
        os.precision(17);
        os << what << ": first mismatch at " << idx << ": got " << g << ", expected " << r;
        first = os.str();
      }
    }
  });
  INFO(first);
  INFO(what << ": mismatches " << bad << " of " << got.shape_.Size() << " (shape " << got.shape_ << ")");
  CHECK(bad == 0);
}
// A device tensor holding `h`, with padded rows when asked.
template <typename Device, int dim, typename DType>
TensorContainer<Device, dim, DType> Dev(const Tensor<cpu, dim, DType>& h, Stream<Device>* s, bool pad = false) {
  TensorContainer<Device, dim, DType> d(pad);
  d.set_stream(s);
  d.Resize(h.shape_);
  Copy(d.view(), h, s);
  Sync(s);
  return d;
}
// Random prefill for kAddTo (not negative for unsigned types), poison otherwise; returns what the output
// holds before the op.
template <int dim, typename DType>
Vec Prefill(Tensor<cpu, dim, DType> t, OpReqType req) {
  if (req == kAddTo) FillRandom(t, std::is_unsigned<DType>::value ? 0.0 : -1.0, 1.0); else Poison(t);
  return ToVec(t);
}
// What an output should hold after the op, given its prefill and the reference result.
inline Vec Expect(OpReqType req, const Vec& before, const Vec& ref) {
  Vec e(before.size());
  for (size_t i = 0; i < e.size(); ++i)
    e[i] = req == kNullOp ? before[i] : (req == kAddTo ? before[i] + ref[i] : ref[i]);
  return e;
}
// A host tensor of fresh uniform values in [lo, hi).
template <int dim, typename DType>
TensorContainer<cpu, dim, DType> Uniform(const Shape<dim>& s, double lo = -1, double hi = 1) {
  TensorContainer<cpu, dim, DType> t(s);
  FillRandom(t.view(), lo, hi);
  return t;
}
// A host tensor of `shape` holding `v` (row-major), rounded to DType.
template <int dim, typename DType>
TensorContainer<cpu, dim, DType> FromVec(const Shape<dim>& shape, const Vec& v) {
  TensorContainer<cpu, dim, DType> t(shape);
  REQUIRE(static_cast<size_t>(shape.Size()) == v.size());
  ForEachIndex(shape, [&](const Shape<dim>& idx) {
    const double x = v[static_cast<size_t>(Flat(shape, idx))];
    const index_t at = Flat(shape, idx) / std::max<index_t>(shape[dim - 1], 1) * t.stride_ + idx[dim - 1];
    if constexpr (std::is_same<DType, double>::value) {
      t.dptr_[at] = x;
    } else {
      t.dptr_[at] = DType(static_cast<float>(x));
    }
  });
  return t;
}
// A Shape<dim> of extents given at run time.
template <int dim>
Shape<dim> ToShape(const std::vector<index_t>& v) {
  Shape<dim> s;
  REQUIRE(v.size() == size_t(dim));
  for (int i = 0; i < dim; ++i) s[i] = v[size_t(i)];
  return s;
}
// A shape written channels first, with the channels moved last: (N, C, s...) -> (N, s..., C), or for an
// unbatched one (C, s...) -> (s..., C).
inline std::vector<index_t> ChannelsLastShape(std::vector<index_t> v, bool batched) {
  const size_t c = batched ? 1 : 0;
  const index_t channels = v[c];
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(c));
  v.push_back(channels);
  return v;
}

// A dense copy of t with its channel dimension moved last (to_last) or back first; a plain copy when
// `permute` is false. The library's transpose expression does the moving.
template <int dim, typename DType>
TensorContainer<cpu, dim, DType> Permuted(const Tensor<cpu, dim, DType>& t, bool permute, bool to_last, bool batched) {
  Shape<dim> axes;
  const int c = batched ? 1 : 0;
  for (int i = 0; i < dim; ++i) axes[i] = i;
  if (permute) {
    if (to_last) {
      for (int i = c; i + 1 < dim; ++i) axes[i] = i + 1;
      axes[dim - 1] = c;
    } else {
      axes[c] = dim - 1;
      for (int i = c + 1; i < dim; ++i) axes[i] = i - 1;
    }
  }
  Shape<dim> shape;
  for (int i = 0; i < dim; ++i) shape[i] = t.shape_[axes[i]];
  TensorContainer<cpu, dim, DType> out(shape);
  out = expr::transpose(t, axes);
  return out;
}

const OpReqType kAllReqs[] = {kNullOp, kWriteTo, kWriteInplace, kAddTo};

// The gradient check of a backward pass: `grad` must be d/dx_i of sum_j dy_j * f(x)_j for every i, by
// central differences (step h) on `f`, the library's own forward in double, within rtol.
inline void CheckFiniteDifferences(const Vec& x, const Vec& dy, const std::function<Vec(const Vec&)>& f,
                                   const Vec& grad, const std::string& what, double h = 1e-6, double rtol = 1e-6) {
  REQUIRE(grad.size() == x.size());
  auto loss = [&](const Vec& at) {
    const Vec y = f(at);
    REQUIRE(y.size() == dy.size());
    double l = 0;
    for (size_t j = 0; j < y.size(); ++j) l += dy[j] * y[j];
    return l;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    Vec plus = x, minus = x;
    plus[i] += h;
    minus[i] -= h;
    const double fd = (loss(plus) - loss(minus)) / (2 * h);
    INFO(what << ": element " << i << " of " << x.size() << ", finite difference " << fd << " vs backward "
              << grad[i]);
    CHECK(std::fabs(fd - grad[i]) <= rtol * std::max(1.0, std::fabs(fd)));
  }
}

}  // namespace te_test
