// reduce_test.cc — sumall_except_dim, sum_rows, reduce_with_axis (sum / maximum / minimum, with and
// without keepdim), sumall / maxall / minall against a float64 reference on fresh random data: odd sizes
// (1, 3, 17, 1000+), long reductions (2^20 elements), padded and offset source views, padded
// destinations, `=` and `+=`, evaluation through the plan inside an elementwise map, reductions of
// expressions, half / bf16 / int32 inputs, size-0 edges, determinism and errors.
//
// Each reduction is checked three ways: as the whole right-hand side (the top-level evaluators of
// cpu/reduce.h and cuda/reduce.cuh), with `+=` onto random values, and inside F<op::identity>(...)
// (the node's plan, run by the generic loop).
//
// Tolerances: a sum is compared relative to the sum of the magnitudes of its terms (float rounding
// scales with that, not with the result, which may cancel to near zero); long sums use integer-valued
// data, whose float sums are exact, and are compared exactly; maximum / minimum are exact.
#include "test_util.h"
#include <tensorexpr/expr/reduce.h>
#include <tensorexpr/cpu/reduce.h>
#if defined(__CUDACC__)
#include <tensorexpr/cuda/reduce.cuh>
#endif
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace {
using namespace te_test;
using namespace tensorexpr;
using namespace tensorexpr::expr;
using Catch::Matchers::Contains;

// ---- inputs -------------------------------------------------------------------------------------------------------

// Uniform integers in [lo, hi] (as DType): float sums of these are exact while below 2^24.
template <int dim, typename DType>
void FillInts(Tensor<cpu, dim, DType> t, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  Tensor<cpu, 2, DType> f = t.FlatTo2D();
  for (index_t y = 0; y < f.shape_[0]; ++y)
    for (index_t x = 0; x < f.shape_[1]; ++x) f.dptr_[y * f.stride_ + x] = static_cast<DType>(u(Rng()));
}

// How a source tensor lies in memory.
enum class Layout { kContiguous, kPadded, kSliceOfPadded };
const Layout kLayouts[] = {Layout::kContiguous, Layout::kPadded, Layout::kSliceOfPadded};
const char* LayoutName(Layout l) {
  return l == Layout::kContiguous ? "contiguous" : l == Layout::kPadded ? "padded rows" : "Slice() of padded";
}

// Random data on the host (for the reference) and the same bytes on the device under test, padding
// included (the padding holds poison, which would show in any sum that read it). kSliceOfPadded views
// rows [1, 1 + n) of a padded tensor with two more rows of dimension 0.
template <typename Device, int dim, typename DType>
struct Input {
  TensorContainer<cpu, dim, DType> host_all;
  TensorContainer<Device, dim, DType> dev_all;
  Tensor<cpu, dim, DType> host;
  Tensor<Device, dim, DType> dev;
};

// Copies every element a host view spans (padding included) into a device container of the same layout.
template <typename Device, int dim, typename DType>
void UploadSpan(TensorContainer<Device, dim, DType>& d, const Tensor<cpu, dim, DType>& h, Stream<Device>* stream) {
  REQUIRE(d.stride_ == h.stride_);
  const index_t rows = h.shape_.ProdShape(0, dim - 1);
  if (rows * h.stride_ == 0) return;
  Copy(Tensor<Device, 2, DType>(d.dptr_, Shape2(rows, h.stride_), h.stride_, stream),
       Tensor<cpu, 2, DType>(h.dptr_, Shape2(rows, h.stride_), h.stride_, nullptr), stream);
  Sync(stream);
}

template <typename Device, typename DType, int dim, typename Fill>
Input<Device, dim, DType> MakeInput(const Shape<dim>& s, Layout layout, Stream<Device>* stream, Fill fill) {
  const bool pad = layout != Layout::kContiguous;
  Shape<dim> all = s;
  if (layout == Layout::kSliceOfPadded) all[0] += 2;
  Input<Device, dim, DType> in{TensorContainer<cpu, dim, DType>(all, pad), TensorContainer<Device, dim, DType>(pad),
                               {}, {}};
  Poison(in.host_all.view());
  fill(in.host_all.view());
  in.dev_all.set_stream(stream);
  in.dev_all.Resize(all);
  UploadSpan(in.dev_all, in.host_all.view(), stream);
  in.host = in.host_all.view();
  in.dev = in.dev_all.view();
  if (layout == Layout::kSliceOfPadded) {
    in.host = in.host.Slice(1, 1 + s[0]);
    in.dev = in.dev.Slice(1, 1 + s[0]);
  }
  return in;
}

auto Uniform(double lo, double hi) {
  return [lo, hi](auto t) { FillRandom(t, lo, hi); };
}
auto Ints(int lo, int hi) {
  return [lo, hi](auto t) { FillInts(t, lo, hi); };
}

// ---- the reference ------------------------------------------------------------------------------------------------

// Element of a host tensor as double (test_util's At goes through float, which would round float64 data).
template <int dim, typename DType>
double Elem(const Tensor<cpu, dim, DType>& t, const Shape<dim>& idx) {
  index_t row = 0;
  for (int i = 0; i + 1 < dim; ++i) row = row * t.shape_[i] + idx[i];
  return AsDouble(t.dptr_[row * t.stride_ + idx[dim - 1]]);
}

// value[f]: output f in float64; scale[f]: what its rounding error is relative to (sum of |terms| for a
// sum, |value| for maximum / minimum).
struct Ref {
  std::vector<double> value, scale;
};

// Reduces every element of src into output to_out(index) in float64, starting from the reducer's
// identity (which is what an empty reduction gives).
template <typename Reducer, int dim, typename DType, typename ToOut>
Ref Reference(const Tensor<cpu, dim, DType>& src, index_t outputs, ToOut to_out) {
  Ref r;
  r.value.assign(static_cast<size_t>(outputs), static_cast<double>(Reducer::template Init<accum_t<DType>, DType>()));
  r.scale.assign(static_cast<size_t>(outputs), 0.0);
  ForEachIndex(src.shape_, [&](const Shape<dim>& idx) {
    const size_t f = static_cast<size_t>(to_out(idx));
    const double x = Elem(src, idx);
    if constexpr (std::is_same<Reducer, red::sum>::value) {
      r.value[f] += x;
      r.scale[f] += std::fabs(x);
    } else if constexpr (std::is_same<Reducer, red::maximum>::value) {
      r.value[f] = std::max(r.value[f], x);
    } else {
      r.value[f] = std::min(r.value[f], x);
    }
  });
  if constexpr (!std::is_same<Reducer, red::sum>::value) {
    for (size_t f = 0; f < r.value.size(); ++f) r.scale[f] = std::fabs(r.value[f]);
  }
  return r;
}

// Output index maps: the kept dimension's index; the index with `axis` removed (row-major); 0.
template <int dim>
auto KeepOut(int k) {
  return [k](const Shape<dim>& idx) { return idx[k]; };
}
template <int dim>
auto AxisOut(const Shape<dim>& s, int axis) {
  return [s, axis](const Shape<dim>& idx) {
    index_t f = 0;
    for (int i = 0; i < dim; ++i)
      if (i != axis) f = f * s[i] + idx[i];
    return f;
  };
}
template <int dim>
auto AllOut() {
  return [](const Shape<dim>&) { return index_t(0); };
}

// Compares got (row-major output f) with ref, plus base (the destination's old values for +=).
template <int dim, typename DType>
void CheckOut(const Tensor<cpu, dim, DType>& got, const Ref& ref, const Tensor<cpu, dim, DType>* base, double tol,
              const std::string& what) {
  REQUIRE(static_cast<size_t>(got.shape_.Size()) == ref.value.size());
  index_t bad = 0;
  size_t f = 0;
  std::string first;
  ForEachIndex(got.shape_, [&](const Shape<dim>& idx) {
    double expect = ref.value[f], scale = ref.scale[f];
    if (base != nullptr) {
      const double b = Elem(*base, idx);
      expect += b;
      scale += std::fabs(b);
    }
    const double g = Elem(got, idx);
    // (equal first: an identity of -inf / +inf has no finite difference)
    if (!(g == expect || std::fabs(g - expect) <= tol * std::max(1.0, scale))) {
      if (bad++ == 0) first = Message("first mismatch at ", idx, ": got ", g, ", expected ", expect);
    }
    ++f;
  });
  INFO(what);
  INFO(first);
  INFO("mismatches: " << bad << " of " << got.shape_.Size() << " (shape " << got.shape_ << ")");
  CHECK(bad == 0);
}


// Runs reduction e on the device three ways and checks each against ref:
//   dst = e               the top-level evaluator, into a padded destination full of poison
//   dst += e              onto random values
//   dst = identity(e)     the plan, inside an elementwise map
template <typename Device, typename E>
void CheckReduction(Stream<Device>* stream, const E& e, const Ref& ref, double tol, const std::string& what) {
  using DType = typename E::value_type;
  constexpr int odim = E::kDim;
  const Shape<odim> os = e.shape();
  {
    TensorContainer<cpu, odim, DType> h(os, true);
    Poison(h.view());
    TensorContainer<Device, odim, DType> d(true);
    d.set_stream(stream);
    d.Resize(os);
    UploadSpan(d, h.view(), stream);
    Tensor<Device, odim, DType> out = d.view();
    out = e;
    CheckOut(ToHost(out).view(), ref, static_cast<const Tensor<cpu, odim, DType>*>(nullptr), tol, what + ", dst = e");
  }
  {
    TensorContainer<cpu, odim, DType> init(os);
    FillRandom(init.view());
    auto d = ToDevice<Device>(init.view(), stream);
    Tensor<Device, odim, DType> out = d.view();
    out += e;
    // the old value adds one rounding of the result's size
    const Tensor<cpu, odim, DType> base = init.view();
    CheckOut(ToHost(out).view(), ref, &base, std::max(tol, Tol<DType>()), what + ", dst += e");
  }
  {
    TensorContainer<cpu, odim, DType> h(os);
    Poison(h.view());
    auto d = ToDevice<Device>(h.view(), stream);
    Tensor<Device, odim, DType> out = d.view();
    out = F<op::identity>(e);
    CheckOut(ToHost(out).view(), ref, static_cast<const Tensor<cpu, odim, DType>*>(nullptr), tol,
             what + ", dst = identity(e) (the plan)");
  }
}

// reduce_with_axis<Reducer, keepdim>(src, axis) for every axis, checked.
template <typename Reducer, bool keepdim, typename Device, int dim, typename DType>
void CheckAxes(Stream<Device>* stream, const Input<Device, dim, DType>& in, double tol, const std::string& what) {
  const Shape<dim> s = in.host.shape_;
  for (int axis = 0; axis < dim; ++axis) {
    index_t outputs = 1;
    for (int i = 0; i < dim; ++i)
      if (i != axis) outputs *= s[i];
    const Ref ref = Reference<Reducer>(in.host, outputs, AxisOut<dim>(s, axis));
    CheckReduction(stream, reduce_with_axis<Reducer, keepdim>(in.dev, axis), ref, tol,
                   Message("reduce_with_axis<", Reducer::name(), keepdim ? ", keepdim" : "", ">(a, ", axis, ") of ", s,
                           " ", what));
  }
}

}  // namespace

// ---- sumall_except_dim / sum_rows ---------------------------------------------------------------------------------

TE_DEVICE_TEST_CASE("sumall_except_dim<k> of 3-D and 4-D tensors matches a float64 reference", "[reduce]") {
  const Shape<3> shapes3[] = {Shape3(2, 3, 5),    Shape3(1, 1, 1),   Shape3(3, 17, 100), Shape3(4, 3, 1025),
                              Shape3(1000, 3, 1), Shape3(5, 1, 7),   Shape3(2, 1001, 3), Shape3(17, 2, 33)};
  for (const Shape<3>& s : shapes3) {
    for (Layout layout : kLayouts) {
      auto in = MakeInput<Device, float>(s, layout, stream, Uniform(-1, 1));
      StaticFor<3>([&](auto kc) {
        constexpr int k = decltype(kc)::value;
        const Ref ref = Reference<red::sum>(in.host, s[k], KeepOut<3>(k));
        CheckReduction(stream, sumall_except_dim<k>(in.dev), ref, Tol<float>(),
                       Message("sumall_except_dim<", k, "> of ", s, " ", LayoutName(layout)));
      });
    }
  }
  const Shape<4> shapes4[] = {Shape4(2, 3, 4, 5), Shape4(3, 2, 1, 33), Shape4(1, 7, 2, 1), Shape4(2, 9, 3, 130)};
  for (const Shape<4>& s : shapes4) {
    for (Layout layout : kLayouts) {
      auto in = MakeInput<Device, double>(s, layout, stream, Uniform(-1, 1));
      StaticFor<4>([&](auto kc) {
        constexpr int k = decltype(kc)::value;
        const Ref ref = Reference<red::sum>(in.host, s[k], KeepOut<4>(k));
        CheckReduction(stream, sumall_except_dim<k>(in.dev), ref, Tol<double>(),
                       Message("sumall_except_dim<", k, "> of ", s, " (float64) ", LayoutName(layout)));
      });
    }
  }
}

TE_DEVICE_TEST_CASE("reduce_except_dim<maximum / minimum, k> matches a float64 reference", "[reduce]") {
  const Shape<3> shapes[] = {Shape3(3, 5, 7), Shape3(1, 1, 1), Shape3(2, 4, 1100), Shape3(600, 2, 3)};
  for (const Shape<3>& s : shapes) {
    for (Layout layout : kLayouts) {
      // all negative: a wrong identity (0) would win every maximum
      auto neg = MakeInput<Device, float>(s, layout, stream, Uniform(-5, -1));
      auto pos = MakeInput<Device, float>(s, layout, stream, Uniform(1, 5));
      StaticFor<3>([&](auto kc) {
        constexpr int k = decltype(kc)::value;
        CheckReduction(stream, reduce_except_dim<red::maximum, k>(neg.dev),
                       Reference<red::maximum>(neg.host, s[k], KeepOut<3>(k)), 0.0,
                       Message("reduce_except_dim<maximum, ", k, "> of ", s, " ", LayoutName(layout)));
        CheckReduction(stream, reduce_except_dim<red::minimum, k>(pos.dev),
                       Reference<red::minimum>(pos.host, s[k], KeepOut<3>(k)), 0.0,
                       Message("reduce_except_dim<minimum, ", k, "> of ", s, " ", LayoutName(layout)));
      });
    }
  }
}

TE_DEVICE_TEST_CASE("sum_rows sums over the rows and keeps the last dimension", "[reduce]") {
  const Shape<2> shapes[] = {Shape2(1, 1), Shape2(3, 17), Shape2(1000, 3), Shape2(5, 1000), Shape2(17, 1),
                             Shape2(1, 1031), Shape2(5, 5000)};
  for (const Shape<2>& s : shapes) {
    for (Layout layout : kLayouts) {
      auto in = MakeInput<Device, float>(s, layout, stream, Uniform(-1, 1));
      CheckReduction(stream, sum_rows(in.dev), Reference<red::sum>(in.host, s[1], KeepOut<2>(1)), Tol<float>(),
                     Message("sum_rows of ", s, " ", LayoutName(layout)));
    }
  }
  // more dimensions: every leading one is summed
  auto in = MakeInput<Device, float>(Shape3(4, 5, 6), Layout::kPadded, stream, Uniform(-1, 1));
  CheckReduction(stream, sum_rows(in.dev), Reference<red::sum>(in.host, 6, KeepOut<3>(2)), Tol<float>(),
                 "sum_rows of (4,5,6) padded rows");
}

// ---- reduce_with_axis ---------------------------------------------------------------------------------------------

TE_DEVICE_TEST_CASE("reduce_with_axis<sum / maximum / minimum> over every axis, with and without keepdim", "[reduce]") {
  const Shape<2> shapes2[] = {Shape2(1, 1), Shape2(7, 3), Shape2(1031, 5), Shape2(3, 1031)};
  const Shape<3> shapes3[] = {Shape3(2, 3, 5), Shape3(1, 17, 1), Shape3(9, 1, 1001), Shape3(3, 130, 7)};
  const Shape<4> shapes4[] = {Shape4(2, 3, 4, 5), Shape4(3, 1, 17, 2), Shape4(2, 40, 3, 9), Shape4(2, 3, 3, 1000)};
  auto run_all = [&](const auto& in, const std::string& what) {
    CheckAxes<red::sum, false>(stream, in, Tol<float>(), what);
    CheckAxes<red::sum, true>(stream, in, Tol<float>(), what);
    CheckAxes<red::maximum, false>(stream, in, 0.0, what);
    CheckAxes<red::maximum, true>(stream, in, 0.0, what);
    CheckAxes<red::minimum, false>(stream, in, 0.0, what);
    CheckAxes<red::minimum, true>(stream, in, 0.0, what);
  };
  for (Layout layout : kLayouts) {
    const auto rand = Uniform(-1, 1);
    for (const auto& s : shapes2) run_all(MakeInput<Device, float>(s, layout, stream, rand), LayoutName(layout));
    for (const auto& s : shapes3) run_all(MakeInput<Device, float>(s, layout, stream, rand), LayoutName(layout));
    for (const auto& s : shapes4) run_all(MakeInput<Device, float>(s, layout, stream, rand), LayoutName(layout));
  }
  // one-signed data: an identity of 0 instead of the lowest / highest value would show
  for (const auto& s : shapes3) {
    auto neg = MakeInput<Device, float>(s, Layout::kPadded, stream, Uniform(-5, -1));
    CheckAxes<red::maximum, false>(stream, neg, 0.0, "all negative");
    auto pos = MakeInput<Device, float>(s, Layout::kPadded, stream, Uniform(1, 5));
    CheckAxes<red::minimum, true>(stream, pos, 0.0, "all positive");
  }
  // 1-D with keepdim: shape (1)
  auto v = MakeInput<Device, float>(Shape1(1033), Layout::kContiguous, stream, Uniform(-1, 1));
  CheckAxes<red::sum, true>(stream, v, Tol<float>(), "1-D");
  CheckAxes<red::maximum, true>(stream, v, 0.0, "1-D");
}

TE_DEVICE_TEST_CASE("reduce_with_axis results have the documented shapes", "[reduce]") {
  TensorContainer<Device, 4, float> a(Shape4(2, 3, 4, 5));
  CHECK(reduce_with_axis<red::sum>(a, 0).shape() == Shape3(3, 4, 5));
  CHECK(reduce_with_axis<red::sum>(a, 2).shape() == Shape3(2, 3, 5));
  CHECK(reduce_with_axis<red::maximum, true>(a, 3).shape() == Shape4(2, 3, 4, 1));
  CHECK(reduce_with_axis<red::minimum, true>(a, 1).shape() == Shape4(2, 1, 4, 5));
  CHECK(sumall_except_dim<2>(a).shape() == Shape1(4));
  CHECK(sum_rows(a).shape() == Shape1(5));
  CHECK(sumall(a).shape() == Shape1(1));
  CHECK(maxall(a).shape() == Shape1(1));
  CHECK(minall(a).shape() == Shape1(1));
}

// ---- whole tensor -------------------------------------------------------------------------------------------------

TE_DEVICE_TEST_CASE("sumall / maxall / minall reduce the whole tensor to shape (1)", "[reduce]") {
  const Shape<3> shapes[] = {Shape3(1, 1, 1), Shape3(3, 5, 7), Shape3(1, 1, 1031), Shape3(1031, 1, 1),
                             Shape3(10, 20, 30)};
  for (const Shape<3>& s : shapes) {
    for (Layout layout : kLayouts) {
      auto in = MakeInput<Device, float>(s, layout, stream, Uniform(-1, 1));
      const std::string what = Message(" of ", s, " ", LayoutName(layout));
      CheckReduction(stream, sumall(in.dev), Reference<red::sum>(in.host, 1, AllOut<3>()), Tol<float>(),
                     "sumall" + what);
      CheckReduction(stream, maxall(in.dev), Reference<red::maximum>(in.host, 1, AllOut<3>()), 0.0, "maxall" + what);
      CheckReduction(stream, minall(in.dev), Reference<red::minimum>(in.host, 1, AllOut<3>()), 0.0, "minall" + what);
    }
  }
  auto v = MakeInput<Device, float>(Shape1(1), Layout::kContiguous, stream, Uniform(-1, 1));
  CheckReduction(stream, sumall(v.dev), Reference<red::sum>(v.host, 1, AllOut<1>()), Tol<float>(), "sumall of (1,)");
}

// ---- long reductions: chunked (on the GPU, the last block of each output combines), exact on integer-valued data --

TE_DEVICE_TEST_CASE("long reductions are exact on integer-valued data", "[reduce][long]") {
  for (bool force64 : Index64Modes<Device>()) {
    Index64Scope scope(force64);
    const std::string idx = force64 ? " (64-bit index kernels)" : "";
    {
      auto in = MakeInput<Device, float>(Shape1(index_t(1) << 20), Layout::kContiguous, stream, Ints(-8, 8));
      CheckReduction(stream, sumall(in.dev), Reference<red::sum>(in.host, 1, AllOut<1>()), 0.0, "sumall of 2^20" + idx);
      CheckReduction(stream, maxall(in.dev), Reference<red::maximum>(in.host, 1, AllOut<1>()), 0.0,
                     "maxall of 2^20" + idx);
      CheckReduction(stream, minall(in.dev), Reference<red::minimum>(in.host, 1, AllOut<1>()), 0.0,
                     "minall of 2^20" + idx);
    }
    {
      auto in = MakeInput<Device, float>(Shape2(1025, 1023), Layout::kPadded, stream, Ints(-8, 8));
      CheckReduction(stream, sumall(in.dev), Reference<red::sum>(in.host, 1, AllOut<2>()), 0.0,
                     "sumall of padded (1025,1023)" + idx);
    }
    {  // few outputs, long rows: chunks per output
      auto in = MakeInput<Device, float>(Shape3(3, 512, 513), Layout::kContiguous, stream, Ints(-8, 8));
      CheckReduction(stream, sumall_except_dim<0>(in.dev), Reference<red::sum>(in.host, 3, KeepOut<3>(0)), 0.0,
                     "sumall_except_dim<0> of (3,512,513)" + idx);
      CheckReduction(stream, sumall_except_dim<1>(in.dev), Reference<red::sum>(in.host, 512, KeepOut<3>(1)), 0.0,
                     "sumall_except_dim<1> of (3,512,513)" + idx);
    }
    {  // (N, C, HW) with 3 channels
      auto in = MakeInput<Device, float>(Shape3(32, 3, 4099), Layout::kSliceOfPadded, stream, Ints(-8, 8));
      CheckReduction(stream, sumall_except_dim<1>(in.dev), Reference<red::sum>(in.host, 3, KeepOut<3>(1)), 0.0,
                     "sumall_except_dim<1> of Slice() of padded (32,3,4099)" + idx);
    }
    {  // tall and narrow: outputs along rows, the reduced rows in chunks
      auto in = MakeInput<Device, float>(Shape2(index_t(1) << 18, 3), Layout::kPadded, stream, Ints(-8, 8));
      CheckReduction(stream, sum_rows(in.dev), Reference<red::sum>(in.host, 3, KeepOut<2>(1)), 0.0,
                     "sum_rows of padded (2^18,3)" + idx);
      CheckReduction(stream, reduce_with_axis<red::maximum>(in.dev, 0),
                     Reference<red::maximum>(in.host, 3, AxisOut<2>(in.host.shape_, 0)), 0.0,
                     "reduce_with_axis<maximum>(a, 0) of padded (2^18,3)" + idx);
    }
    {  // two long rows
      auto in = MakeInput<Device, float>(Shape2(2, index_t(1) << 19), Layout::kContiguous, stream, Ints(-8, 8));
      CheckReduction(stream, reduce_with_axis<red::sum>(in.dev, 1),
                     Reference<red::sum>(in.host, 2, AxisOut<2>(in.host.shape_, 1)), 0.0,
                     "reduce_with_axis<sum>(a, 1) of (2,2^19)" + idx);
    }
    {  // a middle axis with many rows and few outputs
      auto in = MakeInput<Device, float>(Shape3(2, 40000, 3), Layout::kPadded, stream, Ints(-8, 8));
      CheckReduction(stream, reduce_with_axis<red::sum, true>(in.dev, 1),
                     Reference<red::sum>(in.host, 6, AxisOut<3>(in.host.shape_, 1)), 0.0,
                     "reduce_with_axis<sum, keepdim>(a, 1) of padded (2,40000,3)" + idx);
    }
  }
}

// ---- composition --------------------------------------------------------------------------------------------------

// Rows that are whole 16-byte vectors, aligned: the GPU reads them a vector at a time (cuda/reduce.cuh),
// for every keep-middle kernel (one warp per output, one block per output, chunks), both index widths,
// padded and sliced rows, and NaN in the last lane of a vector.
TE_DEVICE_TEST_CASE("reductions over rows of whole vectors match the reference", "[reduce][vector]") {
  for (bool force64 : Index64Modes<Device>()) {
    Index64Scope scope(force64);
    for (Layout layout : kLayouts) {
      const std::string what = Message(" (", LayoutName(layout), force64 ? ", 64-bit index kernels)" : ")");
      auto rows = MakeInput<Device, float>(Shape2(300, 3136), layout, stream, Ints(-8, 8));
      CheckReduction(stream, reduce_with_axis<red::sum>(rows.dev, 1), Reference<red::sum>(rows.host, 300, KeepOut<2>(0)),
                     0.0, "row sums of (300,3136)" + what);
      CheckReduction(stream, reduce_with_axis<red::maximum>(rows.dev, 1),
                     Reference<red::maximum>(rows.host, 300, KeepOut<2>(0)), 0.0, "row maxima of (300,3136)" + what);
      auto nchw = MakeInput<Device, float>(Shape3(4, 64, 3136), layout, stream, Ints(-8, 8));
      CheckReduction(stream, sumall_except_dim<1>(nchw.dev), Reference<red::sum>(nchw.host, 64, KeepOut<3>(1)), 0.0,
                     "sumall_except_dim<1> of (4,64,3136)" + what);
      CheckReduction(stream, sumall(nchw.dev), Reference<red::sum>(nchw.host, 1, AllOut<3>()), 0.0,
                     "sumall of (4,64,3136)" + what);
      auto halves = MakeInput<Device, half_t>(Shape2(40, 1024), layout, stream, Ints(-8, 8));
      CheckReduction(stream, reduce_with_axis<red::sum>(halves.dev, 1),
                     Reference<red::sum>(halves.host, 40, KeepOut<2>(0)), 0.0, "half row sums of (40,1024)" + what);
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = MakeInput<Device, float>(Shape2(6, 1024), Layout::kContiguous, stream, [nan](auto t) {
    FillRandom(t, -1.0, 1.0);
    t[2][1023] = nan;  // the last lane of the last vector of row 2
    t[4][4] = nan;     // the first lane of a vector
  });
  TensorContainer<Device, 1, float> r(Shape1(6));
  r.set_stream(stream);
  r = reduce_with_axis<red::maximum>(m.dev, 1);
  const auto h = ToHost(r.view());
  for (index_t y = 0; y < 6; ++y) CHECK(std::isnan(h[y]) == (y == 2 || y == 4));
}

TE_DEVICE_TEST_CASE("reductions compose inside expressions and reduce expressions", "[reduce]") {
  auto a = MakeInput<Device, float>(Shape3(5, 7, 33), Layout::kPadded, stream, Uniform(-1, 1));
  auto v = MakeInput<Device, float>(Shape1(7), Layout::kContiguous, stream, Uniform(-1, 1));
  const Ref per_channel = Reference<red::sum>(a.host, 7, KeepOut<3>(1));
  {  // dst = sumall_except_dim<1>(a) * 2 + v
    TensorContainer<cpu, 1, float> h(Shape1(7));
    Poison(h.view());
    auto d = ToDevice<Device>(h.view(), stream);
    Tensor<Device, 1, float> dst = d.view();
    dst = sumall_except_dim<1>(a.dev) * 2.0f + v.dev;
    Ref want = per_channel;
    for (index_t c = 0; c < 7; ++c) {
      want.value[c] = 2 * want.value[c] + Elem(v.host, Shape1(c));
      want.scale[c] = 2 * want.scale[c] + std::fabs(Elem(v.host, Shape1(c)));
    }
    CheckOut(ToHost(dst).view(), want, static_cast<const Tensor<cpu, 1, float>*>(nullptr), Tol<float>(),
             "sumall_except_dim<1>(a) * 2 + v");
    // and += of the same
    TensorContainer<cpu, 1, float> before = ToHost(dst);
    dst += sumall_except_dim<1>(a.dev) * 2.0f + v.dev;
    const Tensor<cpu, 1, float> base = before.view();
    CheckOut(ToHost(dst).view(), want, &base, Tol<float>(), "dst += sumall_except_dim<1>(a) * 2 + v");
  }
  {  // the range along an axis: two reductions in one map
    TensorContainer<cpu, 2, float> h(Shape2(5, 33));
    Poison(h.view());
    auto d = ToDevice<Device>(h.view(), stream);
    Tensor<Device, 2, float> dst = d.view();
    dst = reduce_with_axis<red::maximum>(a.dev, 1) - reduce_with_axis<red::minimum>(a.dev, 1);
    const Ref mx = Reference<red::maximum>(a.host, 5 * 33, AxisOut<3>(a.host.shape_, 1));
    const Ref mn = Reference<red::minimum>(a.host, 5 * 33, AxisOut<3>(a.host.shape_, 1));
    Ref want = mx;
    for (size_t f = 0; f < want.value.size(); ++f) {
      want.value[f] = mx.value[f] - mn.value[f];
      want.scale[f] = mx.scale[f] + mn.scale[f];
    }
    CheckOut(ToHost(dst).view(), want, static_cast<const Tensor<cpu, 2, float>*>(nullptr), Tol<float>(),
             "max - min along axis 1");
  }
  {  // the reduction of an elementwise expression (read by flat index when contiguous)
    auto b = MakeInput<Device, float>(Shape3(5, 7, 33), Layout::kContiguous, stream, Uniform(-1, 1));
    auto c = MakeInput<Device, float>(Shape3(5, 7, 33), Layout::kContiguous, stream, Uniform(-1, 1));
    TensorContainer<cpu, 3, float> prod(Shape3(5, 7, 33));
    ForEachIndex(prod.shape_, [&](const Shape<3>& i) {
      prod.view().FlatTo2D()[i[0] * 7 + i[1]][i[2]] = static_cast<float>(Elem(b.host, i) * Elem(c.host, i) + 1.0);
    });
    CheckReduction(stream, sumall_except_dim<1>(b.dev * c.dev + 1.0f),
                   Reference<red::sum>(prod.view(), 7, KeepOut<3>(1)), Tol<float>(), "sumall_except_dim<1>(b * c + 1)");
    // (not exact: the product rounds once in the reference, and maybe not at all in a fused multiply-add)
    CheckReduction(stream, reduce_with_axis<red::maximum>(b.dev * c.dev + 1.0f, 2),
                   Reference<red::maximum>(prod.view(), 35, AxisOut<3>(prod.shape_, 2)), Tol<float>(),
                   "reduce_with_axis<maximum>(b * c + 1, 2)");
    // padded operands: the same expression read by rows
    CheckReduction(stream, sumall_except_dim<1>(b.dev * a.dev),
                   [&] {
                     TensorContainer<cpu, 3, float> p(Shape3(5, 7, 33));
                     ForEachIndex(p.shape_, [&](const Shape<3>& i) {
                       p.view().FlatTo2D()[i[0] * 7 + i[1]][i[2]] =
                           static_cast<float>(Elem(b.host, i) * Elem(a.host, i));
                     });
                     return Reference<red::sum>(p.view(), 7, KeepOut<3>(1));
                   }(),
                   Tol<float>(), "sumall_except_dim<1>(b * padded a)");
  }
  {  // a non-elementwise source: sum_rows of a transpose gives the row sums of m
    auto m = MakeInput<Device, float>(Shape2(7, 1029), Layout::kPadded, stream, Uniform(-1, 1));
    CheckReduction(stream, sum_rows(m.dev.T()), Reference<red::sum>(m.host, 7, KeepOut<2>(0)), Tol<float>(),
                   "sum_rows(m.T())");
  }
  {  // a reduction of a reduction
    CheckReduction(stream, sumall(sumall_except_dim<1>(a.dev)), Reference<red::sum>(a.host, 1, AllOut<3>()),
                   Tol<float>(), "sumall(sumall_except_dim<1>(a))");
  }
}

// ---- dtypes -------------------------------------------------------------------------------------------------------

TE_DEVICE_TEST_CASE("half and bf16 inputs accumulate in float", "[reduce][half]") {
  // Positive terms: a half accumulator would stall once the sum passes 2048 (spacing 2), a bf16 one at 256.
  {
    auto in = MakeInput<Device, half_t>(Shape1(index_t(1) << 16), Layout::kContiguous, stream, Uniform(0, 1));
    CheckReduction(stream, sumall(in.dev), Reference<red::sum>(in.host, 1, AllOut<1>()), Tol<half_t>(),
                   "sumall of 2^16 half");
  }
  {
    auto in = MakeInput<Device, half_t>(Shape3(4, 3, 5001), Layout::kPadded, stream, Uniform(0, 1));
    CheckReduction(stream, sumall_except_dim<1>(in.dev), Reference<red::sum>(in.host, 3, KeepOut<3>(1)),
                   Tol<half_t>(), "sumall_except_dim<1> of half (4,3,5001)");
  }
  {
    auto in = MakeInput<Device, bf16_t>(Shape2(3001, 7), Layout::kSliceOfPadded, stream, Uniform(0, 1));
    CheckReduction(stream, sum_rows(in.dev), Reference<red::sum>(in.host, 7, KeepOut<2>(1)), Tol<bf16_t>(),
                   "sum_rows of bf16 (3001,7)");
  }
  {
    auto in = MakeInput<Device, bf16_t>(Shape3(3, 2000, 5), Layout::kPadded, stream, Uniform(-1, 1));
    CheckReduction(stream, reduce_with_axis<red::maximum>(in.dev, 1),
                   Reference<red::maximum>(in.host, 15, AxisOut<3>(in.host.shape_, 1)), 0.0,
                   "reduce_with_axis<maximum>(bf16 a, 1)");
    CheckReduction(stream, minall(in.dev), Reference<red::minimum>(in.host, 1, AllOut<3>()), 0.0, "minall of bf16");
  }
  {  // or convert first to get a float result
    auto in = MakeInput<Device, half_t>(Shape2(300, 9), Layout::kContiguous, stream, Uniform(-1, 1));
    CheckReduction(stream, sum_rows(tcast<float>(in.dev)), Reference<red::sum>(in.host, 9, KeepOut<2>(1)),
                   Tol<float>(), "sum_rows(tcast<float>(half a))");
  }
}

TE_DEVICE_TEST_CASE("int32 inputs accumulate in int64", "[reduce]") {
  auto in = MakeInput<Device, int32_t>(Shape2(1001, 13), Layout::kPadded, stream, Ints(-1000, 1000));
  CheckReduction(stream, sum_rows(in.dev), Reference<red::sum>(in.host, 13, KeepOut<2>(1)), 0.0, "sum_rows of int32");
  CheckReduction(stream, reduce_with_axis<red::maximum>(in.dev, 1),
                 Reference<red::maximum>(in.host, 1001, AxisOut<2>(in.host.shape_, 1)), 0.0,
                 "reduce_with_axis<maximum> of int32");
}

// ---- edges --------------------------------------------------------------------------------------------------------

TE_DEVICE_TEST_CASE("maximum / minimum: NaN propagates and infinities are values, in every reduction form", "[reduce][nan]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  TensorContainer<Device, 1, float> one(Shape1(1));
  one.set_stream(stream);
  // NaN first, inside, last: in a short row, one split over threads / warps, and one cut into chunks.
  for (index_t n : {index_t(5), index_t(100003), index_t(1) << 20}) {
    for (index_t at : {index_t(0), n / 2 + 1, n - 1}) {
      INFO("maxall / minall of " << n << " elements, NaN at " << at);
      auto v = MakeInput<Device, float>(Shape1(n), Layout::kContiguous, stream, [at, nan](auto t) {
        FillRandom(t, -1.0, 1.0);
        t.dptr_[at] = nan;
      });
      one = maxall(v.dev);
      CHECK(std::isnan(ToHost(one.view())[0]));
      one = minall(v.dev);
      CHECK(std::isnan(ToHost(one.view())[0]));
      one = F<op::identity>(maxall(v.dev));  // the plan's sequential loop
      CHECK(std::isnan(ToHost(one.view())[0]));
    }
  }
  auto ninf = MakeInput<Device, float>(Shape1(4099), Layout::kContiguous, stream, [inf](auto t) { t = -inf; });
  one = maxall(ninf.dev);
  CHECK(ToHost(one.view())[0] == -inf);  // not -FLT_MAX
  // One NaN, one column of -inf and one row of +inf in a padded matrix: only their outputs change.
  auto m = MakeInput<Device, float>(Shape2(300, 77), Layout::kPadded, stream, [nan, inf](auto t) {
    FillRandom(t, -1.0, 1.0);
    t[123][45] = nan;
    for (index_t y = 0; y < 300; ++y) t[y][3] = -inf;
    for (index_t x = 0; x < 77; ++x) t[7][x] = inf;
  });
  TensorContainer<Device, 1, float> cols(Shape1(77)), rows(Shape1(300));
  cols.set_stream(stream);
  rows.set_stream(stream);
  cols = reduce_with_axis<red::maximum>(m.dev, 0);  // reduce-middle form
  const auto c = ToHost(cols.view());
  for (index_t x = 0; x < 77; ++x) CHECK(std::isnan(c[x]) == (x == 45));
  cols = reduce_with_axis<red::minimum>(m.dev, 0);
  CHECK(ToHost(cols.view())[3] == -inf);
  rows = reduce_with_axis<red::minimum>(m.dev, 1);  // keep-middle form
  const auto r = ToHost(rows.view());
  for (index_t y = 0; y < 300; ++y) CHECK(std::isnan(r[y]) == (y == 123));
  CHECK(r[7] == inf);
  // Elementwise: a NaN on either side is the result.
  auto a = MakeInput<Device, float>(Shape1(4), Layout::kContiguous, stream, [nan, inf](auto t) {
    t[0] = nan, t[1] = 1.f, t[2] = -inf, t[3] = 2.f;
  });
  auto b = MakeInput<Device, float>(Shape1(4), Layout::kContiguous, stream, [nan](auto t) {
    t[0] = 1.f, t[1] = nan, t[2] = 1.f, t[3] = 2.f;
  });
  TensorContainer<Device, 1, float> e(Shape1(4));
  e.set_stream(stream);
  e = F<op::maximum>(a.dev, b.dev);
  const auto mx = ToHost(e.view());
  CHECK((std::isnan(mx[0]) && std::isnan(mx[1]) && mx[2] == 1.f && mx[3] == 2.f));
  e = F<op::minimum>(a.dev, b.dev);
  const auto mn = ToHost(e.view());
  CHECK((std::isnan(mn[0]) && std::isnan(mn[1]) && mn[2] == -inf && mn[3] == 2.f));
}

// Long rows of negative values, infinities and a NaN with its sign bit set: the CPU's maximum / minimum
// compare float bits as integers (cpu/reduce.h), where a negative NaN orders below everything.
TE_DEVICE_TEST_CASE("maximum / minimum over long rows: negatives, infinities, a negative NaN", "[reduce][nan]") {
  const float inf = std::numeric_limits<float>::infinity();
  float neg_nan;
  const uint32_t neg_nan_bits = 0xFFC00000u;
  std::memcpy(&neg_nan, &neg_nan_bits, sizeof(neg_nan));
  const index_t cols = 203;
  auto m = MakeInput<Device, float>(Shape2(5, cols), Layout::kContiguous, stream, [&](auto t) {
    for (index_t x = 0; x < cols; ++x) {
      t[0][x] = -100.0f - float(x);       // all negative: max -100, min -100 - (cols - 1)
      t[1][x] = float(x % 17) - 8.0f;
      t[2][x] = float(x % 5);
      t[3][x] = -inf;
      t[4][x] = float(x);
    }
    t[1][150] = neg_nan;
    t[2][77] = inf;
    t[2][78] = -inf;
  });
  TensorContainer<Device, 1, float> r(Shape1(5));
  r.set_stream(stream);
  r = reduce_with_axis<red::maximum>(m.dev, 1);
  auto hi = ToHost(r.view());
  CHECK(hi[0] == -100.0f);
  CHECK(std::isnan(hi[1]));
  CHECK(hi[2] == inf);
  CHECK(hi[3] == -inf);
  CHECK(hi[4] == float(cols - 1));
  r = reduce_with_axis<red::minimum>(m.dev, 1);
  auto lo = ToHost(r.view());
  CHECK(lo[0] == -100.0f - float(cols - 1));
  CHECK(std::isnan(lo[1]));
  CHECK(lo[2] == -inf);
  CHECK(lo[3] == -inf);
  CHECK(lo[4] == 0.0f);
  // The same in double (64-bit keys).
  auto d = MakeInput<Device, double>(Shape2(2, cols), Layout::kContiguous, stream, [&](auto t) {
    for (index_t x = 0; x < cols; ++x) t[0][x] = -1e300 + double(x) * 1e290, t[1][x] = double(x) - 1e-300;
    t[1][9] = -std::numeric_limits<double>::quiet_NaN();
  });
  TensorContainer<Device, 1, double> rd(Shape1(2));
  rd.set_stream(stream);
  rd = reduce_with_axis<red::maximum>(d.dev, 1);
  auto hd = ToHost(rd.view());
  CHECK(hd[0] == -1e300 + double(cols - 1) * 1e290);
  CHECK(std::isnan(hd[1]));
}

#if !defined(__CUDACC__)
// cpu/simd_max_min.h's vector maximum / minimum (maxps / minps with an unordered test beside them) against
// plain loops: rows of every length around the 8-lane step, the 4-vector unrolled step and the length from
// which AVX2 takes over (64), float and double, and a NaN at every position of the first of several runs
// of one output, so that it enters a lane through a run's scalar tail as well as through the vectors, and
// must survive the vector steps of the runs after it.
template <typename DType, typename Reducer>
void CheckVectorMaxMin() {
  const bool max = std::is_same<Reducer, red::maximum>::value;
  for (index_t w : {index_t(1), index_t(7), index_t(8), index_t(9), index_t(13), index_t(16), index_t(31), index_t(33),
                    index_t(63), index_t(64), index_t(72), index_t(203), index_t(1000)}) {
    TensorContainer<cpu, 3, DType> a(Shape3(3, 4, w));
    FillRandom(a.view(), -100.0, 100.0);
    TensorContainer<cpu, 1, DType> got(Shape1(4));
    got = reduce_except_dim<Reducer, 1>(a);
    for (index_t k = 0; k < 4; ++k) {
      DType want = a[0][k][0];
      for (index_t i = 0; i < 3; ++i)
        for (index_t x = 0; x < w; ++x) want = max ? std::max(want, a[i][k][x]) : std::min(want, a[i][k][x]);
      INFO((max ? "maximum" : "minimum") << " of (3,4," << w << "), output " << k);
      CHECK(got[k] == want);
    }
    for (index_t at = 0; at < w; ++at) {
      INFO("NaN at " << at << " of the first run of output 2, rows of " << w);
      TensorContainer<cpu, 3, DType> b(a.shape_);
      Copy(b.view(), a.view());
      b[0][2][at] = std::numeric_limits<DType>::quiet_NaN();
      got = reduce_except_dim<Reducer, 1>(b);
      for (index_t k = 0; k < 4; ++k) CHECK(std::isnan(got[k]) == (k == 2));
    }
  }
}

// Under AVX2 where the processor has it and always with AVX2 turned off (the SSE2 vectors).
TEST_CASE("CPU vector maximum / minimum match plain loops; a NaN in any lane survives later runs", "[reduce][nan][isa][cpu]") {
  std::vector<cpu_isa::Isa> isas{cpu_isa::Isa::kBaseline};
  if (cpu_isa::DetectedIsa() >= cpu_isa::Isa::kAvx2) isas.push_back(cpu_isa::Isa::kAvx2);
  else WARN("this processor has no AVX2: only the SSE2 vectors are tested");
  for (cpu_isa::Isa isa : isas) {
    const cpu_isa::ScopedIsaLimit limit(isa);
    INFO((isa == cpu_isa::Isa::kAvx2 ? "AVX2" : "baseline (SSE2)"));
    CheckVectorMaxMin<float, red::maximum>();
    CheckVectorMaxMin<float, red::minimum>();
    CheckVectorMaxMin<double, red::maximum>();
    CheckVectorMaxMin<double, red::minimum>();
  }
}
#endif

TE_DEVICE_TEST_CASE("reductions over nothing give the identity; empty outputs write nothing", "[reduce]") {
  auto empty = MakeInput<Device, float>(Shape3(0, 3, 4), Layout::kContiguous, stream, Uniform(-1, 1));
  CheckReduction(stream, sumall_except_dim<1>(empty.dev), Reference<red::sum>(empty.host, 3, KeepOut<3>(1)), 0.0,
                 "sumall_except_dim<1> of (0,3,4)");
  CheckReduction(stream, sumall(empty.dev), Reference<red::sum>(empty.host, 1, AllOut<3>()), 0.0, "sumall of (0,3,4)");
  // maxall of nothing: -inf, minall of nothing: +inf (as NumPy and ONNX)
  CheckReduction(stream, maxall(empty.dev), Reference<red::maximum>(empty.host, 1, AllOut<3>()), 0.0,
                 "maxall of (0,3,4)");
  CheckReduction(stream, minall(empty.dev), Reference<red::minimum>(empty.host, 1, AllOut<3>()), 0.0,
                 "minall of (0,3,4)");
  // integers: the element type's lowest / highest value (the int64 accumulator's own would wrap); `=` only,
  // as `+=` of such a value overflows
  auto iempty = MakeInput<Device, int32_t>(Shape2(0, 3), Layout::kContiguous, stream, Ints(-5, 5));
  TensorContainer<Device, 1, int32_t> ione(Shape1(1));
  ione.set_stream(stream);
  ione = maxall(iempty.dev);
  CHECK(ToHost(ione.view())[0] == std::numeric_limits<int32_t>::lowest());
  ione = minall(iempty.dev);
  CHECK(ToHost(ione.view())[0] == std::numeric_limits<int32_t>::max());
  auto mid = MakeInput<Device, float>(Shape3(2, 0, 3), Layout::kContiguous, stream, Uniform(-1, 1));
  CheckReduction(stream, reduce_with_axis<red::sum>(mid.dev, 1),
                 Reference<red::sum>(mid.host, 6, AxisOut<3>(mid.host.shape_, 1)), 0.0,
                 "reduce_with_axis<sum>(a, 1) of (2,0,3)");
  // no outputs at all
  auto rows = MakeInput<Device, float>(Shape2(0, 5), Layout::kContiguous, stream, Uniform(-1, 1));
  TensorContainer<Device, 1, float> out(Shape1(0));
  Tensor<Device, 1, float> o = out.view();
  o = reduce_with_axis<red::sum>(rows.dev, 1);
  o += reduce_with_axis<red::sum>(rows.dev, 1);
  CHECK(o.shape_ == Shape1(0));
}

TE_DEVICE_TEST_CASE("reductions are deterministic", "[reduce]") {
  auto in = MakeInput<Device, float>(Shape1(index_t(1) << 20), Layout::kContiguous, stream, Uniform(-1, 1));
  auto tall = MakeInput<Device, float>(Shape2(index_t(1) << 16, 17), Layout::kPadded, stream, Uniform(-1, 1));
  auto run = [&] {
    TensorContainer<Device, 1, float> s(Shape1(1)), r(Shape1(17));
    Tensor<Device, 1, float> sv = s.view(), rv = r.view();
    sv = sumall(in.dev);
    rv = sum_rows(tall.dev);
    return std::make_pair(ToHost(sv), ToHost(rv));
  };
  const auto first = run();
  for (int i = 0; i < 3; ++i) {
    const auto again = run();
    CHECK(std::memcmp(first.first.dptr_, again.first.dptr_, sizeof(float)) == 0);
    CHECK(std::memcmp(first.second.dptr_, again.second.dptr_, 17 * sizeof(float)) == 0);
  }
}

#if !defined(__CUDACC__)
TEST_CASE("CPU reductions give the same bits for every thread count", "[reduce][cpu]") {
  TensorContainer<cpu, 1, float> a(Shape1(index_t(1) << 20));
  FillRandom(a.view());
  TensorContainer<cpu, 3, float> b(Shape3(64, 3, 4099));
  FillRandom(b.view());
  TensorContainer<cpu, 2, float> c(Shape2(index_t(1) << 16, 17), true);
  FillRandom(c.view());
  // 37 outputs, not chunked: the threads' blocks, and with them the groups of adjacent outputs that one
  // task reduces side by side, differ with the thread count.
  TensorContainer<cpu, 3, float> d(Shape3(5, 37, 1001));
  FillRandom(d.view());
  auto run = [&] {
    TensorContainer<cpu, 1, float> s(Shape1(1)), ch(Shape1(3)), r(Shape1(17)), many(Shape1(37)), mx(Shape1(37 * 5));
    s = sumall(a);
    ch = sumall_except_dim<1>(b);
    r = sum_rows(c);
    many = sumall_except_dim<1>(d);
    Tensor<cpu, 2, float>(mx.dptr_, Shape2(5, 37), 37, nullptr) = reduce_with_axis<red::maximum>(d.view(), 2);
    return std::vector<TensorContainer<cpu, 1, float>>{s, ch, r, many, mx};
  };
  const int saved = tensorexpr::detail::NumThreadsSetting();
  SetNumThreads(1);
  const auto one = run();
  for (int n : {2, 3, 8}) {
    SetNumThreads(n);
    const auto many = run();
    for (size_t i = 0; i < one.size(); ++i) {
      INFO("threads " << n << ", result " << i);
      CHECK(std::memcmp(one[i].dptr_, many[i].dptr_, sizeof(float) * one[i].shape_.Size()) == 0);
    }
  }
  tensorexpr::detail::NumThreadsSetting() = saved;
}
#endif

TE_DEVICE_TEST_CASE("bad reductions throw Error naming the problem", "[reduce][error]") {
  TensorContainer<Device, 3, float> a(Shape3(2, 3, 4));
  a.set_stream(stream);
  REQUIRE_THROWS_AS(reduce_with_axis<red::sum>(a, 3), tensorexpr::Error);
  REQUIRE_THROWS_WITH(reduce_with_axis<red::maximum>(a, 3), Contains("axis 3") && Contains("(2,3,4)"));
  REQUIRE_THROWS_WITH((reduce_with_axis<red::sum, true>(a, -1)), Contains("axis -1") && Contains("(2,3,4)"));
  TensorContainer<Device, 1, float> wrong(Shape1(5));
  Tensor<Device, 1, float> w = wrong.view();
  REQUIRE_THROWS_AS(w = sumall_except_dim<1>(a), tensorexpr::Error);
  REQUIRE_THROWS_WITH(w = sumall_except_dim<1>(a), Contains("(5,)") && Contains("(3,)"));
  REQUIRE_THROWS_WITH(w += sumall(a), Contains("(5,)") && Contains("(1,)"));
  TensorContainer<Device, 2, float> wrong2(Shape2(2, 3));
  Tensor<Device, 2, float> w2 = wrong2.view();
  REQUIRE_THROWS_WITH(w2 = reduce_with_axis<red::sum>(a, 1), Contains("(2,3)") && Contains("(2,4)"));
  // through the plan: the generic assignment check
  REQUIRE_THROWS_WITH(w = sumall_except_dim<2>(a) * 2.0f, Contains("(5,)") && Contains("(4,)"));
}
