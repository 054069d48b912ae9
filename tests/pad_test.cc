// pad_test.cc — the pad expression's border modes (expr/pad.h): constant (any value), edge, reflect and wrap
// on any dimensions of ranks 1 to 5, borders wider than the source, padded-row sources, nested
// expressions, every dtype, `=` and `+=`, against a naive float64 reference that walks the reflections one
// by one; errors name the bad padding. (The mshadow image forms: image_test.cc; the ONNX oracle's Pad
// cases: onnx_oracle_test.cc.)
#include "ops_test_util.h"

namespace {
using namespace te_test;

// The padded tensor in double: element idx of the output.
template <int dim>
double RefPad(const Tensor<cpu, dim, double>& src, const Shape<dim>& begin, const Shape<dim>& idx, PadMode mode,
              double value) {
  Shape<dim> at;
  for (int d = 0; d < dim; ++d) {
    at[d] = RefPadIndex(idx[d] - begin[d], src.shape_[d], mode);
    if (at[d] < 0) return value;
  }
  return At(src, at);
}

// Random border widths per dimension, up to twice the extent (reflect and wrap go round more than once);
// returns the padded shape.
template <int dim>
Shape<dim> RandomBorders(const Shape<dim>& shape, Shape<dim>* begin, Shape<dim>* end) {
  std::uniform_int_distribution<int> wide(0, 2);
  Shape<dim> padded;
  for (int d = 0; d < dim; ++d) {
    std::uniform_int_distribution<index_t> width(0, std::max<index_t>(1, shape[d] * wide(Rng())));
    (*begin)[d] = width(Rng());
    (*end)[d] = width(Rng());
    padded[d] = shape[d] + (*begin)[d] + (*end)[d];
  }
  return padded;
}

const PadMode kModes[] = {PadMode::kConstant, PadMode::kEdge, PadMode::kReflect, PadMode::kWrap};

template <typename Device, int dim, typename DType>
void RunPad(Stream<Device>* stream, const Shape<dim>& shape, PadMode mode, bool padded_rows, bool add) {
  Shape<dim> begin, end;
  const Shape<dim> out_shape = RandomBorders(shape, &begin, &end);
  const double value = std::uniform_real_distribution<double>(-3, 3)(Rng());
  const DType v = DType(static_cast<float>(value));
  INFO("pad " << PadModeName(mode) << " source " << shape << " begin " << begin << " end " << end << " dtype "
              << DataType<DType>::name() << (add ? " +=" : " ="));
  auto xh = Uniform<dim, DType>(shape);
  const auto x64 = FromVec<dim, double>(shape, ToVec(xh.view()));
  auto xd = Dev<Device>(xh.view(), stream, padded_rows);
  TensorContainer<cpu, dim, DType> outh(out_shape);
  const Vec before = Prefill(outh.view(), add ? kAddTo : kWriteTo);
  auto outd = Dev<Device>(outh.view(), stream, padded_rows);
  if (add) outd += expr::pad(xd.view(), begin, end, mode, v);
  else outd = expr::pad(xd.view(), begin, end, mode, v);
  Vec ref;
  ForEachIndex(out_shape, [&](const Shape<dim>& i) { ref.push_back(RefPad(x64.view(), begin, i, mode, AsDouble(v))); });
  CheckVec(ToHost(outd.view()).view(), Expect(add ? kAddTo : kWriteTo, before, ref), 2 * Tol<DType>(), "pad");
}

TE_DEVICE_TEST_CASE("pad border modes match the float64 reference on every rank", "[image][pad]") {
  for (PadMode mode : kModes) {
    for (int rep = 0; rep < 3; ++rep) {
      RunPad<Device, 1, float>(stream, Shape1(7), mode, false, false);
      RunPad<Device, 2, float>(stream, Shape2(5, 6), mode, true, rep == 1);
      RunPad<Device, 3, double>(stream, Shape3(3, 4, 5), mode, true, false);
      RunPad<Device, 4, float>(stream, Shape4(2, 3, 2, 5), mode, false, rep == 2);
      RunPad<Device, 5, double>(stream, Shape5(2, 1, 3, 2, 3), mode, true, false);
    }
    RunPad<Device, 3, half_t>(stream, Shape3(2, 3, 9), mode, true, false);
    RunPad<Device, 3, bf16_t>(stream, Shape3(4, 2, 3), mode, false, true);
    RunPad<Device, 2, float>(stream, Shape2(1, 1), mode, false, false);  // one element: every mode repeats it
  }
}

// unpad(g) against the float64 scatter: every padded element adds its gradient to the source element it
// reads (none for the constant border); then the adjoint identity against pad on the same device.
template <typename Device, int dim, typename DType>
void RunUnpad(Stream<Device>* stream, const Shape<dim>& shape, PadMode mode, bool padded_rows, bool add) {
  Shape<dim> begin, end;
  const Shape<dim> padded_shape = RandomBorders(shape, &begin, &end);
  INFO("unpad " << PadModeName(mode) << " source " << shape << " begin " << begin << " end " << end << " dtype "
                << DataType<DType>::name() << (add ? " +=" : " ="));
  auto gh = Uniform<dim, DType>(padded_shape);
  const auto g64 = FromVec<dim, double>(padded_shape, ToVec(gh.view()));
  auto gd = Dev<Device>(gh.view(), stream, padded_rows);
  TensorContainer<cpu, dim, DType> outh(shape);
  const Vec before = Prefill(outh.view(), add ? kAddTo : kWriteTo);
  auto outd = Dev<Device>(outh.view(), stream, padded_rows);
  if (add) outd += expr::unpad(gd.view(), begin, end, mode);
  else outd = expr::unpad(gd.view(), begin, end, mode);
  TensorContainer<cpu, dim, double> ref(shape, 0.0);
  double max_readers = 1;  // the most padded elements one source element collects
  ForEachIndex(padded_shape, [&](const Shape<dim>& p) {
    Shape<dim> at;
    for (int d = 0; d < dim; ++d) {
      at[d] = RefPadIndex(p[d] - begin[d], shape[d], mode);
      if (at[d] < 0) return;
    }
    ref.dptr_[Flat(shape, at)] += At(g64.view(), p);
  });
  for (int d = 0; d < dim; ++d) max_readers *= double(padded_shape[d]) / double(std::max<index_t>(shape[d], 1)) + 2;
  CheckVec(ToHost(outd.view()).view(), Expect(add ? kAddTo : kWriteTo, before, ToVec(ref.view())),
           max_readers * Tol<DType>(), "unpad");
  if (add) return;
  // <pad(x), g> = <x, unpad(g)>, both sides computed by the library on this device.
  auto xh = Uniform<dim, DType>(shape);
  auto xd = Dev<Device>(xh.view(), stream, padded_rows);
  TensorContainer<Device, dim, DType> px(padded_shape);
  px.set_stream(stream);
  px = expr::pad(xd.view(), begin, end, mode);
  const Vec pxv = ToVec(ToHost(px.view()).view()), gv = ToVec(gh.view()), xv = ToVec(xh.view()),
            ugv = ToVec(ToHost(outd.view()).view());
  double lhs = 0, rhs = 0, scale = 0;
  for (size_t i = 0; i < pxv.size(); ++i) lhs += pxv[i] * gv[i], scale += std::abs(pxv[i] * gv[i]);
  for (size_t i = 0; i < xv.size(); ++i) rhs += xv[i] * ugv[i];
  CHECK(std::abs(lhs - rhs) <= max_readers * Tol<DType>() * (scale + 1));
}

TE_DEVICE_TEST_CASE("unpad is pad's adjoint: the float64 scatter and <pad(x), g> = <x, unpad(g)>", "[image][pad]") {
  for (PadMode mode : kModes) {
    for (int rep = 0; rep < 3; ++rep) {
      RunUnpad<Device, 1, float>(stream, Shape1(7), mode, false, false);
      RunUnpad<Device, 2, double>(stream, Shape2(5, 6), mode, true, rep == 1);
      RunUnpad<Device, 3, double>(stream, Shape3(3, 4, 5), mode, true, false);
      RunUnpad<Device, 4, float>(stream, Shape4(2, 3, 2, 5), mode, false, rep == 2);
      RunUnpad<Device, 5, double>(stream, Shape5(2, 1, 3, 2, 3), mode, true, false);
    }
    RunUnpad<Device, 3, half_t>(stream, Shape3(2, 3, 4), mode, true, false);
    RunUnpad<Device, 3, bf16_t>(stream, Shape3(4, 2, 3), mode, false, true);
    RunUnpad<Device, 2, float>(stream, Shape2(1, 1), mode, false, false);  // every padded element reads it
    RunUnpad<Device, 2, double>(stream, Shape2(2, 2), mode, false, false);  // reflect's ends coincide
  }
}

TE_DEVICE_TEST_CASE("pad of a nested expression, and pad of pad", "[image][pad]") {
  auto ah = Uniform<3, float>(Shape3(2, 3, 4)), bh = Uniform<3, float>(Shape3(2, 3, 4));
  auto a = Dev<Device>(ah.view(), stream), b = Dev<Device>(bh.view(), stream);
  TensorContainer<Device, 3, float> out(Shape3(2, 3 + 1 + 4, 4 + 2 + 3));
  out.set_stream(stream);
  // reflect(2a + b) on H and W, then edge on top of it: pad composes with anything elementwise.
  out = expr::pad(expr::pad(2.0f * a.view() + b.view(), Shape3(0, 1, 2), Shape3(0, 2, 1), PadMode::kReflect),
                  Shape3(0, 0, 0), Shape3(0, 2, 2), PadMode::kEdge);
  TensorContainer<cpu, 3, double> sum(Shape3(2, 3, 4)), inner(Shape3(2, 6, 7));
  ForEachIndex(sum.shape_, [&](const Shape<3>& i) { sum.dptr_[Flat(sum.shape_, i)] = 2 * At(ah.view(), i) + At(bh.view(), i); });
  ForEachIndex(inner.shape_, [&](const Shape<3>& i) {
    inner.dptr_[Flat(inner.shape_, i)] = RefPad(sum.view(), Shape3(0, 1, 2), i, PadMode::kReflect, 0);
  });
  CheckAll(ToHost(out.view()).view(), [&](const Shape<3>& i) {
    return RefPad(inner.view(), Shape3(0, 0, 0), i, PadMode::kEdge, 0);
  }, Tol<float>(), "pad(pad(2a + b))");
}

TE_DEVICE_TEST_CASE("pad names negative padding, empty sources and unknown modes", "[image][pad][errors]") {
  TensorContainer<Device, 3, float> src(Shape3(2, 0, 5));
  src.set_stream(stream);
  RequireError([&] { (void)expr::pad(src.view(), Shape3(0, 0, -1), Shape3(0, 0, 0)); },
               {"padding of dimension 2", "begin -1", "(2,0,5)"});
  for (PadMode mode : {PadMode::kEdge, PadMode::kReflect, PadMode::kWrap})
    RequireError([&] { (void)expr::pad(src.view(), Shape3(0, 1, 0), Shape3(0, 0, 0), mode); },
                 {PadModeName(mode), "dimension 1", "(2,0,5)", "empty"});
  // Constant padding of an empty dimension is fine: the border alone.
  CHECK(expr::pad(src.view(), Shape3(0, 1, 0), Shape3(0, 2, 0)).shape() == Shape3(2, 3, 5));
  RequireError([&] { (void)expr::pad(src.view(), Shape3(0, 0, 0), Shape3(0, 0, 0), static_cast<PadMode>(7)); },
               {"unknown mode 7"});
  TensorContainer<Device, 2, float> grad(Shape2(3, 4));
  grad.set_stream(stream);
  RequireError([&] { (void)expr::unpad(grad.view(), Shape2(0, 3), Shape2(0, 2)); },
               {"unpad", "dimension 1", "exceed", "(3,4)"});
  RequireError([&] { (void)expr::unpad(grad.view(), Shape2(2, 0), Shape2(1, 0), PadMode::kReflect); },
               {"unpad", "reflect", "dimension 0", "none"});
  RequireError([&] { (void)expr::unpad(grad.view(), Shape2(0, -1), Shape2(0, 0)); }, {"unpad", "non-negative"});
}

}  // namespace
