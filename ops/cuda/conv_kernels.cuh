// ops/cuda/conv_kernels.cuh — the GPU kernels of the convolution (the twin of ops/cpu/conv_kernels.h,
// same column layout: image-major (nb, C*kk, pc)):
//   im2col  one thread per (image, channel, output position), as in MXNet: it walks the kernel offsets and
//           writes one column entry per offset; consecutive threads write consecutive positions.
//   col2im  one thread per input element, gathering the column entries that read it: no atomics, and the
//           sum order is fixed, so results are deterministic.
// Every kernel takes a 32-bit index type when the sizes it touches fit, 64-bit otherwise (chosen at launch).
#pragma once
#include <algorithm>
#include <climits>
#include <cuda_runtime.h>
#include <tensorexpr/cuda/check.cuh>
#include <tensorexpr/cuda/device.cuh>
#include <tensorexpr/cuda/stream.cuh>
#include <tensorexpr/dtype.h>
#include <tensorexpr/ops/conv_geometry.h>

namespace tensorexpr {
namespace ops {
namespace cuda_conv {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill the device, never more than needed.
inline unsigned BlocksFor(index_t n) {
  const index_t full = static_cast<index_t>(::tensorexpr::cuda::CurrentDeviceInfo().sm_count) * 16;
  return static_cast<unsigned>(std::max<index_t>(1, std::min<index_t>((n + kThreads - 1) / kThreads, full)));
}

// The geometry in the kernel's index type.
template <typename I>
struct Geom {
  I C, kd, kh, kw, D, H, W, OD, OH, OW, sd, sh, sw, dd, dh, dw, pd, ph, pw;
  explicit Geom(const ConvGeometry& g)
      : C(I(g.C)), kd(I(g.kernel[0])), kh(I(g.kernel[1])), kw(I(g.kernel[2])), D(I(g.in[0])), H(I(g.in[1])),
        W(I(g.in[2])), OD(I(g.out[0])), OH(I(g.out[1])), OW(I(g.out[2])), sd(I(g.stride[0])), sh(I(g.stride[1])),
        sw(I(g.stride[2])), dd(I(g.dilate[0])), dh(I(g.dilate[1])), dw(I(g.dilate[2])), pd(I(g.pad[0])),
        ph(I(g.pad[1])), pw(I(g.pad[2])) {}
};

template <typename DType, typename I>
__global__ void Im2ColKernel(Geom<I> g, const DType* __restrict__ data, I data_stride, I n0, I nb, I p0, I pc,
                             DType* __restrict__ col) {
  const I total = nb * g.C * pc;
  const I kk = g.kd * g.kh * g.kw;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I q = t % pc, c = (t / pc) % g.C, i = t / (pc * g.C);
    const I p = p0 + q;
    const I ow = p % g.OW, oh = (p / g.OW) % g.OH, od = p / (g.OW * g.OH);
    const DType* img = data + ((n0 + i) * g.C + c) * g.D * g.H * data_stride;
    DType* dst = col + (i * g.C + c) * kk * pc + q;
    const I z0 = od * g.sd - g.pd, y0 = oh * g.sh - g.ph, x0 = ow * g.sw - g.pw;
    for (I kz = 0; kz < g.kd; ++kz) {
      const I z = z0 + kz * g.dd;
      const bool zin = z >= 0 && z < g.D;
      for (I ky = 0; ky < g.kh; ++ky) {
        const I y = y0 + ky * g.dh;
        const bool zyin = zin && y >= 0 && y < g.H;
        const DType* row = img + (z * g.H + y) * data_stride;
        for (I kx = 0; kx < g.kw; ++kx) {
          const I x = x0 + kx * g.dw;
          *dst = (zyin && x >= 0 && x < g.W) ? row[x] : DType(0.0f);
          dst += pc;
        }
      }
    }
  }
}

template <typename DType, typename I>
__global__ void Col2ImKernel(Geom<I> g, const DType* __restrict__ col, I n0, I nb, I p0, I pc, DType* grad,
                             I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I total = nb * g.C * g.D * g.H * g.W;
  const I kk = g.kd * g.kh * g.kw;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I x = t % g.W, y = (t / g.W) % g.H, z = (t / (g.W * g.H)) % g.D;
    const I c = (t / (g.W * g.H * g.D)) % g.C, i = t / (g.W * g.H * g.D * g.C);
    const DType* ccol = col + (i * g.C + c) * kk * pc;  // indexed by (kernel offset) * pc + position - p0
    AccT acc = 0;
    for (I kz = 0; kz < g.kd; ++kz) {
      const I dn = z + g.pd - kz * g.dd;
      if (dn < 0 || dn % g.sd != 0) continue;
      const I od = dn / g.sd;
      if (od >= g.OD) continue;
      for (I ky = 0; ky < g.kh; ++ky) {
        const I hn = y + g.ph - ky * g.dh;
        if (hn < 0 || hn % g.sh != 0) continue;
        const I oh = hn / g.sh;
        if (oh >= g.OH) continue;
        const I base = (od * g.OH + oh) * g.OW;
        for (I kx = 0; kx < g.kw; ++kx) {
          const I wn = x + g.pw - kx * g.dw;
          if (wn < 0 || wn % g.sw != 0) continue;
          const I ow = wn / g.sw;
          const I p = base + ow;
          if (ow >= g.OW || p < p0 || p >= p0 + pc) continue;
          acc += static_cast<AccT>(ccol[((kz * g.kh + ky) * g.kw + kx) * pc + (p - p0)]);
        }
      }
    }
    DType* out = grad + (((n0 + i) * g.C + c) * g.D * g.H + z * g.H + y) * grad_stride + x;
    *out = accumulate ? static_cast<DType>(static_cast<AccT>(*out) + acc) : static_cast<DType>(acc);
  }
}

inline bool Fits32(index_t n) { return n >= 0 && n < index_t(INT_MAX); }

}  // namespace cuda_conv

template <typename DType>
inline void ConvIm2Col(Stream<gpu>* s, const ConvGeometry& g, const DType* data, index_t data_stride, index_t n0,
                       index_t nb, index_t p0, index_t pc, DType* col) {
  using namespace cuda_conv;
  const index_t total = nb * g.C * pc;
  if (total == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  // The largest offsets touched: the column buffer and the images read.
  const bool small = Fits32(nb * g.ColRows() * pc) && Fits32((n0 + nb) * g.C * g.in[0] * g.in[1] * data_stride);
  if (small) {
    Im2ColKernel<DType, int><<<BlocksFor(total), kThreads, 0, st>>>(Geom<int>(g), data, int(data_stride), int(n0),
                                                                     int(nb), int(p0), int(pc), col);
  } else {
    Im2ColKernel<DType, index_t><<<BlocksFor(total), kThreads, 0, st>>>(Geom<index_t>(g), data, data_stride, n0, nb,
                                                                         p0, pc, col);
  }
  TE_CUDA_CHECK_LAUNCH("convolution im2col kernel");
}

template <typename DType>
inline void ConvCol2Im(Stream<gpu>* s, const ConvGeometry& g, const DType* col, index_t n0, index_t nb, index_t p0,
                       index_t pc, DType* grad, index_t grad_stride, bool accumulate) {
  using namespace cuda_conv;
  const index_t total = nb * g.C * g.InSize();
  if (total == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  const bool small = Fits32(nb * g.ColRows() * pc + p0) && Fits32((n0 + nb) * g.C * g.in[0] * g.in[1] * grad_stride) &&
                     Fits32(g.OutSize() + pc);
  if (small) {
    Col2ImKernel<DType, int><<<BlocksFor(total), kThreads, 0, st>>>(Geom<int>(g), col, int(n0), int(nb), int(p0),
                                                                     int(pc), grad, int(grad_stride), accumulate);
  } else {
    Col2ImKernel<DType, index_t><<<BlocksFor(total), kThreads, 0, st>>>(Geom<index_t>(g), col, n0, nb, p0, pc, grad,
                                                                         grad_stride, accumulate);
  }
  TE_CUDA_CHECK_LAUNCH("convolution col2im kernel");
}

}  // namespace ops
}  // namespace tensorexpr
