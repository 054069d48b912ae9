// ops/conv_direct_pass.h — a stride-1 convolution pass as one correlation, the form both direct algorithms
// (ops/cpu/conv_direct.h, ops/cuda/conv_direct.h) compute: output channel co at position o (per dimension)
// sums
//   filter(co, ci, t) * input(ci, o + origin + t * dilate)
// over the input channels ci and the taps t, positions outside the input reading zero. The forward is
// that with origin = -pad; the data gradient is it again over the output gradient with the filters
// transposed and flipped (origin = pad - (taps - 1) * dilate). The weight gradient sums the products of the
// forward's pairs over images and positions.
#pragma once
#include <tensorexpr/base.h>
#include <tensorexpr/ops/conv_geometry.h>
#include <tensorexpr/ops/conv_problem.h>

namespace tensorexpr {
namespace ops {
namespace detail {

// One correlation over the rows of a (N, G * Co, out...) output from a (N, G * Ci, in...) input, or, with
// channels_last, a (N, out..., G * Co) output from a (N, in..., G * Ci) input. Filter (g, co, ci, tap t) is
// weight[filter_g * g + filter_co * co + filter_ci * ci + filter_tap * (flip ? Taps() - 1 - t : t)] of the
// convolution's weight (G * K, C / G, kernel...), or (G * K, kernel..., C / G) with channels_last. (The
// direct algorithms run channels first; Winograd's transforms read either layout.)
struct DirectPass {
  index_t N = 0, G = 1, Ci = 0, Co = 0;
  index_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, taps[3] = {1, 1, 1}, dilate[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  index_t filter_g = 0, filter_co = 0, filter_ci = 0, filter_tap = 1;
  bool flip = false;           // the data gradient's filters, flipped in every dimension
  bool channels_last = false;

  // Where image n's channel c of group g starts in a tensor of `channels` per group and `size` positions,
  // and the distance between its consecutive positions.
  TE_XINLINE index_t PlaneStart(index_t n, index_t g, index_t c, index_t channels, index_t size) const {
    return channels_last ? (n * size * G + g) * channels + c : ((n * G + g) * channels + c) * size;
  }
  TE_XINLINE index_t PositionStride(index_t channels) const { return channels_last ? G * channels : 1; }

  TE_XINLINE index_t Rows() const { return N * G * out[0] * out[1]; }  // output rows (image, group, z, y)
  TE_XINLINE index_t PanelRows() const { return Ci * taps[0] * taps[1]; }  // input rows per output row, one per (ci, tz, ty)
  TE_XINLINE index_t InSize() const { return in[0] * in[1] * in[2]; }
  TE_XINLINE index_t OutSize() const { return out[0] * out[1] * out[2]; }
  TE_XINLINE index_t Taps() const { return taps[0] * taps[1] * taps[2]; }
};

// The correlation that computes `pass` of geometry g (stride 1): the forward, filters = output channels;
// or the data gradient, the output gradient correlated with the transposed, flipped filters. (The weight
// gradient is read off the forward's correlation.)
inline DirectPass MakeDirectPass(const ConvGeometry& g, ConvPass pass) {
  const bool data_grad = pass == ConvPass::kBackwardData;
  DirectPass p;
  p.N = g.N, p.G = g.G, p.Ci = data_grad ? g.Kg() : g.Cg(), p.Co = data_grad ? g.Cg() : g.Kg();
  for (int i = 0; i < 3; ++i) {
    p.in[i] = data_grad ? g.out[i] : g.in[i], p.out[i] = data_grad ? g.in[i] : g.out[i];
    p.taps[i] = g.kernel[i], p.dilate[i] = g.dilate[i];
    p.origin[i] = data_grad ? g.pad[i] - (g.kernel[i] - 1) * g.dilate[i] : -g.pad[i];
  }
  const index_t T = p.Taps();
  p.channels_last = g.channels_last;
  // The weight's strides along its filters k, its channels c and its taps.
  const index_t per_k = g.Cg() * T, per_c = g.channels_last ? 1 : T;
  p.filter_tap = g.channels_last ? g.Cg() : 1;
  p.filter_g = p.Co * p.Ci * T;
  p.filter_co = data_grad ? per_c : per_k;  // forward: weight (g * Co + co, ci); data gradient: (g * Ci + ci, co)
  p.filter_ci = data_grad ? per_k : per_c;
  p.flip = data_grad;
  return p;
}

}  // namespace detail
}  // namespace ops
}  // namespace tensorexpr
