// tensorexpr/ops/conv_fixed.h — convolution in byte precision: 8-bit data in a fixed-point format (the
// Q2.6 textures of GPU imaging code: an int8_t or uint8_t q standing for q / 2^6), float filters and bias,
// float sums, and an output in float or again in 8-bit fixed point.
//
//   out = conv(data, weight) + bias      data (N, C, spatial...) of uint8_t / int8_t read as q / 2^in.frac_bits
//
// A fixed-point output stores round(value * 2^out.frac_bits), to the nearest with ties to even, saturated
// at the type's range (NaN stores 0); kAddTo adds the convolution to the value out already holds in its
// format, then rounds and saturates once. kWriteTo / kWriteInplace store, kNullOp leaves out untouched.
// Everything else is ConvolutionForward's: the same parameters, algorithms, layouts and checks (1-D to
// 3-D, groups, stride, dilation, padding and border modes, channels last; the data batched).
//
// The data is converted to float once (exactly: an 8-bit integer times a power of two) on out's stream,
// and a fixed-point output is computed in float first, then rounded into out.
//
// Declarations: tensorexpr_ops (tensorexpr_ops_cuda for the GPU) holds them for uint8_t and int8_t data,
// float, uint8_t and int8_t outputs, ranks 3 to 5; ops/conv_fixed.h is the template implementation.
#pragma once
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/ops/conv_param.h>

namespace tensorexpr {
namespace ops {

// An 8-bit fixed-point format: the integer q stands for q / 2^frac_bits (0 to 16 bits). Q2.6 is
// FixedPoint{6}: int8_t covers [-2, 2), uint8_t [0, 4), in steps of 1/64.
struct FixedPoint {
  int frac_bits = 0;
};

// out (float) = conv(data, weight) + bias, stored as req says.
template <typename Device, int dim, typename In>
void ConvolutionForwardFixed(const ConvolutionParam& p, const Tensor<Device, dim, In>& data, FixedPoint data_format,
                             const Tensor<Device, dim, float>& weight, const Tensor<Device, 1, float>& bias,
                             OpReqType req, const Tensor<Device, dim, float>& out);

// out (8-bit, in out_format) = conv(data, weight) + bias, rounded and saturated; kAddTo adds to out's value.
template <typename Device, int dim, typename In, typename Out>
void ConvolutionForwardFixed(const ConvolutionParam& p, const Tensor<Device, dim, In>& data, FixedPoint data_format,
                             const Tensor<Device, dim, float>& weight, const Tensor<Device, 1, float>& bias,
                             OpReqType req, const Tensor<Device, dim, Out>& out, FixedPoint out_format);

}  // namespace ops
}  // namespace tensorexpr
