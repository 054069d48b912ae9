// ops/conv_fixed.h — ConvolutionForwardFixed (<tensorexpr/ops/conv_fixed.h> says what it computes): the
// data to float, ConvolutionForward in float (the library's instance, whichever algorithm it picks), and
// for an 8-bit output one rounding pass. Instantiated for the standard types by ops/conv_fixed.cc.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_fixed.h>
#include <tensorexpr/ops/convolution.h>

namespace tensorexpr {
namespace ops {
namespace detail {

constexpr int kMaxFracBits = 16;

// v * scale (a power of two) rounded to the nearest integer, ties to even, then saturated at Out's range
// (NaN is 0), as a float: tcast<Out> of it is exact.
template <typename Out>
struct RoundToFixed {
  template <typename DType>
  TE_XINLINE static DType Map(DType v, DType scale) {
    return DType(math::SaturatingCast<Out>(double(rintf(float(v) * float(scale)))));
  }
};

template <typename T>
constexpr bool kFixedType = std::is_same<T, uint8_t>::value || std::is_same<T, int8_t>::value;

inline void CheckFixedFormat(FixedPoint f, const char* which) {
  TE_CHECK(f.frac_bits >= 0 && f.frac_bits <= kMaxFracBits, "ConvolutionForwardFixed: the ", which,
           " format has ", f.frac_bits, " fraction bits; a fixed-point format takes 0 to ", kMaxFracBits);
}

// The data as float (q / 2^frac_bits, exact), in a contiguous tensor on `stream`.
template <typename Device, int dim, typename In>
TensorContainer<Device, dim, float> FixedToFloat(const Tensor<Device, dim, In>& data, FixedPoint f,
                                                Stream<Device>* stream) {
  TensorContainer<Device, dim, float> x;
  x.set_stream(stream);
  x.Resize(data.shape_);
  if (data.shape_.Size() > 0)
    Assign(x.FlatTo2D(), kWriteTo,
           expr::tcast<float>(data.FlatTo2D()) * expr::scalar<float>(float(std::ldexp(1.0, -f.frac_bits))));
  return x;
}

}  // namespace detail

template <typename Device, int dim, typename In>
void ConvolutionForwardFixed(const ConvolutionParam& p, const Tensor<Device, dim, In>& data, FixedPoint data_format,
                             const Tensor<Device, dim, float>& weight, const Tensor<Device, 1, float>& bias,
                             OpReqType req, const Tensor<Device, dim, float>& out) {
  static_assert(detail::kFixedType<In>, "ConvolutionForwardFixed: the data is uint8_t or int8_t");
  detail::CheckFixedFormat(data_format, "data");
  const TensorContainer<Device, dim, float> x = detail::FixedToFloat(data, data_format, out.stream_);
  ConvolutionForward(p, x.view(), weight, bias, req, out);
}

template <typename Device, int dim, typename In, typename Out>
void ConvolutionForwardFixed(const ConvolutionParam& p, const Tensor<Device, dim, In>& data, FixedPoint data_format,
                             const Tensor<Device, dim, float>& weight, const Tensor<Device, 1, float>& bias,
                             OpReqType req, const Tensor<Device, dim, Out>& out, FixedPoint out_format) {
  static_assert(detail::kFixedType<In>, "ConvolutionForwardFixed: the data is uint8_t or int8_t");
  static_assert(detail::kFixedType<Out>, "ConvolutionForwardFixed: a fixed-point output is uint8_t or int8_t");
  detail::CheckFixedFormat(data_format, "data");
  detail::CheckFixedFormat(out_format, "output");
  const std::vector<index_t> dshape(data.shape_.shape_, data.shape_.shape_ + dim);
  const std::vector<index_t> want = InferConvShapes(p, dshape).out;
  Shape<dim> want_shape;
  for (int i = 0; i < dim && size_t(i) < want.size(); ++i) want_shape[i] = want[i];
  TE_CHECK(want.size() == size_t(dim) && out.shape_ == want_shape, "ConvolutionForwardFixed: output shape ",
           out.shape_, " does not match the expected ", want_shape, " for data ", data.shape_);
  const TensorContainer<Device, dim, float> x = detail::FixedToFloat(data, data_format, out.stream_);
  TensorContainer<Device, dim, float> y;  // the convolution in float, before rounding
  y.set_stream(out.stream_);
  y.Resize(out.shape_);
  ConvolutionForward(p, x.view(), weight, bias, kWriteTo, y.view());
  if (req == kNullOp || out.shape_.Size() == 0) return;
  const float scale = float(std::ldexp(1.0, out_format.frac_bits));
  const auto value = y.view().FlatTo2D();
  if (req == kAddTo) {  // out's value plus the convolution, rounded once: q + y * 2^f (q is exact in float)
    Assign(out.FlatTo2D(), kWriteTo,
           expr::tcast<Out>(expr::F<detail::RoundToFixed<Out>>(
               expr::tcast<float>(out.FlatTo2D()) + value * expr::scalar<float>(scale), expr::scalar<float>(1.0f))));
  } else {
    Assign(out.FlatTo2D(), kWriteTo,
           expr::tcast<Out>(expr::F<detail::RoundToFixed<Out>>(value, expr::scalar<float>(scale))));
  }
}

// ConvolutionForwardFixed's instances of one device, data type and rank (ops/conv_fixed.cc).
#define TE_CONV_FIXED_INSTANCE_(Device, dim, In)                                                                 \
  template void ConvolutionForwardFixed<Device, dim, In>(const ConvolutionParam&, const Tensor<Device, dim, In>&, \
                                                          FixedPoint, const Tensor<Device, dim, float>&,          \
                                                          const Tensor<Device, 1, float>&, OpReqType,             \
                                                          const Tensor<Device, dim, float>&);                     \
  template void ConvolutionForwardFixed<Device, dim, In, uint8_t>(                                               \
      const ConvolutionParam&, const Tensor<Device, dim, In>&, FixedPoint, const Tensor<Device, dim, float>&,    \
      const Tensor<Device, 1, float>&, OpReqType, const Tensor<Device, dim, uint8_t>&, FixedPoint);              \
  template void ConvolutionForwardFixed<Device, dim, In, int8_t>(                                                \
      const ConvolutionParam&, const Tensor<Device, dim, In>&, FixedPoint, const Tensor<Device, dim, float>&,    \
      const Tensor<Device, 1, float>&, OpReqType, const Tensor<Device, dim, int8_t>&, FixedPoint);
#define TE_INSTANTIATE_CONV_FIXED(Device)                                                                        \
  TE_CONV_FIXED_INSTANCE_(Device, 3, uint8_t) TE_CONV_FIXED_INSTANCE_(Device, 4, uint8_t)                        \
  TE_CONV_FIXED_INSTANCE_(Device, 5, uint8_t) TE_CONV_FIXED_INSTANCE_(Device, 3, int8_t)                         \
  TE_CONV_FIXED_INSTANCE_(Device, 4, int8_t) TE_CONV_FIXED_INSTANCE_(Device, 5, int8_t)

}  // namespace ops
}  // namespace tensorexpr
