// cuda/patch.cuh — im2col and col2im on the GPU, the twin of cpu/patch.h (patch.h describes the geometry,
// the chunk and the column layouts):
//   Im2Col(s, g, chunk, layout, data, data_stride, col)      the chunk's column matrix (patch.h: image-major)
//   Col2Im(s, g, chunk, col, grad, grad_stride, accumulate)  its adjoint, written or added
// and the GPU evaluators of unpack_patch2col / pack_col2patch over tensors, which launch the same kernels.
//   im2col  channels first: one thread per (image, channel, output position), as in MXNet: it walks the
//           kernel offsets and writes one column entry per offset, consecutive threads consecutive
//           positions. Channels last: one thread per column entry, consecutive threads consecutive channels;
//           its index splits into row, channel, kernel offset and position by IndexDiv (a multiply-high
//           each), since a hardware division per split cost more than the copy (the stem's 147-entry rows).
//           A 2-D one in one group over whole images, its rows whole 16-byte vectors, runs a block per
//           output row instead: the kernel's input rows go to shared memory once, and the column rows are
//           written from there, a warp along each column row (ResNet-50's stem in fp16, N = 32, H200:
//           82 us, where the entry-wise kernel took 239).
//   col2im  one thread per input element, gathering the column entries that read it: no atomics, and the
//           sum order is fixed, so results are deterministic. A 1x1 kernel without padding reads each
//           pixel at most once: one thread per column entry stores it into its pixel, after the images
//           are zeroed where some pixel is read by no entry (ScattersOnce; either layout).
// Every kernel takes a 32-bit index type when the offsets it touches fit, 64-bit otherwise.
#pragma once
#include <algorithm>
#include <climits>
#include <type_traits>
#include "../checked.h"
#include "../index_div.h"
#include "../patch.h"
#include "../expr/patch2col.h"
#include "../expr/col2patch.h"
#include "check.cuh"
#include "device.cuh"
#include "map.cuh"
#include "stream.cuh"

namespace tensorexpr {
namespace patch_cuda {

// The geometry in the kernel's index type.
template <typename I>
struct Geom {
  I C, G, kd, kh, kw, D, H, W, OD, OH, OW, sd, sh, sw, dd, dh, dw, pd, ph, pw;
  explicit Geom(const PatchGeometry& g)
      : C(I(g.C)), G(I(g.G)), kd(I(g.kernel[0])), kh(I(g.kernel[1])), kw(I(g.kernel[2])), D(I(g.in[0])),
        H(I(g.in[1])), W(I(g.in[2])), OD(I(g.out[0])), OH(I(g.out[1])), OW(I(g.out[2])), sd(I(g.stride[0])),
        sh(I(g.stride[1])), sw(I(g.stride[2])), dd(I(g.dilate[0])), dh(I(g.dilate[1])), dw(I(g.dilate[2])),
        pd(I(g.pad[0])), ph(I(g.pad[1])), pw(I(g.pad[2])) {}
};

// The chunk and the channels-first column layout in the kernel's index type.
template <typename I>
struct Chunk {
  I n0, nb, p0, pc, row_stride, image_stride;
  Chunk(const PatchChunk& ch, const PatchColumns& layout)
      : n0(I(ch.n0)), nb(I(ch.nb)), p0(I(ch.p0)), pc(I(ch.pc)), row_stride(I(layout.row_stride)),
        image_stride(I(layout.image_stride)) {}
};

template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Im2ColKernel(Geom<I> g, Chunk<I> ch, const DType* __restrict__ data, I data_stride, DType* __restrict__ col) {
  const I total = ch.nb * g.C * ch.pc;
  const I kk = g.kd * g.kh * g.kw;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I q = t % ch.pc, c = (t / ch.pc) % g.C, i = t / (ch.pc * g.C);
    const I p = ch.p0 + q;
    const I ow = p % g.OW, oh = (p / g.OW) % g.OH, od = p / (g.OW * g.OH);
    const DType* img = data + ((ch.n0 + i) * g.C + c) * g.D * g.H * data_stride;
    DType* dst = col + i * ch.image_stride + c * kk * ch.row_stride + q;
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
          dst += ch.row_stride;
        }
      }
    }
  }
}

template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Col2ImKernel(Geom<I> g, Chunk<I> ch, const DType* __restrict__ col, DType* grad, I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I total = ch.nb * g.C * g.D * g.H * g.W;
  const I kk = g.kd * g.kh * g.kw;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I x = t % g.W, y = (t / g.W) % g.H, z = (t / (g.W * g.H)) % g.D;
    const I c = (t / (g.W * g.H * g.D)) % g.C, i = t / (g.W * g.H * g.D * g.C);
    // indexed by (kernel offset) * row_stride + position - p0
    const DType* ccol = col + i * ch.image_stride + c * kk * ch.row_stride;
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
          if (ow >= g.OW || p < ch.p0 || p >= ch.p0 + ch.pc) continue;
          acc += static_cast<AccT>(ccol[((kz * g.kh + ky) * g.kw + kx) * ch.row_stride + (p - ch.p0)]);
        }
      }
    }
    DType* out = grad + (((ch.n0 + i) * g.C + c) * g.D * g.H + z * g.H + y) * grad_stride + x;
    *out = accumulate ? static_cast<DType>(static_cast<AccT>(*out) + acc) : static_cast<DType>(acc);
  }
}

// The 1x1 unpadded kernel's col2im (ScattersOnce): entry (image i, channel c, position q) of the chunk is
// the only one that reads pixel (od sd, oh sh, ow sw). Col2ImKernel finds that out with a dozen index
// divisions per pixel: ResNet-50's 1x1 stride-2 data gradient at 14 x 14 (fp16 NCHW, N = 32, H200) took
// 0.137 ms with it, 0.046 with this one.
template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Col2ImOnceKernel(Geom<I> g, Chunk<I> ch, const DType* __restrict__ col, DType* grad, I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I total = ch.nb * g.C * ch.pc;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    const I q = t % ch.pc, c = (t / ch.pc) % g.C, i = t / (ch.pc * g.C);
    const I p = ch.p0 + q;
    const I od = p / (g.OW * g.OH), oh = (p / g.OW) % g.OH, ow = p % g.OW;
    // A position past the input's last pixel reads end padding; compared by division, since od * sd may
    // not fit I there.
    if (od > (g.D - 1) / g.sd || oh > (g.H - 1) / g.sh || ow > (g.W - 1) / g.sw) continue;
    // Summed from zero as Col2ImKernel sums (so -0 becomes +0 there too).
    const AccT v = AccT(0) + static_cast<AccT>(col[i * ch.image_stride + c * ch.row_stride + q]);
    DType* out = grad + ((((ch.n0 + i) * g.C + c) * g.D + od * g.sd) * g.H + oh * g.sh) * grad_stride + ow * g.sw;
    *out = static_cast<DType>(accumulate ? static_cast<AccT>(*out) + v : v);
  }
}

// The divider of a launch whose indices are I: 32-bit launches divide in 32 bits.
template <typename I>
using DividerFor = std::conditional_t<sizeof(I) == 4, IndexDiv32, IndexDiv>;
// The divisors the channels-last kernels split their indices by, fixed at launch, one set per kernel.
template <typename I>
struct Im2ColDivs {
  DividerFor<I> row_stride, channels_per_group, kernel_size, positions, OW, OH, kw, kh;
  Im2ColDivs(const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout)
      : row_stride(Make(layout.row_stride)), channels_per_group(Make(g.C / g.G)), kernel_size(Make(g.KernelSize())),
        positions(Make(ch.pc)), OW(Make(g.out[2])), OH(Make(g.out[1])), kw(Make(g.kernel[2])), kh(Make(g.kernel[1])) {}
  static DividerFor<I> Make(index_t d) { return DividerFor<I>::Make(d); }
};
template <typename I>
struct Col2ImDivs {
  DividerFor<I> channels_per_group, C, W, H, D, sd, sh, sw;
  explicit Col2ImDivs(const PatchGeometry& g)
      : channels_per_group(Make(g.C / g.G)), C(Make(g.C)), W(Make(g.in[2])), H(Make(g.in[1])), D(Make(g.in[0])),
        sd(Make(Stride(g, 0))), sh(Make(Stride(g, 1))), sw(Make(Stride(g, 2))) {}
  static DividerFor<I> Make(index_t d) { return DividerFor<I>::Make(d); }
  // The kernel divides a padded coordinate, below in + pad, by the stride: a stride past that divides
  // every one as in + pad does (quotient 0), and in + pad fits the launch's index type where the stride
  // may not.
  static index_t Stride(const PatchGeometry& g, int i) { return std::min(g.stride[i], SaturatingAdd(g.in[i], g.pad[i])); }
};
// q = n / d with *rem = n % d, for 0 <= n, in the kernel's index type.
template <typename I, typename Div>
__device__ __forceinline__ I DivMod(const Div& d, I n, I* rem) {
  static_assert(std::is_same<Div, DividerFor<I>>::value, "a launch divides with its index type's divider");
  return d.DivMod(n, rem);
}

template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Im2ColPixelsKernel(Geom<I> g, Chunk<I> ch, Im2ColDivs<I> div, const DType* __restrict__ data, I data_stride,
                       DType* __restrict__ col) {
  const I kk = g.kd * g.kh * g.kw, Cg = g.C / g.G;
  const I total = ch.nb * ch.pc * ch.row_stride;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    // t = r row_stride + j, j = (gi kk + koff) Cg + cg below C kk (zeros past it), r = i pc + q;
    // p = (od OH + oh) OW + ow; koff = (kz kh + ky) kw + kx
    I j, cg, koff, q, ow, oh, kx, ky;
    const I r = DivMod(div.row_stride, t, &j);
    if (j >= g.C * kk) {
      col[t] = DType(0.0f);
      continue;
    }
    const I gi = DivMod(div.kernel_size, DivMod(div.channels_per_group, j, &cg), &koff);
    const I i = DivMod(div.positions, r, &q);
    const I p = ch.p0 + q;
    const I od = DivMod(div.OH, DivMod(div.OW, p, &ow), &oh);
    const I kz = DivMod(div.kh, DivMod(div.kw, koff, &kx), &ky);
    const I z = od * g.sd - g.pd + kz * g.dd, y = oh * g.sh - g.ph + ky * g.dh, x = ow * g.sw - g.pw + kx * g.dw;
    const bool inside = z >= 0 && z < g.D && y >= 0 && y < g.H && x >= 0 && x < g.W;
    col[t] = inside ? data[((((ch.n0 + i) * g.D + z) * g.H + y) * g.W + x) * data_stride + gi * Cg + cg] : DType(0.0f);
  }
}

// Channels last, 2-D, one group, whole images, rows of whole 16-byte vectors: a block per output row
// (image, oh). The kh input rows its windows read are copied into shared memory once, as the columns a
// window reaches from the left padding's first (Reach(2) of them, zeros in the padding and in rows off the
// image). Entry j of every column row of the output row then reads the same shared offset from its
// window's first entry (ky shared rows on, kx dw C + c along), which the block tabulates once (-1 in the
// row's zero tail past C kk). A warp writes pairs of consecutive entries of one column row, 64 at a
// time, so that its lanes read neighbouring shared entries (few bank conflicts) and store whole lines;
// a lane keeps its pair's offsets across the output positions it writes. Offsets fit an int (Fits32).
//
// The entries of a shared row: Reach(2) columns of C; and those of the left padding in it, pw C (at most
// the row: a stride may carry every window past the padding).
inline index_t Im2ColSharedRow(const PatchGeometry& g) { return SaturatingMul(g.Reach(2), g.C); }
inline index_t Im2ColSharedLead(const PatchGeometry& g) {
  return std::min(SaturatingMul(g.pad[2], g.C), Im2ColSharedRow(g));
}
struct Im2ColRowsDivs {
  IndexDiv32 OH, taps, C;  // taps: kw C, the entries of one kernel row
  explicit Im2ColRowsDivs(const PatchGeometry& g)
      : OH(IndexDiv32::Make(g.out[1])), taps(IndexDiv32::Make(g.kernel[2] * g.C)), C(IndexDiv32::Make(g.C)) {}
};
template <typename DType>
struct alignas(2 * sizeof(DType)) EntryPair {
  DType first, second;
};
template <typename DType>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Im2ColRowsKernel(Geom<int> g, Im2ColRowsDivs div, int n0, int nb, int shared_row, int lead,
                     const DType* __restrict__ data, int row_stride, DType* __restrict__ col) {
  static_assert(sizeof(DType) <= 8, "pairs of entries are at most 16 bytes");
  extern __shared__ uint4 shared_rows[];
  int* offsets = reinterpret_cast<int*>(shared_rows);  // row_stride of them, then the rows
  DType* rows = reinterpret_cast<DType*>(offsets + row_stride);
  const int row_len = g.W * g.C, entries_per_row = g.kh * g.kw * g.C;
  for (int j = threadIdx.x; j < row_stride; j += blockDim.x) {
    int rem, c;
    const int ky = div.taps.DivMod(j, &rem), kx = div.C.DivMod(rem, &c);
    offsets[j] = j < entries_per_row ? ky * shared_row + kx * g.dw * g.C + c : -1;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int b = blockIdx.x; b < nb * g.OH; b += gridDim.x) {
    int oh;
    const int image = n0 + div.OH.DivMod(b, &oh);
    __syncthreads();  // the table is written; the previous output row's reads are done
    for (int ky = 0; ky < g.kh; ++ky) {
      const int y = oh * g.sh - g.ph + ky * g.dh;
      const bool on_image = y >= 0 && y < g.H;
      const int from = on_image ? (image * g.H + y) * row_len - lead : 0;
      for (int e = threadIdx.x; e < shared_row; e += blockDim.x)
        rows[ky * shared_row + e] = on_image && e >= lead && e - lead < row_len ? data[from + e] : DType(0.0f);
    }
    __syncthreads();
    DType* out = col + b * g.OW * row_stride;
    for (int j = 2 * lane; j < row_stride; j += 64) {
      const int first = offsets[j], second = offsets[j + 1];
      for (int ow = warp; ow < g.OW; ow += warps) {
        const DType* window = rows + ow * g.sw * g.C;
        EntryPair<DType> pair;
        pair.first = first >= 0 ? window[first] : DType(0.0f);
        pair.second = second >= 0 ? window[second] : DType(0.0f);
        *reinterpret_cast<EntryPair<DType>*>(out + ow * row_stride + j) = pair;
      }
    }
  }
}

template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Col2ImPixelsKernel(Geom<I> g, Chunk<I> ch, Col2ImDivs<I> div, const DType* __restrict__ col, DType* grad,
                       I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I kk = g.kd * g.kh * g.kw, Cg = g.C / g.G, row_len = g.C * kk;
  const I total = ch.nb * g.D * g.H * g.W * g.C;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    // t = (((i D + z) H + y) W + x) C + c, c = gi Cg + cg
    I c, x, y, z, cg;
    const I i = DivMod(div.D, DivMod(div.H, DivMod(div.W, DivMod(div.C, t, &c), &x), &y), &z);
    const I gi = DivMod(div.channels_per_group, c, &cg);
    AccT acc = 0;
    I rem;
    for (I kz = 0; kz < g.kd; ++kz) {
      const I dn = z + g.pd - kz * g.dd;
      if (dn < 0) continue;
      const I od = DivMod(div.sd, dn, &rem);
      if (rem != 0 || od >= g.OD) continue;
      for (I ky = 0; ky < g.kh; ++ky) {
        const I hn = y + g.ph - ky * g.dh;
        if (hn < 0) continue;
        const I oh = DivMod(div.sh, hn, &rem);
        if (rem != 0 || oh >= g.OH) continue;
        for (I kx = 0; kx < g.kw; ++kx) {
          const I wn = x + g.pw - kx * g.dw;
          if (wn < 0) continue;
          const I ow = DivMod(div.sw, wn, &rem);
          if (rem != 0 || ow >= g.OW) continue;
          const I p = (od * g.OH + oh) * g.OW + ow;
          if (p < ch.p0 || p >= ch.p0 + ch.pc) continue;
          const I koff = (kz * g.kh + ky) * g.kw + kx;
          acc += static_cast<AccT>(col[(i * ch.pc + p - ch.p0) * row_len + (gi * kk + koff) * Cg + cg]);
        }
      }
    }
    DType* out = grad + ((((ch.n0 + i) * g.D + z) * g.H + y) * g.W + x) * grad_stride + c;
    *out = accumulate ? static_cast<DType>(static_cast<AccT>(*out) + acc) : static_cast<DType>(acc);
  }
}

// The divisors and bounds of the channels-last 1x1 col2im (Col2ImOncePixelsKernel), fixed at launch.
template <typename I>
struct Col2ImOnceDivs {
  DividerFor<I> C, positions, OW, OH;
  I last[3];  // the last output position that lies on the input (past it, end padding), per axis
  Col2ImOnceDivs(const PatchGeometry& g, const PatchChunk& ch)
      : C(Make(g.C)), positions(Make(ch.pc)), OW(Make(g.out[2])), OH(Make(g.out[1])) {
    for (int a = 0; a < 3; ++a) last[a] = I(std::min((g.in[a] - 1) / g.stride[a], g.out[a] - 1));
  }
  static DividerFor<I> Make(index_t d) { return DividerFor<I>::Make(d); }
};

// The 1x1 unpadded kernel's channels-last col2im (ScattersOnce): entry c of column row (image i, position
// q) of the chunk is the only one that reads channel c of pixel (od sd, oh sh, ow sw). One thread per
// column entry, consecutive threads consecutive channels, after the images are zeroed. pointwise_gemm's
// data gradient of ResNet-50's 1x1 stride-2 layer at 14 x 14 with 2048 filters (channels last, N = 32,
// H200) took 0.038 ms in fp16 and 0.063 in TF32 with it (bench/conv_bench --split --algorithm
// pointwise_gemm); with Col2ImPixelsKernel, which finds each pixel's reader by division, the tuner
// (TE_CONV_TUNE=1) had timed it at 0.079 and 0.100.
template <typename DType, typename I>
__global__ void __launch_bounds__(cuda::kMapBlock)
    Col2ImOncePixelsKernel(Geom<I> g, Chunk<I> ch, Col2ImOnceDivs<I> div, const DType* __restrict__ col, DType* grad,
                           I grad_stride, bool accumulate) {
  using AccT = accum_t<DType>;
  const I total = ch.nb * ch.pc * g.C;
  for (I t = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); t < total; t += I(blockDim.x) * I(gridDim.x)) {
    I c, q, ow, oh;
    const I i = DivMod(div.positions, DivMod(div.C, t, &c), &q);
    const I od = DivMod(div.OH, DivMod(div.OW, ch.p0 + q, &ow), &oh);
    if (od > div.last[0] || oh > div.last[1] || ow > div.last[2]) continue;
    // Summed from zero as Col2ImPixelsKernel sums (so -0 becomes +0 there too).
    const AccT v = AccT(0) + static_cast<AccT>(col[(i * ch.pc + q) * ch.row_stride + c]);
    DType* out = grad + (((ch.n0 + i) * g.D + od * g.sd) * g.H + oh * g.sh) * g.W * grad_stride +
                 ow * g.sw * grad_stride + c;
    *out = static_cast<DType>(accumulate ? static_cast<AccT>(*out) + v : v);
  }
}

inline bool Fits32(index_t n) { return n >= 0 && n < index_t(INT_MAX); }

// Whether every offset a launch touches fits 32 bits: the threads, the image rows (data_stride apart)
// and the column entries (one past the last, plus a position index for col2im's bound checks).
inline bool Fits32(const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout, index_t data_stride) {
  const index_t image_rows = (ch.n0 + ch.nb) * g.C * g.in[0] * g.in[1];  // channels last: pixels
  const index_t pixels = (ch.n0 + ch.nb) * g.InSize();
  const index_t col_end = g.channels_last ? ch.nb * ch.pc * layout.row_stride
                                          : (ch.nb - 1) * layout.image_stride + g.ColRows() * layout.row_stride;
  // The coordinates the kernels form along each axis: up to the last window's last tap, and the input's
  // extent plus its padding.
  // The strides too: Geom<int> holds them, and one output window may take any stride.
  for (int i = 0; i < 3; ++i)
    if (!Fits32(g.Reach(i)) || !Fits32(SaturatingAdd(g.in[i], g.pad[i])) || !Fits32(g.stride[i])) return false;
  return Fits32(ch.nb * g.C * std::max(g.InSize(), ch.pc)) && Fits32(col_end + ch.p0) &&
         Fits32((g.channels_last ? pixels : image_rows) * data_stride) && Fits32(g.OutSize() + ch.pc) &&
         Fits32(ch.nb * ch.pc * (g.channels_last ? layout.row_stride : g.ColRows()));
}

// Shared memory the rows kernel asks for: its table of a column row's offsets, and the kernel's input
// rows, Im2ColSharedRow entries each (saturated: Im2ColTakesRows bounds it).
template <typename DType>
inline size_t Im2ColRowsBytes(const PatchGeometry& g, index_t row_stride) {
  const index_t rows = SaturatingMul(SaturatingMul(Im2ColSharedRow(g), g.kernel[1]), index_t(sizeof(DType)));
  return static_cast<size_t>(SaturatingAdd(SaturatingMul(row_stride, index_t(sizeof(int))), rows));
}
// The shared memory the rows kernel may ask for: its rows and table for ResNet-50's 3x3 layers at 7x7 in
// float with 512 channels (73 KB), two blocks to an SM of the GPUs it is built for; less where the device
// lets a block have less.
constexpr size_t kIm2ColRowsMaxBytes = 96 * 1024;
inline size_t Im2ColRowsLimit() { return std::min(kIm2ColRowsMaxBytes, cuda::CurrentDeviceInfo().shared_per_block); }
// Whether the rows kernel takes a geometry whose column rows are row_stride entries long: 2-D
// (IsPlanar), one group, rows of whole 16-byte vectors (so of pairs of entries: sizeof(DType) <= 8),
// within its shared memory.
template <typename DType>
inline bool Im2ColRowsFit(const PatchGeometry& g, index_t row_stride) {
  constexpr index_t kVector = 16 / sizeof(DType);
  return g.channels_last && g.G == 1 && g.IsPlanar() &&
         row_stride % kVector == 0 &&
         Im2ColRowsBytes<DType>(g, row_stride) <= Im2ColRowsLimit();
}
// Whether Im2ColRowsKernel takes the chunk: whole images of a dense input, 16-byte aligned columns (its
// 32-bit offsets checked by the caller: Fits32).
template <typename DType>
inline bool Im2ColTakesRows(const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
                            index_t data_stride, const DType* col) {
  return Im2ColRowsFit<DType>(g, layout.row_stride) && data_stride == g.C && ch.p0 == 0 && ch.pc == g.OutSize() &&
         reinterpret_cast<uintptr_t>(col) % 16 == 0 && Fits32(ch.nb * g.out[1]);
}

// A 1x1(x1) kernel without padding: each pixel is read by at most one output position.
inline bool ScattersOnce(const PatchGeometry& g) {
  for (int i = 0; i < 3; ++i)
    if (g.kernel[i] != 1 || g.pad[i] != 0) return false;
  return true;
}

template <typename I, typename DType>
void Im2Col(cudaStream_t st, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
            const DType* data, index_t data_stride, DType* col) {
  if (g.channels_last) {
    if constexpr (sizeof(I) == 4 && 16 % sizeof(DType) == 0) {
      if (Im2ColTakesRows(g, ch, layout, data_stride, col)) {
        const index_t blocks = std::min<index_t>(ch.nb * g.out[1], index_t(1) << 20);
        const size_t bytes = Im2ColRowsBytes<DType>(g, layout.row_stride);
        if (bytes > 48 * 1024)
          TE_CUDA_CHECK(cudaFuncSetAttribute(Im2ColRowsKernel<DType>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             int(Im2ColRowsLimit())));
        Im2ColRowsKernel<DType><<<unsigned(blocks), cuda::kMapBlock, bytes, st>>>(
            Geom<int>(g), Im2ColRowsDivs(g), int(ch.n0), int(ch.nb), int(Im2ColSharedRow(g)),
            int(Im2ColSharedLead(g)), data, int(layout.row_stride), col);
        TE_CUDA_CHECK_LAUNCH("channels-last im2col rows kernel");
        return;
      }
    }
    cuda::LaunchMap<&Im2ColPixelsKernel<DType, I>>(ch.nb * ch.pc * layout.row_stride, st,
                                                   "channels-last im2col kernel", Geom<I>(g), Chunk<I>(ch, layout),
                                                   Im2ColDivs<I>(g, ch, layout), data, I(data_stride), col);
  } else {
    cuda::LaunchMap<&Im2ColKernel<DType, I>>(ch.nb * g.C * ch.pc, st, "im2col kernel", Geom<I>(g),
                                             Chunk<I>(ch, layout), data, I(data_stride), col);
  }
}

// Before a ScattersOnce col2im stores its entries: zeroes the chunk's images of grad (rows grad_stride
// apart: pixels of C channels, or channels first image rows of W), unless the entries write every pixel.
template <typename DType>
void ZeroUnreadPixels(const PatchGeometry& g, const PatchChunk& ch, DType* grad, index_t grad_stride, cudaStream_t st) {
  const bool every_pixel_read = g.stride[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1 && ch.pc == g.OutSize() &&
                                g.out[0] >= g.in[0] && g.out[1] >= g.in[1] && g.out[2] >= g.in[2];
  if (every_pixel_read) return;
  const index_t rows_per_image = g.channels_last ? g.InSize() : g.C * g.in[0] * g.in[1];
  const index_t row_len = g.channels_last ? g.C : g.in[2];
  TE_CUDA_CHECK(cudaMemset2DAsync(grad + ch.n0 * rows_per_image * grad_stride,
                                  sizeof(DType) * static_cast<size_t>(grad_stride), 0,
                                  sizeof(DType) * static_cast<size_t>(row_len),
                                  static_cast<size_t>(ch.nb * rows_per_image), st));
}

template <typename I, typename DType>
void Col2Im(cudaStream_t st, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
            const DType* col, DType* grad, index_t grad_stride, bool accumulate) {
  const index_t elements = ch.nb * g.C * g.InSize();
  if (ScattersOnce(g)) {
    if (!accumulate) ZeroUnreadPixels(g, ch, grad, grad_stride, st);
    if (g.channels_last)
      cuda::LaunchMap<&Col2ImOncePixelsKernel<DType, I>>(ch.nb * ch.pc * g.C, st, "channels-last 1x1 col2im kernel",
                                                         Geom<I>(g), Chunk<I>(ch, layout), Col2ImOnceDivs<I>(g, ch),
                                                         col, grad, I(grad_stride), accumulate);
    else
      cuda::LaunchMap<&Col2ImOnceKernel<DType, I>>(ch.nb * g.C * ch.pc, st, "1x1 col2im kernel", Geom<I>(g),
                                                   Chunk<I>(ch, layout), col, grad, I(grad_stride), accumulate);
  } else if (g.channels_last) {
    cuda::LaunchMap<&Col2ImPixelsKernel<DType, I>>(elements, st, "channels-last col2im kernel", Geom<I>(g),
                                                   Chunk<I>(ch, layout), Col2ImDivs<I>(g), col, grad, I(grad_stride),
                                                   accumulate);
  } else {
    cuda::LaunchMap<&Col2ImKernel<DType, I>>(elements, st, "col2im kernel", Geom<I>(g), Chunk<I>(ch, layout), col,
                                             grad, I(grad_stride), accumulate);
  }
}

// The launches with the index type chosen, for any column layout (the expressions' differs).
template <typename DType>
void Im2Col(Stream<gpu>* s, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
            const DType* data, index_t data_stride, DType* col) {
  if (ch.nb * ch.pc * g.ColRows() == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  if (Fits32(g, ch, layout, data_stride)) {
    Im2Col<int>(st, g, ch, layout, data, data_stride, col);
  } else {
    Im2Col<index_t>(st, g, ch, layout, data, data_stride, col);
  }
}
template <typename DType>
void Col2Im(Stream<gpu>* s, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
            const DType* col, DType* grad, index_t grad_stride, bool accumulate) {
  if (ch.nb * g.C * g.InSize() == 0) return;
  const cudaStream_t st = Stream<gpu>::GetStream(s);
  if (Fits32(g, ch, layout, grad_stride)) {
    Col2Im<int>(st, g, ch, layout, col, grad, grad_stride, accumulate);
  } else {
    Col2Im<index_t>(st, g, ch, layout, col, grad, grad_stride, accumulate);
  }
}

}  // namespace patch_cuda

// col = the chunk's column matrix of data in `layout` (patch.h), on stream s.
template <typename DType>
inline void Im2Col(Stream<gpu>* s, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
                   const DType* data, index_t data_stride, DType* col) {
  patch_cuda::Im2Col(s, g, ch, layout, data, data_stride, col);
}

// grad (the chunk's images, rows of stride grad_stride) = (accumulate: +=) the sum of the column entries
// of the chunk's positions that read each element, on stream s.
template <typename DType>
inline void Col2Im(Stream<gpu>* s, const PatchGeometry& g, const PatchChunk& ch, const DType* col, DType* grad,
                   index_t grad_stride, bool accumulate) {
  patch_cuda::Col2Im(s, g, ch, PatchColumns::ImageMajor(g, ch), col, grad, grad_stride, accumulate);
}

namespace expr {

// dst = unpack_patch2col(img, ...) on the GPU with img a tensor: the im2col kernel over the whole batch.
// Other savers and image expressions evaluate the plan.
template <typename Saver, typename DType, typename E>
inline void EvalInto(Tensor<gpu, 2, DType> dst, const Exp<UnpackPatchToColExp<E>, DType, type::kChainer>& exp) {
  static_assert(std::is_same<typename E::device_type, gpu>::value,
                "the image of unpack_patch2col lives on a different device than the tensor it is assigned to; Copy() it first");
  const UnpackPatchToColExp<E>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression unpack_patch2col ", e.shape());
  if constexpr (is_tensor<E>::value && std::is_same<Saver, sv::saveto>::value) {
    const PatchGeometry& g = e.geo_;
    patch_cuda::Im2Col(dst.stream_, g, PatchChunk::Whole(g), PatchColumns{dst.stride_, g.OutSize()}, e.img_.dptr_,
                       e.img_.stride_, dst.dptr_);
  } else {
    MapPlan<Saver>(dst, e);
  }
}

// dst = / += pack_col2patch(col, ...) on the GPU with col a tensor: the col2im kernel. Other savers and
// column expressions evaluate the plan.
template <typename Saver, typename DType, typename E, int dstdim>
inline void EvalInto(Tensor<gpu, dstdim, DType> dst,
                     const Exp<PackColToPatchExp<E, dstdim>, DType, type::kChainer>& exp) {
  static_assert(std::is_same<typename E::device_type, gpu>::value,
                "the column matrix of pack_col2patch lives on a different device than the tensor it is assigned to; Copy() it first");
  const PackColToPatchExp<E, dstdim>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression pack_col2patch ", e.shape());
  constexpr bool kWrite = std::is_same<Saver, sv::saveto>::value, kAdd = std::is_same<Saver, sv::plusto>::value;
  if constexpr (is_tensor<E>::value && (kWrite || kAdd)) {
    const PatchGeometry& g = e.geo_;
    patch_cuda::Col2Im(dst.stream_, g, PatchChunk::Whole(g), PatchColumns{e.col_.stride_, g.OutSize()}, e.col_.dptr_,
                       dst.dptr_, dst.stride_, kAdd);
  } else {
    MapPlan<Saver>(dst, e);
  }
}

}  // namespace expr
}  // namespace tensorexpr
