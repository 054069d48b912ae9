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
// Input columns a thread loads before it stores them, their loads in flight together. Two pay off channels
// last, where a column's lanes lie side by side in memory; channels first each lane's address is a plane
// apart, and two columns of them spill registers (on an H200 the stem ran 3% faster with two channels
// last, 5% slower with two channels first).
template <bool kChannelsLast>
constexpr int kStageBatch = kChannelsLast ? 2 : 1;
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

// The epilogue on out[0] and out[1] (the second only if `both`): act(conv + bias + residual), added to the
// output under kAddTo; one 32-bit access for the pair where the store allows it. residual: the residual
// under out[0] (null: none). kPlain: the store has no residual and no kAddTo and pairs every output
// (Store::Plain: an even K channels last, an even OW channels first, so `both` holds wherever out[0] is an
// output), so the pair takes only the relu, a conversion and one store (the general path's tests and 64-bit
// offsets were most of the kernel's instructions).
template <typename DType, bool kPlain>
__device__ __forceinline__ void StorePair(const Store<DType>& store, DType* out, const DType* residual, float v0,
                                          float v1, bool both) {
  if (kPlain || (both && store.paired)) {
    if (!kPlain && residual != nullptr) {
      const float2 r = Unpack<DType>(*reinterpret_cast<const uint32_t*>(residual));
      v0 += r.x, v1 += r.y;
    }
    if (store.relu) v0 = fmaxf(v0, 0.0f), v1 = fmaxf(v1, 0.0f);  // NaN to 0, as op::relu
    uint32_t* const word = reinterpret_cast<uint32_t*>(out);
    if (!kPlain && store.add) {
      const float2 o = Unpack<DType>(*word);
      v0 += o.x, v1 += o.y;
    }
    *word = Pack<DType>(v0, v1);
    return;
  }
  if constexpr (!kPlain) {
    for (int j = 0; j < (both ? 2 : 1); ++j) {
      float v = j == 0 ? v0 : v1;
      if (residual != nullptr) v += float(residual[j]);
      if (store.relu) v = v > 0.0f ? v : 0.0f;
      out[j] = DType(store.add ? float(out[j]) + v : v);
    }
  }
}
#endif

// Lane l of a folded column: the sub-column l >> sub_shift (the tap or input column along x, past the
// column's first) and the channel l & channel_mask. Made once per thread (the compiler otherwise derives
// the shift from stride_x again for every lane).
struct LaneSplit {
  int sub_shift, channel_mask;
  __device__ explicit LaneSplit(const Problem& p) : sub_shift(p.SlotBits()), channel_mask(p.Slots() - 1) {}
  __device__ int Sub(int l) const { return l >> sub_shift; }
  __device__ int Channel(int l) const { return l & channel_mask; }
};

// Block (x, y): filters y * kFilterTile on, and the work items x * items_per_block on, in order: a work item
// is a tile of output row oy of image n, items running over oy fastest, so that a block walks down the rows of
// one tile and keeps the input rows they share (the ring: undilated along y, input row iy stays in slot
// (iy + pad_y) mod R). Warp w multiplies the tile's pixels 32 w on by every filter of the block; channels
// last the pixels are the product's rows (its stores then pair adjacent filters), channels first the
// filters are (pairing adjacent pixels). kPlain: the store is Store::Plain (StorePair).
template <typename DType, bool kChannelsLast, bool kPlain>
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
  const LaneSplit lanes(p);
  constexpr int kBatch = kStageBatch<kChannelsLast>;

  // The block's filters in the staged rows' lanes (read by the tensor cores as the product's columns or
  // rows): folded column j of kernel row r of filter f holds taps j * stride_x + sub, each in `slots` lanes of
  // channels; zeros past the kernel, the channels and the last filter. A thread loads kBatch columns'
  // 8 entries each, then stores each column at once.
  const int folded = entries / kLanes, filter_columns = kFilterTile * p.R * folded;
  for (int i0 = tid; i0 < filter_columns; i0 += kThreads * kBatch) {
    Lanes v[kBatch];
    int at[kBatch];  // where column b goes; -1: past the last
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = i0 + b * kThreads;
      at[b] = -1;
      if (i >= filter_columns) continue;
      const int j = i % folded, fr = i / folded, r = fr % p.R, f = fr / p.R;
      const index_t filter = index_t(k0 + f) * p.C * p.R * p.S;
#pragma unroll
      for (int l = 0; l < kLanes; ++l) {
        const int s = j * p.stride_x + lanes.Sub(l), c = lanes.Channel(l);
        v[b].v[l] = k0 + f < p.K && s < p.S && c < p.C
                        ? __ldg(ws + filter + (kChannelsLast ? (r * p.S + s) * p.C + c : (c * p.R + r) * p.S + s))
                        : uint16_t(0);
      }
      at[b] = f * filter_row + r * entries + j * kLanes;
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (at[b] >= 0) *reinterpret_cast<Lanes*>(filters + at[b]) = v[b];
  }
  for (int f = tid; f < kFilterTile; f += kThreads)
    bias[f] = store.bias != nullptr && k0 + f < p.K ? float(store.bias[k0 + f]) : 0.0f;

  const int tiles_per_row = p.TilesPerRow();
  const index_t first = index_t(blockIdx.x) * items_per_block;
  const index_t last = min(p.Items(), first + items_per_block);
  const int image_size = p.H * p.W * p.C;
  // The first item's row, tile and image; each next item steps them (64-bit divisions per item cost as much
  // as a row's staging).
  int oy = int(first % p.OH), tile = int(first / p.OH % tiles_per_row);
  index_t n = first / p.OH / tiles_per_row;
  for (index_t item = first; item < last; ++item, ++oy) {
    if (oy == p.OH) {
      oy = 0;
      if (++tile == tiles_per_row) tile = 0, ++n;
    }
    const int ox0 = tile * kPixelTile, pixels = min(kPixelTile, p.OW - ox0);
    const uint16_t* const image = xs + n * image_size;
    // The row after the previous item's, in the same tile, finds R - stride_y of its input rows in the ring.
    const bool ring = p.dilate_y == 1;
    const int fresh = ring && item > first && oy > 0 ? max(0, p.R - p.stride_y) : 0;
    const int slot0 = ring ? int((index_t(oy) * p.stride_y) % p.R) : 0;
    __syncthreads();  // every warp is done reading the ring (and the filters and bias are written)
    // Stage kernel rows fresh .. R - 1: folded column q holds input columns (ox0 + q) * stride_x + sub - pad_x,
    // sub < stride_x, each in `slots` lanes of channels; zeros outside the image. Only the columns the tile's
    // pixels read are staged (a short last tile's other pixels read stale columns: their products are not
    // stored, and a product's rows or columns do not mix), but at least kThreads of them. Thread t takes
    // columns t, t + kThreads, ... of the rows in turn (at most one wrap per step), kBatch columns'
    // loads in flight at once (the item waits for its rows).
    const int staged = min(columns, max(kThreads, pixels - 1 + entries / kLanes));
    for (int r = fresh, q = tid; r < p.R;) {
      Lanes v[kBatch];
      int at[kBatch];  // where column b goes in the ring; -1: past the last row
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        at[b] = -1;
        if (r < p.R) {
          const int iy = oy * p.stride_y - p.pad_y + r * p.dilate_y, ix0 = (ox0 + q) * p.stride_x - p.pad_x;
          const bool row_inside = unsigned(iy) < unsigned(p.H);
#pragma unroll
          for (int l = 0; l < kLanes; ++l) {
            const int c = lanes.Channel(l), ix = ix0 + lanes.Sub(l);
            v[b].v[l] = row_inside && c < p.C && unsigned(ix) < unsigned(p.W)
                            ? __ldg(image + (kChannelsLast ? (iy * p.W + ix) * p.C + c : (c * p.H + iy) * p.W + ix))
                            : uint16_t(0);
          }
          at[b] = (slot0 + r < p.R ? slot0 + r : slot0 + r - p.R) * columns + q;
          q += kThreads;
          if (q >= staged) q -= staged, ++r;
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (at[b] >= 0) rows[at[b]] = v[b];
    }
    __syncthreads();
    if (warp * kWarpPixels >= pixels) continue;

    // The product: tile t of acc is 16 x 8, pixels x filters channels last (2 x 8 tiles), filters x pixels
    // channels first (4 x 4 tiles). Pixel i's entries of a step start one folded column after pixel i - 1's.
    float acc[16][4] = {};
    for (int r = 0; r < p.R; ++r) {
      const int slot = slot0 + r < p.R ? slot0 + r : slot0 + r - p.R;
      const Lanes* const row = rows + slot * columns + warp * kWarpPixels + lane % 16 + lane / 16;
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
    // (n, k, oy, ox). Thread (g, c) = (lane / 4, lane % 4) holds rows g and g + 8 of each 16 x 8 tile,
    // columns 2c and 2c + 1. Each output row (or filter plane) of the thread's gets its address once; the
    // tiles along it lie at fixed offsets.
    const int g = lane / 4, c2 = 2 * (lane % 4);
    auto residual_at = [&](const DType* out) {
      return store.residual == nullptr ? nullptr : store.residual + (out - y);
    };
    if constexpr (kChannelsLast) {
      // acc[8 a + b] rows: pixels 16 a + g (+ 8); columns: filters 8 b + c2 (+ 1).
      DType* const tile_out = y + ((n * p.OH + oy) * p.OW + ox0) * p.K + k0 + c2;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int m = warp * kWarpPixels + 16 * a + 8 * j + g;
          if (m >= pixels) continue;
          DType* const out = tile_out + index_t(m) * p.K;
#pragma unroll
          for (int b = 0; b < 8; ++b) {
            const int f = 8 * b + c2;
            if (k0 + f >= p.K) continue;
            const float* const d = acc[8 * a + b] + 2 * j;
            StorePair<DType, kPlain>(store, out + 8 * b, kPlain ? nullptr : residual_at(out + 8 * b),
                                     d[0] + bias[f], d[1] + bias[f + 1], k0 + f + 1 < p.K);
          }
        }
      }
    } else {
      // acc[4 a + b] rows: filters 16 a + g (+ 8); columns: pixels 8 b + c2 (+ 1).
      const index_t plane = index_t(p.OH) * p.OW;
      DType* const tile_out = y + ((n * p.K + k0) * p.OH + oy) * p.OW + ox0 + warp * kWarpPixels + c2;
#pragma unroll
      for (int a = 0; a < 4; ++a) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int f = 16 * a + 8 * j + g;
          if (k0 + f >= p.K) continue;
          DType* const out = tile_out + index_t(f) * plane;
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            const int m = warp * kWarpPixels + 8 * b + c2;
            if (m >= pixels) continue;
            const float* const d = acc[4 * a + b] + 2 * j;
            StorePair<DType, kPlain>(store, out + 8 * b, kPlain ? nullptr : residual_at(out + 8 * b),
                                     d[0] + bias[f], d[1] + bias[f], m + 1 < pixels);
          }
        }
      }
    }
  }
#else
  (void)p, (void)x, (void)weight, (void)y, (void)store, (void)items_per_block;
#endif
}

// The kernel for a layout and a store: variant 2 * channels_last + plain (Store::Plain).
template <typename DType>
using KernelPointer = void (*)(Problem, const DType*, const DType*, DType*, Store<DType>, index_t);
template <typename DType>
KernelPointer<DType> KernelVariant(int variant) {
  switch (variant) {
    case 0: return ForwardKernel<DType, false, false>;
    case 1: return ForwardKernel<DType, false, true>;
    case 2: return ForwardKernel<DType, true, false>;
    default: return ForwardKernel<DType, true, true>;
  }
}
constexpr int kVariants = 4;

// Asked once per device: CanImplement (and so FusesEpilogue, on every fused forward) reads it.
template <typename DType>
int KernelArch() {
  static std::atomic<int> known[cuda::kMaxDevices];  // the answer + 1; zero: not asked yet (static: zeroed)
  const int device = cuda::CurrentDevice();
  TE_CHECK(device >= 0 && device < cuda::kMaxDevices, "gpu_stem_mma: device ", device, " is out of range");
  int answer = known[device].load(std::memory_order_relaxed);
  if (answer == 0) {
    cudaFuncAttributes attributes;
    if (cudaFuncGetAttributes(&attributes, KernelVariant<DType>(0)) != cudaSuccess) {
      (void)cudaGetLastError();  // no code for this GPU: clear the error, and say so
      attributes.ptxVersion = 0;
    }
    answer = attributes.ptxVersion + 1;
    known[device].store(answer, std::memory_order_relaxed);
  }
  return answer - 1;
}

// Blocks of `shared` bytes an SM of the current device holds at once of one kernel variant. The first call
// on a device lets the variant take all the shared memory a block may (a process-wide setting, so made
// once, never lowered: a setting per launch would race between threads launching different sizes); counts
// are kept per size.
template <typename DType>
int BlocksPerSm(int variant, size_t shared) {
  static std::mutex mutex;
  static std::map<std::pair<int, size_t>, int> counts[kVariants];
  static bool raised[kVariants][cuda::kMaxDevices] = {};
  const KernelPointer<DType> kernel = KernelVariant<DType>(variant);
  const int device = cuda::CurrentDevice();
  std::lock_guard<std::mutex> lock(mutex);
  TE_CHECK(device >= 0 && device < cuda::kMaxDevices, "gpu_stem_mma: device ", device, " is out of range");
  if (!raised[variant][device]) {
    TE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(cuda::CurrentDeviceInfo().shared_per_block)));
    raised[variant][device] = true;
  }
  auto found = counts[variant].find({device, shared});
  if (found == counts[variant].end()) {
    int per_sm = 0;
    TE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, shared));
    found = counts[variant].emplace(std::make_pair(device, shared), per_sm).first;
  }
  return found->second;
}

template <typename DType>
void Forward(const Problem& p, const DType* x, const DType* weight, DType* y, const Store<DType>& store,
             cudaStream_t stream) {
  if (p.Items() == 0 || p.K == 0) return;
  // Pairs of outputs in one 32-bit access: adjacent filters channels last, adjacent pixels channels first,
  // where every pair starts on an even element of 4-byte aligned tensors.
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 4 == 0; };
  Store<DType> paired = store;
  paired.paired = (p.channels_last ? p.K % 2 == 0 : p.OW % 2 == 0) && aligned(y) &&
                  (store.residual == nullptr || aligned(store.residual));
  const int variant = 2 * p.channels_last + paired.Plain();
  const size_t shared = p.SharedBytes();
  const int per_sm = BlocksPerSm<DType>(variant, shared);
  // Enough blocks to fill the GPU once; each walks a run of consecutive items with its filters held.
  const index_t resident = index_t(std::max(per_sm, 1)) * cuda::CurrentDeviceInfo().sm_count;
  const index_t columns = std::max<index_t>(1, std::min<index_t>(p.Items(), resident / p.FilterTiles()));
  const index_t per_block = (p.Items() + columns - 1) / columns;
  const dim3 grid(unsigned((p.Items() + per_block - 1) / per_block), unsigned(p.FilterTiles()));
  KernelVariant<DType>(variant)<<<grid, kThreads, shared, stream>>>(p, x, weight, y, paired, per_block);
  TE_CUDA_CHECK_LAUNCH("gpu_stem_mma");
}

#define TE_STEM_MMA_INSTANTIATE(DType)                                                                         \
  template void Forward<DType>(const Problem&, const DType*, const DType*, DType*, const Store<DType>&, \
                               cudaStream_t);                                                           \
  template int KernelArch<DType>();

}  // namespace stem_mma
}  // namespace ops
}  // namespace tensorexpr
