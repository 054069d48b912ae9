// Convolution epilogues (<tensorexpr/ops/conv_epilogue.h>): out (req) expr(conv(x, W)) for the fusable
// form relu(conv + bias + residual), for user functors and scalars, for a residual that is the output
// itself, with every req, in both layouts, against a float64 loop; and the errors for a bias outside the
// expression or an expression of another shape.
#include <cmath>
#include <vector>
#include <tensorexpr/ops/conv_epilogue.h>
#include <tensorexpr/ops/conv_epilogue_map.h>
#include "test_util.h"

using namespace tensorexpr;
using te_test::FillRandom;
using te_test::ToDevice;
using te_test::ToHost;

namespace {

// A leaky relu written as a user would: a functor the library has never seen.
struct LeakyRelu {
  template <typename DType>
  TE_XINLINE static DType Map(DType a) {
    return a > DType(0) ? a : DType(0.125f * static_cast<float>(a));
  }
};

struct EpilogueCase {
  index_t N = 2, C = 3, H = 7, W = 6, K = 5, R = 3, S = 3, stride = 1, pad = 1;
  ops::Layout layout = ops::Layout::kNCHW;
  index_t P() const { return (H + 2 * pad - R) / stride + 1; }
  index_t Q() const { return (W + 2 * pad - S) / stride + 1; }
  bool last() const { return layout == ops::Layout::kNHWC; }
  Shape<4> XShape() const { return last() ? Shape4(N, H, W, C) : Shape4(N, C, H, W); }
  Shape<4> WShape() const { return last() ? Shape4(K, R, S, C) : Shape4(K, C, R, S); }
  Shape<4> YShape() const { return last() ? Shape4(N, P(), Q(), K) : Shape4(N, K, P(), Q()); }
  ops::ConvolutionParam Param() const {
    ops::ConvolutionParam p;
    p.kernel = {R, S};
    p.stride = {stride, stride};
    p.pad = {pad, pad};
    p.num_filter = K;
    p.no_bias = true;
    p.layout = layout;
    return p;
  }
  // The channel of output element (n, a, b, c) in this layout.
  index_t Channel(const Shape<4>& i) const { return last() ? i[3] : i[1]; }
  // conv(x, W) in float64, in the output's layout.
  std::vector<double> Reference(const Tensor<cpu, 4, float>& x, const Tensor<cpu, 4, float>& w) const {
    std::vector<double> y(size_t(YShape().Size()), 0.0);
    auto xi = [&](index_t n, index_t c, index_t h, index_t ww) {
      return last() ? x.dptr_[((n * H + h) * W + ww) * C + c] : x.dptr_[((n * C + c) * H + h) * W + ww];
    };
    auto wi = [&](index_t k, index_t c, index_t r, index_t s) {
      return last() ? w.dptr_[((k * R + r) * S + s) * C + c] : w.dptr_[((k * C + c) * R + r) * S + s];
    };
    for (index_t n = 0; n < N; ++n)
      for (index_t k = 0; k < K; ++k)
        for (index_t p = 0; p < P(); ++p)
          for (index_t q = 0; q < Q(); ++q) {
            double acc = 0;
            for (index_t c = 0; c < C; ++c)
              for (index_t r = 0; r < R; ++r)
                for (index_t s = 0; s < S; ++s) {
                  const index_t h = p * stride - pad + r, ww = q * stride - pad + s;
                  if (h >= 0 && h < H && ww >= 0 && ww < W) acc += double(wi(k, c, r, s)) * double(xi(n, c, h, ww));
                }
            const size_t at = last() ? size_t(((n * P() + p) * Q() + q) * K + k) : size_t(((n * K + k) * P() + p) * Q() + q);
            y[at] = acc;
          }
    return y;
  }
};

template <typename Device>
void CheckEpilogues(const EpilogueCase& c, Stream<Device>* stream) {
  TensorContainer<cpu, 4, float> xh(c.XShape()), wh(c.WShape()), rh(c.YShape()), out0(c.YShape());
  TensorContainer<cpu, 1, float> bh(Shape1(c.K));
  FillRandom(xh.view());
  FillRandom(wh.view());
  FillRandom(rh.view());
  FillRandom(out0.view());
  FillRandom(bh.view());
  const std::vector<double> conv = c.Reference(xh.view(), wh.view());
  auto x = ToDevice<Device>(xh.view(), stream);
  auto w = ToDevice<Device>(wh.view(), stream);
  auto res = ToDevice<Device>(rh.view(), stream);
  auto bias = ToDevice<Device>(bh.view(), stream);
  const ops::ConvolutionParam p = c.Param();
  // TF32 may serve float convolutions on the GPU.
  const double tol = std::is_same<Device, cpu>::value ? 1e-5 : 2e-3;
  auto flat = [&](const Shape<4>& i) { return size_t(((i[0] * c.YShape()[1] + i[1]) * c.YShape()[2] + i[2]) * c.YShape()[3] + i[3]); };
  auto b_of = [&](const Shape<4>& i) { return double(bh.dptr_[c.Channel(i)]); };
  auto r_of = [&](const Shape<4>& i) { return double(rh.dptr_[flat(i)]); };
  auto o_of = [&](const Shape<4>& i) { return double(out0.dptr_[flat(i)]); };
  auto relu = [](double v) { return v > 0 ? v : 0.0; };

  auto out = ToDevice<Device>(out0.view(), stream);
  const auto y = ops::conv_output(out.view());
  // The channel axis is 1 channels first, 3 channels last: the broadcast names it at compile time.
  auto run = [&](OpReqType req, auto make) {
    if (c.last()) {
      ops::ConvolutionForward(p, x.view(), w.view(), req, out.view(), make(expr::broadcast<3>(bias.view(), out.shape_)));
    } else {
      ops::ConvolutionForward(p, x.view(), w.view(), req, out.view(), make(expr::broadcast<1>(bias.view(), out.shape_)));
    }
  };

  SECTION("relu(conv + bias + residual), written then added") {
    run(kWriteTo, [&](auto b) { return expr::F<op::relu>(y + b + res.view()); });
    te_test::CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) { return relu(conv[flat(i)] + b_of(i) + r_of(i)); }, tol, "write");
    run(kAddTo, [&](auto b) { return expr::F<op::relu>(b + res.view() + y); });
    te_test::CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) { return 2 * relu(conv[flat(i)] + b_of(i) + r_of(i)); }, tol, "add");
  }
  SECTION("a user functor over scalars, the bias and a subtracted residual") {
    run(kWriteInplace, [&](auto b) { return expr::F<LeakyRelu>(2.0f * y + b) - res.view(); });
    te_test::CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) {
      const double v = 2 * conv[flat(i)] + b_of(i);
      return (v > 0 ? v : 0.125 * v) - r_of(i);
    }, tol, "user functor");
  }
  SECTION("the residual is the output itself") {
    ops::ConvolutionForward(p, x.view(), w.view(), kWriteTo, out.view(), expr::F<op::relu>(y + out.view()));
    te_test::CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) { return relu(conv[flat(i)] + o_of(i)); }, tol, "in place");
  }
  SECTION("kNullOp stores nothing") {
    run(kNullOp, [&](auto b) { return expr::F<op::relu>(y + b); });
    te_test::CheckAll(ToHost(out.view()).view(), o_of, 0.0, "null op");
  }
  SECTION("the fused entry point runs the form the chosen algorithm fuses, and nothing otherwise") {
    ops::ConvEpilogue<float> e;
    e.active = true;
    e.activation = ops::ConvActivation::kRelu;
    e.bias = bias.dptr_;
    const bool fused = ops::ConvolutionForwardFused(p, x.view(), w.view(), e, kWriteTo, out.view());
    te_test::CheckAll(ToHost(out.view()).view(), [&](const Shape<4>& i) { return fused ? relu(conv[flat(i)] + b_of(i)) : o_of(i); }, tol, "fused");
  }
  SECTION("errors") {
    ops::ConvolutionParam with_bias = p;
    with_bias.no_bias = false;
    te_test::RequireError([&] {
      ops::ConvolutionForward(with_bias, x.view(), w.view(), kWriteTo, out.view(), expr::F<op::relu>(y));
    }, {"no_bias must be set"});
    TensorContainer<Device, 4, float> other(Shape4(1, 1, 1, 1));
    te_test::RequireError([&] {
      ops::ConvolutionForward(p, x.view(), w.view(), kWriteTo, out.view(), ops::conv_output(other.view()) + 1.0f);
    }, {"epilogue's shape", "(1,1,1,1)"});
  }
}

}  // namespace

// epilogue_map's inputs, random, on the host (the float64 reference reads them) and on the device: the
// source and the residual (shape), the output's old values (out_shape) and the bias of K channels.
template <typename Device, typename DType, int dim>
struct EpilogueMapInputs {
  TensorContainer<cpu, dim, DType> src_h, res_h, old_h;
  TensorContainer<cpu, 1, DType> bias_h;
  TensorContainer<Device, dim, DType> src, res;
  TensorContainer<Device, 1, DType> bias;

  EpilogueMapInputs(const Shape<dim>& shape, const Shape<dim>& out_shape, index_t K, Stream<Device>* stream)
      : src_h(Random(shape)), res_h(Random(shape)), old_h(Random(out_shape)), bias_h(Random(Shape1(K))),
        src(ToDevice<Device>(src_h.view(), stream)), res(ToDevice<Device>(res_h.view(), stream)),
        bias(ToDevice<Device>(bias_h.view(), stream)) {}

  // The form: relu, bias and residual each on or off.
  ops::ConvEpilogue<DType> Epilogue(bool relu, bool with_bias, bool with_residual) const {
    ops::ConvEpilogue<DType> ep;
    ep.active = true;
    ep.activation = relu ? ops::ConvActivation::kRelu : ops::ConvActivation::kIdentity;
    ep.bias = with_bias ? bias.dptr_ : nullptr;
    ep.residual = with_residual ? res.dptr_ : nullptr;
    return ep;
  }
  // The float64 result of ep over x (a source value, or the old output's in place) at channel c and
  // flat source element f, stored by req onto the old output value.
  double Want(const ops::ConvEpilogue<DType>& ep, OpReqType req, double x, index_t c, size_t f, double old) const {
    double v = x + (ep.bias != nullptr ? Value(bias_h.dptr_[c]) : 0.0) + (ep.residual != nullptr ? Value(res_h.dptr_[f]) : 0.0);
    if (ep.activation == ops::ConvActivation::kRelu) v = v > 0 ? v : 0.0;
    return req == kAddTo ? old + v : v;
  }
  static double Value(DType v) { return double(static_cast<float>(v)); }

 private:
  template <int d>
  static TensorContainer<cpu, d, DType> Random(const Shape<d>& shape) {
    TensorContainer<cpu, d, DType> t(shape);
    FillRandom(t.view());
    return t;
  }
};

// epilogue_map (<tensorexpr/ops/conv_epilogue_map.h>) by itself: every form (bias, residual, relu each on
// or off), written and added, from another tensor and in place (x = epilogue_map(x), as the operator's
// bias pass runs it), over channels-first tensors seen as (N, C, P) rows of whole images, over padded rows
// (kept as they are), and channels last, against a float64 loop.
template <typename Device, typename DType, int dim>
void CheckEpilogueMap(const Shape<dim>& shape, bool channels_last, bool padded, Stream<Device>* stream) {
  const index_t K = channels_last ? shape[dim - 1] : shape[1];
  const double tol = std::is_same<DType, float>::value ? 1e-6 : te_test::Tol<DType>();
  const EpilogueMapInputs<Device, DType, dim> in(shape, shape, K, stream);
  TensorContainer<Device, dim, DType> out(padded);
  out.set_stream(stream);
  out.Resize(shape);
  if (padded) REQUIRE(out.stride_ != shape[dim - 1]);
  for (const bool in_place : {false, true})
    for (const bool relu : {false, true})
      for (const bool with_bias : {false, true})
        for (const bool with_residual : {false, true})
          for (const OpReqType req : {kWriteTo, kAddTo}) {
            INFO(DataType<DType>::name() << " shape " << shape << (channels_last ? " channels last" : " channels first")
                                         << (padded ? " padded" : "") << (in_place ? " in place" : "")
                                         << (relu ? ", relu" : "") << (with_bias ? ", bias" : "")
                                         << (with_residual ? ", residual" : "") << ", req " << int(req));
            Copy(out.view(), in.old_h.view(), stream);
            const ops::ConvEpilogue<DType> ep = in.Epilogue(relu, with_bias, with_residual);
            if (in_place) {
              ops::WithEpilogueRows(channels_last, [&](auto o) { Assign(o, req, ops::epilogue_map(o, ep, channels_last)); },
                                    out.view());
            } else {
              ops::WithEpilogueRows(channels_last, [&](auto o, auto x) { Assign(o, req, ops::epilogue_map(x, ep, channels_last)); },
                                    out.view(), in.src.view());
            }
            std::vector<double> want;
            index_t flat = 0;
            te_test::ForEachIndex(shape, [&](const Shape<dim>& i) {
              const double old = in.Value(in.old_h.dptr_[flat]);
              const double x = in_place ? old : in.Value(in.src_h.dptr_[flat]);
              want.push_back(in.Want(ep, req, x, channels_last ? i[dim - 1] : i[1], size_t(flat), old));
              ++flat;
            });
            auto got = ToHost(out.view());
            index_t k = 0;
            te_test::CheckAll(got.view(), [&](const Shape<dim>&) { return want[size_t(k++)]; }, tol, "epilogue_map");
          }
}

TE_DEVICE_TEST_CASE("epilogue_map: act(x + bias + residual) over image rows, padded rows and channels last", "[conv][epilogue]") {
  CheckEpilogueMap<Device, float, 3>(Shape3(2, 3, 11), false, false, stream);
  CheckEpilogueMap<Device, float, 5>(Shape5(2, 3, 2, 5, 7), false, false, stream);
  CheckEpilogueMap<Device, float, 5>(Shape5(2, 3, 2, 5, 7), false, true, stream);
  CheckEpilogueMap<Device, float, 4>(Shape4(2, 3, 5, 7), false, true, stream);
  CheckEpilogueMap<Device, float, 4>(Shape4(2, 5, 7, 3), true, false, stream);
  CheckEpilogueMap<Device, float, 4>(Shape4(2, 5, 7, 3), true, true, stream);
  CheckEpilogueMap<Device, half_t, 4>(Shape4(2, 3, 5, 7), false, false, stream);
  CheckEpilogueMap<Device, bf16_t, 4>(Shape4(2, 5, 7, 3), true, true, stream);
}

// transpose(epilogue_map(src, ep, channels_last), axes), as pointwise_gemm's staged forward moves its
// channels-last result back: the GPU's tiled transpose reads src through a pointer and maps each element
// (the column's bias read once channels last without a residual; per element otherwise). Every form,
// written and added, on tiles with tails both ways, against a float64 loop.
template <typename Device, typename DType, int dim>
void CheckTransposedEpilogueMap(const Shape<dim>& shape, bool channels_last, const Shape<dim>& axes,
                                Stream<Device>* stream) {
  const index_t K = channels_last ? shape[dim - 1] : shape[1];
  const double tol = std::is_same<DType, float>::value ? 1e-6 : te_test::Tol<DType>();
  Shape<dim> out_shape;
  for (int i = 0; i < dim; ++i) out_shape[i] = shape[static_cast<int>(axes[i])];
  const EpilogueMapInputs<Device, DType, dim> in(shape, out_shape, K, stream);
  auto out = ToDevice<Device>(in.old_h.view(), stream);
  auto flat = [&shape](const Shape<dim>& i) {
    index_t f = 0;
    for (int d = 0; d < dim; ++d) f = f * shape[d] + i[d];
    return size_t(f);
  };
  for (const bool relu : {false, true})
    for (const bool with_bias : {false, true})
      for (const bool with_residual : {false, true})
        for (const OpReqType req : {kWriteTo, kAddTo}) {
          INFO(DataType<DType>::name() << " shape " << shape << " axes " << axes
                                       << (channels_last ? " channels last" : " channels first") << (relu ? ", relu" : "")
                                       << (with_bias ? ", bias" : "") << (with_residual ? ", residual" : "")
                                       << ", req " << int(req));
          Copy(out.view(), in.old_h.view(), stream);
          const ops::ConvEpilogue<DType> ep = in.Epilogue(relu, with_bias, with_residual);
          const auto moved = expr::transpose(ops::epilogue_map(in.src.view(), ep, channels_last), axes);
          // The tiled transposes read the tensor under the map through a pointer; a plain plan does not.
          static_assert(expr::TransposeTensorSource<decltype(moved.plan()), Device, dim, DType>::kMapped);
          static_assert(!expr::TransposeTensorSource<decltype(in.src.view().plan()), Device, dim, DType>::kMapped);
          Assign(out.view(), req, moved);
          std::vector<double> want;
          index_t o = 0;
          te_test::ForEachIndex(out_shape, [&](const Shape<dim>& i) {
            Shape<dim> from;
            for (int d = 0; d < dim; ++d) from[static_cast<int>(axes[d])] = i[d];
            const size_t f = flat(from);
            const double old = in.Value(in.old_h.dptr_[o++]);
            want.push_back(in.Want(ep, req, in.Value(in.src_h.dptr_[f]), channels_last ? from[dim - 1] : from[1], f, old));
          });
          auto got = ToHost(out.view());
          index_t k = 0;
          te_test::CheckAll(got.view(), [&](const Shape<dim>&) { return want[size_t(k++)]; }, tol,
                            "transpose(epilogue_map)");
        }
}

TE_DEVICE_TEST_CASE("transpose(epilogue_map(...)): a staged result moved back with its epilogue", "[conv][epilogue]") {
  // The staged forward's own form, (N, P, K) -> (N, K, P), tiles with tails both ways; a 4-D channels-last
  // source moved channels first; a channels-first source (the channel varies along a transposed row).
  CheckTransposedEpilogueMap<Device, float, 3>(Shape3(3, 37, 40), true, Shape3(0, 2, 1), stream);
  CheckTransposedEpilogueMap<Device, half_t, 3>(Shape3(2, 49, 33), true, Shape3(0, 2, 1), stream);
  CheckTransposedEpilogueMap<Device, bf16_t, 3>(Shape3(2, 20, 17), true, Shape3(0, 2, 1), stream);
  CheckTransposedEpilogueMap<Device, float, 4>(Shape4(2, 5, 20, 24), true, Shape4(0, 3, 1, 2), stream);
  CheckTransposedEpilogueMap<Device, float, 4>(Shape4(2, 18, 3, 35), false, Shape4(0, 3, 2, 1), stream);
}

TE_DEVICE_TEST_CASE("convolution epilogue: any elementwise expression of the output, channels first", "[conv][epilogue]") {
  EpilogueCase c;
  CheckEpilogues(c, stream);
}

TE_DEVICE_TEST_CASE("convolution epilogue: channels last, strided, 8-aligned channels", "[conv][epilogue]") {
  EpilogueCase c;
  c.layout = ops::Layout::kNHWC;
  c.C = 8, c.K = 16, c.stride = 2, c.H = 9, c.W = 8;
  CheckEpilogues(c, stream);
}
