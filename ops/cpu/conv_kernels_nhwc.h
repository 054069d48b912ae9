// ops/cpu/conv_kernels_nhwc.h — im2col and col2im for channels-last data (NWC, NHWC, NDHWC) on the CPU,
// the twin of ops/cuda/conv_kernels_nhwc.cuh.
//
// Column buffer layout: image-major, then position-major, (nb, pc, C*kd*kh*kw) for a chunk of nb images
// from n0 and pc output positions from p0; within a position's row the entries run (group, kernel offset,
// channel of the group), so that group g's columns form a (pc, kk*Cg) matrix with row stride C*kk, and
// its kernel-offset / channel order matches the (K, kernel..., C/G) weight. The input is addressed as rows
// of C channels, one row per pixel, with a row stride (padded channels work). Copies and sums run over
// contiguous channels.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>
#include <tensorexpr/cpu/threads.h>
#include <tensorexpr/dtype.h>
#include <tensorexpr/ops/conv_geometry.h>

namespace tensorexpr {
namespace ops {

template <typename DType>
inline void ConvIm2ColChannelsLast(Stream<cpu>*, const ConvGeometry& g, const DType* data, index_t data_stride,
                                   index_t n0, index_t nb, index_t p0, index_t pc, DType* col) {
  const index_t kk = g.KernelSize(), row_len = g.ColRows(), Cg = g.Cg();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  ParallelFor(nb * pc, row_len, [&](index_t begin, index_t end) {
    for (index_t r = begin; r < end; ++r) {
      const index_t i = r / pc, p = p0 + r % pc;
      const index_t ow = p % OW, oh = (p / OW) % OH, od = p / (OW * OH);
      DType* dst = col + r * row_len;
      for (index_t kz = 0, koff = 0; kz < g.kernel[0]; ++kz)
        for (index_t ky = 0; ky < g.kernel[1]; ++ky)
          for (index_t kx = 0; kx < g.kernel[2]; ++kx, ++koff) {
            const index_t z = od * g.stride[0] - g.pad[0] + kz * g.dilate[0];
            const index_t y = oh * g.stride[1] - g.pad[1] + ky * g.dilate[1];
            const index_t x = ow * g.stride[2] - g.pad[2] + kx * g.dilate[2];
            const bool inside = z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
            const DType* src = inside ? data + (((n0 + i) * D + z) * H + y) * W * data_stride + x * data_stride
                                      : nullptr;
            for (index_t gi = 0; gi < g.G; ++gi) {
              DType* out = dst + (gi * kk + koff) * Cg;
              if (inside) {
                std::memcpy(out, src + gi * Cg, sizeof(DType) * static_cast<size_t>(Cg));
              } else {
                std::fill(out, out + Cg, DType(0));
              }
            }
          }
    }
  });
}

// grad (rows of C channels, one per pixel, row stride grad_stride) for images [n0, n0 + nb) receives the
// sum of the column entries of positions [p0, p0 + pc) that read each input element: written when
// accumulate is false, added otherwise. Each thread owns whole pixels and sums in accum_t, in a fixed order.
template <typename DType>
inline void ConvCol2ImChannelsLast(Stream<cpu>*, const ConvGeometry& g, const DType* col, index_t n0, index_t nb,
                                   index_t p0, index_t pc, DType* grad, index_t grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const index_t kk = g.KernelSize(), row_len = g.ColRows(), Cg = g.Cg();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  ParallelFor(nb * D * H * W, row_len, [&](index_t begin, index_t end) {
    std::vector<AccT> acc(static_cast<size_t>(g.C));
    for (index_t r = begin; r < end; ++r) {
      const index_t x = r % W, y = (r / W) % H, z = (r / (W * H)) % D, i = r / (W * H * D);
      std::fill(acc.begin(), acc.end(), AccT(0));
      for (index_t kz = 0, koff = 0; kz < g.kernel[0]; ++kz)
        for (index_t ky = 0; ky < g.kernel[1]; ++ky)
          for (index_t kx = 0; kx < g.kernel[2]; ++kx, ++koff) {
            const index_t dz = z + g.pad[0] - kz * g.dilate[0], dy = y + g.pad[1] - ky * g.dilate[1],
                          dx = x + g.pad[2] - kx * g.dilate[2];
            if (dz < 0 || dy < 0 || dx < 0 || dz % g.stride[0] || dy % g.stride[1] || dx % g.stride[2]) continue;
            const index_t od = dz / g.stride[0], oh = dy / g.stride[1], ow = dx / g.stride[2];
            if (od >= OD || oh >= OH || ow >= OW) continue;
            const index_t p = (od * OH + oh) * OW + ow;
            if (p < p0 || p >= p0 + pc) continue;
            const DType* crow = col + (i * pc + p - p0) * row_len + koff * Cg;
            for (index_t gi = 0; gi < g.G; ++gi)
              for (index_t c = 0; c < Cg; ++c) acc[gi * Cg + c] += static_cast<AccT>(crow[gi * kk * Cg + c]);
          }
      DType* out = grad + (((n0 + i) * D + z) * H + y) * W * grad_stride + x * grad_stride;
      if (accumulate) {
        for (index_t c = 0; c < g.C; ++c) out[c] = static_cast<DType>(static_cast<AccT>(out[c]) + acc[c]);
      } else {
        for (index_t c = 0; c < g.C; ++c) out[c] = static_cast<DType>(acc[c]);
      }
    }
  });
}

}  // namespace ops
}  // namespace tensorexpr
