// cpu/row_copy.h — RowCopies (expr/row_copy.h) on the CPU: memcpy over the stream's thread budget. Work
// items are about kItemBytes each: short rows are grouped, long rows (a concat along a leading
// dimension has a few rows of megabytes) are cut, so that any shape spreads over the threads.
#pragma once
#include <algorithm>
#include <cstring>
#include "../expr/row_copy.h"
#include "device.h"
#include "threads.h"

namespace tensorexpr {
namespace cpu_row_copy {
constexpr index_t kItemBytes = index_t(64) << 10;

// How block b splits into work items: `group` whole rows per item, or `pieces` items per row.
struct Split {
  index_t group = 1, pieces = 1, items = 0;
  static Split Of(const RowBlock& b) {
    Split s;
    if (b.row_bytes > kItemBytes) {
      s.pieces = (b.row_bytes + kItemBytes - 1) / kItemBytes;
      s.items = b.rows * s.pieces;
    } else {
      s.group = std::max<index_t>(1, kItemBytes / std::max<index_t>(b.row_bytes, 1));
      s.items = (b.rows + s.group - 1) / s.group;
    }
    return s;
  }
};
}  // namespace cpu_row_copy

inline void RunRowCopies(Stream<cpu>* s, const RowCopies& c) {
  using cpu_row_copy::kItemBytes;
  using cpu_row_copy::Split;
  Split split[RowCopies::kMaxBlocks];
  index_t first[RowCopies::kMaxBlocks + 1] = {0};
  for (int k = 0; k < c.count; ++k) {
    split[k] = Split::Of(c.block[k]);
    first[k + 1] = first[k] + split[k].items;
  }
  const StreamThreadScope threads(s);
  ParallelFor(first[c.count], kItemBytes / 4, [&c, &split, &first](index_t begin, index_t end) {
    for (index_t item = begin; item < end; ++item) {
      int k = 0;
      while (item >= first[k + 1]) ++k;
      const RowBlock& b = c.block[k];
      const Split& sp = split[k];
      const index_t local = item - first[k];
      if (sp.pieces > 1) {
        const index_t row = local / sp.pieces, offset = (local - row * sp.pieces) * kItemBytes;
        std::memcpy(b.dst + row * b.dst_pitch + offset, b.src + row * b.src_pitch + offset,
                    static_cast<size_t>(std::min(kItemBytes, b.row_bytes - offset)));
      } else {
        const index_t row_end = std::min(b.rows, (local + 1) * sp.group);
        for (index_t row = local * sp.group; row < row_end; ++row)
          std::memcpy(b.dst + row * b.dst_pitch, b.src + row * b.src_pitch, static_cast<size_t>(b.row_bytes));
      }
    }
  });
}

}  // namespace tensorexpr
