// ops/cuda/conv_stem_mma_kernels.cuh — the kernel of "gpu_stem_mma" (ops/cuda/conv_stem_mma.h says what
// it computes and why it is laid out so). Included by the units that instantiate it (conv_stem_mma_*.cu).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include "conv_stem_mma.h"

namespace tensorexpr {
namespace ops {
namespace stem_mma {

// WMMA's element type for each of ours (the same 16 bits).
template <typename DType>
struct MmaElement;
template <>
struct MmaElement<half_t> {
  using type = __half;
};
template <>
struct MmaElement<bf16_t> {
  using type = __nv_bfloat16;
};

constexpr int kThreads = kWarps * 32;
constexpr int kFilterFragments = kFilterTile / 16;  // a warp's accumulators: 16 pixels x 16 filters each

// A folded column's 8 lanes as one 16-byte store.
struct alignas(16) Lanes {
  uint16_t v[kLanes];
};

// Block (x, y): filters y * kFilterTile on, and the work items x, x + gridDim.x, ... (item: image n, output
// row oy, pixel tile t of that row).
template <typename DType>
__global__ void __launch_bounds__(kThreads, 2)
    ForwardKernel(Problem p, const DType* __restrict__ x, const DType* __restrict__ weight,
                  DType* y /* not restrict: the residual may be the output */,
                  Store<DType> store) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  namespace wmma = nvcuda::wmma;
  using Element = typename MmaElement<DType>::type;
  extern __shared__ __align__(128) unsigned char shared[];
  const int columns = p.StagedColumns(), entries = p.RowEntries(), filter_row = p.FilterRow();
  const int slots = p.Slots(), steps = entries / 16;
  Lanes* const rows = reinterpret_cast<Lanes*>(shared);      // [R][columns]
  float* const results = reinterpret_cast<float*>(shared);   // the same memory, once multiplied
  uint16_t* const filters = reinterpret_cast<uint16_t*>(shared + p.FiltersAt());  // [kFilterTile][filter_row]
  const uint16_t* const xs = reinterpret_cast<const uint16_t*>(x);
  const uint16_t* const ws = reinterpret_cast<const uint16_t*>(weight);
  const int tid = threadIdx.x, warp = tid / 32;
  const int k0 = blockIdx.y * kFilterTile;

  // The block's filters in the staged rows' lanes: entry (r, e) of filter f is tap s = (e / 8) * stride_x +
  // (e % 8) / slots of channel (e % 8) % slots, zero past the kernel, the channels and the last filter. WMMA
  // reads them as a column-major matrix_b.
  const int reduction = p.Reduction();
  for (int i = tid; i < kFilterTile * reduction; i += kThreads) {
    const int f = i / reduction, at = i % reduction, r = at / entries, e = at % entries;
    const int lane = e % kLanes, s = (e / kLanes) * p.stride_x + lane / slots, c = lane % slots;
    uint16_t v = 0;
    if (k0 + f < p.K && s < p.S && c < p.C) {
      const index_t filter = index_t(k0 + f) * p.C * p.R * p.S;
      v = ws[filter + (p.channels_last ? (r * p.S + s) * p.C + c : (c * p.R + r) * p.S + s)];
    }
    filters[f * filter_row + at] = v;
  }

  const int tiles_per_row = p.TilesPerRow();
  const index_t items = p.Items();
  const int image_size = p.H * p.W * p.C;
  for (index_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int tile = int(item % tiles_per_row);
    const index_t image_row = item / tiles_per_row;
    const int oy = int(image_row % p.OH);
    const index_t n = image_row / p.OH;
    const int ox0 = tile * kPixelTile, pixels = min(kPixelTile, p.OW - ox0);
    const uint16_t* const image = xs + n * image_size;
    __syncthreads();  // the previous item's results are stored (and the filters written, the first time)
    // Stage the R input rows: folded column q of row r holds input columns (ox0 + q) * stride_x + sub -
    // pad_x, sub < stride_x, each in `slots` lanes of channels; zeros outside the image.
    for (int i = tid; i < p.R * columns; i += kThreads) {
      const int r = i / columns, q = i % columns;
      const int iy = oy * p.stride_y - p.pad_y + r * p.dilate_y;
      Lanes v;
#pragma unroll
      for (int lane = 0; lane < kLanes; ++lane) {
        const int c = lane % slots, ix = (ox0 + q) * p.stride_x + lane / slots - p.pad_x;
        v.v[lane] = 0;
        if (c < p.C && unsigned(iy) < unsigned(p.H) && unsigned(ix) < unsigned(p.W))
          v.v[lane] = __ldg(image + (p.channels_last ? (iy * p.W + ix) * p.C + c : (c * p.H + iy) * p.W + ix));
      }
      rows[i] = v;
    }
    __syncthreads();
    // Multiply: warp w's 16 pixels (ox0 + 16 w on) times the block's filters, over kernel rows and steps.
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFilterFragments];
#pragma unroll
    for (int b = 0; b < kFilterFragments; ++b) wmma::fill_fragment(acc[b], 0.0f);
    if (warp * 16 < pixels) {
      for (int r = 0; r < p.R; ++r) {
        const Element* const pa = reinterpret_cast<const Element*>(rows + r * columns + warp * 16);
        const Element* const pb = reinterpret_cast<const Element*>(filters) + r * entries;
        for (int h = 0; h < steps; ++h) {
          // Pixel i's entries of this step start 8 entries (one folded column) after pixel i - 1's.
          wmma::fragment<wmma::matrix_a, 16, 16, 16, Element, wmma::row_major> fa;
          wmma::load_matrix_sync(fa, pa + h * 16, kLanes);
#pragma unroll
          for (int b = 0; b < kFilterFragments; ++b) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, Element, wmma::col_major> fb;
            wmma::load_matrix_sync(fb, pb + b * 16 * filter_row + h * 16, filter_row);
            wmma::mma_sync(acc[b], fa, fb, acc[b]);
          }
        }
      }
    }
    __syncthreads();  // every warp is done reading the rows: their memory takes the results
    // Results in the order the store walks them: pixel-major channels last (a warp stores 32 filters of a
    // pixel), filter-major channels first (32 pixels of a filter's row).
#pragma unroll
    for (int b = 0; b < kFilterFragments; ++b) {
      if (p.channels_last)
        wmma::store_matrix_sync(results + warp * 16 * kResultRow + b * 16, acc[b], kResultRow, wmma::mem_row_major);
      else
        wmma::store_matrix_sync(results + b * 16 * kResultCol + warp * 16, acc[b], kResultCol, wmma::mem_col_major);
    }
    __syncthreads();
    // The output row's pixels ox0 .. ox0 + pixels - 1: channels last (n, oy, ox, k), channels first
    // (n, k, oy, ox).
    const index_t row_at = p.channels_last ? (image_row * p.OW + ox0) * p.K : (n * p.K * p.OH + oy) * p.OW + ox0;
    const index_t plane = index_t(p.OH) * p.OW;
    for (int e = tid; e < kPixelTile * kFilterTile; e += kThreads) {
      const int m = p.channels_last ? e / kFilterTile : e % kPixelTile;
      const int f = p.channels_last ? e % kFilterTile : e / kPixelTile;
      const int k = k0 + f;
      if (m >= pixels || k >= p.K) continue;
      float v = p.channels_last ? results[m * kResultRow + f] : results[f * kResultCol + m];
      const index_t at = p.channels_last ? row_at + index_t(m) * p.K + k : row_at + index_t(k) * plane + m;
      if (store.bias != nullptr) v += float(store.bias[k]);
      if (store.residual != nullptr) v += float(store.residual[at]);
      if (store.relu) v = v > 0.0f ? v : 0.0f;
      y[at] = DType(store.add ? float(y[at]) + v : v);
    }
  }
#else
  (void)p, (void)x, (void)weight, (void)y, (void)store;
#endif
}

template <typename DType>
int KernelArch() {
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, ForwardKernel<DType>) != cudaSuccess) {
    (void)cudaGetLastError();  // no code for this GPU: clear the error, and say so
    return 0;
  }
  return attributes.ptxVersion;
}

// Blocks of `shared` bytes an SM of the current device holds at once. The first call on a device lets the
// kernel take all the shared memory a block may (a process-wide setting, so made once, never lowered: a
// setting per launch would race between threads launching different sizes); counts are kept per size.
template <typename DType>
int BlocksPerSm(size_t shared) {
  static std::mutex mutex;
  static std::map<std::pair<int, size_t>, int> counts;
  static bool raised[cuda::kMaxDevices] = {};
  const int device = cuda::CurrentDevice();
  std::lock_guard<std::mutex> lock(mutex);
  TE_CHECK(device >= 0 && device < cuda::kMaxDevices, "gpu_stem_mma: device ", device, " is out of range");
  if (!raised[device]) {
    TE_CUDA_CHECK(cudaFuncSetAttribute(ForwardKernel<DType>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(cuda::CurrentDeviceInfo().shared_per_block)));
    raised[device] = true;
  }
  auto found = counts.find({device, shared});
  if (found == counts.end()) {
    int per_sm = 0;
    TE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ForwardKernel<DType>, kThreads, shared));
    found = counts.emplace(std::make_pair(device, shared), per_sm).first;
  }
  return found->second;
}

template <typename DType>
void Forward(const Problem& p, const DType* x, const DType* weight, DType* y, const Store<DType>& store,
             cudaStream_t stream) {
  if (p.Items() == 0 || p.K == 0) return;
  const size_t shared = p.SharedBytes();
  const int per_sm = BlocksPerSm<DType>(shared);
  // Enough blocks to fill the GPU once; each walks its items with its filters held.
  const index_t resident = index_t(std::max(per_sm, 1)) * cuda::CurrentDeviceInfo().sm_count;
  const index_t columns = std::max<index_t>(1, std::min<index_t>(p.Items(), resident / p.FilterTiles()));
  const dim3 grid(unsigned(std::min<index_t>(columns, INT_MAX)), unsigned(p.FilterTiles()));
  ForwardKernel<DType><<<grid, kThreads, shared, stream>>>(p, x, weight, y, store);
  TE_CUDA_CHECK_LAUNCH("gpu_stem_mma");
}

#define TE_STEM_MMA_INSTANTIATE(DType)                                                                         \
  template void Forward<DType>(const Problem&, const DType*, const DType*, DType*, const Store<DType>&, \
                               cudaStream_t);                                                           \
  template int KernelArch<DType>();

}  // namespace stem_mma
}  // namespace ops
}  // namespace tensorexpr
