// ops/cpu/conv_kernels.h — the CPU loops of the convolution: N-D im2col and col2im (a gather per input
// row: deterministic, no atomics). Threads split the outer range (ParallelFor); inner loops run over
// contiguous memory. (The bias add and gradient are library expressions: broadcast, sumall_except_dim.)
//
// Column buffer layout, shared with ops/cuda/conv_kernels.cuh: image-major (nb, C*kd*kh*kw, pc) for a chunk
// of nb images starting at n0 and pc output positions starting at p0 (positions flatten (od, oh, ow));
// row (c*kd + z)*kh*kw + y*kw + x holds input channel c seen through kernel offset (z, y, x).
// The input is addressed as rows of its last dimension with a row stride, so padded views work.
#pragma once
#include <algorithm>
#include <cstring>
#include <vector>
#include <tensorexpr/cpu/threads.h>
#include <tensorexpr/dtype.h>
#include <tensorexpr/ops/conv_geometry.h>

namespace tensorexpr {
namespace ops {
namespace detail {

// The first j >= 0 with lo <= x0 + j * step, for step > 0. (Step 1, the common case, skips the
// division: these run once per output row, where a 64-bit division costs more than the copy.)
inline index_t FirstAtLeast(index_t x0, index_t step, index_t lo) {
  if (x0 >= lo) return 0;
  return step == 1 ? lo - x0 : (lo - x0 + step - 1) / step;
}
// One past the last j with x0 + j * step < hi, for step > 0 (0 when none).
inline index_t EndBelow(index_t x0, index_t step, index_t hi) {
  if (x0 >= hi) return 0;
  return step == 1 ? hi - x0 : (hi - 1 - x0) / step + 1;
}
// Whether d >= 0 is a multiple of step; if so *q = d / step.
inline bool DividesInto(index_t d, index_t step, index_t* q) {
  if (d < 0) return false;
  if (step == 1) return *q = d, true;
  if (d % step != 0) return false;
  return *q = d / step, true;
}

// Column rows [begin, end) of the chunk (images n0..., positions p0..p0+pc), on the calling thread.
template <typename DType>
inline void Im2ColRows(const ConvGeometry& g, const DType* data, index_t data_stride, index_t n0, index_t p0,
                       index_t pc, DType* col, index_t begin, index_t end) {
  const index_t kk = g.KernelSize(), rows = g.ColRows();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OH = g.out[1], OW = g.out[2];
  for (index_t r = begin; r < end; ++r) {
    const index_t i = r / rows, c = (r % rows) / kk, kidx = r % kk;
    const index_t kz = kidx / (g.kernel[1] * g.kernel[2]), ky = (kidx / g.kernel[2]) % g.kernel[1],
                  kx = kidx % g.kernel[2];
    const DType* img = data + ((n0 + i) * g.C + c) * D * H * data_stride;
    DType* dst = col + r * pc;
    // The output position walks row by row; divide once per column row, not once per output row.
    index_t ow = p0 % OW, oh = (p0 / OW) % OH, od = p0 / (OW * OH);
    for (index_t p = p0, pend = p0 + pc; p < pend;) {
      const index_t run = std::min(pend - p, OW - ow);  // the rest of this output row inside the chunk
      const index_t z = od * g.stride[0] - g.pad[0] + kz * g.dilate[0];
      const index_t y = oh * g.stride[1] - g.pad[1] + ky * g.dilate[1];
      if (z < 0 || z >= D || y < 0 || y >= H) {
        std::fill(dst, dst + run, DType(0));
      } else {
        const DType* src = img + (z * H + y) * data_stride;
        const index_t sx = g.stride[2], x0 = ow * sx - g.pad[2] + kx * g.dilate[2];
        const index_t jlo = std::min(run, detail::FirstAtLeast(x0, sx, 0));
        const index_t jhi = std::max(jlo, std::min(run, detail::EndBelow(x0, sx, W)));
        std::fill(dst, dst + jlo, DType(0));
        if (sx == 1) {
          std::memcpy(dst + jlo, src + x0 + jlo, sizeof(DType) * static_cast<size_t>(jhi - jlo));
        } else {
          for (index_t j = jlo; j < jhi; ++j) dst[j] = src[x0 + j * sx];
        }
        std::fill(dst + jhi, dst + run, DType(0));
      }
      dst += run;
      p += run;
      ow = 0;
      if (++oh == OH) oh = 0, ++od;
    }
  }
}

}  // namespace detail

template <typename DType>
inline void ConvIm2Col(Stream<cpu>*, const ConvGeometry& g, const DType* data, index_t data_stride, index_t n0,
                       index_t nb, index_t p0, index_t pc, DType* col) {
  ParallelFor(nb * g.ColRows(), pc, [&](index_t begin, index_t end) {
    detail::Im2ColRows(g, data, data_stride, n0, p0, pc, col, begin, end);
  });
}

namespace detail {

// Input rows [begin, end) of the chunk (rows of its last dimension, counted over its nb images), on the
// calling thread.
template <typename DType>
inline void Col2ImRows(const ConvGeometry& g, const DType* col, index_t n0, index_t p0, index_t pc, DType* grad,
                       index_t grad_stride, bool accumulate, index_t begin, index_t end) {
  using AccT = accum_t<DType>;
  const index_t kk = g.KernelSize(), rows = g.ColRows();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  std::vector<AccT> acc(static_cast<size_t>(W));
  for (index_t r = begin; r < end; ++r) {
    const index_t y = r % H, z = (r / H) % D, c = (r / (H * D)) % g.C, i = r / (H * D * g.C);
    std::fill(acc.begin(), acc.end(), AccT(0));
    for (index_t kz = 0; kz < g.kernel[0]; ++kz) {
      index_t od = 0;
      if (!detail::DividesInto(z + g.pad[0] - kz * g.dilate[0], g.stride[0], &od) || od >= OD) continue;
      for (index_t ky = 0; ky < g.kernel[1]; ++ky) {
        index_t oh = 0;
        if (!detail::DividesInto(y + g.pad[1] - ky * g.dilate[1], g.stride[1], &oh) || oh >= OH) continue;
        const index_t base = (od * OH + oh) * OW;  // position of (od, oh, 0)
        const index_t lo = std::max<index_t>(0, p0 - base), hi = std::min<index_t>(OW, p0 + pc - base);
        if (lo >= hi) continue;
        for (index_t kx = 0; kx < g.kernel[2]; ++kx) {
          const index_t row = i * rows + c * kk + (kz * g.kernel[1] + ky) * g.kernel[2] + kx;
          const DType* crow = col + row * pc + (base - p0);  // indexed by ow
          // Input x = ow * stride - pad + kx * dilate; keep the ow in [lo, hi) with x inside [0, W).
          const index_t sx = g.stride[2], x0 = -g.pad[2] + kx * g.dilate[2];
          const index_t olo = std::max(lo, detail::FirstAtLeast(x0, sx, 0));
          const index_t ohi = std::min(hi, detail::EndBelow(x0, sx, W));
          for (index_t ow = olo; ow < ohi; ++ow) acc[x0 + ow * sx] += static_cast<AccT>(crow[ow]);
        }
      }
    }
    DType* out = grad + (((n0 + i) * g.C + c) * D * H + z * H + y) * grad_stride;
    if (accumulate) {
      for (index_t x = 0; x < W; ++x) out[x] = static_cast<DType>(static_cast<AccT>(out[x]) + acc[x]);
    } else {
      for (index_t x = 0; x < W; ++x) out[x] = static_cast<DType>(acc[x]);
    }
  }
}

}  // namespace detail

// grad (rows of its last dimension, row stride grad_stride) for images [n0, n0 + nb) receives the sum
// of the column entries of positions [p0, p0 + pc) that read each input element: written when
// accumulate is false, added otherwise. Each thread owns whole input rows and sums in accum_t.
template <typename DType>
inline void ConvCol2Im(Stream<cpu>*, const ConvGeometry& g, const DType* col, index_t n0, index_t nb, index_t p0,
                       index_t pc, DType* grad, index_t grad_stride, bool accumulate) {
  const index_t in_rows = nb * g.C * g.in[0] * g.in[1];
  ParallelFor(in_rows, g.KernelSize() * std::max<index_t>(g.in[2], 1), [&](index_t begin, index_t end) {
    detail::Col2ImRows(g, col, n0, p0, pc, grad, grad_stride, accumulate, begin, end);
  });
}

}  // namespace ops
}  // namespace tensorexpr
