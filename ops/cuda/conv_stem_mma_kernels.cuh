// ops/cuda/conv_stem_mma_kernels.cuh — the kernel of "gpu_stem_mma" (ops/cuda/conv_stem_mma.h says what
// it computes and why it is laid out so). Included by the units that instantiate it (conv_stem_mma_*.cu).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "conv_stem_mma.h"

namespace tensorexpr {
namespace ops {
namespace stem_mma {

constexpr int kThreads = kWarps * 32;
static_assert(kThreads <= kPixelTile, "a staged row (kPixelTile + 2 columns or more) outnumbers the threads");

// A folded column's 8 lanes as one 16-byte store.
struct alignas(16) Lanes {
  uint16_t v[kLanes];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Four 8 x 8 matrices of 16-bit entries from shared memory (ldmatrix): lane i gives the address of row i % 8
// of matrix i / 8, 16 bytes; thread t receives entries (t / 4, 2 (t % 4)) and the next of each matrix. Each
// row has its own address, so the rows may overlap, as the staged pixels' patches do.
__device__ __forceinline__ void LoadMatrices(uint32_t (&m)[4], const void* row) {
  const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(m[0]), "=r"(m[1]), "=r"(m[2]), "=r"(m[3])
               : "r"(at));
}

// d += a b on tensor cores (mma m16n8k16, float accumulation): a 16 x 16 row-major, four registers as
// LoadMatrices gives them for rows 0-15 (lanes' rows lane % 16, entries 8 (lane / 16) on); b 16 x 8
// column-major, its entries 0-7 and 8-15 of 8 columns; d's thread t holds (t / 4, 2 (t % 4) + 0, 1) and the
// same 8 rows down.
template <typename DType>
__device__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void Mma<half_t>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void Mma<bf16_t>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two adjacent 16-bit values as one 32-bit word, and back.
template <typename DType>
__device__ uint32_t Pack(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t Pack<half_t>(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t Pack<bf16_t>(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
template <typename DType>
__device__ float2 Unpack(uint32_t word);
template <>
__device__ __forceinline__ float2 Unpack<half_t>(uint32_t word) {
  return __half22float2(*reinterpret_cast<const __half2*>(&word));
}
template <>
__device__ __forceinline__ float2 Unpack<bf16_t>(uint32_t word) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&word));
}

// The epilogue on outputs at and at + 1 (the second only if `both`): act(conv + bias + residual), added to
// the output under kAddTo; one 32-bit access for the pair where the store allows it.
template <typename DType>
__device__ __forceinline__ void StorePair(const Store<DType>& store, DType* y, index_t at, float v0, float v1,
                                          bool both) {
  if (both && store.paired) {
    if (store.residual != nullptr) {
      const float2 r = Unpack<DType>(*reinterpret_cast<const uint32_t*>(store.residual + at));
      v0 += r.x, v1 += r.y;
    }
    if (store.relu) v0 = fmaxf(v0, 0.0f), v1 = fmaxf(v1, 0.0f);
    uint32_t* const word = reinterpret_cast<uint32_t*>(y + at);
    if (store.add) {
      const float2 o = Unpack<DType>(*word);
      v0 += o.x, v1 += o.y;
    }
    *word = Pack<DType>(v0, v1);
    return;
  }
  for (int j = 0; j < (both ? 2 : 1); ++j) {
    float v = j == 0 ? v0 : v1;
    if (store.residual != nullptr) v += float(store.residual[at + j]);
    if (store.relu) v = v > 0.0f ? v : 0.0f;  // NaN stays NaN, as in the other algorithms' stores
    y[at + j] = DType(store.add ? float(y[at + j]) + v : v);
  }
}
#endif

// Lane l of a folded column: the sub-column (the tap or input column along x, past the column's first) and
// the channel.
__device__ __forceinline__ int LaneSub(const Problem& p, int l) { return l >> p.SlotBits(); }
__device__ __forceinline__ int LaneChannel(const Problem& p, int l) { return l & (p.Slots() - 1); }

// Block (x, y): filters y * kFilterTile on, and the work items x * items_per_block on, in order: a work item
// is a tile of output row oy of image n, items running over oy fastest, so that a block walks down the rows of
// one tile and keeps the input rows they share (the ring: undilated along y, input row iy stays in slot
// (iy + pad_y) mod R). Warp w multiplies the tile's pixels 32 w on by every filter of the block; channels
// last the pixels are the product's rows (its stores then pair adjacent filters), channels first the
// filters are (pairing adjacent pixels).
template <typename DType, bool kChannelsLast>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    ForwardKernel(Problem p, const DType* __restrict__ x, const DType* __restrict__ weight,
                  DType* y /* not restrict: the residual may be the output */, Store<DType> store,
                  index_t items_per_block) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(128) unsigned char shared[];
  const int columns = p.StagedColumns(), entries = p.RowEntries(), filter_row = p.FilterRow();
  const int steps = entries / 16;
  Lanes* const rows = reinterpret_cast<Lanes*>(shared);                           // [R][columns]
  uint16_t* const filters = reinterpret_cast<uint16_t*>(shared + p.FiltersAt());  // [kFilterTile][filter_row]
  float* const bias = reinterpret_cast<float*>(shared + p.BiasAt());             // [kFilterTile]
  const uint16_t* const xs = reinterpret_cast<const uint16_t*>(x);
  const uint16_t* const ws = reinterpret_cast<const uint16_t*>(weight);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int k0 = blockIdx.y * kFilterTile;

  // The block's filters in the staged rows' lanes (read by the tensor cores as the product's columns or
  // rows): folded column j of kernel row r of filter f holds taps j * stride_x + sub, each in `slots` lanes of
  // channels; zeros past the kernel, the channels and the last filter. A thread loads a column's 8 entries,
  // then stores them at once.
  const int folded = entries / kLanes;
  for (int i = tid; i < kFilterTile * p.R * folded; i += kThreads) {
    const int j = i % folded, fr = i / folded, r = fr % p.R, f = fr / p.R;
    const index_t filter = index_t(k0 + f) * p.C * p.R * p.S;
    Lanes v;
#pragma unroll
    for (int l = 0; l < kLanes; ++l) {
      const int s = j * p.stride_x + LaneSub(p, l), c = LaneChannel(p, l);
      v.v[l] = k0 + f < p.K && s < p.S && c < p.C
                   ? __ldg(ws + filter + (p.channels_last ? (r * p.S + s) * p.C + c : (c * p.R + r) * p.S + s))
                   : uint16_t(0);
    }
    *reinterpret_cast<Lanes*>(filters + f * filter_row + r * entries + j * kLanes) = v;
  }
  for (int f = tid; f < kFilterTile; f += kThreads)
    bias[f] = store.bias != nullptr && k0 + f < p.K ? float(store.bias[k0 + f]) : 0.0f;

  const int tiles_per_row = p.TilesPerRow();
  const index_t first = index_t(blockIdx.x) * items_per_block;
  const index_t last = min(p.Items(), first + items_per_block);
  const int image_size = p.H * p.W * p.C;
  for (index_t item = first; item < last; ++item) {
    const int oy = int(item % p.OH);
    const index_t run = item / p.OH;
    const int tile = int(run % tiles_per_row);
    const index_t n = run / tiles_per_row;
    const int ox0 = tile * kPixelTile, pixels = min(kPixelTile, p.OW - ox0);
    const uint16_t* const image = xs + n * image_size;
    // The row after the previous item's, in the same tile, finds R - stride_y of its input rows in the ring.
    const bool ring = p.dilate_y == 1;
    const int fresh = ring && item > first && oy > 0 ? max(0, p.R - p.stride_y) : 0;
    const int slot0 = ring ? int((index_t(oy) * p.stride_y) % p.R) : 0;
    __syncthreads();  // every warp is done reading the ring (and the filters and bias are written)
    // Stage kernel rows fresh .. R - 1: folded column q holds input columns (ox0 + q) * stride_x + sub - pad_x,
    // sub < stride_x, each in `slots` lanes of channels; zeros outside the image. Thread t takes columns t,
    // t + kThreads, ... of the rows in turn (a row has more columns than the block threads: at most one
    // wrap per step).
    for (int r = fresh, q = tid; r < p.R;) {
      const int iy = oy * p.stride_y - p.pad_y + r * p.dilate_y;
      Lanes v;
#pragma unroll
      for (int l = 0; l < kLanes; ++l) {
        const int c = LaneChannel(p, l), ix = (ox0 + q) * p.stride_x + LaneSub(p, l) - p.pad_x;
        v.v[l] = 0;
        if (c < p.C && unsigned(iy) < unsigned(p.H) && unsigned(ix) < unsigned(p.W))
          v.v[l] = __ldg(image + (p.channels_last ? (iy * p.W + ix) * p.C + c : (c * p.H + iy) * p.W + ix));
      }
      const int slot = slot0 + r < p.R ? slot0 + r : slot0 + r - p.R;
      rows[slot * columns + q] = v;
      q += kThreads;
      if (q >= columns) q -= columns, ++r;
    }
    __syncthreads();
    if (warp * kWarpPixels >= pixels) continue;

    // The product: tile t of acc is 16 x 8, pixels x filters channels last (2 x 8 tiles), filters x pixels
    // channels first (4 x 4 tiles). Pixel i's entries of a step start one folded column after pixel i - 1's.
    float acc[16][4] = {};
    for (int r = 0; r < p.R; ++r) {
      const Lanes* const row = rows + ((slot0 + r) % p.R) * columns + warp * kWarpPixels + lane % 16 + lane / 16;
      const uint16_t* const taps = filters + (lane % 16) * filter_row + r * entries + (lane / 16) * 8;
      for (int h = 0; h < steps; ++h) {
        uint32_t px[2][4];
#pragma unroll
        for (int b = 0; b < 2; ++b) LoadMatrices(px[b], row + b * 16 + 2 * h);
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          uint32_t fl[4];
          LoadMatrices(fl, taps + b * 16 * filter_row + h * 16);
#pragma unroll
          for (int t = 0; t < 4; ++t) {
            if constexpr (kChannelsLast)  // pixels 16 (t / 2) on, filters 16 b + 8 (t % 2) on
              Mma<DType>(acc[(t / 2) * 8 + 2 * b + t % 2], px[t / 2], fl[t % 2], fl[t % 2 + 2]);
            else  // filters 16 b on, pixels 8 t on
              Mma<DType>(acc[b * 4 + t], fl, px[t / 2][t % 2], px[t / 2][t % 2 + 2]);
          }
        }
      }
    }

    // The store: output pixels ox0 + m, filters k0 + f; channels last (n, oy, ox, k), channels first
    // (n, k, oy, ox). Thread (g, c) = (lane / 4, lane % 4) holds rows g and g + 8, columns 2c and 2c + 1.
    const int g = lane / 4, c2 = 2 * (lane % 4);
    const index_t row_at = kChannelsLast ? ((n * p.OH + oy) * p.OW + ox0) * p.K : (n * p.K * p.OH + oy) * p.OW + ox0;
    const index_t plane = index_t(p.OH) * p.OW;
#pragma unroll
    for (int t = 0; t < 16; ++t) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float* const d = acc[t] + 2 * j;
        if constexpr (kChannelsLast) {
          const int m = warp * kWarpPixels + (t / 8) * 16 + g + 8 * j, f = (t % 8) * 8 + c2;
          if (m < pixels && k0 + f < p.K)
            StorePair(store, y, row_at + index_t(m) * p.K + k0 + f, d[0] + bias[f], d[1] + bias[f + 1],
                      k0 + f + 1 < p.K);
        } else {
          const int f = (t / 4) * 16 + g + 8 * j, m = warp * kWarpPixels + (t % 4) * 8 + c2;
          if (m < pixels && k0 + f < p.K)
            StorePair(store, y, row_at + index_t(k0 + f) * plane + m, d[0] + bias[f], d[1] + bias[f], m + 1 < pixels);
        }
      }
    }
  }
#else
  (void)p, (void)x, (void)weight, (void)y, (void)store, (void)items_per_block;
#endif
}

// Asked once per device: CanImplement (and so FusesEpilogue, on every fused forward) reads it.
template <typename DType>
int KernelArch() {
  static std::atomic<int> known[cuda::kMaxDevices];  // the answer + 1; zero: not asked yet (static: zeroed)
  const int device = cuda::CurrentDevice();
  TE_CHECK(device >= 0 && device < cuda::kMaxDevices, "gpu_stem_mma: device ", device, " is out of range");
  int answer = known[device].load(std::memory_order_relaxed);
  if (answer == 0) {
    cudaFuncAttributes attributes;
    if (cudaFuncGetAttributes(&attributes, ForwardKernel<DType, true>) != cudaSuccess) {
      (void)cudaGetLastError();  // no code for this GPU: clear the error, and say so
      attributes.ptxVersion = 0;
    }
    answer = attributes.ptxVersion + 1;
    known[device].store(answer, std::memory_order_relaxed);
  }
  return answer - 1;
}

// Blocks of `shared` bytes an SM of the current device holds at once of one layout's kernel. The first call
// on a device lets the kernel take all the shared memory a block may (a process-wide setting, so made once,
// never lowered: a setting per launch would race between threads launching different sizes); counts are
// kept per size.
template <typename DType>
int BlocksPerSm(bool channels_last, size_t shared) {
  static std::mutex mutex;
  static std::map<std::pair<int, size_t>, int> counts[2];
  static bool raised[2][cuda::kMaxDevices] = {};
  const auto kernel = channels_last ? ForwardKernel<DType, true> : ForwardKernel<DType, false>;
  const int device = cuda::CurrentDevice();
  std::lock_guard<std::mutex> lock(mutex);
  TE_CHECK(device >= 0 && device < cuda::kMaxDevices, "gpu_stem_mma: device ", device, " is out of range");
  if (!raised[channels_last][device]) {
    TE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(cuda::CurrentDeviceInfo().shared_per_block)));
    raised[channels_last][device] = true;
  }
  auto found = counts[channels_last].find({device, shared});
  if (found == counts[channels_last].end()) {
    int per_sm = 0;
    TE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared));
    found = counts[channels_last].emplace(std::make_pair(device, shared), per_sm).first;
  }
  return found->second;
}

template <typename DType>
void Forward(const Problem& p, const DType* x, const DType* weight, DType* y, const Store<DType>& store,
             cudaStream_t stream) {
  if (p.Items() == 0 || p.K == 0) return;
  const size_t shared = p.SharedBytes();
  const int per_sm = BlocksPerSm<DType>(p.channels_last, shared);
  // Enough blocks to fill the GPU once; each walks a run of consecutive items with its filters held.
  const index_t resident = index_t(std::max(per_sm, 1)) * cuda::CurrentDeviceInfo().sm_count;
  const index_t columns = std::max<index_t>(1, std::min<index_t>(p.Items(), resident / p.FilterTiles()));
  const index_t per_block = (p.Items() + columns - 1) / columns;
  const dim3 grid(unsigned((p.Items() + per_block - 1) / per_block), unsigned(p.FilterTiles()));
  // Pairs of outputs in one 32-bit access: adjacent filters channels last, adjacent pixels channels first,
  // where every pair starts on an even element of 4-byte aligned tensors.
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 4 == 0; };
  Store<DType> paired = store;
  paired.paired = (p.channels_last ? p.K % 2 == 0 : p.OW % 2 == 0) && aligned(y) &&
                  (store.residual == nullptr || aligned(store.residual));
  if (p.channels_last)
    ForwardKernel<DType, true><<<grid, kThreads, shared, stream>>>(p, x, weight, y, paired, per_block);
  else
    ForwardKernel<DType, false><<<grid, kThreads, shared, stream>>>(p, x, weight, y, paired, per_block);
  TE_CUDA_CHECK_LAUNCH("gpu_stem_mma");
}

#define TE_STEM_MMA_INSTANTIATE(DType)                                                                         \
  template void Forward<DType>(const Problem&, const DType*, const DType*, DType*, const Store<DType>&, \
                               cudaStream_t);                                                           \
  template int KernelArch<DType>();

}  // namespace stem_mma
}  // namespace ops
}  // namespace tensorexpr
