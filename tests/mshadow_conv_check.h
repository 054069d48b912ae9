// mshadow_conv_check.h — runs the MXNet-style convolution of mshadow_conv_op-inl.h on one device and compares
// it with a naive float64 convolution: forward (with bias, under each request) and the three gradients.
// Shared by the CPU test (mshadow_compat_test.cc) and the GPU one (gpu/mshadow_compat_test.cu), which only
// assert on the returned errors.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>
#include "mshadow_conv_op-inl.h"

namespace mshadow_conv_check {

using mshadow::index_t;

// Largest |got - want| / max(1, |want|) of each output.
struct ConvErrors {
  double out = 0, grad_data = 0, grad_weight = 0, grad_bias = 0;
};

inline double RelErr(double got, double want) { return std::fabs(got - want) / std::max(1.0, std::fabs(want)); }

template <int dim>
inline void FillUniform(mshadow::Tensor<mshadow::cpu, dim, float> t, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  mshadow::Tensor<mshadow::cpu, 2, float> f = t.FlatTo2D();
  for (index_t y = 0; y < f.size(0); ++y)
    for (index_t x = 0; x < f.size(1); ++x) f[y][x] = u(rng);
}

template <typename xpu, int dim>
inline mshadow::TensorContainer<xpu, dim, float> OnDevice(const mshadow::Tensor<mshadow::cpu, dim, float>& h) {
  mshadow::TensorContainer<xpu, dim, float> d(h.shape_);
  mshadow::Copy(d, h);
  return d;
}
template <typename xpu, int dim>
inline mshadow::TensorContainer<mshadow::cpu, dim, float> OnHost(const mshadow::Tensor<xpu, dim, float>& d) {
  mshadow::TensorContainer<mshadow::cpu, dim, float> h(d.shape_);
  mshadow::Copy(h, d);
  return h;
}

// One case: N images of C channels H x W under `req` for every output (kAddTo adds onto random values).
template <typename xpu>
ConvErrors RunConvCase(const mxnet_style::ConvParam& p, index_t N, index_t C, index_t H, index_t W,
                       mxnet_style::ConvReq req, uint64_t seed) {
  using namespace mshadow;
  std::mt19937_64 rng(seed);
  const index_t K = p.num_filter, G = p.num_group, CG = C / G, KG = K / G;
  const index_t OH = (H + 2 * p.pad_y - p.dilate_y * (p.kernel_y - 1) - 1) / p.stride_y + 1;
  const index_t OW = (W + 2 * p.pad_x - p.dilate_x * (p.kernel_x - 1) - 1) / p.stride_x + 1;
  TensorContainer<cpu, 4, float> x(Shape4(N, C, H, W)), w(Shape4(K, CG, p.kernel_y, p.kernel_x));
  TensorContainer<cpu, 1, float> b(Shape1(K)), gb0(Shape1(K));
  TensorContainer<cpu, 4, float> y0(Shape4(N, K, OH, OW)), gy(Shape4(N, K, OH, OW)), gx0(x.shape_), gw0(w.shape_);
  for (auto* t : {&x, &w, &y0, &gy, &gx0, &gw0}) FillUniform(t->view(), rng);
  FillUniform(b.view(), rng);
  FillUniform(gb0.view(), rng);

  auto dx = OnDevice<xpu>(x.view()), dw = OnDevice<xpu>(w.view()), dy = OnDevice<xpu>(y0.view());
  auto dgy = OnDevice<xpu>(gy.view()), dgx = OnDevice<xpu>(gx0.view()), dgw = OnDevice<xpu>(gw0.view());
  auto db = OnDevice<xpu>(b.view());
  auto dgb = OnDevice<xpu>(gb0.view());
  mxnet_style::ConvolutionOp<xpu, float> op(p);
  op.Forward(dx, dw, db, req, dy);
  op.Backward(dgy, dx, dw, req, dgx, req, dgw, req, dgb);
  const auto y = OnHost(dy.view()), gx = OnHost(dgx.view()), gw = OnHost(dgw.view());
  const auto gbias = OnHost(dgb.view());

  // The naive convolution and its gradients in double.
  std::vector<double> out(N * K * OH * OW, 0.0), gxr(N * C * H * W, 0.0), gwr(K * CG * p.kernel_y * p.kernel_x, 0.0),
      gbr(K, 0.0);
  for (index_t n = 0; n < N; ++n)
    for (index_t k = 0; k < K; ++k)
      for (index_t oy = 0; oy < OH; ++oy)
        for (index_t ox = 0; ox < OW; ++ox) {
          const index_t o = ((n * K + k) * OH + oy) * OW + ox;
          double acc = b[k];
          const double g = gy[n][k][oy][ox];
          gbr[k] += g;
          for (index_t c = 0; c < CG; ++c)
            for (index_t ky = 0; ky < p.kernel_y; ++ky)
              for (index_t kx = 0; kx < p.kernel_x; ++kx) {
                const index_t iy = oy * p.stride_y + ky * p.dilate_y - p.pad_y;
                const index_t ix = ox * p.stride_x + kx * p.dilate_x - p.pad_x;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const index_t ci = (k / KG) * CG + c;
                acc += double(w[k][c][ky][kx]) * x[n][ci][iy][ix];
                gwr[((k * CG + c) * p.kernel_y + ky) * p.kernel_x + kx] += g * x[n][ci][iy][ix];
                gxr[((n * C + ci) * H + iy) * W + ix] += g * w[k][c][ky][kx];
              }
          out[o] = acc;
        }

  // What each request leaves: nothing, the value, or the value added to what was there.
  auto expect = [req](double value, double before) {
    if (req == mxnet_style::kNullOp) return before;
    return req == mxnet_style::kAddTo ? before + value : value;
  };
  ConvErrors e;
  for (index_t i = 0; i < N * K * OH * OW; ++i)
    e.out = std::max(e.out, RelErr(y.dptr_[i], expect(out[i], y0.dptr_[i])));
  for (index_t i = 0; i < N * C * H * W; ++i)
    e.grad_data = std::max(e.grad_data, RelErr(gx.dptr_[i], expect(gxr[i], gx0.dptr_[i])));
  for (index_t i = 0; i < index_t(gwr.size()); ++i)
    e.grad_weight = std::max(e.grad_weight, RelErr(gw.dptr_[i], expect(gwr[i], gw0.dptr_[i])));
  for (index_t k = 0; k < K; ++k) e.grad_bias = std::max(e.grad_bias, RelErr(gbias[k], expect(gbr[k], gb0[k])));
  return e;
}

}  // namespace mshadow_conv_check
