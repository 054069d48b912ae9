// ops/cuda/conv_kernels_nhwc.cuh — im2col and col2im for channels-last data on the GPU, the twin of
// ops/cpu/conv_kernels_nhwc.h (same column layout: (nb, pc, [group, kernel offset, channel of group])).
//   im2col  one thread per column entry; consecutive threads read and write consecutive channels.
//   col2im  one thread per input element, gathering the column entries that read it: no atomics, a fixed
//           sum order, deterministic.
#pragma once
#include "conv_kernels.cuh"

namespace tensorexpr {
namespace ops {
namespace cuda_conv {

template <typename DType, typename I>
__global__ void Im2ColChannelsLastKernel(Geom<I> g, I G, const DType* __restrict__ data, I data_stride, I n0,
                                         I nb, I p0, I pc, DType* __restrict__ col) {
  const I kk = g.kd * g.kh * g.kw, Cg = g.C / G, row_len = g.C * kk;
  const I total = nb * pc * row_len;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I cg = t % Cg, koff = (t / Cg) % kk, gi = (t / (Cg * kk)) % G, r = t / row_len;
    const I p = p0 + r % pc, i = r / pc;
    const I ow = p % g.OW, oh = (p / g.OW) % g.OH, od = p / (g.OW * g.OH);
    const I kx = koff % g.kw, ky = (koff / g.kw) % g.kh, kz = koff / (g.kw * g.kh);
    const I z = od * g.sd - g.pd + kz * g.dd, y = oh * g.sh - g.ph + ky * g.dh, x = ow * g.sw - g.pw + kx * g.dw;
    const bool inside = z >= 0 && z < g.D && y >= 0 && y < g.H && x >= 0 && x < g.W;
    col[t] = inside ? data[((((n0 + i) * g.D + z) * g.H + y) * g.W + x) * data_stride + gi * Cg + cg] : DType(0.0f);
  }
}

template <typename DType, typename I>
__global__ void Col2ImChannelsLastKernel(Geom<I> g, I G, const DType* __restrict__ col, I n0, I nb, I p0, I pc,
                                         DType* grad, I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I kk = g.kd * g.kh * g.kw, Cg = g.C / G, row_len = g.C * kk;
  const I total = nb * g.D * g.H * g.W * g.C;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I c = t % g.C, pix = t / g.C;
    const I x = pix % g.W, y = (pix / g.W) % g.H, z = (pix / (g.W * g.H)) % g.D, i = pix / (g.W * g.H * g.D);
    const I gi = c / Cg, cg = c % Cg;
    AccT acc = 0;
    for (I kz = 0; kz < g.kd; ++kz) {
      const I dn = z + g.pd - kz * g.dd;
      if (dn < 0 || dn % g.sd != 0 || dn / g.sd >= g.OD) continue;
      for (I ky = 0; ky < g.kh; ++ky) {
        const I hn = y + g.ph - ky * g.dh;
        if (hn < 0 || hn % g.sh != 0 || hn / g.sh >= g.OH) continue;
        for (I kx = 0; kx < g.kw; ++kx) {
          const I wn = x + g.pw - kx * g.dw;
          if (wn < 0 || wn % g.sw != 0 || wn / g.sw >= g.OW) continue;
          const I p = ((dn / g.sd) * g.OH + hn / g.sh) * g.OW + wn / g.sw;
          if (p < p0 || p >= p0 + pc) continue;
          const I koff = (kz * g.kh + ky) * g.kw + kx;
          acc += static_cast<AccT>(col[(i * pc + p - p0) * row_len + (gi * kk + koff) * Cg + cg]);
        }
      }
    }
    DType* out = grad + ((((n0 + i) * g.D + z) * g.H + y) * g.W + x) * grad_stride + c;
    *out = accumulate ? static_cast<DType>(static_cast<AccT>(*out) + acc) : static_cast<DType>(acc);
  }
}

}  // namespace cuda_conv

template <typename DType>
inline void ConvIm2ColChannelsLast(Stream<gpu>* s, const ConvGeometry& g, const DType* data, index_t data_stride,
                                   index_t n0, index_t nb, index_t p0, index_t pc, DType* col) {
  using namespace cuda_conv;
  const index_t total = nb * pc * g.ColRows();
  if (total == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  const index_t pixels = (n0 + nb) * g.in[0] * g.in[1] * g.in[2];
  if (Fits32(total) && Fits32(pixels * data_stride)) {
    Im2ColChannelsLastKernel<DType, int><<<BlocksFor(total), kThreads, 0, st>>>(
        Geom<int>(g), int(g.G), data, int(data_stride), int(n0), int(nb), int(p0), int(pc), col);
  } else {
    Im2ColChannelsLastKernel<DType, index_t><<<BlocksFor(total), kThreads, 0, st>>>(
        Geom<index_t>(g), g.G, data, data_stride, n0, nb, p0, pc, col);
  }
  TE_CUDA_CHECK_LAUNCH("channels-last convolution im2col kernel");
}

template <typename DType>
inline void ConvCol2ImChannelsLast(Stream<gpu>* s, const ConvGeometry& g, const DType* col, index_t n0, index_t nb,
                                   index_t p0, index_t pc, DType* grad, index_t grad_stride, bool accumulate) {
  using namespace cuda_conv;
  const index_t total = nb * g.InSize() * g.C;
  if (total == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  const index_t pixels = (n0 + nb) * g.InSize();
  if (Fits32(total) && Fits32(nb * pc * g.ColRows()) && Fits32(pixels * grad_stride) && Fits32(g.OutSize() + pc)) {
    Col2ImChannelsLastKernel<DType, int><<<BlocksFor(total), kThreads, 0, st>>>(
        Geom<int>(g), int(g.G), col, int(n0), int(nb), int(p0), int(pc), grad, int(grad_stride), accumulate);
  } else {
    Col2ImChannelsLastKernel<DType, index_t><<<BlocksFor(total), kThreads, 0, st>>>(
        Geom<index_t>(g), g.G, col, n0, nb, p0, pc, grad, grad_stride, accumulate);
  }
  TE_CUDA_CHECK_LAUNCH("channels-last convolution col2im kernel");
}

}  // namespace ops
}  // namespace tensorexpr
