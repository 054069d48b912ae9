// ops/cpu/padded_image.h — im2col and col2im of one channels-first image through a zero-padded copy of
// it (the box), for the per-image convolution (ops/cpu/conv_per_image.h). The generic loops (cpu/patch.h)
// clip every output row of every column row against the image's edges and copy it with a call; for a
// small image (the Fashion-MNIST trainer's 14x14) that bookkeeping costs more than the copy. Here the
// edges are handled once, when the image is copied into the box, after which every column row is a run
// of whole output rows read from the box with no bound and no branch: one short loop per output row.
// col2im adds the column rows into a zeroed box the same way (in a fixed order on one thread, so the
// result is deterministic), then stores or adds the box's interior into the gradient. The weight
// gradient reads the columns transposed, from the box laid out channels last (PaddedIm2ColT).
#pragma once
#include <algorithm>
#include <type_traits>
#include <tensorexpr/checked.h>
#include <tensorexpr/patch.h>
#include <tensorexpr/cpu/isa.h>
#if TE_HAVE_AVX2_DISPATCH
#include <immintrin.h>
#endif

namespace tensorexpr {
namespace ops {

// The box: the padded coordinates the windows read, along each dimension [-pad, extent - pad); per
// channel a dense (extent[0], extent[1], extent[2]) block.
struct PaddedBox {
  index_t extent[3] = {1, 1, 1};

  explicit PaddedBox(const PatchGeometry& g) {
    for (int d = 0; d < 3; ++d) extent[d] = (g.out[d] - 1) * g.stride[d] + (g.kernel[d] - 1) * g.dilate[d] + 1;
  }
  // Saturated (SaturatingMul) for geometries too large for any workspace.
  index_t ChannelElems() const { return SaturatingMul(SaturatingMul(extent[0], extent[1]), extent[2]); }
  // Box row (c, z, y), in padded coordinates.
  index_t Row(index_t c, index_t z, index_t y) const { return ((c * extent[0] + z) * extent[1] + y) * extent[2]; }
};

namespace padded_image {

// The output rows of one column row: rows[0] x rows[1] rows of `width` entries, dense in the column
// matrix; row (z, y) entry j sits in the box at z z_step + y y_step + j x_step from the first.
struct RowWalk {
  index_t rows[2] = {1, 1}, width = 0;
  index_t z_step = 0, y_step = 0, x_step = 1;
};

// col = the walk's box entries, in order.
template <typename DType>
void GatherPlain(const RowWalk& w, const DType* box, DType* col) {
  for (index_t z = 0; z < w.rows[0]; ++z)
    for (index_t y = 0; y < w.rows[1]; ++y, col += w.width) {
      const DType* src = box + z * w.z_step + y * w.y_step;
      for (index_t j = 0; j < w.width; ++j) col[j] = src[j * w.x_step];
    }
}
// The walk's box entries += col.
template <typename DType>
void ScatterAddPlain(const RowWalk& w, const DType* col, DType* box) {
  for (index_t z = 0; z < w.rows[0]; ++z)
    for (index_t y = 0; y < w.rows[1]; ++y, col += w.width) {
      DType* dst = box + z * w.z_step + y * w.y_step;
      for (index_t j = 0; j < w.width; ++j) dst[j * w.x_step] += col[j];
    }
}

#if TE_HAVE_AVX2_DISPATCH
// The same for float rows of at least 8 contiguous entries (x_step 1), 8 at a time: a row's last 8 are
// one vector that overlaps the one before it (the plain loops above run 4 at a time and then one by
// one, which costs 3x on the 14 wide rows of the Fashion-MNIST trainer).
inline bool Avx2Walk(const RowWalk& w) { return w.x_step == 1 && w.width >= 8; }

TE_TARGET_AVX2 inline void GatherAvx2(const RowWalk& w, const float* box, float* col) {
  const index_t n = w.width;
  for (index_t z = 0; z < w.rows[0]; ++z)
    for (index_t y = 0; y < w.rows[1]; ++y, col += n) {
      const float* src = box + z * w.z_step + y * w.y_step;
      for (index_t j = 0; j + 8 < n; j += 8) _mm256_storeu_ps(col + j, _mm256_loadu_ps(src + j));
      _mm256_storeu_ps(col + n - 8, _mm256_loadu_ps(src + n - 8));
    }
}
TE_TARGET_AVX2 inline void ScatterAddAvx2(const RowWalk& w, const float* col, float* box) {
  const index_t n = w.width;
  for (index_t z = 0; z < w.rows[0]; ++z)
    for (index_t y = 0; y < w.rows[1]; ++y, col += n) {
      float* dst = box + z * w.z_step + y * w.y_step;
      index_t j = 0;
      for (; j + 16 <= n; j += 8)
        _mm256_storeu_ps(dst + j, _mm256_add_ps(_mm256_loadu_ps(dst + j), _mm256_loadu_ps(col + j)));
      // [j, n) holds 8 to 15 entries: the vector at j and the row's last 8, both loaded before either is
      // stored, so that where they overlap both hold the same sums.
      const __m256 head = _mm256_add_ps(_mm256_loadu_ps(dst + j), _mm256_loadu_ps(col + j));
      const __m256 tail = _mm256_add_ps(_mm256_loadu_ps(dst + n - 8), _mm256_loadu_ps(col + n - 8));
      _mm256_storeu_ps(dst + n - 8, tail);
      _mm256_storeu_ps(dst + j, head);
    }
}
#endif

// The two above, on AVX2 (avx2: ActiveIsa() allows it, asked once per image) where the walk suits it.
template <typename DType>
void Gather(const RowWalk& w, const DType* box, DType* col, bool avx2) {
#if TE_HAVE_AVX2_DISPATCH
  if constexpr (std::is_same<DType, float>::value)
    if (avx2 && Avx2Walk(w)) return GatherAvx2(w, box, col);
#endif
  (void)avx2;
  GatherPlain(w, box, col);
}
template <typename DType>
void ScatterAdd(const RowWalk& w, const DType* col, DType* box, bool avx2) {
#if TE_HAVE_AVX2_DISPATCH
  if constexpr (std::is_same<DType, float>::value)
    if (avx2 && Avx2Walk(w)) return ScatterAddAvx2(w, col, box);
#endif
  (void)avx2;
  ScatterAddPlain(w, col, box);
}

// Calls fn(box offset, column offset, walk) for every column row of image g, in column order.
template <typename Fn>
void ForEachColumnRow(const PatchGeometry& g, const PaddedBox& box, Fn&& fn) {
  RowWalk w;
  w.rows[0] = g.out[0], w.rows[1] = g.out[1], w.width = g.out[2];
  w.z_step = g.stride[0] * box.extent[1] * box.extent[2], w.y_step = g.stride[1] * box.extent[2];
  w.x_step = g.stride[2];
  const index_t P = g.OutSize();
  index_t at = 0;
  for (index_t c = 0; c < g.C; ++c)
    for (index_t kz = 0; kz < g.kernel[0]; ++kz)
      for (index_t ky = 0; ky < g.kernel[1]; ++ky)
        for (index_t kx = 0; kx < g.kernel[2]; ++kx, at += P)
          fn(box.Row(c, kz * g.dilate[0], ky * g.dilate[1]) + kx * g.dilate[2], at, w);
}

}  // namespace padded_image

// box = image n of data (rows of stride data_stride), zeros where the windows read the padding.
template <typename DType>
void PadImage(const PatchGeometry& g, const PaddedBox& box, index_t n, const DType* data, index_t data_stride,
              DType* padded) {
  const index_t D = g.in[0], H = g.in[1], W = g.in[2], E2 = box.extent[2];
  // Box columns [x_lo, x_hi) hold image columns [x_lo - pad, x_hi - pad).
  const index_t x_lo = std::min(g.pad[2], E2), x_hi = std::min(g.pad[2] + W, E2);
  for (index_t c = 0; c < g.C; ++c)
    for (index_t z = 0; z < box.extent[0]; ++z)
      for (index_t y = 0; y < box.extent[1]; ++y) {
        DType* dst = padded + box.Row(c, z, y);
        const index_t zi = z - g.pad[0], yi = y - g.pad[1];
        if (zi >= D || yi >= H || zi < 0 || yi < 0 || x_hi == x_lo) {
          std::fill(dst, dst + E2, DType(0));
          continue;
        }
        const DType* src = data + (((n * g.C + c) * D + zi) * H + yi) * data_stride + (x_lo - g.pad[2]);
        std::fill(dst, dst + x_lo, DType(0));
        std::copy(src, src + (x_hi - x_lo), dst + x_lo);
        std::fill(dst + x_hi, dst + E2, DType(0));
      }
}

// col (C kk, P) = the column matrix of the image in the box.
template <typename DType>
void PaddedIm2Col(const PatchGeometry& g, const PaddedBox& box, const DType* padded, DType* col) {
  const bool avx2 = cpu_isa::ActiveIsa() >= cpu_isa::Isa::kAvx2;
  padded_image::ForEachColumnRow(g, box, [&](index_t from, index_t to, const padded_image::RowWalk& w) {
    padded_image::Gather(w, padded + from, col + to, avx2);
  });
}

// The box channels last, for the weight gradient: per group a dense (extent[0], extent[1], extent[2], Cg)
// block, so that the taps kx of a window row are one contiguous run of kernel[2] Cg entries.
template <typename DType>
void PadImageChannelsLast(const PatchGeometry& g, const PaddedBox& box, index_t n, const DType* data,
                          index_t data_stride, DType* padded) {
  const index_t D = g.in[0], H = g.in[1], W = g.in[2], Cg = g.Cg();
  const index_t inside_x = std::clamp<index_t>(box.extent[2] - g.pad[2], 0, W);  // image columns in the box
  std::fill(padded, padded + g.C * box.ChannelElems(), DType(0));
  for (index_t c = 0; c < g.C; ++c)
    for (index_t zi = 0; zi < D; ++zi)
      for (index_t yi = 0; yi < H; ++yi) {
        const index_t z = zi + g.pad[0], y = yi + g.pad[1];
        if (z >= box.extent[0] || y >= box.extent[1]) continue;
        const DType* src = data + (((n * g.C + c) * D + zi) * H + yi) * data_stride;
        DType* dst = padded + (box.Row(c / Cg, z, y) + g.pad[2]) * Cg + c % Cg;
        for (index_t x = 0; x < inside_x; ++x) dst[x * Cg] = src[x];
      }
}

// colT (P, C kk) = the column matrix transposed, one row per output position, from the channels-last
// box: each group's C kk / G columns in (kz, ky, kx, channel) order. This is the operand OpenBLAS reads
// fastest in the weight gradient's gemm, dW' (K, C kk) (+)= dY (K, P) . colT: about 1.5x its speed on
// dY . col^T for the trainer's conv2, which sums over only 196 positions. dW' holds each filter's
// weights in that order too (TapMajorIndex).
template <typename DType>
void PaddedIm2ColT(const PatchGeometry& g, const PaddedBox& box, const DType* padded, DType* colT) {
  const index_t Cg = g.Cg(), dx = g.dilate[2] * Cg;
  // A window row's taps: one run of kernel[2] Cg entries when they touch, else kernel[2] runs of Cg.
  const index_t run = g.dilate[2] == 1 ? g.kernel[2] * Cg : Cg, runs = g.dilate[2] == 1 ? 1 : g.kernel[2];
  for (index_t od = 0; od < g.out[0]; ++od)
    for (index_t oh = 0; oh < g.out[1]; ++oh)
      for (index_t ow = 0; ow < g.out[2]; ++ow)
        for (index_t gi = 0; gi < g.G; ++gi)
          for (index_t kz = 0; kz < g.kernel[0]; ++kz)
            for (index_t ky = 0; ky < g.kernel[1]; ++ky) {
              const DType* src =
                  padded + (box.Row(gi, od * g.stride[0] + kz * g.dilate[0], oh * g.stride[1] + ky * g.dilate[1]) +
                            ow * g.stride[2]) * Cg;
              for (index_t r = 0; r < runs; ++r, colT += run) std::copy(src + r * dx, src + r * dx + run, colT);
            }
}

// Where a gemm on PaddedIm2ColT's columns leaves element e of a (K, Cg, kernel...) weight gradient: at
// (k, tap, channel) of a (K, kernel..., Cg) matrix.
inline index_t TapMajorIndex(const PatchGeometry& g, index_t e) {
  const index_t kk = g.KernelSize(), CKg = g.Cg() * kk;
  return e - e % CKg + (e % kk) * g.Cg() + e % CKg / kk;
}

// box = col2im(col): every column entry added into the box entry it was read from.
template <typename DType>
void PaddedCol2Im(const PatchGeometry& g, const PaddedBox& box, const DType* col, DType* padded) {
  const bool avx2 = cpu_isa::ActiveIsa() >= cpu_isa::Isa::kAvx2;
  std::fill(padded, padded + g.C * box.ChannelElems(), DType(0));
  padded_image::ForEachColumnRow(g, box, [&](index_t to, index_t from, const padded_image::RowWalk& w) {
    padded_image::ScatterAdd(w, col + from, padded + to, avx2);
  });
}

// Image n of grad (rows of stride grad_stride) = (accumulate: +=) the box's interior; image elements past
// the box (never read by a window) get zero.
template <typename DType>
void UnpadImage(const PatchGeometry& g, const PaddedBox& box, const DType* padded, index_t n, DType* grad,
                index_t grad_stride, bool accumulate) {
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t inside_x = std::clamp<index_t>(box.extent[2] - g.pad[2], 0, W);  // image columns in the box
  for (index_t c = 0; c < g.C; ++c)
    for (index_t zi = 0; zi < D; ++zi)
      for (index_t yi = 0; yi < H; ++yi) {
        DType* dst = grad + (((n * g.C + c) * D + zi) * H + yi) * grad_stride;
        const index_t z = zi + g.pad[0], y = yi + g.pad[1];
        const index_t inside = z < box.extent[0] && y < box.extent[1] ? inside_x : 0;
        const DType* src = inside > 0 ? padded + box.Row(c, z, y) + g.pad[2] : nullptr;
        if (accumulate) {
          for (index_t x = 0; x < inside; ++x) dst[x] += src[x];
        } else {
          for (index_t x = 0; x < inside; ++x) dst[x] = src[x];
          std::fill(dst + inside, dst + W, DType(0));
        }
      }
}

}  // namespace ops
}  // namespace tensorexpr
