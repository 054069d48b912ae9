// cpu/transpose_tiles.h — the register tiles of the CPU's blocked transpose (cpu/transpose.h): a square of
// kWidth x kWidth elements loaded along the source's contiguous direction, transposed in registers by
// shuffles, and stored along the output's. The elements move as bits, so any trivially copyable type of
// the tile's size takes it.
//   SSE2 (every x86-64): 4 x 4 of 4-byte types, 2 x 2 of 8-byte ones.
//   AVX2 (cpu/isa.h, when the processor has it): 8 x 8 of 4-byte types, 4 x 4 of 8-byte ones. Half the
//     shuffles per element of SSE2's tiles, which bound the transpose there (0.55 of memcpy at 16 threads on
//     a 16-core Xeon; 8 x 8 tiles 1.17 in the same experiment).
// Other targets and element sizes have none (kWidth 0): the block loop moves elements one at a time.
#pragma once
#include <cstddef>
#include "../base.h"
#include "isa.h"
#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tensorexpr {
namespace cpu_transpose {

using cpu_isa::Isa;

// MicroTile<bytes, isa>::Move(in, in_stride, out, out_stride) sets out[k * out_stride + j] =
// in[j * in_stride + k] for j, k below kWidth, elements of `bytes` bytes, strides in elements.
template <int bytes, Isa isa>
struct MicroTile {
  static constexpr int kWidth = 0;
};

// For the element loop alone.
using NoTile = MicroTile<0, Isa::kBaseline>;

#if defined(__SSE2__)
template <>
struct MicroTile<4, Isa::kBaseline> {
  static constexpr int kBytes = 4, kWidth = 4;
  static constexpr Isa kIsa = Isa::kBaseline;
  static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const float* i = static_cast<const float*>(in);
    float* o = static_cast<float*>(out);
    __m128 r0 = _mm_loadu_ps(i), r1 = _mm_loadu_ps(i + in_stride), r2 = _mm_loadu_ps(i + 2 * in_stride),
           r3 = _mm_loadu_ps(i + 3 * in_stride);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(o, r0);
    _mm_storeu_ps(o + out_stride, r1);
    _mm_storeu_ps(o + 2 * out_stride, r2);
    _mm_storeu_ps(o + 3 * out_stride, r3);
  }
};
template <>
struct MicroTile<8, Isa::kBaseline> {
  static constexpr int kBytes = 8, kWidth = 2;
  static constexpr Isa kIsa = Isa::kBaseline;
  static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const double* i = static_cast<const double*>(in);
    double* o = static_cast<double*>(out);
    const __m128d r0 = _mm_loadu_pd(i), r1 = _mm_loadu_pd(i + in_stride);
    _mm_storeu_pd(o, _mm_unpacklo_pd(r0, r1));
    _mm_storeu_pd(o + out_stride, _mm_unpackhi_pd(r0, r1));
  }
};
#endif

#if TE_HAVE_AVX2_DISPATCH
// Each register holds half-rows j and j + kWidth / 2 (one per 128-bit lane, the upper half loaded by
// vinsertf128 from memory, which needs no shuffle port): the in-lane shuffles then finish the transpose
// without a cross-lane round. 8 x 8 floats: 16 shuffles for 64 elements, against 32 for SSE2's tiles.
template <>
struct MicroTile<4, Isa::kAvx2> {
  static constexpr int kBytes = 4, kWidth = 8;
  static constexpr Isa kIsa = Isa::kAvx2;
  TE_TARGET_AVX2 static __m256 Rows(const float* lo, const float* hi) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
  }
  TE_TARGET_AVX2 static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const float* i = static_cast<const float*>(in);
    float* o = static_cast<float*>(out);
    const index_t s = in_stride;
    // r[j] (j < 4): columns 0..3 of rows j and j + 4; r[4 + j]: columns 4..7 of the same rows.
    const __m256 r0 = Rows(i, i + 4 * s), r1 = Rows(i + s, i + 5 * s), r2 = Rows(i + 2 * s, i + 6 * s),
                 r3 = Rows(i + 3 * s, i + 7 * s), r4 = Rows(i + 4, i + 4 * s + 4), r5 = Rows(i + s + 4, i + 5 * s + 4),
                 r6 = Rows(i + 2 * s + 4, i + 6 * s + 4), r7 = Rows(i + 3 * s + 4, i + 7 * s + 4);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    _mm256_storeu_ps(o, _mm256_shuffle_ps(t0, t2, 0x44));
    _mm256_storeu_ps(o + out_stride, _mm256_shuffle_ps(t0, t2, 0xEE));
    _mm256_storeu_ps(o + 2 * out_stride, _mm256_shuffle_ps(t1, t3, 0x44));
    _mm256_storeu_ps(o + 3 * out_stride, _mm256_shuffle_ps(t1, t3, 0xEE));
    _mm256_storeu_ps(o + 4 * out_stride, _mm256_shuffle_ps(t4, t6, 0x44));
    _mm256_storeu_ps(o + 5 * out_stride, _mm256_shuffle_ps(t4, t6, 0xEE));
    _mm256_storeu_ps(o + 6 * out_stride, _mm256_shuffle_ps(t5, t7, 0x44));
    _mm256_storeu_ps(o + 7 * out_stride, _mm256_shuffle_ps(t5, t7, 0xEE));
  }
};
template <>
struct MicroTile<8, Isa::kAvx2> {
  static constexpr int kBytes = 8, kWidth = 4;
  static constexpr Isa kIsa = Isa::kAvx2;
  TE_TARGET_AVX2 static __m256d Rows(const double* lo, const double* hi) {
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(lo)), _mm_loadu_pd(hi), 1);
  }
  TE_TARGET_AVX2 static void Move(const void* in, index_t in_stride, void* out, index_t out_stride) {
    const double* i = static_cast<const double*>(in);
    double* o = static_cast<double*>(out);
    const index_t s = in_stride;
    // r0, r1: columns 0..1 of rows (0, 2) and (1, 3); r2, r3: columns 2..3 of the same.
    const __m256d r0 = Rows(i, i + 2 * s), r1 = Rows(i + s, i + 3 * s), r2 = Rows(i + 2, i + 2 * s + 2),
                  r3 = Rows(i + s + 2, i + 3 * s + 2);
    _mm256_storeu_pd(o, _mm256_unpacklo_pd(r0, r1));
    _mm256_storeu_pd(o + out_stride, _mm256_unpackhi_pd(r0, r1));
    _mm256_storeu_pd(o + 2 * out_stride, _mm256_unpacklo_pd(r2, r3));
    _mm256_storeu_pd(o + 3 * out_stride, _mm256_unpackhi_pd(r2, r3));
  }
};
#endif

// `tiles` tiles side by side along x: tile t reads from in + t * kWidth * in_stride and writes to
// out + t * kWidth. One loop per instruction set: a tile's intrinsics inline only into a function compiled
// for the same target.
template <typename Tile>
inline void MoveStripBaseline(const void* in, index_t in_stride, void* out, index_t out_stride, index_t tiles) {
  const auto* i = static_cast<const unsigned char*>(in);
  auto* o = static_cast<unsigned char*>(out);
  const index_t in_step = Tile::kWidth * in_stride * Tile::kBytes, out_step = Tile::kWidth * Tile::kBytes;
  for (index_t t = 0; t < tiles; ++t, i += in_step, o += out_step) Tile::Move(i, in_stride, o, out_stride);
}
#if TE_HAVE_AVX2_DISPATCH
template <typename Tile>
TE_TARGET_AVX2 inline void MoveStripAvx2(const void* in, index_t in_stride, void* out, index_t out_stride,
                                         index_t tiles) {
  const auto* i = static_cast<const unsigned char*>(in);
  auto* o = static_cast<unsigned char*>(out);
  const index_t in_step = Tile::kWidth * in_stride * Tile::kBytes, out_step = Tile::kWidth * Tile::kBytes;
  for (index_t t = 0; t < tiles; ++t, i += in_step, o += out_step) Tile::Move(i, in_stride, o, out_stride);
}
#endif

template <typename Tile>
inline void MoveStrip(const void* in, index_t in_stride, void* out, index_t out_stride, index_t tiles) {
#if TE_HAVE_AVX2_DISPATCH
  if constexpr (Tile::kIsa == Isa::kAvx2) {
    MoveStripAvx2<Tile>(in, in_stride, out, out_stride, tiles);
  } else {
    MoveStripBaseline<Tile>(in, in_stride, out, out_stride, tiles);
  }
#else
  MoveStripBaseline<Tile>(in, in_stride, out, out_stride, tiles);
#endif
}

// Calls fn(Tile{}) with the widest tile for `bytes`-byte elements that ActiveIsa() allows (kWidth 0 where
// there is none): the caller's block loop is compiled once per tile it may meet.
template <int bytes, typename Fn>
inline void WithMicroTile(Fn&& fn) {
  using Baseline = MicroTile<bytes, Isa::kBaseline>;
#if TE_HAVE_AVX2_DISPATCH
  using Wide = MicroTile<bytes, Isa::kAvx2>;
  if constexpr (Wide::kWidth > 0) {
    if (cpu_isa::ActiveIsa() >= Isa::kAvx2) {
      fn(Wide{});
      return;
    }
  }
#endif
  fn(Baseline{});
}

}  // namespace cpu_transpose
}  // namespace tensorexpr
