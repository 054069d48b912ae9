// ops/conv_winograd.h — "winograd_2x2" and "winograd_4x4": Winograd's minimal filtering F(m x m, 3 x 3) for
// 3 x 3, stride-1, undilated 2-D convolutions, on either device, float and double. A tile of m x m outputs
// comes from an (m + 2) x (m + 2) patch of the input with (m + 2)^2 multiplications per channel pair
// instead of 9 m^2 (2.25x fewer for m = 2, 4x for m = 4):
//
//   V = B^T d B (each input patch d)   U = G g G^T (each filter g)   M = U (.) V summed over channels
//   Y = A^T M A
//
// The sum over channels at each of the (m + 2)^2 points is a matrix product, (filters x channels) times
// (channels x tiles): one grouped gemm of (m + 2)^2 batches (gemm.h), between three transform passes (a
// loop on the CPU, a kernel on the GPU, both from the same per-index functors). The data gradient is the
// same correlation over the output gradient with the filters transposed and flipped (ops/conv_direct_pass.h).
// The weight gradient is the forward's adjoint: with dY's tiles taken to the points by A (W = A dY A^T),
//
//   dU = W (.) V summed over tiles      dg = G^T dU G
//
// the sum over tiles a product of (filters x tiles) and (tiles x channels) at each point, the other way
// round from the forward's. Either layout: channels last, the transforms run channel-fastest and the
// products are formed transposed, so that neighbouring threads read and write neighbouring addresses in
// both.
//
// Numerics: the transforms' constants are exact in binary for m = 2; for m = 4 (divisions by 6 and 24,
// products up to 8 x 8 in the output transform) the error grows about 20 times over a direct sum's (the
// tests bound both against the float64 reference). A transform mixes its whole patch: an infinite or NaN
// input makes every output of its tile NaN, not only those whose window holds it.
//
// Workspace: the transformed filters (or their gradient), and the transformed input and products (or the
// transformed output gradient) of as many images as the cap allows at once (at least one).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <tensorexpr/tensorexpr.h>
#include <tensorexpr/gemm.h>
#include <tensorexpr/ops/conv_algorithm.h>
#include "conv_direct_pass.h"
#if defined(__CUDACC__)
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#endif

namespace tensorexpr {
namespace ops {
namespace winograd {

template <typename DType>
constexpr bool kDType = std::is_same<DType, float>::value || std::is_same<DType, double>::value;

// The one-dimensional transforms of F(m, 3): B^T d (input), G g (filter), A^T x (output).
template <int m>
struct Transform;

template <>
struct Transform<2> {
  static constexpr int kA = 4;  // the patch: m + 2
  template <typename T>
  TE_XINLINE static void Input(const T* d, T* r) {
    r[0] = d[0] - d[2], r[1] = d[1] + d[2], r[2] = d[2] - d[1], r[3] = d[1] - d[3];
  }
  template <typename T>
  TE_XINLINE static void Filter(const T* g, T* r) {
    r[0] = g[0], r[1] = T(0.5) * (g[0] + g[1] + g[2]), r[2] = T(0.5) * (g[0] - g[1] + g[2]), r[3] = g[2];
  }
  template <typename T>
  TE_XINLINE static void Output(const T* x, T* y) {
    y[0] = x[0] + x[1] + x[2], y[1] = x[1] - x[2] - x[3];
  }
  // The adjoints of Output and Filter (A y, G^T r): the weight gradient's transforms.
  template <typename T>
  TE_XINLINE static void OutputAdjoint(const T* y, T* x) {
    x[0] = y[0], x[1] = y[0] + y[1], x[2] = y[0] - y[1], x[3] = -y[1];
  }
  template <typename T>
  TE_XINLINE static void FilterAdjoint(const T* r, T* g) {
    const T h1 = T(0.5) * r[1], h2 = T(0.5) * r[2];
    g[0] = r[0] + h1 + h2, g[1] = h1 - h2, g[2] = h1 + h2 + r[3];
  }
};

template <>
struct Transform<4> {
  static constexpr int kA = 6;
  template <typename T>
  TE_XINLINE static void Input(const T* d, T* r) {
    r[0] = T(4) * d[0] - T(5) * d[2] + d[4];
    r[1] = -T(4) * (d[1] + d[2]) + d[3] + d[4];
    r[2] = T(4) * (d[1] - d[2]) - d[3] + d[4];
    r[3] = T(2) * (d[3] - d[1]) - d[2] + d[4];
    r[4] = T(2) * (d[1] - d[3]) - d[2] + d[4];
    r[5] = T(4) * d[1] - T(5) * d[3] + d[5];
  }
  template <typename T>
  TE_XINLINE static void Filter(const T* g, T* r) {
    r[0] = g[0] / T(4);
    r[1] = -(g[0] + g[1] + g[2]) / T(6);
    r[2] = -(g[0] - g[1] + g[2]) / T(6);
    r[3] = g[0] / T(24) + g[1] / T(12) + g[2] / T(6);
    r[4] = g[0] / T(24) - g[1] / T(12) + g[2] / T(6);
    r[5] = g[2];
  }
  template <typename T>
  TE_XINLINE static void Output(const T* x, T* y) {
    y[0] = x[0] + x[1] + x[2] + x[3] + x[4];
    y[1] = x[1] - x[2] + T(2) * (x[3] - x[4]);
    y[2] = x[1] + x[2] + T(4) * (x[3] + x[4]);
    y[3] = x[1] - x[2] + T(8) * (x[3] - x[4]) + x[5];
  }
  template <typename T>
  TE_XINLINE static void OutputAdjoint(const T* y, T* x) {
    x[0] = y[0];
    x[1] = y[0] + y[1] + y[2] + y[3];
    x[2] = y[0] - y[1] + y[2] - y[3];
    x[3] = y[0] + T(2) * y[1] + T(4) * y[2] + T(8) * y[3];
    x[4] = y[0] - T(2) * y[1] + T(4) * y[2] - T(8) * y[3];
    x[5] = y[3];
  }
  template <typename T>
  TE_XINLINE static void FilterAdjoint(const T* r, T* g) {
    g[0] = r[0] / T(4) - (r[1] + r[2]) / T(6) + (r[3] + r[4]) / T(24);
    g[1] = (r[2] - r[1]) / T(6) + (r[3] - r[4]) / T(12);
    g[2] = (r[3] + r[4] - r[1] - r[2]) / T(6) + r[5];
  }
};

// The two-dimensional form X = L x L^T of a one-dimensional transform (rows, then columns): `from` is
// rows x rows, `to` cols x cols; `apply(in, out)` maps rows values to cols.
template <int rows, int cols, typename T, typename Apply>
TE_XINLINE void Separable(const T (&from)[rows][rows], T (&to)[cols][cols], Apply apply) {
  T half[cols][rows], column[rows], result[cols];
  for (int j = 0; j < rows; ++j) {  // each column of `from`
    for (int i = 0; i < rows; ++i) column[i] = from[i][j];
    apply(column, result);
    for (int i = 0; i < cols; ++i) half[i][j] = result[i];
  }
  for (int i = 0; i < cols; ++i) {  // each row of the half-transformed tile
    apply(half[i], result);
    for (int j = 0; j < cols; ++j) to[i][j] = result[j];
  }
}

// The layout of one pass's work. Transformed filters U: [xi][g][co][ci]; transformed input V:
// [xi][g][ci][tile]; products M: [xi][g][co][tile]; xi = one of the A x A points, tile = (image in the
// chunk, tile row, tile column). Channels last, V and M hold each matrix transposed: [xi][g][tile][channel].
struct Plan {
  detail::DirectPass p;
  index_t tiles_y = 0, tiles_x = 0;  // per image
  index_t images = 1;                // per chunk
  index_t points = 0;                // A * A
  // The transforms' index decoding by multiply-high (IndexDiv), not by division: on a GPU a 64-bit
  // division is a ~100-instruction routine, several per transformed tile.
  IndexDiv tiles_y_div = IndexDiv::Make(1), tiles_x_div = IndexDiv::Make(1), groups_div = IndexDiv::Make(1);
  IndexDiv ci_div = IndexDiv::Make(1), co_div = IndexDiv::Make(1);

  index_t FilterElems() const { return points * p.G * p.Co * p.Ci; }
  index_t TilesPerChunk() const { return images * tiles_y * tiles_x; }
  index_t ChunkElems(index_t n) const { return points * p.G * (p.Ci + p.Co) * n * tiles_y * tiles_x; }
  index_t WorkspaceElems() const { return FilterElems() + ChunkElems(images); }
  // Channel c's value at `tile` of point xi's matrix for group g in V (channels = Ci) or M (Co).
  TE_XINLINE index_t PointIndex(int xi, index_t g, index_t channels, index_t c, index_t tiles, index_t tile) const {
    const index_t matrix = (index_t(xi) * p.G + g) * channels * tiles;
    return matrix + (p.channels_last ? tile * channels + c : c * tiles + tile);
  }
};

// Whether every size a plan multiplies out stays far inside index_t (a hostile padding could wrap them):
// the largest, one chunk of every image (or of one image: MakePlan sizes one even for an empty batch),
// bounded in double for either pass.
template <int m>
bool SizesFit(const ConvGeometry& g) {
  const double A = Transform<m>::kA, limit = 1e17;
  const double tiles = std::ceil(double(std::max(g.in[1], g.out[1])) / m) * std::ceil(double(std::max(g.in[2], g.out[2])) / m);
  const double channels = double(g.G) * (double(g.Cg()) + double(g.Kg()));
  const double images = double(std::max<index_t>(g.N, 1));
  return A * A * channels * images * tiles < limit && A * A * double(g.K) * double(g.Cg()) < limit &&
         double(g.N) * double(g.C) * double(g.in[1]) * double(g.in[2]) < limit;
}

// Whether F(m x m, 3 x 3) runs geometry g: the conditions of the header's first lines.
template <int m>
ConvSupport Supports(const ConvGeometry& g, bool data_contiguous) {
  if (!data_contiguous) return ConvSupport::No("it reads dense rows only (the input has padded rows)");
  if (!g.IsPlanar()) return ConvSupport::No("it runs 2-D convolutions only");
  if (g.kernel[1] != 3 || g.kernel[2] != 3) return ConvSupport::No("it runs 3 x 3 kernels only");
  for (int i = 1; i < 3; ++i) {
    if (g.stride[i] != 1) return ConvSupport::No("it runs stride 1 only");
    if (g.dilate[i] != 1) return ConvSupport::No("it runs undilated kernels only");
  }
  if (!SizesFit<m>(g)) return ConvSupport::No("its tile counts would overflow its 64-bit indices");
  return ConvSupport::Yes();
}

template <int m>
Plan MakePlan(const ConvGeometry& g, ConvPass pass, size_t elem_bytes, size_t limit_bytes) {
  Plan l;
  l.p = detail::MakeDirectPass(g, pass);
  l.points = index_t(Transform<m>::kA) * Transform<m>::kA;
  l.tiles_y = (l.p.out[1] + m - 1) / m, l.tiles_x = (l.p.out[2] + m - 1) / m;
  l.tiles_y_div = IndexDiv::Make(l.tiles_y), l.tiles_x_div = IndexDiv::Make(l.tiles_x);
  l.groups_div = IndexDiv::Make(l.p.G), l.ci_div = IndexDiv::Make(l.p.Ci), l.co_div = IndexDiv::Make(l.p.Co);
  const index_t per_image = l.ChunkElems(1), budget = index_t(limit_bytes / elem_bytes) - l.FilterElems();
  l.images = std::max<index_t>(1, std::min<index_t>(l.p.N, per_image > 0 ? budget / per_image : l.p.N));
  return l;
}

// Index e of a transform over (image in the chunk, group, channel, tile row, tile column), the tile
// column fastest; channels last over (image, tile row, tile column, group, channel), the channel fastest.
// `tile` is its tile's index in V and M. `channels` divides by the transform's channel count.
struct TileItem {
  index_t n, g, c, ty, tx, tile;
};
TE_XINLINE TileItem DecodeTile(const Plan& l, const IndexDiv& channels, index_t e) {
  TileItem t;
  if (l.p.channels_last) {
    const index_t rest = l.groups_div.DivMod(channels.DivMod(e, &t.c), &t.g);
    t.n = l.tiles_y_div.DivMod(l.tiles_x_div.DivMod(rest, &t.tx), &t.ty);
  } else {
    const index_t rest = l.tiles_y_div.DivMod(l.tiles_x_div.DivMod(e, &t.tx), &t.ty);
    t.n = l.groups_div.DivMod(channels.DivMod(rest, &t.c), &t.g);
  }
  t.tile = (t.n * l.tiles_y + t.ty) * l.tiles_x + t.tx;
  return t;
}

// U from the convolution's weight (flipped and transposed for the data gradient). One index per (g, co, ci).
template <int m, typename DType>
struct FilterTransformOp {
  Plan l;
  const DType* weight;
  DType* u;
  TE_XINLINE void operator()(index_t e) const {
    constexpr int A = Transform<m>::kA;
    const detail::DirectPass& p = l.p;
    index_t ci, co;
    const index_t g = l.co_div.DivMod(l.ci_div.DivMod(e, &ci), &co);
    const DType* w = weight + p.filter_g * g + p.filter_co * co + p.filter_ci * ci;
    DType taps[3][3], out[A][A];
    for (int t = 0; t < 9; ++t) taps[t / 3][t % 3] = w[p.filter_tap * (p.flip ? 8 - t : t)];
    Separable(taps, out, [](const DType* in, DType* r) { Transform<m>::Filter(in, r); });
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) u[((index_t(i * A + j) * p.G + g) * p.Co + co) * p.Ci + ci] = out[i][j];
  }
};

// The size x size patch of a plane (rows x cols positions, `step` elements apart) from (y0, x0), with
// zeros where it reaches past the plane.
template <int size, typename DType>
TE_XINLINE void ReadPatch(const DType* plane, index_t step, index_t rows, index_t cols, index_t y0, index_t x0,
                          DType (&d)[size][size]) {
  for (int i = 0; i < size; ++i)
    for (int j = 0; j < size; ++j) {
      const index_t y = y0 + i, x = x0 + j;
      d[i][j] = y >= 0 && y < rows && x >= 0 && x < cols ? plane[(y * cols + x) * step] : DType(0);
    }
}

// One tile's A x A points into V (channels = Ci) or M (Co).
template <int A, typename DType>
TE_XINLINE void WritePoints(const Plan& l, const DType (&x)[A][A], index_t g, index_t channels, index_t c,
                            index_t tiles, index_t tile, DType* to) {
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) to[l.PointIndex(i * A + j, g, channels, c, tiles, tile)] = x[i][j];
}

// V from images [first, first + images) of the input. One index per (image, g, ci, tile row, tile column).
template <int m, typename DType>
struct InputTransformOp {
  Plan l;
  const DType* input;
  index_t first, images;
  DType* v;
  TE_XINLINE void operator()(index_t e) const {
    constexpr int A = Transform<m>::kA;
    const detail::DirectPass& p = l.p;
    const TileItem t = DecodeTile(l, l.ci_div, e);
    const DType* plane = input + p.PlaneStart(first + t.n, t.g, t.c, p.Ci, p.InSize());
    DType d[A][A], out[A][A];
    ReadPatch(plane, p.PositionStride(p.Ci), p.in[1], p.in[2], t.ty * m + p.origin[1], t.tx * m + p.origin[2], d);
    Separable(d, out, [](const DType* in, DType* r) { Transform<m>::Input(in, r); });
    WritePoints(l, out, t.g, p.Ci, t.c, images * l.tiles_y * l.tiles_x, t.tile, v);
  }
};

// The outputs of images [first, first + images) from M, stored or added. One index per (image, g, co, tile
// row, tile column).
template <int m, typename DType>
struct OutputTransformOp {
  Plan l;
  const DType* mm;
  index_t first, images;
  DType* output;
  bool add;
  TE_XINLINE void operator()(index_t e) const {
    constexpr int A = Transform<m>::kA;
    const detail::DirectPass& p = l.p;
    const TileItem t = DecodeTile(l, l.co_div, e);
    const index_t tiles = images * l.tiles_y * l.tiles_x;
    DType x[A][A], y[m][m];
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) x[i][j] = mm[l.PointIndex(i * A + j, t.g, p.Co, t.c, tiles, t.tile)];
    Separable(x, y, [](const DType* in, DType* r) { Transform<m>::Output(in, r); });
    DType* plane = output + p.PlaneStart(first + t.n, t.g, t.c, p.Co, p.OutSize());
    const index_t step = p.PositionStride(p.Co);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        const index_t oy = t.ty * m + i, ox = t.tx * m + j;
        if (oy >= p.out[1] || ox >= p.out[2]) continue;
        DType* o = plane + (oy * p.out[2] + ox) * step;
        *o = add ? *o + y[i][j] : y[i][j];
      }
  }
};

// W = A dY A^T from images [first, first + images) of the output gradient, into the products' place (a
// tile's outputs past the output's edge count as zeros, as the forward never stores them). One index per
// (image, g, co, tile row, tile column).
template <int m, typename DType>
struct OutputGradTransformOp {
  Plan l;
  const DType* out_grad;
  index_t first, images;
  DType* w;
  TE_XINLINE void operator()(index_t e) const {
    constexpr int A = Transform<m>::kA;
    const detail::DirectPass& p = l.p;
    const TileItem t = DecodeTile(l, l.co_div, e);
    const DType* plane = out_grad + p.PlaneStart(first + t.n, t.g, t.c, p.Co, p.OutSize());
    DType y[m][m], x[A][A];
    ReadPatch(plane, p.PositionStride(p.Co), p.out[1], p.out[2], t.ty * m, t.tx * m, y);
    Separable(y, x, [](const DType* in, DType* r) { Transform<m>::OutputAdjoint(in, r); });
    WritePoints(l, x, t.g, p.Co, t.c, images * l.tiles_y * l.tiles_x, t.tile, w);
  }
};

template <typename DType>
struct ZeroOp {
  DType* p;
  TE_XINLINE void operator()(index_t e) const { p[e] = DType(0); }
};

// The weight gradient G^T dU G from dU (laid out as U), stored or added. One index per (g, co, ci).
template <int m, typename DType>
struct FilterGradTransformOp {
  Plan l;
  const DType* du;
  DType* weight_grad;
  bool add;
  TE_XINLINE void operator()(index_t e) const {
    constexpr int A = Transform<m>::kA;
    const detail::DirectPass& p = l.p;
    index_t ci, co;
    const index_t g = l.co_div.DivMod(l.ci_div.DivMod(e, &ci), &co);
    DType r[A][A], taps[3][3];
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) r[i][j] = du[((index_t(i * A + j) * p.G + g) * p.Co + co) * p.Ci + ci];
    Separable(r, taps, [](const DType* in, DType* out) { Transform<m>::FilterAdjoint(in, out); });
    DType* w = weight_grad + p.filter_g * g + p.filter_co * co + p.filter_ci * ci;
    for (int t = 0; t < 9; ++t) {
      DType& o = w[p.filter_tap * t];
      o = add ? o + taps[t / 3][t % 3] : taps[t / 3][t % 3];
    }
  }
};

// op(i) for i in [0, n), threaded within the CPU's budget.
template <typename Op>
void ForEachIndex(Stream<cpu>*, index_t n, index_t cost, const Op& op) {
  ParallelFor(n, cost, [&op](index_t begin, index_t end) {
    for (index_t i = begin; i < end; ++i) op(i);
  });
}
#if defined(__CUDACC__)
template <typename Op>
__global__ void ForEachIndexKernel(index_t n, Op op) {
  for (index_t i = blockIdx.x * index_t(blockDim.x) + threadIdx.x; i < n; i += index_t(gridDim.x) * blockDim.x) op(i);
}
// op(i) for i in [0, n), one thread each (grid-stride), on the stream.
template <typename Op>
void ForEachIndex(Stream<gpu>* s, index_t n, index_t, const Op& op) {
  if (n <= 0) return;
  const int threads = 128;
  const index_t blocks = std::min<index_t>((n + threads - 1) / threads, index_t(1) << 20);
  ForEachIndexKernel<Op><<<unsigned(blocks), threads, 0, Stream<gpu>::GetStream(s)>>>(n, op);
  TE_CUDA_CHECK_LAUNCH("winograd transform");
}
#endif

// One pass (forward or data gradient): output (add ? += : =) the correlation of input with the weight.
template <int m, typename Device, typename DType>
void RunPass(Stream<Device>* s, const Plan& l, const DType* input, const DType* weight, DType* output, bool add,
             DType* workspace) {
  const detail::DirectPass& p = l.p;
  if (p.N == 0 || p.OutSize() == 0) return;
  DType* const u = workspace;
  DType* const v = u + l.FilterElems();
  DType* const mm = v + l.points * p.G * p.Ci * l.TilesPerChunk();
  ForEachIndex(s, p.G * p.Co * p.Ci, l.points * 9, FilterTransformOp<m, DType>{l, weight, u});
  for (index_t first = 0; first < p.N; first += l.images) {
    const index_t images = std::min(l.images, p.N - first), tiles = images * l.tiles_y * l.tiles_x;
    ForEachIndex(s, images * p.G * p.Ci * l.tiles_y * l.tiles_x, l.points * 4,
                 InputTransformOp<m, DType>{l, input, first, images, v});
    // M[xi][g] (Co x tiles) = U[xi][g] (Co x Ci) V[xi][g] (Ci x tiles), for every point xi and group g;
    // channels last, its transpose (tiles x Co) = V's (tiles x Ci) times U^T.
    const GemmOperand<const DType> uu{u, p.Ci, p.G * p.Co * p.Ci, p.Co * p.Ci};
    if (p.channels_last)
      GroupedGemm<Device, DType>(s, tiles, p.Co, p.Ci, 1.0f, GemmOperand<const DType>{v, p.Ci, p.G * tiles * p.Ci, tiles * p.Ci},
                                 Transposed(uu), 0.0f, GemmOperand<DType>{mm, p.Co, p.G * tiles * p.Co, tiles * p.Co},
                                 l.points, p.G);
    else
      GroupedGemm<Device, DType>(s, p.Co, tiles, p.Ci, 1.0f, uu, GemmOperand<const DType>{v, tiles, p.G * p.Ci * tiles, p.Ci * tiles},
                                 0.0f, GemmOperand<DType>{mm, tiles, p.G * p.Co * tiles, p.Co * tiles}, l.points, p.G);
    ForEachIndex(s, images * p.G * p.Co * l.tiles_y * l.tiles_x, l.points * 4,
                 OutputTransformOp<m, DType>{l, mm, first, images, output, add});
  }
}

// The weight gradient (add ? += : =) from the forward's input and the output gradient, on the forward's
// plan: dU[xi][g] (Co x Ci) summed over chunks of dY's transform W (Co x tiles) times V^T (tiles x Ci);
// channels last, W and V are held transposed, so dU = W^T V.
template <int m, typename Device, typename DType>
void RunWeightGradPass(Stream<Device>* s, const Plan& l, const DType* input, const DType* out_grad,
                       DType* weight_grad, bool add, DType* workspace) {
  const detail::DirectPass& p = l.p;
  DType* const du = workspace;
  DType* const v = du + l.FilterElems();
  DType* const w = v + l.points * p.G * p.Ci * l.TilesPerChunk();
  const index_t filters = p.G * p.Co * p.Ci;
  if (p.N == 0 || p.OutSize() == 0)  // no tiles: a zero gradient
    ForEachIndex(s, l.FilterElems(), 1, ZeroOp<DType>{du});
  for (index_t first = 0; first < p.N && p.OutSize() > 0; first += l.images) {
    const index_t images = std::min(l.images, p.N - first), tiles = images * l.tiles_y * l.tiles_x;
    ForEachIndex(s, images * p.G * p.Ci * l.tiles_y * l.tiles_x, l.points * 4,
                 InputTransformOp<m, DType>{l, input, first, images, v});
    ForEachIndex(s, images * p.G * p.Co * l.tiles_y * l.tiles_x, l.points * 4,
                 OutputGradTransformOp<m, DType>{l, out_grad, first, images, w});
    const GemmOperand<DType> dd{du, p.Ci, p.G * p.Co * p.Ci, p.Co * p.Ci};
    const float beta = first == 0 ? 0.0f : 1.0f;
    if (p.channels_last)
      GroupedGemm<Device, DType>(s, p.Co, p.Ci, tiles, 1.0f,
                                 Transposed(GemmOperand<const DType>{w, p.Co, p.G * tiles * p.Co, tiles * p.Co}),
                                 GemmOperand<const DType>{v, p.Ci, p.G * tiles * p.Ci, tiles * p.Ci}, beta, dd,
                                 l.points, p.G);
    else
      GroupedGemm<Device, DType>(s, p.Co, p.Ci, tiles, 1.0f, GemmOperand<const DType>{w, tiles, p.G * p.Co * tiles, p.Co * tiles},
                                 Transposed(GemmOperand<const DType>{v, tiles, p.G * p.Ci * tiles, p.Ci * tiles}), beta,
                                 dd, l.points, p.G);
  }
  ForEachIndex(s, filters, l.points * 9, FilterGradTransformOp<m, DType>{l, du, weight_grad, add});
}

}  // namespace winograd

// F(m x m, 3 x 3), m = 2 ("winograd_2x2") or 4 ("winograd_4x4"): 2-D, dense data in either layout, a 3 x 3
// kernel, stride 1, no dilation, any padding and groups; every pass.
template <typename Device, typename DType, int m>
class ConvWinograd : public ConvAlgorithm<Device, DType> {
 public:
  const char* Name() const override { return m == 2 ? "winograd_2x2" : "winograd_4x4"; }

  ConvSupport CanImplement(const ConvProblem& pr, ConvPass) const override {
    if (!winograd::kDType<DType>) return ConvSupport::No("it runs float and double only");
    // F(4x4)'s transforms scale TF32's rounding of their products by about 30 (F(2x2)'s by about 2):
    // 7.2-8.2e-3 of the output's scale on 3x3 layers of 64-512 channels, against direct TF32's 2.4-2.6e-4
    // (bench/winograd_tf32_error.py).
    if (m == 4 && pr.math == ConvMath::kTF32)
      return ConvSupport::No("its error under TF32 is about 30 times direct TF32's (winograd_2x2's is 2 times)");
    return winograd::Supports<m>(pr.geom, pr.data_contiguous);
  }
  // The heuristic's choice for strict float on the GPU (F(2x2)'s constants are exact; F(4x4) is left to the
  // tuner and to forcing by name). bench/conv_bench --dtype fp32 (H200, N = 32, the README table's run): on
  // ResNet-50's four 3x3 layers the forward summed to 0.65 of cuDNN's time and the data gradient to 0.62
  // (per layer 0.41-0.92 and 0.38-1.12), where im2col_gemm's forward had taken 1.27-1.91 times (channels
  // last, 0.35-0.97 of cuDNN's forward, where im2col_gemm's took 0.83-3.70 times); on 3x3
  // layers of 8 to 64 channels at 14 x 14 to 112 x 112 (bench/small_3x3_layers.txt) the forward took
  // 0.59-1.09 of im2col_gemm's time and the backward 0.65-0.85. On the CPU im2col_gemm and cpu_per_image
  // are faster; 16-bit runs on tensor cores, TF32 too but on the layers below.
  // Channels last, more than 4 channels per group only: the measured layers' domain (channels first,
  // gpu_direct, registered before it, takes fewer; depthwise layers would be a gemm per group).
  // The weight gradient too (bench/conv_bench --dtype fp32 --split, H200, N = 32): on ResNet-50's 3x3
  // layers alone 0.203, 0.172, 0.149 and 0.146 ms channels first (0.56-1.13 of cuDNN's), where
  // im2col_gemm's took 0.407, 0.354, 0.210 and 0.236; channels last 0.197, 0.157, 0.133 and 0.122 (0.49-1.00),
  // where CUTLASS's SIMT kernels took 0.493 and 0.313 at 56 and 28, im2col_gemm's 0.212 and 0.216 at 14 and
  // 7; on the small layers 0.041-0.166 against im2col_gemm's 0.051-0.204. Its products are a batch of one
  // small result per point over every tile, which the GPU's grouped gemm splits along the tiles
  // (cuda/blas.cuh); unsplit, the layer at 56 x 56 took 0.866.
  // Under TF32, only where CUTLASS's implicit GEMM has few output tiles to spread over the GPU: channels
  // first, at most 14 x 14 outputs, 128 channels and filters per group or more. On ResNet-50's two such
  // layers (conv_bench's tuner, --dtype tf32, H200, N = 32) it took 0.073, 0.071 and 0.077 ms at 14 x 14
  // (forward, data, weight; CUTLASS's 0.068, 0.087 and 0.107, cuDNN's 0.062, 0.069 and 0.096) and 0.058,
  // 0.061 and 0.074 at 7 x 7 (CUTLASS's 0.084 and 0.101, im2col_gemm's weight gradient 0.065; cuDNN's 0.074,
  // 0.086 and 0.108); a weight gradient of large filters over a short reduction (WeightGradIsShortAndWide:
  // the layer at 7 x 7) stays im2col_gemm's, 0.065. Its error is about twice direct TF32's
  // (bench/conv_accuracy --algorithm winograd_2x2 --layers small_3x3_layers.txt: 6.6e-4 of the output's scale
  // at worst, against 3.3e-4 for the library's choice).
  bool Recommended(const ConvProblem& pr, ConvPass pass) const override {
    const ConvGeometry& g = pr.geom;
    if (m != 2 || !std::is_same<Device, gpu>::value || !std::is_same<DType, float>::value) return false;
    if (pr.math == ConvMath::kTF32)
      return !g.channels_last && g.OutSize() <= 14 * 14 && g.Cg() >= 128 && g.Kg() >= 128 &&
             (pass != ConvPass::kBackwardWeight || !WeightGradIsShortAndWide(g));
    return !g.channels_last || g.Cg() > 4;  // strict, and 3xTF32 (which asks for fp32's accuracy)
  }

  size_t WorkspaceBytes(const ConvProblem& pr, const ConvStores& st) const override {
    index_t elems = 0;
    if (st.out.active) elems = std::max(elems, PlanOf(pr, ConvPass::kForward).WorkspaceElems());
    if (st.data_grad.active) elems = std::max(elems, PlanOf(pr, ConvPass::kBackwardData).WorkspaceElems());
    if (st.weight_grad.active) elems = std::max(elems, PlanOf(pr, ConvPass::kForward).WorkspaceElems());
    return size_t(elems) * sizeof(DType);
  }

  void Run(const ConvProblem& pr, const ConvTensors<DType>& t, const ConvStores& st, void* workspace,
           Stream<Device>* stream) const override {
    if constexpr (winograd::kDType<DType>) {
      DType* const w = static_cast<DType*>(workspace);
      if (st.out.active)
        winograd::RunPass<m>(stream, PlanOf(pr, ConvPass::kForward), t.data, t.weight, t.out, st.out.add, w);
      if (st.data_grad.active)
        winograd::RunPass<m>(stream, PlanOf(pr, ConvPass::kBackwardData), t.out_grad, t.weight, t.data_grad,
                             st.data_grad.add, w);
      if (st.weight_grad.active)
        winograd::RunWeightGradPass<m>(stream, PlanOf(pr, ConvPass::kForward), t.data, t.out_grad, t.weight_grad,
                                       st.weight_grad.add, w);
    } else {
      (void)pr, (void)t, (void)st, (void)workspace, (void)stream;
      Fail("winograd runs float and double only");
    }
  }

 private:
  static winograd::Plan PlanOf(const ConvProblem& pr, ConvPass pass) {
    return winograd::MakePlan<m>(pr.geom, pass, sizeof(DType), pr.workspace_limit);
  }
};

}  // namespace ops
}  // namespace tensorexpr
