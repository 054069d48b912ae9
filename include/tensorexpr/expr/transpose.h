// expr/transpose.h — transpose(e, axes): the dimensions of e permuted; output dimension i is source
// dimension axes[i] (so out.shape[i] == in.shape[axes[i]]). swapaxis<a, b> (swapaxis.h) is the special
// case that exchanges two dimensions. For 2-D expressions e.T() (transpose2d.h) is the same thing.
//
// The plan is a gather: one step along an output dimension is a fixed step in the source's (row, column)
// view, so the output row index is split into its leading indices (divisions of y only, done by multiply:
// index_div.h; the CPU loop hoists them out of its x loop) and the steps are summed. The builder drops
// extent-1 dimensions and merges neighbouring output dimensions that stay neighbours in the source.
#pragma once
#include <type_traits>
#include "base.h"
#include "transpose2d.h"
#include "../index_div.h"
#include "../tensor.h"

namespace tensorexpr {
namespace expr {

// Where output (y, x) lives in the source's (row, column) view, for a fixed permutation.
template <int max_lead>
struct AxisGather {
  static constexpr int kMaxLead = max_lead;
  IndexDiv extent_[static_cast<size_t>(kMaxLead)];  // extents of the leading output dimensions kept after dropping and merging,
                               // innermost first (unused slots: 1)
  index_t to_row_[static_cast<size_t>(kMaxLead)];   // source rows one step along each of them moves
  index_t to_col_[static_cast<size_t>(kMaxLead)];   // source columns one step along each of them moves
  bool last_stays_last_;       // the output's last dimension is the source's: x moves one column
  index_t last_to_row_;        // otherwise it is a leading source dimension: x moves this many rows
  // The source (row, column) of output (y, 0). Straight-line code on purpose, with no test of how many
  // slots are in use (unused slots divide by 1 and step 0; the outermost used slot's quotient is 0), so a
  // CPU compiler always hoists it out of the loop over x.
  TE_XINLINE void MapRow(index_t y, index_t* row, index_t* col) const {
    index_t r = 0, c = 0;
TE_UNROLL
    for (int k = 0; k < kMaxLead; ++k) {
      const index_t q = extent_[k].Div(y), i = extent_[k].Rem(y, q);
      y = q;
      r += i * to_row_[k];
      c += i * to_col_[k];
    }
    *row = r;
    *col = c;
  }
};

// A transpose whose last dimension moves, seen as tiles (cuda/transpose.cuh runs it this way): the
// output's rows split as (outer, c, inner), where c runs over the output dimensions that hold the source's
// last dimensions, adjacent and in order (so consecutive c read consecutive source elements), and x, the
// output's last dimension, writes consecutive output elements. A tile of c by x is read along c and
// written along x. `planes` counts (outer, inner) pairs.
struct TransposeTiles {
  index_t planes = 0, inner = 1, c = 0, x = 0;
  // The output row of (plane, c index), with plane = outer * inner + inner index.
  TE_XINLINE index_t Row(index_t outer, index_t in, index_t ci) const { return (outer * c + ci) * inner + in; }

  // The tiles of an output of shape `out` whose dimension i is source dimension axes[i]; false (and no
  // tiles) when the last dimension stays last, so that rows are plain copies already.
  template <int dim>
  static bool Make(const Shape<dim>& out, const Shape<dim>& axes, TransposeTiles* t) {
    if (dim < 2 || axes[dim - 1] == dim - 1 || out.Size() == 0) return false;
    int j = 0;
    while (axes[j] != dim - 1) ++j;
    int m = j;
    while (m > 0 && axes[m - 1] == axes[m] - 1) --m;
    index_t c = 1, inner = 1, rows = 1;
    for (int i = m; i <= j; ++i) c *= out[i];
    for (int i = j + 1; i < dim - 1; ++i) inner *= out[i];
    for (int i = 0; i < dim - 1; ++i) rows *= out[i];
    t->c = c, t->inner = inner, t->x = out[dim - 1];
    t->planes = rows / c;
    return true;
  }
};

template <typename SrcExp, typename DType, int dim>
struct TransposeAxesExp : public Exp<TransposeAxesExp<SrcExp, DType, dim>, DType, type::kChainer> {
  static_assert(SrcExp::kExpType != type::kComplex,
                "transpose(...) / swapaxis(...) cannot read dot(...) directly; assign the product to a tensor first");
  static_assert(dim >= 1, "transpose(e, axes) needs an expression with at least one dimension, not a scalar");
  static constexpr int kDim = dim;
  static constexpr bool kFlat = false;
  using device_type = typename SrcExp::device_type;
  using Gather = AxisGather<(dim > 1 ? dim - 1 : 1)>;

  SrcExp src_;
  Shape<dim> axes_;
  Shape<dim> shape_;
  Gather gather_;  // prepared once here

  TransposeAxesExp(const SrcExp& src, const Shape<dim>& axes, const char* opname) : src_(src), axes_(axes) {
    const Shape<dim> s = src_.shape();
    bool seen[static_cast<size_t>(dim)] = {};
    for (int i = 0; i < dim; ++i) {
      const bool ok = 0 <= axes[i] && axes[i] < dim && !seen[axes[i]];
      TE_CHECK(ok, opname, ": axes ", axes, " is not a permutation of the ", dim, " dimensions of source shape ", s);
      seen[axes[i]] = true;
    }
    for (int i = 0; i < dim; ++i) shape_[i] = s[static_cast<int>(axes[i])];
    // One step along source dimension j in its (row, column) view: the last dimension moves one column,
    // a leading one moves as many rows as the leading dimensions inside it hold.
    index_t src_row_step[static_cast<size_t>(dim)];
    src_row_step[dim - 1] = 0;
    index_t rows = 1;
    for (int j = dim - 2; j >= 0; --j) {
      src_row_step[j] = rows;
      rows *= s[j];
    }
    auto step_row = [&](int j) { return src_row_step[j]; };
    auto step_col = [&](int j) { return j == dim - 1 ? index_t(1) : index_t(0); };
    Gather& g = gather_;
    g.last_stays_last_ = axes[dim - 1] == dim - 1;
    g.last_to_row_ = step_row(static_cast<int>(axes[dim - 1]));
    index_t extents[Gather::kMaxLead] = {};
    int n = 0;
    for (int i = dim - 2; i >= 0; --i) {
      const int axis = static_cast<int>(axes[i]);
      const index_t extent = shape_[i], row = step_row(axis), col = step_col(axis);
      if (extent == 1) continue;  // its index is always 0
      if (n > 0 && row == g.to_row_[n - 1] * extents[n - 1] && col == g.to_col_[n - 1] * extents[n - 1]) {
        extents[n - 1] *= extent;  // it continues the kept dimension inside it, in the source too: one index
        continue;
      }
      extents[n] = extent;
      g.to_row_[n] = row;
      g.to_col_[n] = col;
      ++n;
    }
    for (int k = 0; k < Gather::kMaxLead; ++k) {
      g.extent_[k] = IndexDiv::Make(k < n ? extents[k] : 1);
      if (k >= n) g.to_row_[k] = g.to_col_[k] = 0;
    }
  }
  Shape<dim> shape() const { return shape_; }

  struct Plan {
    using SrcPlan = typename SrcExp::Plan;  // (TransposeTensorSource reads it)
    typename SrcExp::Plan src_;
    Gather gather_;
    // Output row y, mapped into the source once; then any x of it (the tiled GPU transpose reads many x
    // of one row per thread).
    struct RowAt {
      const typename SrcExp::Plan& src_;
      index_t row_, col_, x_to_row_, x_to_col_;
      TE_XINLINE DType operator()(index_t x) const { return src_.Eval(row_ + x * x_to_row_, col_ + x * x_to_col_); }
    };
    TE_XINLINE RowAt AtRow(index_t y) const {
      index_t row, col;
      gather_.MapRow(y, &row, &col);
      return gather_.last_stays_last_ ? RowAt{src_, row, col, 0, 1} : RowAt{src_, row, col, gather_.last_to_row_, 0};
    }
    TE_XINLINE DType Eval(index_t y, index_t x) const {
      index_t row, col;
      gather_.MapRow(y, &row, &col);
      // A loop-invariant test: the CPU loop over x becomes a unit-stride (vectorisable) copy when the
      // last dimension stays last.
      if (gather_.last_stays_last_) return src_.Eval(row, col + x);
      return src_.Eval(row + x * gather_.last_to_row_, col);
    }
  };
  Plan plan() const { return Plan{src_.plan(), gather_}; }
};

// transpose(e, axes): Error unless axes is a permutation of 0 .. dim-1.
template <typename SrcExp, typename DType, int etype, int dim>
inline TransposeAxesExp<SrcExp, DType, dim> transpose(const Exp<SrcExp, DType, etype>& src, const Shape<dim>& axes) {
  static_assert(SrcExp::kDim == dim, "transpose(e, axes): axes must have one entry per dimension of e");
  return TransposeAxesExp<SrcExp, DType, dim>(src.self(), axes, "transpose");
}

// A plan may map the elements of another plan one by one (conv_epilogue_map.h's, say), and say so for the
// tiled transposes: `using MappedPlan` names the other plan, mapped() returns it, and ColumnMap(y, x, step)
// returns f with f(v, i) its own element (y + i * step, x) from v, the mapped plan's element there.
template <typename Plan>
using MappedPlanOf = typename Plan::MappedPlan;
// The plan a transpose's plan reads.
template <typename Plan>
using TransposedPlanOf = typename Plan::SrcPlan;
// Member<Plan> (one of the two above) where Plan names it, else void.
template <template <typename> class Member, typename Plan, typename = void>
struct PlanMember {
  using type = void;
};
template <template <typename> class Member, typename Plan>
struct PlanMember<Member, Plan, std::void_t<Member<Plan>>> {
  using type = Member<Plan>;
};

// Where a transpose of a tensor reads, for the tiled transposes of both devices: the address of output
// element x of a row `at` (a RowAt of the plans above), and the elements between x and x + 1, for the two
// plans whose source is a tensor of Device; kTensorSource false for any other plan. Reading through a
// pointer spares the tiles the plan's row and column arithmetic per element. kMapped: transpose(e, axes)
// of a plan that maps a tensor's elements (MappedPlanOf), whose tensor is read the same way and each
// element mapped by Map(at) (the GPU's tiles only: a row of the transpose moves along the source's rows).
template <typename Plan, typename Device, int dim, typename DType>
struct TransposeTensorSource {
  using TensorPlan = typename Tensor<Device, dim, DType>::Plan;
  static constexpr bool kAxes = std::is_same<Plan, typename TransposeAxesExp<Tensor<Device, dim, DType>, DType, dim>::Plan>::value;
  static constexpr bool k2D = dim == 2 && std::is_same<Plan, typename TransposeExp<Tensor<Device, 2, DType>>::Plan>::value;
  static constexpr bool kTensorSource = kAxes || k2D;
  static constexpr bool kMapped =
      std::is_same<typename PlanMember<MappedPlanOf, typename PlanMember<TransposedPlanOf, Plan>::type>::type,
                   TensorPlan>::value;
  static constexpr int kDim = dim;
  template <typename RowAt>
  TE_XINLINE static const TensorPlan& TensorOf(const RowAt& at) {
    if constexpr (kMapped) {
      return at.src_.mapped();
    } else {
      return at.src_;
    }
  }
  template <typename RowAt>
  TE_XINLINE static const DType* Address(const RowAt& at, index_t x) {
    if constexpr (kAxes || kMapped) {
      return &TensorOf(at).REval(at.row_ + x * at.x_to_row_, at.col_ + x * at.x_to_col_);
    } else {
      return &at.src_.REval(x, at.y_);
    }
  }
  template <typename RowAt>
  TE_XINLINE static index_t Step(const RowAt& at) {
    if constexpr (kAxes || kMapped) {
      return at.x_to_row_ * TensorOf(at).stride_ + at.x_to_col_;
    } else {
      return at.src_.stride_;
    }
  }
  // (kMapped, and x moving along the source's rows: x_to_col_ 0, as in every tiled transpose)
  template <typename RowAt>
  TE_XINLINE static auto Map(const RowAt& at) {
    return at.src_.ColumnMap(at.row_, at.col_, at.x_to_row_);
  }
};

// dst <Saver> transpose(e, axes) / swapaxis<a, b>(e) / e.T(): when the last dimension moves and the
// device says its tiles pay (TransposeTilesPay: cuda/transpose.cuh's shared-memory tiles, cpu/transpose.h's
// cache blocks), RunTransposeTiles; otherwise the element-by-element map.
template <typename Saver, typename Device, int dim, typename DType, typename E>
inline void EvalTranspose(Tensor<Device, dim, DType> dst, const E& e, const Shape<dim>& axes) {
  static_assert(std::is_same<typename E::device_type, Device>::value,
                "the source of transpose/swapaxis/.T() lives on a different device than the tensor it is assigned to; "
                "Copy() it first");
  TE_CHECK(e.shape() == dst.shape_, "shape mismatch in assignment (", Saver::name(), "): destination ", dst.shape_,
           " vs expression ", e.shape());
  TransposeTiles t;
  if (TransposeTiles::Make(e.shape(), axes, &t) && TransposeTilesPay(dst.stream_, t)) {
    RunTransposeTiles<Saver>(dst, t, e.plan());
  } else {
    MapPlan<Saver>(dst, e);
  }
}
template <typename Saver, typename Device, int dim, typename DType, typename SrcExp>
inline void EvalInto(Tensor<Device, dim, DType> dst,
                     const Exp<TransposeAxesExp<SrcExp, DType, dim>, DType, type::kChainer>& exp) {
  EvalTranspose<Saver>(dst, exp.self(), exp.self().axes_);
}
template <typename Saver, typename Device, typename DType, typename E>
inline void EvalInto(Tensor<Device, 2, DType> dst, const Exp<TransposeExp<E>, DType, type::kChainer>& exp) {
  EvalTranspose<Saver>(dst, exp.self(), Shape2(1, 0));
}

}  // namespace expr
}  // namespace tensorexpr
