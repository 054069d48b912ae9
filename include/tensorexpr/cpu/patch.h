// cpu/patch.h — im2col and col2im on the CPU (patch.h describes the geometry, the chunk and the column
// layouts; cuda/patch.cuh is the GPU twin):
//   Im2Col(s, g, chunk, layout, data, data_stride, col)      the chunk's column matrix (patch.h: image-major)
//   Col2Im(s, g, chunk, col, grad, grad_stride, accumulate)  its adjoint, written or added
// and the CPU evaluators of the expressions unpack_patch2col / pack_col2patch, which run the same loops.
//
// Threads split the outer range (ParallelFor); inner loops run over contiguous memory. col2im gathers:
// each thread owns whole input rows (channels last: whole pixels), sums into a private accumulator in
// accum_t in a fixed order and saves it, so results are deterministic and need no atomics.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>
#include "../patch.h"
#include "../expr/patch2col.h"
#include "../expr/col2patch.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {
namespace patch_cpu {

// The first j >= 0 with lo <= x0 + j * step, for step > 0. (Step 1, the common case, skips the
// division: these run once per output row, where a 64-bit division costs more than the copy.) The
// ceiling is written without adding the step, which may be near 2^63.
inline index_t FirstAtLeast(index_t x0, index_t step, index_t lo) {
  if (x0 >= lo) return 0;
  return step == 1 ? lo - x0 : (lo - x0 - 1) / step + 1;
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

// Where the loops read. A row is anything indexable by x: a pointer for memory, a RowOfPlan for an
// expression (the expressions' evaluators read their operand's plan).
template <typename DType>
struct MemoryRows {  // image row r (rows of the last dimension over all images) at data + r * stride
  const DType* data;
  index_t stride;
  const DType* Row(index_t r) const { return data + r * stride; }
};
template <typename DType>
struct MemoryColumns {  // the chunk's column entries, PatchColumns layout
  const DType* col;
  PatchColumns layout;
  const DType* Row(index_t i, index_t r) const { return col + i * layout.image_stride + r * layout.row_stride; }
};
template <typename Plan>
struct RowOfPlan {
  const Plan* plan;
  index_t row, offset;
  TE_XINLINE auto operator[](index_t x) const { return plan->Eval(row, offset + x); }
};
template <typename Plan>
struct PlanRows {
  Plan plan;
  RowOfPlan<Plan> Row(index_t r) const { return RowOfPlan<Plan>{&plan, r, 0}; }
};
template <typename Plan>
struct PlanColumns {  // unpack_patch2col's matrix (C kk, N P): image i's positions start at column i P
  Plan plan;
  index_t positions;
  RowOfPlan<Plan> Row(index_t i, index_t r) const { return RowOfPlan<Plan>{&plan, r, i * positions}; }
};

template <typename Saver, typename DType>
inline void SaveZeros(DType* dst, index_t n) {
  if constexpr (std::is_same<Saver, sv::saveto>::value) {
    std::fill(dst, dst + n, DType(0));
  } else {
    for (index_t j = 0; j < n; ++j) Saver::Save(dst[j], DType(0));
  }
}

// Channels first: column rows [begin, end) of the chunk (rows counted over its images), on the calling
// thread.
template <typename Saver, typename DType, typename Source>
void Im2ColRows(const PatchGeometry& g, const PatchChunk& ch, const Source& src, DType* col,
                const PatchColumns& layout, index_t begin, index_t end) {
  const index_t kk = g.KernelSize(), rows = g.ColRows();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OH = g.out[1], OW = g.out[2];
  for (index_t r = begin; r < end; ++r) {
    const index_t i = r / rows, row = r % rows, c = row / kk, kidx = row % kk;
    const index_t kz = kidx / (g.kernel[1] * g.kernel[2]), ky = (kidx / g.kernel[2]) % g.kernel[1],
                  kx = kidx % g.kernel[2];
    const index_t image_row = ((ch.n0 + i) * g.C + c) * D * H;  // the first row of (image, channel)
    DType* dst = col + i * layout.image_stride + row * layout.row_stride;
    // The output position walks row by row; divide once per column row, not once per output row.
    index_t ow = ch.p0 % OW, oh = (ch.p0 / OW) % OH, od = ch.p0 / (OW * OH);
    for (index_t p = ch.p0, pend = ch.p0 + ch.pc; p < pend;) {
      const index_t run = std::min(pend - p, OW - ow);  // the rest of this output row inside the chunk
      const index_t z = od * g.stride[0] - g.pad[0] + kz * g.dilate[0];
      const index_t y = oh * g.stride[1] - g.pad[1] + ky * g.dilate[1];
      if (z < 0 || z >= D || y < 0 || y >= H) {
        SaveZeros<Saver>(dst, run);
      } else {
        const auto line = src.Row(image_row + z * H + y);
        const index_t sx = g.stride[2], x0 = ow * sx - g.pad[2] + kx * g.dilate[2];
        const index_t jlo = std::min(run, FirstAtLeast(x0, sx, 0));
        const index_t jhi = std::max(jlo, std::min(run, EndBelow(x0, sx, W)));
        SaveZeros<Saver>(dst, jlo);
        if constexpr (std::is_pointer<decltype(line)>::value && std::is_same<Saver, sv::saveto>::value) {
          if (sx == 1) {
            // The index first: line + x0 alone may point far outside the row (a hostile padding or dilation).
            if (jhi > jlo) std::memcpy(dst + jlo, line + (x0 + jlo), sizeof(DType) * static_cast<size_t>(jhi - jlo));
          } else {
            for (index_t j = jlo; j < jhi; ++j) dst[j] = line[x0 + j * sx];
          }
        } else {
          for (index_t j = jlo; j < jhi; ++j) Saver::Save(dst[j], static_cast<DType>(line[x0 + j * sx]));
        }
        SaveZeros<Saver>(dst + jhi, run - jhi);
      }
      dst += run;
      p += run;
      ow = 0;
      if (++oh == OH) oh = 0, ++od;
    }
  }
}

// Channels first: input rows [begin, end) of the chunk (rows of the last dimension, counted over its
// images) receive the column entries that read them, on the calling thread.
template <typename Saver, typename DType, typename Columns>
void Col2ImRows(const PatchGeometry& g, const PatchChunk& ch, const Columns& cols, DType* grad, index_t grad_stride,
                index_t begin, index_t end) {
  using AccT = accum_t<DType>;
  const index_t kk = g.KernelSize();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
  std::vector<AccT> acc(static_cast<size_t>(W));
  for (index_t r = begin; r < end; ++r) {
    const index_t y = r % H, z = (r / H) % D, c = (r / (H * D)) % g.C, i = r / (H * D * g.C);
    std::fill(acc.begin(), acc.end(), AccT(0));
    for (index_t kz = 0; kz < g.kernel[0]; ++kz) {
      index_t od = 0;
      if (!DividesInto(z + g.pad[0] - kz * g.dilate[0], g.stride[0], &od) || od >= OD) continue;
      for (index_t ky = 0; ky < g.kernel[1]; ++ky) {
        index_t oh = 0;
        if (!DividesInto(y + g.pad[1] - ky * g.dilate[1], g.stride[1], &oh) || oh >= OH) continue;
        const index_t base = (od * OH + oh) * OW;  // position of (od, oh, 0)
        const index_t lo = std::max<index_t>(0, ch.p0 - base), hi = std::min<index_t>(OW, ch.p0 + ch.pc - base);
        if (lo >= hi) continue;
        for (index_t kx = 0; kx < g.kernel[2]; ++kx) {
          const auto crow = cols.Row(i, c * kk + (kz * g.kernel[1] + ky) * g.kernel[2] + kx);
          const index_t at = base - ch.p0;  // crow[at + ow] is output column ow of this output row
          // Input x = ow * stride - pad + kx * dilate; keep the ow in [lo, hi) with x inside [0, W).
          const index_t sx = g.stride[2], x0 = -g.pad[2] + kx * g.dilate[2];
          const index_t olo = std::max(lo, FirstAtLeast(x0, sx, 0));
          const index_t ohi = std::min(hi, EndBelow(x0, sx, W));
          for (index_t ow = olo; ow < ohi; ++ow) acc[x0 + ow * sx] += static_cast<AccT>(crow[at + ow]);
        }
      }
    }
    DType* out = grad + (((ch.n0 + i) * g.C + c) * D * H + z * H + y) * grad_stride;
    for (index_t x = 0; x < W; ++x) Saver::Save(out[x], static_cast<DType>(acc[x]));
  }
}

// Channels last: column rows [begin, end) of the chunk (one per (image, position)).
template <typename DType>
void Im2ColPixels(const PatchGeometry& g, const PatchChunk& ch, const DType* data, index_t data_stride, DType* col,
                  index_t row_stride, index_t begin, index_t end) {
  const index_t kk = g.KernelSize(), row_len = g.ColRows(), Cg = g.Cg();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  for (index_t r = begin; r < end; ++r) {
    const index_t i = r / ch.pc, p = ch.p0 + r % ch.pc;
    const index_t ow = p % OW, oh = (p / OW) % OH, od = p / (OW * OH);
    DType* dst = col + r * row_stride;
    std::fill(dst + row_len, dst + row_stride, DType(0));
    for (index_t kz = 0, koff = 0; kz < g.kernel[0]; ++kz)
      for (index_t ky = 0; ky < g.kernel[1]; ++ky)
        for (index_t kx = 0; kx < g.kernel[2]; ++kx, ++koff) {
          const index_t z = od * g.stride[0] - g.pad[0] + kz * g.dilate[0];
          const index_t y = oh * g.stride[1] - g.pad[1] + ky * g.dilate[1];
          const index_t x = ow * g.stride[2] - g.pad[2] + kx * g.dilate[2];
          const bool inside = z >= 0 && z < D && y >= 0 && y < H && x >= 0 && x < W;
          const DType* src = inside ? data + ((((ch.n0 + i) * D + z) * H + y) * W + x) * data_stride : nullptr;
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
}

// Channels last: input pixels [begin, end) of the chunk receive the column entries that read them.
template <typename Saver, typename DType>
void Col2ImPixels(const PatchGeometry& g, const PatchChunk& ch, const DType* col, DType* grad, index_t grad_stride,
                  index_t begin, index_t end) {
  using AccT = accum_t<DType>;
  const index_t kk = g.KernelSize(), row_len = g.ColRows(), Cg = g.Cg();
  const index_t D = g.in[0], H = g.in[1], W = g.in[2];
  const index_t OD = g.out[0], OH = g.out[1], OW = g.out[2];
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
          if (p < ch.p0 || p >= ch.p0 + ch.pc) continue;
          const DType* crow = col + (i * ch.pc + p - ch.p0) * row_len + koff * Cg;
          for (index_t gi = 0; gi < g.G; ++gi)
            for (index_t c = 0; c < Cg; ++c) acc[gi * Cg + c] += static_cast<AccT>(crow[gi * kk * Cg + c]);
        }
    DType* out = grad + ((((ch.n0 + i) * D + z) * H + y) * W + x) * grad_stride;
    for (index_t c = 0; c < g.C; ++c) Saver::Save(out[c], static_cast<DType>(acc[c]));
  }
}

template <typename Saver, typename DType>
void Col2Im(const PatchGeometry& g, const PatchChunk& ch, const DType* col, DType* grad, index_t grad_stride) {
  if (g.channels_last) {
    ParallelFor(ch.nb * g.InSize(), g.ColRows(), [&](index_t begin, index_t end) {
      Col2ImPixels<Saver>(g, ch, col, grad, grad_stride, begin, end);
    });
    return;
  }
  const MemoryColumns<DType> cols{col, PatchColumns::ImageMajor(g, ch)};
  ParallelFor(ch.nb * g.C * g.in[0] * g.in[1], g.KernelSize() * std::max<index_t>(g.in[2], 1),
              [&](index_t begin, index_t end) { Col2ImRows<Saver>(g, ch, cols, grad, grad_stride, begin, end); });
}

}  // namespace patch_cpu

// col = the chunk's column matrix of data in `layout` (patch.h), on the stream's threads.
template <typename DType>
inline void Im2Col(Stream<cpu>* s, const PatchGeometry& g, const PatchChunk& ch, const PatchColumns& layout,
                   const DType* data, index_t data_stride, DType* col) {
  const StreamThreadScope threads(s);
  if (g.channels_last) {
    ParallelFor(ch.nb * ch.pc, layout.row_stride, [&](index_t begin, index_t end) {
      patch_cpu::Im2ColPixels(g, ch, data, data_stride, col, layout.row_stride, begin, end);
    });
    return;
  }
  const patch_cpu::MemoryRows<DType> rows{data, data_stride};
  ParallelFor(ch.nb * g.ColRows(), ch.pc, [&](index_t begin, index_t end) {
    patch_cpu::Im2ColRows<sv::saveto>(g, ch, rows, col, layout, begin, end);
  });
}

// grad (the chunk's images, rows of stride grad_stride) = (accumulate: +=) the sum of the column entries
// of the chunk's positions that read each element.
template <typename DType>
inline void Col2Im(Stream<cpu>* s, const PatchGeometry& g, const PatchChunk& ch, const DType* col, DType* grad,
                   index_t grad_stride, bool accumulate) {
  const StreamThreadScope threads(s);
  if (accumulate) {
    patch_cpu::Col2Im<sv::plusto>(g, ch, col, grad, grad_stride);
  } else {
    patch_cpu::Col2Im<sv::saveto>(g, ch, col, grad, grad_stride);
  }
}

namespace expr {

// dst Saver= unpack_patch2col(img, ...) on the CPU: the im2col loop above over the whole batch, reading
// the image from memory when it is a tensor and through its plan otherwise (pad(img), ...).
template <typename Saver, typename DType, typename E>
inline void EvalInto(Tensor<cpu, 2, DType> dst, const Exp<UnpackPatchToColExp<E>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the image of unpack_patch2col lives on a different device than the tensor it is assigned to; Copy() it first");
  const UnpackPatchToColExp<E>& e = exp.self();
  const Shape<2> s = e.shape();
  TE_CHECK(s == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression unpack_patch2col ", s);
  if (s.Size() == 0) return;
  const PatchGeometry& g = e.geo_;
  const PatchChunk whole = PatchChunk::Whole(g);
  const PatchColumns layout{dst.stride_, g.OutSize()};  // (C kk, N P): image n's positions from column n P
  auto run = [&](const auto& rows) {
    ParallelFor(g.N * g.ColRows(), g.OutSize(), [&](index_t begin, index_t end) {
      patch_cpu::Im2ColRows<Saver>(g, whole, rows, dst.dptr_, layout, begin, end);
    });
  };
  if constexpr (is_tensor<E>::value) {
    run(patch_cpu::MemoryRows<DType>{e.img_.dptr_, e.img_.stride_});
  } else {
    run(patch_cpu::PlanRows<decltype(e.img_.plan())>{e.img_.plan()});
  }
}

// dst Saver= pack_col2patch(col, ...) on the CPU: the col2im gather above, a whole image row at a time.
template <typename Saver, typename DType, typename E, int dstdim>
inline void EvalInto(Tensor<cpu, dstdim, DType> dst,
                     const Exp<PackColToPatchExp<E, dstdim>, DType, type::kChainer>& exp) {
  const StreamThreadScope threads(dst.stream_);  // the stream's thread budget
  static_assert(std::is_same<typename E::device_type, cpu>::value,
                "the column matrix of pack_col2patch lives on a different device than the tensor it is assigned to; Copy() it first");
  const PackColToPatchExp<E, dstdim>& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression pack_col2patch ", e.shape());
  if (dst.shape_.Size() == 0) return;
  const PatchGeometry& g = e.geo_;
  const PatchChunk whole = PatchChunk::Whole(g);
  auto run = [&](const auto& cols) {
    ParallelFor(g.N * g.C * g.in[1], g.KernelSize() * std::max<index_t>(g.in[2], 1), [&](index_t begin, index_t end) {
      patch_cpu::Col2ImRows<Saver>(g, whole, cols, dst.dptr_, dst.stride_, begin, end);
    });
  };
  if constexpr (is_tensor<E>::value) {
    run(patch_cpu::MemoryColumns<DType>{e.col_.dptr_, PatchColumns{e.col_.stride_, g.OutSize()}});
  } else {
    run(patch_cpu::PlanColumns<decltype(e.col_.plan())>{e.col_.plan(), g.OutSize()});
  }
}

}  // namespace expr
}  // namespace tensorexpr
