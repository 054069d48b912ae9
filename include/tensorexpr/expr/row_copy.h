// expr/row_copy.h — `dst = concat<d>(a, b)` and `dst = slice<d>(a, begin, end)` of tensors as copies of
// byte rows. Such an assignment moves bytes unchanged: each operand is a block of rows (contiguous bytes
// at a fixed pitch) that lands in a block of dst. The devices copy blocks at their copy bandwidth
// (cpu/row_copy.h: memcpy in parallel shares; cuda/row_copy.cuh: one launch of 16-byte moves for every
// block), where the expression map would split an index into (row, column) per element and read and
// write element by element.
// Taken for the plain store of tensors that do not overlap dst (a slice with step 1); any other saver,
// step or operand, and operands a block cannot describe (a leading-dimension cut of a tensor with padded
// rows and more than one outer index), take the map.
#pragma once
#include <cstdint>
#include <type_traits>
#include "../tensor.h"
#include "concat.h"
#include "slice.h"

namespace tensorexpr {

// `rows` rows of `row_bytes` bytes: row r from src + r * src_pitch to dst + r * dst_pitch.
struct RowBlock {
  const char* src;
  index_t src_pitch;
  char* dst;
  index_t dst_pitch;
  index_t rows, row_bytes;
};

// The blocks of one assignment (concat: one per operand; slice: one).
struct RowCopies {
  static constexpr int kMaxBlocks = 2;
  RowBlock block[kMaxBlocks];
  int count = 0;
};

namespace expr {
namespace row_copy {

// The bytes a block touches on either side, as [begin, end) addresses.
inline bool Overlaps(const char* a, index_t a_bytes, const char* b, index_t b_bytes) {
  const auto a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && a0 < b0 + static_cast<uintptr_t>(b_bytes) &&
         b0 < a0 + static_cast<uintptr_t>(a_bytes);
}
inline index_t Span(index_t rows, index_t pitch, index_t row_bytes) {
  return rows == 0 ? 0 : (rows - 1) * pitch + row_bytes;
}

// A tensor as rows of bytes: its 2-D view (leading dimensions flattened), `stride_` elements apart.
template <typename Device, int dim, typename DType>
struct Rows {
  const Tensor<Device, dim, DType>& t;
  index_t count() const { return t.shape_.FlatTo2D()[0]; }
  index_t cols() const { return t.shape_[dim - 1]; }
  index_t pitch() const { return t.stride_ * index_t(sizeof(DType)); }
  bool contiguous() const { return t.stride_ == cols() || count() <= 1; }
  char* at(index_t row, index_t col) const {
    return reinterpret_cast<char*>(t.dptr_) + row * pitch() + col * index_t(sizeof(DType));
  }
};

// Elements [from, from + len) of dimension `d` of a tensor `src` land at [to, to + len) of dimension d
// of `dst` (same dimensions otherwise): one block, or false when a block cannot describe it.
template <int d, typename Device, int dim, typename DType>
inline bool CutBlock(const Tensor<Device, dim, DType>& src, index_t from, const Tensor<Device, dim, DType>& dst,
                     index_t to, index_t len, RowBlock* b) {
  const Rows<Device, dim, DType> s{src}, o{dst};
  const index_t elem = sizeof(DType);
  if constexpr (d == dim - 1) {
    *b = RowBlock{s.at(0, from), s.pitch(), o.at(0, to), o.pitch(), o.count(), len * elem};
    return true;
  } else {
    const index_t inner = dst.shape_.ProdShape(d + 1, dim - 1);  // rows per index of dimension d
    const index_t outer = dst.shape_.ProdShape(0, d);
    if (s.contiguous() && o.contiguous()) {  // each outer index: one run of len * inner whole rows
      const index_t row = inner * o.cols() * elem;
      *b = RowBlock{s.at(0, 0) + from * row, src.shape_[d] * row, o.at(0, 0) + to * row, dst.shape_[d] * row,
                    outer, len * row};
      return true;
    }
    if (outer != 1) return false;
    *b = RowBlock{s.at(from * inner, 0), s.pitch(), o.at(to * inner, 0), o.pitch(), len * inner, o.cols() * elem};
    return true;
  }
}

// True when no block reads bytes that dst's own blocks write.
inline bool Disjoint(const RowCopies& c) {
  for (int i = 0; i < c.count; ++i)
    for (int j = 0; j < c.count; ++j) {
      const RowBlock& r = c.block[i];
      const RowBlock& w = c.block[j];
      if (Overlaps(r.src, Span(r.rows, r.src_pitch, r.row_bytes), w.dst, Span(w.rows, w.dst_pitch, w.row_bytes)))
        return false;
    }
  return true;
}

// Keeps the blocks that move bytes: an empty operand may have no storage at all (a null pointer).
inline void DropEmpty(RowCopies* c) {
  int kept = 0;
  for (int k = 0; k < c->count; ++k)
    if (c->block[k].rows > 0 && c->block[k].row_bytes > 0) c->block[kept++] = c->block[k];
  c->count = kept;
}

}  // namespace row_copy

// dst <Saver> concat<cdim>(a, b) of tensors.
template <typename Saver, typename Device, int dim, typename DType, int cdim>
inline void EvalInto(Tensor<Device, dim, DType> dst,
                     const Exp<ConcatExp<Tensor<Device, dim, DType>, Tensor<Device, dim, DType>, DType, dim, cdim>,
                               DType, type::kChainer>& exp) {
  const auto& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", e.shape());
  RowCopies c;
  c.count = 2;
  const index_t split = e.lhs_shape_[cdim];
  const bool blocks = std::is_same<Saver, sv::saveto>::value &&
                      row_copy::CutBlock<cdim>(e.lhs_, 0, dst, 0, split, &c.block[0]) &&
                      row_copy::CutBlock<cdim>(e.rhs_, 0, dst, split, e.shape_[cdim] - split, &c.block[1]) &&
                      row_copy::Disjoint(c);
  if (blocks) {
    row_copy::DropEmpty(&c);
    if (c.count > 0) RunRowCopies(dst.stream_, c);
  } else {
    MapPlan<Saver>(dst, e);
  }
}

// dst <Saver> slice<sdim>(a, begin, end) of a tensor.
template <typename Saver, typename Device, int dim, typename DType, int sdim>
inline void EvalInto(Tensor<Device, dim, DType> dst,
                     const Exp<SliceExp<Tensor<Device, dim, DType>, DType, dim, sdim>, DType, type::kChainer>& exp) {
  const auto& e = exp.self();
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", e.shape());
  RowCopies c;
  c.count = 1;
  const bool blocks = std::is_same<Saver, sv::saveto>::value && e.step_ == 1 &&
                      row_copy::CutBlock<sdim>(e.src_, e.begin_, dst, 0, e.shape_[sdim], &c.block[0]) &&
                      row_copy::Disjoint(c);
  if (blocks) {
    row_copy::DropEmpty(&c);
    if (c.count > 0) RunRowCopies(dst.stream_, c);
  } else {
    MapPlan<Saver>(dst, e);
  }
}

}  // namespace expr
}  // namespace tensorexpr
